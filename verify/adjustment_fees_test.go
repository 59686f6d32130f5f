package verify_test

import (
	"context"
	"strings"
	"testing"

	"github.com/razao/razao/accounts"
	"github.com/razao/razao/internal/ledgertest"
	"github.com/razao/razao/postings"
	"github.com/razao/razao/verify"
)

// An adjustment of a fee (a divergence resolved by booking the PSP's fee
// that differs: D expenses:psp-fees / C assets:cash) moves cash by its
// fee: verify's cash check counts it once, by its cash leg, not again as
// a fee of the sales.
func TestVerifyCountsAnAdjustedFeeOnce(t *testing.T) {
	t.Parallel()
	l, db := ledgertest.New(t)
	at := ledgertest.SaoPaulo(2026, 8, 10, 12, 0)
	sale, err := postings.Sale("c1", "BRL", 10000, 80, at)
	ledgertest.Post(t, l, sale, err)
	ledgertest.Post(t, l, postings.Set{Kind: postings.KindAdjustment, IdempotencyKey: "divergence:1", Amount: 19, Currency: "BRL",
		EventAt: at, Legs: []postings.Leg{{Account: accounts.PSPFees, Amount: 19}, {Account: accounts.Cash, Amount: -19}}}, nil)
	r, err := verify.Run(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, c := range r.Checks {
		if strings.HasPrefix(c.Name, "cash equals") {
			found = true
			if c.Breaches != 0 {
				t.Errorf("%s: %v", c.Name, c.Examples)
			}
		}
	}
	if !found {
		t.Fatal("verify has no cash check")
	}
}
