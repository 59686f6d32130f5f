package charges

import (
	"testing"

	"github.com/razao/razao/divergences"
	"github.com/razao/razao/money"
)

// TestDecideSetsAsideReductionsThatLeaveNothingPaid: parts that add up
// to valor and whose original is the charge's may still reduce the sale
// to nothing (a rebate and discount as large as the original, the cash
// handed over the counter making up valor). Booked, the charge would be
// paid 0 or less, which no refund can be booked against and which the
// database refuses on every retry (refunded_amount <= paid_amount): it is
// an amount_mismatch with both sides instead.
func TestDecideSetsAsideReductionsThatLeaveNothingPaid(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		p    money.Parts
	}{
		{"rebate above the sale", money.Parts{Original: 100, Withdrawal: 150, Rebate: 150}},
		{"rebate and discount equal to the sale", money.Parts{Original: 100, Withdrawal: 100, Rebate: 60, Discount: 40}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ev := payParts(c.p.Sum(), c.p)
			d, err := Decide(chargeOf(100), ev, rules)
			if err != nil {
				t.Fatal(err)
			}
			if d.Result != Divergence || d.Reason != divergences.ReasonAmountMismatch || len(d.Sets) != 0 || d.State.State != StatePending {
				t.Fatalf("Decide = %s %s (%s), %d sets, charge %s; want an amount_mismatch, nothing booked",
					d.Result, d.Reason, d.Detail, len(d.Sets), d.State.State)
			}
		})
	}
}
