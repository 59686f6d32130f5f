package ledgertest

import (
	"testing"
	"time"

	"github.com/razao/razao/postings"
)

// PostAugust books August 2026, the example month of the reports' tests
// (and of the month sums' and the snapshots' that read them):
//
//	c1  sale 100.00, PSP fee 1.50, partner p1 at 10% (commission 10.00)
//	c2  sale 49.90, fee 0.75, paid 2026-08-31 22:30 in São Paulo (UTC
//	    says September), partner p2 at 5% (commission 2.49)
//	c3  sale 25.00, no fee, no partner
//	    payout of 5.00 to p1
func PostAugust(t testing.TB, l *postings.Ledger) {
	t.Helper()
	s, err := postings.Sale("c1", "BRL", 10000, 150, SaoPaulo(2026, 8, 5, 10, 0))
	Post(t, l, s, err)
	Commission(t, l, "c1", "p1", 10000, 1000, SaoPaulo(2026, 8, 5, 10, 0))
	s, err = postings.Sale("c2", "BRL", 4990, 75, SaoPaulo(2026, 8, 31, 22, 30))
	Post(t, l, s, err)
	Commission(t, l, "c2", "p2", 4990, 500, SaoPaulo(2026, 8, 31, 22, 30))
	s, err = postings.Sale("c3", "BRL", 2500, 0, SaoPaulo(2026, 8, 20, 9, 15))
	s.Description = "=SOMA(1;2)" // a formula, to a spreadsheet
	Post(t, l, s, err)
	s, err = postings.Payout("p1", "2026-08", "BRL", 500, SaoPaulo(2026, 8, 28, 17, 0))
	s.Description = `Repasse de agosto, "p1"; à vista`
	Post(t, l, s, err)
}

// PostSeptember books September 2026, after PostAugust:
//
//	c1  refund r1 of 40.00 (reverses 4.00 of commission)
//	c2  refund r1 of 10.00 (reverses 0.49)
//	c4  sale 30.00, fee 0.45, partner p1 at 10% (commission 3.00)
//	c1  refund r2 of 60.00, the rest (reverses the last 6.00)
//	    payout of 2.00 to p2
func PostSeptember(t testing.TB, l *postings.Ledger) {
	t.Helper()
	refund(t, l, "c1", "r1", "p1", 10000, 1000, 0, 4000, SaoPaulo(2026, 9, 3, 11, 0))
	refund(t, l, "c2", "r1", "p2", 4990, 249, 0, 1000, SaoPaulo(2026, 9, 10, 16, 45))
	s, err := postings.Sale("c4", "BRL", 3000, 45, SaoPaulo(2026, 9, 15, 8, 0))
	Post(t, l, s, err)
	Commission(t, l, "c4", "p1", 3000, 1000, SaoPaulo(2026, 9, 15, 8, 0))
	refund(t, l, "c1", "r2", "p1", 10000, 1000, 4000, 6000, SaoPaulo(2026, 9, 20, 10, 0))
	s, err = postings.Payout("p2", "2026-09", "BRL", 200, SaoPaulo(2026, 9, 25, 17, 0))
	Post(t, l, s, err)
}

// Commission books the commission of charge, a sale of amount, to partner
// at rate basis points.
func Commission(t testing.TB, l *postings.Ledger, charge, partner string, amount, rate int64, at time.Time) {
	t.Helper()
	s, ok, err := postings.CommissionSet(charge, partner, "BRL", amount, rate, at)
	if !ok && err == nil {
		t.Fatalf("commission of %s rounds to zero", charge)
	}
	Post(t, l, s, err)
}

// refund books a refund of charge and its commission reversal, as the
// webhook front does.
func refund(t testing.TB, l *postings.Ledger, charge, refundID, partner string, sale, comm, before, amount int64, at time.Time) {
	t.Helper()
	s, err := postings.Refund(charge, refundID, "BRL", amount, at)
	Post(t, l, s, err)
	r, ok, err := postings.CommissionReversalSet(charge, refundID, partner, "BRL",
		postings.ReversalAmount(comm, sale, before, amount), at)
	if ok || err != nil {
		Post(t, l, r, err)
	}
}
