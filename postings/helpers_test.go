package postings_test

import (
	"context"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/razao/razao/internal/pgtest"
	"github.com/razao/razao/postings"
)

func newLedger(t *testing.T) (*postings.Ledger, *sqlx.DB) {
	t.Helper()
	db := pgtest.New(t)
	cal, err := postings.NewCalendar(postings.DefaultTimeZone)
	if err != nil {
		t.Fatal(err)
	}
	return postings.New(db, cal), db
}

// saoPaulo returns a wall-clock time in São Paulo.
func saoPaulo(t *testing.T, y int, m time.Month, d, hh, mm int) time.Time {
	t.Helper()
	loc, err := time.LoadLocation("America/Sao_Paulo")
	if err != nil {
		t.Fatal(err)
	}
	return time.Date(y, m, d, hh, mm, 0, 0, loc)
}

func mustPost(t *testing.T, l *postings.Ledger, s postings.Set, err error) postings.Posted {
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

func count(t *testing.T, db *sqlx.DB, query string, args ...any) int64 {
	t.Helper()
	var n int64
	if err := db.Get(&n, query, args...); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}
