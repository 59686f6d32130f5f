package postings_test

import (
	"math/rand/v2"
	"testing"

	"github.com/razao/razao/postings"
)

func TestCommissionIsFloored(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ amount, rate, want int64 }{
		{4990, 1000, 499}, {4990, 1250, 623}, {1, 9999, 0}, {100, 10000, 100},
		{9_223_372_036_854_775_807, 10000, 9_223_372_036_854_775_807},
	} {
		if got := postings.Commission(tc.amount, tc.rate); got != tc.want {
			t.Errorf("Commission(%d, %d) = %d, want %d", tc.amount, tc.rate, got, tc.want)
		}
	}
}

// Three partial refunds that add up to the sale reverse exactly the
// commission, whatever the amounts, rates and split.
func TestReversalsOfRefundsAddUpToCommission(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 20000; i++ {
		sale := 3 + rng.Int64N(10_000_000)
		rate := rng.Int64N(10001)
		c := postings.Commission(sale, rate)
		r1 := 1 + rng.Int64N(sale-2)
		r2 := 1 + rng.Int64N(sale-r1-1)
		r3 := sale - r1 - r2
		var refunded, reversed int64
		for _, r := range []int64{r1, r2, r3} {
			rev := postings.ReversalAmount(c, sale, refunded, r)
			if rev < 0 {
				t.Fatalf("sale %d rate %d: negative reversal %d", sale, rate, rev)
			}
			refunded += r
			reversed += rev
			if reversed > c {
				t.Fatalf("sale %d rate %d: reversed %d above commission %d", sale, rate, reversed, c)
			}
		}
		if reversed != c {
			t.Fatalf("sale %d rate %d refunds %d+%d+%d: reversed %d, commission %d", sale, rate, r1, r2, r3, reversed, c)
		}
	}
}

func TestSaleWithPSPFeeKeepsCashAtStatement(t *testing.T) {
	t.Parallel()
	s, err := postings.Sale("ch-1", "BRL", 4990, 75, aug)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int64{"assets:cash": 4915, "expenses:psp-fees": 75, "income:revenue": -4990}
	if len(s.Legs) != len(want) {
		t.Fatalf("legs = %+v", s.Legs)
	}
	for _, l := range s.Legs {
		if want[l.Account] != l.Amount {
			t.Fatalf("leg %s = %d, want %d", l.Account, l.Amount, want[l.Account])
		}
	}
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	if _, err := postings.Sale("ch-1", "BRL", 100, 100, aug); err == nil {
		t.Fatal("fee equal to the sale accepted")
	}
}
