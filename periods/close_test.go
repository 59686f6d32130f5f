package periods_test

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/razao/razao/internal/ledgertest"
	"github.com/razao/razao/monthsums"
	"github.com/razao/razao/periods"
	"github.com/razao/razao/postings"
)

func TestCloseRules(t *testing.T) {
	t.Parallel()
	l, db := ledgertest.New(t)
	ctx := context.Background()
	s, err := postings.Sale("ch-1", "BRL", 1000, 0, ledgertest.SaoPaulo(2026, 8, 3, 10, 0))
	ledgertest.Post(t, l, s, err)
	sep, _ := periods.ParseMonth("2026-09")
	aug, _ := periods.ParseMonth("2026-08")
	if err := periods.Close(ctx, db, l.Calendar(), sep, time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC), "", monthsums.Closing); err == nil {
		t.Fatal("closed September while August is open")
	}
	// August ends at midnight in São Paulo, 03:00 UTC.
	if err := periods.Close(ctx, db, l.Calendar(), aug, time.Date(2026, 9, 1, 2, 59, 0, 0, time.UTC), "", monthsums.Closing); err == nil {
		t.Fatal("closed August before it ended in São Paulo")
	}
	if err := periods.Close(ctx, db, l.Calendar(), aug, time.Date(2026, 9, 1, 3, 0, 0, 0, time.UTC), "", monthsums.Closing); err != nil {
		t.Fatal(err)
	}
	if err := periods.Close(ctx, db, l.Calendar(), aug, time.Date(2026, 9, 1, 3, 0, 0, 0, time.UTC), "", monthsums.Closing); err == nil {
		t.Fatal("closed August twice")
	}
}

// A close and a posting into the same month race: the posting in flight
// holds the close lock shared, so the close waits for it; the set commits
// in its month and the month closes after it.
func TestCloseWaitsForPostingInFlight(t *testing.T) {
	t.Parallel()
	l, db := ledgertest.New(t)
	ctx := context.Background()
	tx := db.MustBegin()
	sale, _ := postings.Sale("ch-1", "BRL", 1000, 0, ledgertest.SaoPaulo(2026, 8, 31, 23, 59))
	if _, err := l.PostTx(ctx, tx, sale); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		done <- periods.Close(ctx, db, l.Calendar(), periods.Month{Year: 2026, Month: 8}, time.Date(2026, 9, 2, 0, 0, 0, 0, time.UTC), "", monthsums.Closing)
	}()
	ledgertest.WaitForLockWaiters(t, db, 1)
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	late, _ := postings.Sale("ch-2", "BRL", 1000, 0, ledgertest.SaoPaulo(2026, 8, 31, 23, 59))
	p := ledgertest.Post(t, l, late, nil)
	if got := p.Competence.Format(time.DateOnly); got != "2026-09-01" {
		t.Fatalf("posting after the close booked on %s, want 2026-09-01", got)
	}
	var aug int64
	db.Get(&aug, `SELECT count(*) FROM posting_sets WHERE competence_month = '2026-08-01'`)
	if aug != 1 {
		t.Fatalf("%d sets in August, want the one committed before the close", aug)
	}
}

func TestPeriodsOfAnEmptyLedger(t *testing.T) {
	t.Parallel()
	l, db := ledgertest.New(t)
	ps, err := periods.List(context.Background(), db, l.Calendar(), time.Now())
	if err != nil || len(ps) != 0 {
		t.Errorf("periods %+v, %v", ps, err)
	}
}

// TestCloseTxNeedsReadCommitted: in a REPEATABLE READ transaction the
// snapshot could miss sets committed while the close waited for its lock,
// so CloseTx refuses before closing anything.
func TestCloseTxNeedsReadCommitted(t *testing.T) {
	t.Parallel()
	l, db := ledgertest.New(t)
	ctx := context.Background()
	s, err := postings.Sale("ch-1", "BRL", 1000, 0, ledgertest.SaoPaulo(2026, 8, 3, 10, 0))
	ledgertest.Post(t, l, s, err)
	tx, err := db.BeginTxx(ctx, &sql.TxOptions{Isolation: sql.LevelRepeatableRead})
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if err := periods.CloseTx(ctx, tx, l.Calendar(), periods.Month{Year: 2026, Month: time.August}, time.Date(2026, 10, 2, 12, 0, 0, 0, time.UTC), "", monthsums.Closing); err == nil {
		t.Fatal("closed in a repeatable read transaction")
	}
	tx.Rollback()
	if ms := ledgertest.ClosedMonths(t, db); len(ms) != 0 {
		t.Errorf("closed months %v", ms)
	}
}

// List marks the one month a close would close now: the first open one,
// once it has ended. The console offered a close for every open month,
// each but that one refused with a 409 page after its confirmation.
func TestListMarksTheOneClosableMonth(t *testing.T) {
	t.Parallel()
	l, db := ledgertest.New(t)
	ctx := context.Background()
	for _, d := range []int{8, 9, 10} {
		s, err := postings.Sale(fmt.Sprintf("ch-%d", d), "BRL", 1000, 0, ledgertest.SaoPaulo(2026, time.Month(d), 3, 10, 0))
		ledgertest.Post(t, l, s, err)
	}
	closable := func(now time.Time) string {
		ps, err := periods.List(ctx, db, l.Calendar(), now)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, p := range ps {
			if p.Closable {
				out = append(out, p.Month)
			}
		}
		return strings.Join(out, ",")
	}
	if got := closable(time.Date(2026, 10, 15, 12, 0, 0, 0, time.UTC)); got != "2026-08" {
		t.Errorf("mid-October: closable %q, want 2026-08 alone", got)
	}
	if err := periods.Close(ctx, db, l.Calendar(), periods.Month{Year: 2026, Month: time.August}, time.Date(2026, 10, 15, 12, 0, 0, 0, time.UTC), "", monthsums.Closing); err != nil {
		t.Fatal(err)
	}
	if got := closable(time.Date(2026, 10, 15, 12, 0, 0, 0, time.UTC)); got != "2026-09" {
		t.Errorf("after August's close: closable %q, want 2026-09 alone", got)
	}
	if got := closable(time.Date(2026, 9, 20, 12, 0, 0, 0, time.UTC)); got != "" {
		t.Errorf("in September: closable %q, want none (September has not ended)", got)
	}
}

// A close typed by hand may be the first of a month after months that
// hold sets: those months are closed with it (sql/0035: no set can enter
// them). List says so, and offers the month after it, not one of them,
// which a close would refuse as already closed.
func TestListShowsMonthsBeforeTheLastCloseClosed(t *testing.T) {
	t.Parallel()
	l, db := ledgertest.New(t)
	ctx := context.Background()
	s, err := postings.Sale("ch-9", "BRL", 1000, 0, ledgertest.SaoPaulo(2026, 9, 3, 10, 0))
	ledgertest.Post(t, l, s, err)
	db.MustExec(`INSERT INTO closed_periods (month, closed_by) VALUES ('2026-11-01', 'by hand')`)
	ps, err := periods.List(ctx, db, l.Calendar(), time.Date(2027, 1, 15, 12, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range ps {
		got = append(got, fmt.Sprintf("%s:%s:%v:%v", p.Month, p.Status, p.ClosedAt != nil, p.Closable))
	}
	want := "2026-09:closed:false:false 2026-10:closed:false:false 2026-11:closed:true:false 2026-12:open:false:true 2027-01:open:false:false"
	if strings.Join(got, " ") != want {
		t.Fatalf("periods\n%s\nwant\n%s", strings.Join(got, " "), want)
	}
}
