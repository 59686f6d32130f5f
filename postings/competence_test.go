package postings_test

import (
	"context"
	"testing"
	"time"

	"github.com/razao/razao/accounts"
	"github.com/razao/razao/internal/ledgertest"
	"github.com/razao/razao/monthsums"
	"github.com/razao/razao/periods"
	"github.com/razao/razao/postings"
)

func TestSeptemberRefundLeavesAugustUnchanged(t *testing.T) {
	t.Parallel()
	l, db := ledgertest.New(t)
	s, err := postings.Sale("ch-1", "BRL", 4990, 0, ledgertest.SaoPaulo(2026, 8, 31, 22, 30))
	p := ledgertest.Post(t, l, s, err)
	if got := p.Competence.Format(time.DateOnly); got != "2026-08-31" {
		t.Fatalf("sale booked on %s, want 2026-08-31", got)
	}
	augRevenue := func() int64 { return ledgertest.MonthChange(t, db, accounts.Revenue, "2026-08-01") }
	before := augRevenue()
	r, err := postings.Refund("ch-1", "rf-1", "BRL", 4990, ledgertest.SaoPaulo(2026, 9, 2, 10, 0))
	p = ledgertest.Post(t, l, r, err)
	if got := periods.MonthOf(p.Competence).String(); got != "2026-09" {
		t.Fatalf("refund booked in %s, want 2026-09", got)
	}
	if after := augRevenue(); after != before || after != -4990 {
		t.Fatalf("August revenue %d before, %d after the refund; want -4990 both", before, after)
	}
	sep := ledgertest.MonthChange(t, db, accounts.Revenue, "2026-09-01")
	if sep != 4990 {
		t.Fatalf("September revenue change %d, want +4990 (the refund)", sep)
	}
}

func TestLateEventForClosedMonthBookedInFirstOpenMonth(t *testing.T) {
	t.Parallel()
	l, db := ledgertest.New(t)
	ctx := context.Background()
	now := time.Date(2026, 10, 5, 12, 0, 0, 0, time.UTC)
	s, err := postings.Sale("ch-early", "BRL", 1000, 0, ledgertest.SaoPaulo(2026, 8, 3, 10, 0))
	ledgertest.Post(t, l, s, err)
	for _, m := range []string{"2026-08", "2026-09"} {
		month, _ := periods.ParseMonth(m)
		if err := periods.Close(ctx, db, l.Calendar(), month, now, "", monthsums.Closing); err != nil {
			t.Fatalf("close %s: %v", m, err)
		}
	}
	paidAt := ledgertest.SaoPaulo(2026, 8, 20, 9, 0)
	late, err := postings.Sale("ch-late", "BRL", 2500, 0, paidAt)
	p := ledgertest.Post(t, l, late, err)
	if got := p.Competence.Format(time.DateOnly); got != "2026-10-01" {
		t.Fatalf("late sale booked on %s, want 2026-10-01", got)
	}
	var eventAt time.Time
	if err := db.Get(&eventAt, `SELECT event_at FROM posting_sets WHERE id = $1`, p.ID); err != nil {
		t.Fatal(err)
	}
	if !eventAt.Equal(paidAt) {
		t.Fatalf("event_at = %v, want the original %v", eventAt, paidAt)
	}
}
