package monthsums_test

import (
	"context"
	"reflect"
	"testing"

	"github.com/jmoiron/sqlx"

	"github.com/razao/razao/internal/ledgertest"
	"github.com/razao/razao/internal/pgtest"
	"github.com/razao/razao/monthsums"
	"github.com/razao/razao/periods"
	"github.com/razao/razao/postings"
	"github.com/razao/razao/reports"
	"github.com/razao/razao/verify"
)

// books is what the reports say of a month.
type books struct {
	TB     reports.TrialBalanceReport
	Income reports.Income
	// Series of cash and revenue from the month before to the month.
	Cash, Revenue reports.Series
}

func readBooks(t *testing.T, q sqlx.QueryerContext, months ...periods.Month) []books {
	t.Helper()
	ctx := context.Background()
	var out []books
	for _, m := range months {
		tb, err := reports.TrialBalance(ctx, q, monthsums.Books{}, m)
		if err != nil {
			t.Fatal(err)
		}
		inc, err := reports.IncomeStatement(ctx, q, monthsums.Books{}, m)
		if err != nil {
			t.Fatal(err)
		}
		var series [2]reports.Series
		for i, code := range []string{"assets:cash", "income:revenue"} {
			if series[i], err = reports.AccountSeries(ctx, q, monthsums.Books{}, code, m.Prev(), m); err != nil {
				t.Fatal(err)
			}
		}
		out = append(out, books{tb, inc, series[0], series[1]})
	}
	return out
}

// fromPostings is what the reports say with no month sums stored: read in
// a transaction that deletes them, rolled back.
func fromPostings(t *testing.T, db *sqlx.DB, months ...periods.Month) []books {
	t.Helper()
	tx, err := db.Beginx()
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if _, err := tx.Exec(`DELETE FROM month_sums`); err != nil {
		t.Fatal(err)
	}
	return readBooks(t, tx, months...)
}

func refresh(t *testing.T, db *sqlx.DB) int {
	t.Helper()
	n, err := monthsums.Refresh(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func sameBooks(t *testing.T, what string, got, want []books) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s: the reports differ from the postings' sums\n got: %+v\nwant: %+v", what, got, want)
	}
}

// The month sums change how the reports read, never what they say: with
// sums stored, with sets booked after them, and after a month closes.
func TestMonthSumsGiveThePostingsFigures(t *testing.T) {
	t.Parallel()
	l, db := ledgertest.New(t)
	ledgertest.PostAugust(t, l)
	ledgertest.PostSeptember(t, l)
	months := []periods.Month{jul2026, aug2026, sep2026, oct2026}
	want := fromPostings(t, db, months...)
	if n := refresh(t, db); n != 2 {
		t.Fatalf("refresh stored %d months, want August and September", n)
	}
	if n := ledgertest.Count(t, db, `SELECT count(*) FROM month_sum_lines`); n == 0 {
		t.Fatal("no month sum lines stored")
	}
	sameBooks(t, "sums stored", readBooks(t, db, months...), want)
	if n := refresh(t, db); n != 0 {
		t.Fatalf("a second refresh with nothing new stored %d months", n)
	}

	// Sets after the sums: read as their delta, then folded in.
	s, err := postings.Sale("c9", "BRL", 7000, 100, ledgertest.SaoPaulo(2026, 9, 28, 9, 0))
	ledgertest.Post(t, l, s, err)
	ledgertest.Commission(t, l, "c9", "p2", 7000, 500, ledgertest.SaoPaulo(2026, 9, 28, 9, 0))
	want = fromPostings(t, db, months...)
	sameBooks(t, "a delta since the sums", readBooks(t, db, months...), want)
	if n := refresh(t, db); n != 1 {
		t.Fatalf("refresh after a September sale stored %d months, want September", n)
	}
	sameBooks(t, "after the delta was folded in", readBooks(t, db, months...), want)

	ctx := context.Background()
	if err := periods.Close(ctx, db, l.Calendar(), aug2026, afterSeptember, "test", monthsums.Closing); err != nil {
		t.Fatal(err)
	}
	// The snapshot, written from the sums, is what the postings say.
	if bad, err := verify.CheckSnapshots(ctx, db); err != nil || len(bad) != 0 {
		t.Fatalf("snapshot written from month sums: %v %+v", err, bad)
	}
	want = fromPostings(t, db, months...)
	sameBooks(t, "after closing August", readBooks(t, db, months...), want)
}

