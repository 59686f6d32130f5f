package charges

import (
	"reflect"
	"strings"
	"testing"

	"github.com/razao/razao/accounts"
	"github.com/razao/razao/divergences"
	"github.com/razao/razao/money"
	"github.com/razao/razao/postings"
)

// chargeOf is pending() with another amount.
func chargeOf(amount int64) ChargeState {
	s := pending()
	s.Amount = amount
	return s
}

// payParts is a Pix of valor amount made of parts, with no PSP fee.
func payParts(amount int64, p money.Parts) Event {
	return with(pay("bcb-pix:E1", amount, 0), func(ev *Event) { ev.HasFee = false; ev.Parts = p })
}

// legs is a set's legs as account → signed amount.
func legs(s postings.Set) map[string]int64 {
	out := map[string]int64{}
	for _, l := range s.Legs {
		out[l.Account] += l.Amount
	}
	return out
}

// A Pix's componentesValor books each part as what it is: the charge is
// paid by its original, the change, interest, fines, rebates and
// discounts each on its own account, and the sale's set balances.
func TestDecideBooksPixComponentsAsWhatTheyAre(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		charge int64
		ev     Event
		paid   int64
		legs   map[string]int64
		amount int64
	}{
		{"Pix Troco: 80.00 sale and 20.00 change", 8000, payParts(10000, money.Parts{Original: 8000, Change: 2000}), 8000,
			map[string]int64{accounts.Cash: 10000, accounts.Revenue: -8000, accounts.TillChange: -2000}, 10000},
		{"Pix com Saque (pixResponse3): 180.00 sale and 20.00 saque", 18000, payParts(20000, money.Parts{Original: 18000, Withdrawal: 2000}), 18000,
			map[string]int64{accounts.Cash: 20000, accounts.Revenue: -18000, accounts.TillWithdrawal: -2000}, 20000},
		{"cobv with multa 3.00 and juros 2.00", 10000, payParts(10500, money.Parts{Original: 10000, Fine: 300, Interest: 200}), 10500,
			map[string]int64{accounts.Cash: 10500, accounts.Revenue: -10000, accounts.Fines: -300, accounts.Interest: -200}, 10500},
		{"cobv with abatimento 5.00 and desconto 1.50", 10000, payParts(9350, money.Parts{Original: 10000, Rebate: 500, Discount: 150}), 9350,
			map[string]int64{accounts.Cash: 9350, accounts.Rebates: 500, accounts.Discounts: 150, accounts.Revenue: -10000}, 10000},
		{"cobrança imediata: original only", 10000, payParts(10000, money.Parts{Original: 10000}), 10000,
			map[string]int64{accounts.Cash: 10000, accounts.Revenue: -10000}, 10000},
		{"troco with a PSP fee", 8000, with(payParts(10000, money.Parts{Original: 8000, Change: 2000}), func(ev *Event) { ev.Fee, ev.HasFee = 75, true }), 8000,
			map[string]int64{accounts.Cash: 9925, accounts.PSPFees: 75, accounts.Revenue: -8000, accounts.TillChange: -2000}, 10000},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			d, err := Decide(chargeOf(c.charge), c.ev, rules)
			if err != nil {
				t.Fatal(err)
			}
			if d.Result != Applied || d.State.State != StatePaid || len(d.Sets) != 2 {
				t.Fatalf("Decide = %s %s (%s), %d sets; want applied, paid, sale and commission", d.Result, d.State.State, d.Detail, len(d.Sets))
			}
			sale := d.Sets[0]
			if err := sale.Validate(); err != nil {
				t.Fatalf("sale set: %v", err)
			}
			if got := legs(sale); sale.Kind != postings.KindSale || !reflect.DeepEqual(got, c.legs) || sale.Amount != c.amount {
				t.Fatalf("sale = %s of %d, legs %v; want of %d, legs %v", sale.Kind, sale.Amount, got, c.amount, c.legs)
			}
			if *d.State.PaidAmount != c.paid || d.State.Commission != postings.Commission(c.charge, 1000) {
				t.Fatalf("paid %d, commission %d; want paid %d, commission on the charge's %d", *d.State.PaidAmount, d.State.Commission, c.paid, c.charge)
			}
			// The same payment again is a redelivery.
			again, err := Decide(d.State, c.ev, rules)
			if err != nil || again.Result != NoOp {
				t.Fatalf("redelivery = %s (%s), %v; want noop", again.Result, again.Detail, err)
			}
		})
	}
}

