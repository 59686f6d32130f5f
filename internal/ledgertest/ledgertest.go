// Package ledgertest holds the fixtures the ledger's tests share: a
// ledger over its own cloned database, posting that fails the test, São
// Paulo wall-clock times, and the closed months. Only tests import it.
package ledgertest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/razao/razao/internal/pgtest"
	"github.com/razao/razao/periods"
	"github.com/razao/razao/postings"
)

// New returns a ledger in the default time zone over a database of the
// test's own (pgtest.New), and that database.
func New(t testing.TB) (*postings.Ledger, *sqlx.DB) {
	t.Helper()
	db := pgtest.New(t)
	cal, err := periods.NewCalendar(periods.DefaultTimeZone)
	if err != nil {
		t.Fatal(err)
	}
	return postings.New(db, cal), db
}

var saoPaulo = mustLoad("America/Sao_Paulo")

func mustLoad(name string) *time.Location {
	loc, err := time.LoadLocation(name)
	if err != nil {
		panic(fmt.Sprintf("ledgertest: %v", err))
	}
	return loc
}

// SaoPaulo is a wall-clock time in São Paulo, the default time zone.
func SaoPaulo(y int, m time.Month, d, hh, mm int) time.Time {
	return time.Date(y, m, d, hh, mm, 0, 0, saoPaulo)
}

// Post posts s, built with err, and fails the test if either failed.
func Post(t testing.TB, l *postings.Ledger, s postings.Set, err error) postings.Posted {
	t.Helper()
	if err != nil {
		t.Fatalf("build %s: %v", s.IdempotencyKey, err)
	}
	p, err := l.Post(context.Background(), s)
	if err != nil {
		t.Fatalf("post %s: %v", s.IdempotencyKey, err)
	}
	return p
}

// ClosedMonths lists the closed months in order.
func ClosedMonths(t testing.TB, q sqlx.QueryerContext) []periods.Month {
	t.Helper()
	var ts []time.Time
	if err := sqlx.SelectContext(context.Background(), q, &ts, `SELECT month FROM closed_periods ORDER BY month`); err != nil {
		t.Fatalf("closed months: %v", err)
	}
	ms := make([]periods.Month, len(ts))
	for i, tm := range ts {
		ms[i] = periods.MonthOf(tm)
	}
	return ms
}

// WaitForLockWaiters blocks until n sessions of this database wait on a
// lock, so the test knows the overlap it wants has happened.
func WaitForLockWaiters(t testing.TB, db interface {
	Get(any, string, ...any) error
}, n int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var waiting int
		if err := db.Get(&waiting, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock'`); err != nil {
			t.Fatal(err)
		}
		if waiting >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("only %d of %d sessions waiting on the lock", waiting, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Count runs a query that returns one number and returns it.
func Count(t testing.TB, db *sqlx.DB, query string, args ...any) int64 {
	t.Helper()
	var n int64
	if err := db.Get(&n, query, args...); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}

// Balance returns the signed balance (debits positive) of code and all its
// descendants, in centavos, over every posting whose competence month is
// before the month given as YYYY-MM-01; an empty before means all time.
func Balance(t testing.TB, q sqlx.QueryerContext, code string, before string) int64 {
	t.Helper()
	return sum(t, q, code, "", before)
}

// MonthChange returns the signed sum of postings on code and its
// descendants whose competence month is month (YYYY-MM-01).
func MonthChange(t testing.TB, q sqlx.QueryerContext, code string, month string) int64 {
	t.Helper()
	m, err := time.Parse(time.DateOnly, month)
	if err != nil {
		t.Fatalf("change of %s: month %q: %v", code, month, err)
	}
	return sum(t, q, code, month, m.AddDate(0, 1, 0).Format(time.DateOnly))
}

// sum adds the postings on code and its descendants whose competence month
// is in [from, before); an empty bound is open.
func sum(t testing.TB, q sqlx.QueryerContext, code, from, before string) int64 {
	t.Helper()
	var total int64
	err := sqlx.GetContext(context.Background(), q, &total, `
		SELECT coalesce(sum(p.amount), 0)::bigint
		FROM postings p JOIN accounts a ON a.id = p.account_id
		WHERE (a.code = $1 OR starts_with(a.code, $1 || ':'))
		  AND ($2 = '' OR p.competence_month >= $2::date)
		  AND ($3 = '' OR p.competence_month < $3::date)`, code, from, before)
	if err != nil {
		t.Fatalf("sum of %s in [%s, %s): %v", code, from, before, err)
	}
	return total
}