// A set's id says nothing of when it commits: a set that took a lower id
// and commits after the sums were refreshed is still counted, as the delta
// of a snapshot that did not see it. The gate is a transaction holding the
// first set uncommitted while a later set commits and the sums refresh.
func TestMonthSumsCountASetCommittedAfterAHigherID(t *testing.T) {
	t.Parallel()
	l, db := ledgertest.New(t)
	ledgertest.PostAugust(t, l)
	refresh(t, db)
	ctx := context.Background()

	gate, err := db.BeginTxx(ctx, periods.WriteTx())
	if err != nil {
		t.Fatal(err)
	}
	defer gate.Rollback()
	s, err := postings.Sale("c-early", "BRL", 1234, 0, ledgertest.SaoPaulo(2026, 8, 10, 9, 0))
	if err != nil {
		t.Fatal(err)
	}
	early, err := l.PostTx(ctx, gate, s)
	if err != nil {
		t.Fatal(err)
	}
	s, err = postings.Sale("c-late", "BRL", 4321, 0, ledgertest.SaoPaulo(2026, 8, 11, 9, 0))
	late := ledgertest.Post(t, l, s, err)
	if late.ID <= early.ID {
		t.Fatalf("ids %d then %d: the later set should have the higher id", early.ID, late.ID)
	}
	// The refresh sees the higher id and not the lower, still in flight.
	if n := refresh(t, db); n != 1 {
		t.Fatalf("refresh stored %d months, want August", n)
	}
	sameBooks(t, "with the lower id in flight", readBooks(t, db, aug2026, sep2026), fromPostings(t, db, aug2026, sep2026))
	if err := gate.Commit(); err != nil {
		t.Fatal(err)
	}
	want := fromPostings(t, db, aug2026, sep2026)
	if want[0].Income.SalesCount != 5 {
		t.Fatalf("August has %d sales, want 5 with both late ones", want[0].Income.SalesCount)
	}
	sameBooks(t, "the lower id committed after the sums", readBooks(t, db, aug2026, sep2026), want)
	refresh(t, db)
	sameBooks(t, "refreshed again", readBooks(t, db, aug2026, sep2026), want)
}

// verify's comparison finds stored sums that the postings do not back,
// and refreshes running at once (replicas) store each month once, without
// failing.
func TestMonthSumsCheckedAndRefreshedConcurrently(t *testing.T) {
	t.Parallel()
	l, db := ledgertest.New(t)
	ledgertest.PostAugust(t, l)
	ledgertest.PostSeptember(t, l)
	ctx := context.Background()
	errs := make(chan error, 4)
	for i := 0; i < cap(errs); i++ {
		go func() { _, err := monthsums.Refresh(ctx, db); errs <- err }()
	}
	for i := 0; i < cap(errs); i++ {
		if err := <-errs; err != nil {
			t.Fatalf("concurrent refresh: %v", err)
		}
	}
	if n := ledgertest.Count(t, db, `SELECT count(*) FROM month_sums`); n != 2 {
		t.Fatalf("%d months stored, want 2", n)
	}
	if bad, err := verify.CheckMonthSums(ctx, db); err != nil || len(bad) != 0 {
		t.Fatalf("fresh sums: %v %+v", err, bad)
	}
	if _, err := db.Exec(`UPDATE month_sum_lines SET debits = debits + 1
		WHERE month = '2026-08-01' AND account_id = (SELECT id FROM accounts WHERE code = 'assets:cash') AND kind = 'sale'`); err != nil {
		t.Fatal(err)
	}
	bad, err := verify.CheckMonthSums(ctx, db)
	if err != nil || len(bad) != 1 || bad[0].Month != "2026-08" || bad[0].Snapshot != bad[0].Ledger+1 {
		t.Fatalf("tampered sums: %v %+v", err, bad)
	}
}

// A role that can merely connect cannot stop the refresh: the refresh
// takes the month's row, which only a role that may write month_sums can
// lock (an advisory lock could be held by anyone, leaving the month
// without sums).
func TestMonthSumsRefreshCannotBeHeldByAnotherRole(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, url := pgtest.NewWithURL(t)
	cal, err := periods.NewCalendar(periods.DefaultTimeZone)
	if err != nil {
		t.Fatal(err)
	}
	ledgertest.PostAugust(t, postings.New(db, cal))
	other := pgtest.NewRoles(t, db, url)
	conn := other.Connect(other.Create("bystander", ""))
	held, err := conn.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	if _, err := held.ExecContext(ctx, `SELECT pg_advisory_lock(hashtextextended('razao-month-sums:' || $1, 0))`, aug2026.String()); err != nil {
		t.Fatal(err)
	}
	if _, err := monthsums.Refresh(ctx, db); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := db.Get(&n, `SELECT count(*) FROM month_sums WHERE month = $1`, aug2026.First()); err != nil || n != 1 {
		t.Fatalf("August's sums while another role holds the lock: %d rows (%v), want 1", n, err)
	}
}