// What the charge expects is the sale: a Troco Pix of 100.00 on a charge
// of 100.00 is not its payment (80.00 of it is the sale, 20.00 went back
// over the counter), and parts that do not add up to the Pix book nothing.
func TestDecidePixComponentsThatAreNotTheChargeAreDivergences(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		charge int64
		ev     Event
		detail []string
	}{
		{"Troco 80.00 + 20.00 on a charge of 100.00", 10000, payParts(10000, money.Parts{Original: 8000, Change: 2000}),
			[]string{"paid 10000", "original) is 8000", "original 80.00 + troco 20.00", "charge is 10000"}},
		{"Pix Saque only (original 0.00)", 10000, payParts(10000, money.Parts{Withdrawal: 10000}),
			[]string{"original) is 0", "saque 100.00", "charge is 10000"}},
		{"parts add up to less than valor", 8000, payParts(10000, money.Parts{Original: 8000, Change: 1500}),
			[]string{"paid 10000", "original 80.00 + troco 15.00", "add up to 9500"}},
		{"parts add up to more than valor", 10000, payParts(10000, money.Parts{Original: 10000, Interest: 1, Discount: 0}),
			[]string{"paid 10000", "add up to 10001"}},
		{"a discount the Pix did not take", 10000, payParts(10000, money.Parts{Original: 10000, Discount: 500}),
			[]string{"original 100.00 − desconto 5.00", "add up to 9500"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			d, err := Decide(chargeOf(c.charge), c.ev, rules)
			if err != nil {
				t.Fatal(err)
			}
			if d.Result != Divergence || d.Reason != divergences.ReasonAmountMismatch || len(d.Sets) != 0 || d.State.State != StatePending {
				t.Fatalf("Decide = %s %s, %d sets, charge %s; want an amount_mismatch, nothing booked", d.Result, d.Reason, len(d.Sets), d.State.State)
			}
			for _, want := range c.detail {
				if !strings.Contains(d.Detail, want) {
					t.Fatalf("detail %q does not say %q", d.Detail, want)
				}
			}
		})
	}
}

// Refunds of a Pix with parts: of the sale (natureza ORIGINAL) up to what
// paid the charge, the whole commission back at the end; of the cash
// handed over the counter (RETIRADA) never against the sale.
func TestDecideRefundsOfAPixWithParts(t *testing.T) {
	t.Parallel()
	paid := func(charge int64, ev Event) ChargeState {
		t.Helper()
		d, err := Decide(chargeOf(charge), ev, rules)
		if err != nil || d.Result != Applied {
			t.Fatalf("pay: %s (%s), %v", d.Result, d.Detail, err)
		}
		return d.State
	}
	troco := paid(8000, payParts(10000, money.Parts{Original: 8000, Change: 2000}))
	d, err := Decide(troco, with(refund("r1", 2000), func(ev *Event) { ev.OfCashOut = true }), rules)
	if err != nil || d.Result != Divergence || d.Reason != divergences.ReasonRefundExceedsPaid || len(d.Sets) != 0 ||
		!strings.Contains(d.Detail, "RETIRADA") {
		t.Fatalf("RETIRADA refund = %s %s (%s), %d sets, %v; want refund_exceeds_paid, nothing booked", d.Result, d.Reason, d.Detail, len(d.Sets), err)
	}
	if d, _ := Decide(troco, refund("r2", 8001), rules); d.Reason != divergences.ReasonRefundExceedsPaid {
		t.Fatalf("refund of 80.01 of an 80.00 sale = %s %s, want refund_exceeds_paid", d.Result, d.Reason)
	}
	if d, _ := Decide(troco, refund("r2", 8000), rules); d.Result != Applied || d.State.State != StateRefunded {
		t.Fatalf("refund of the whole sale = %s (%s), %s; want applied, refunded", d.Result, d.Detail, d.State.State)
	}
	cobv := paid(10000, payParts(10500, money.Parts{Original: 10000, Fine: 300, Interest: 200}))
	d, err = Decide(cobv, refund("r3", 10500), rules)
	if err != nil || d.Result != Applied || len(d.Sets) != 2 || d.Sets[1].Amount != cobv.Commission {
		t.Fatalf("whole refund of a cobv with interest = %s (%s), %d sets; want the refund and the whole commission back", d.Result, d.Detail, len(d.Sets))
	}
}
