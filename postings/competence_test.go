package postings_test

import (
	"context"
	"testing"
	"time"

	"github.com/razao/razao/accounts"
	"github.com/razao/razao/postings"
)

func TestCompetenceIsTheSaoPauloDate(t *testing.T) {
	t.Parallel()
	cal, _ := postings.NewCalendar(postings.DefaultTimeZone)
	paid := saoPaulo(t, 2026, 8, 31, 22, 30)
	if paid.UTC().Month() != time.September {
		t.Fatalf("precondition: %v should be September in UTC", paid.UTC())
	}
	if got := cal.Month(paid).String(); got != "2026-08" {
		t.Fatalf("competence month = %s, want 2026-08", got)
	}
}

func TestSeptemberRefundLeavesAugustUnchanged(t *testing.T) {
	t.Parallel()
	l, db := newLedger(t)
	ctx := context.Background()
	s, err := postings.Sale("ch-1", "BRL", 4990, 0, saoPaulo(t, 2026, 8, 31, 22, 30))
	p := mustPost(t, l, s, err)
	if got := p.Competence.Format(time.DateOnly); got != "2026-08-31" {
		t.Fatalf("sale booked on %s, want 2026-08-31", got)
	}
	augRevenue := func() int64 {
		v, err := accounts.MonthChange(ctx, db, accounts.Revenue, "2026-08-01")
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	before := augRevenue()
	r, err := postings.Refund("ch-1", "rf-1", "BRL", 4990, saoPaulo(t, 2026, 9, 2, 10, 0))
	p = mustPost(t, l, r, err)
	if got := postings.MonthOf(p.Competence).String(); got != "2026-09" {
		t.Fatalf("refund booked in %s, want 2026-09", got)
	}
	if after := augRevenue(); after != before || after != -4990 {
		t.Fatalf("August revenue %d before, %d after the refund; want -4990 both", before, after)
	}
	sep, _ := accounts.MonthChange(ctx, db, accounts.Revenue, "2026-09-01")
	if sep != 4990 {
		t.Fatalf("September revenue change %d, want +4990 (the refund)", sep)
	}
}

func TestLateEventForClosedMonthBookedInFirstOpenMonth(t *testing.T) {
	t.Parallel()
	l, db := newLedger(t)
	ctx := context.Background()
	now := time.Date(2026, 10, 5, 12, 0, 0, 0, time.UTC)
	s, err := postings.Sale("ch-early", "BRL", 1000, 0, saoPaulo(t, 2026, 8, 3, 10, 0))
	mustPost(t, l, s, err)
	for _, m := range []string{"2026-08", "2026-09"} {
		month, _ := postings.ParseMonth(m)
		if err := l.CloseMonth(ctx, month, now); err != nil {
			t.Fatalf("close %s: %v", m, err)
		}
	}
	paidAt := saoPaulo(t, 2026, 8, 20, 9, 0)
	late, err := postings.Sale("ch-late", "BRL", 2500, 0, paidAt)
	p := mustPost(t, l, late, err)
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

func TestCloseMonthRules(t *testing.T) {
	t.Parallel()
	l, _ := newLedger(t)
	ctx := context.Background()
	s, err := postings.Sale("ch-1", "BRL", 1000, 0, saoPaulo(t, 2026, 8, 3, 10, 0))
	mustPost(t, l, s, err)
	sep, _ := postings.ParseMonth("2026-09")
	aug, _ := postings.ParseMonth("2026-08")
	if err := l.CloseMonth(ctx, sep, time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)); err == nil {
		t.Fatal("closed September while August is open")
	}
	// August ends at midnight in São Paulo, 03:00 UTC.
	if err := l.CloseMonth(ctx, aug, time.Date(2026, 9, 1, 2, 59, 0, 0, time.UTC)); err == nil {
		t.Fatal("closed August before it ended in São Paulo")
	}
	if err := l.CloseMonth(ctx, aug, time.Date(2026, 9, 1, 3, 0, 0, 0, time.UTC)); err != nil {
		t.Fatal(err)
	}
	if err := l.CloseMonth(ctx, aug, time.Date(2026, 9, 1, 3, 0, 0, 0, time.UTC)); err == nil {
		t.Fatal("closed August twice")
	}
}

// A close and a posting into the same month race: the posting in flight
// holds the close lock shared, so the close waits for it; the set commits
// in its month and the month closes after it.
func TestCloseWaitsForPostingInFlight(t *testing.T) {
	t.Parallel()
	l, db := newLedger(t)
	ctx := context.Background()
	tx := db.MustBegin()
	sale, _ := postings.Sale("ch-1", "BRL", 1000, 0, saoPaulo(t, 2026, 8, 31, 23, 59))
	if _, err := l.PostTx(ctx, tx, sale); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		done <- l.CloseMonth(ctx, postings.Month{Year: 2026, Month: 8}, time.Date(2026, 9, 2, 0, 0, 0, 0, time.UTC))
	}()
	waitForLockWaiters(t, db, 1)
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	late, _ := postings.Sale("ch-2", "BRL", 1000, 0, saoPaulo(t, 2026, 8, 31, 23, 59))
	p := mustPost(t, l, late, nil)
	if got := p.Competence.Format(time.DateOnly); got != "2026-09-01" {
		t.Fatalf("posting after the close booked on %s, want 2026-09-01", got)
	}
	var aug int64
	db.Get(&aug, `SELECT count(*) FROM posting_sets WHERE competence_month = '2026-08-01'`)
	if aug != 1 {
		t.Fatalf("%d sets in August, want the one committed before the close", aug)
	}
}
