package pgtest

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/razao/razao"
)

// KeptDatabase is the database a benchmark reads, and its URL. Without
// RAZAO_BENCH_DB, a fresh one of New's, filled by fill. With it, the
// database it names on the test server, kept between runs: created when
// missing, migrated (so a kept ledger takes a new migration as a
// production one would, its time logged), and filled only when built
// says it is not yet.
func KeptDatabase(tb testing.TB, built func(*sqlx.DB) bool, fill func(*sqlx.DB)) (*sqlx.DB, string) {
	tb.Helper()
	name := os.Getenv("RAZAO_BENCH_DB")
	if name == "" {
		db, url := NewWithURL(tb)
		fill(db)
		return db, url
	}
	base := ServerURL(tb)
	admin := sqlx.MustOpen("postgres", base)
	defer admin.Close()
	var exists bool
	if err := admin.Get(&exists, `SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)`, name); err != nil {
		tb.Fatal(err)
	}
	if !exists {
		admin.MustExec(`CREATE DATABASE ` + pq.QuoteIdentifier(name))
	}
	url := WithDatabase(base, name)
	db, err := razao.Open(context.Background(), url)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	start := time.Now()
	if applied, err := razao.Migrate(context.Background(), db); err != nil {
		tb.Fatal(err)
	} else if len(applied) > 0 {
		tb.Logf("migrations %v applied in %v", applied, time.Since(start).Round(time.Millisecond))
	}
	if !built(db) {
		fill(db)
	}
	return db, url
}
