package postings

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/razao/razao/accounts"
	"github.com/razao/razao/internal/pgtest"
	"github.com/razao/razao/periods"
)

// preloadSets is how many posting sets the benchmark database holds before
// measuring: empty tables give plans and index depths that mislead.
const preloadSets = 300_000

// BenchmarkPostingSet measures sale + commission posting sets written in one
// transaction by parallel writers, through the ledger (Go validation and
// every trigger), next to a baseline that runs the same INSERT statement
// into the same tables with the ledger's triggers disabled and no Go
// checks. The ratio of the two is what the guarantees cost.
func BenchmarkPostingSet(b *testing.B) {
	db := pgtest.New(b)
	db.SetMaxOpenConns(16)
	cal, _ := periods.NewCalendar(periods.DefaultTimeZone)
	l := New(db, cal)
	preload(b, db, preloadSets)
	var seq atomic.Int64
	at := time.Date(2026, 8, 10, 12, 0, 0, 0, time.UTC)

	b.Run("ledger", func(b *testing.B) {
		runParallelTx(b, db, func(ctx context.Context, tx *sqlx.Tx) error {
			sale, comm := benchSets(seq.Add(1), at)
			_, err := l.PostAllTx(ctx, tx, sale, comm)
			return err
		})
	})

	b.Run("baseline-no-triggers", func(b *testing.B) {
		setTriggers(b, db, "DISABLE TRIGGER USER")
		defer setTriggers(b, db, "ENABLE ALWAYS TRIGGER USER")
		ids := map[string]int64{}
		for _, code := range []string{"assets:cash", "income:revenue", "expenses:commission", "liabilities:commission-payable:bench"} {
			a, err := accounts.Ensure(context.Background(), db, code)
			if err != nil {
				b.Fatal(err)
			}
			ids[code] = a.ID
		}
		runParallelTx(b, db, func(ctx context.Context, tx *sqlx.Tx) error {
			sale, comm := benchSets(seq.Add(1), at)
			var in []pending
			for _, s := range []Set{sale, comm} {
				var legs resolvedLegs
				for _, leg := range s.Legs {
					legs.accountIDs = append(legs.accountIDs, ids[leg.Account])
					legs.currencies = append(legs.currencies, "BRL")
					legs.amounts = append(legs.amounts, leg.Amount)
				}
				in = append(in, pending{set: &s, competence: cal.Date(s.EventAt), hash: "baseline", legs: legs})
			}
			stmt, err := l.insert.In(ctx, tx)
			if err != nil {
				return err
			}
			_, err = insertSets(ctx, stmt, in)
			return err
		})
	})
}

func benchSets(n int64, at time.Time) (Set, Set) {
	charge := fmt.Sprintf("bench-%d", n)
	sale, _ := Sale(charge, "BRL", 4990, 0, at)
	comm, _, _ := CommissionSet(charge, "bench", "BRL", 4990, 1000, at)
	return sale, comm
}

// runParallelTx runs fn in its own committed transaction b.N times over
// parallel writers and reports posting sets (two per transaction) per second.
func runParallelTx(b *testing.B, db *sqlx.DB, fn func(context.Context, *sqlx.Tx) error) {
	b.Helper()
	b.SetParallelism(4) // 8 writers on 2 cores: the server, not Go, is the limit
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		ctx := context.Background()
		for pb.Next() {
			tx, err := db.BeginTxx(ctx, nil)
			if err != nil {
				b.Error(err)
				return
			}
			if err := fn(ctx, tx); err != nil {
				tx.Rollback()
				b.Error(err)
				return
			}
			if err := tx.Commit(); err != nil {
				b.Error(MapError(err))
				return
			}
		}
	})
	b.ReportMetric(float64(2*b.N)/time.Since(start).Seconds(), "sets/s")
}

func setTriggers(b *testing.B, db *sqlx.DB, action string) {
	b.Helper()
	for _, table := range []string{"posting_sets", "postings"} {
		if action == "ENABLE ALWAYS TRIGGER USER" {
			// ENABLE ALWAYS takes trigger names, not USER.
			var names []string
			if err := db.Select(&names, `SELECT tgname FROM pg_trigger WHERE tgrelid = $1::regclass AND NOT tgisinternal`, table); err != nil {
				b.Fatal(err)
			}
			for _, n := range names {
				db.MustExec(fmt.Sprintf(`ALTER TABLE %s ENABLE ALWAYS TRIGGER %s`, table, n))
			}
			continue
		}
		db.MustExec(fmt.Sprintf(`ALTER TABLE %s %s`, table, action))
	}
}

// preload writes n balanced sale sets over 24 months with plain SQL (the
// triggers are off for the bulk load only) and analyses the tables.
func preload(b *testing.B, db *sqlx.DB, n int) {
	b.Helper()
	setTriggers(b, db, "DISABLE TRIGGER USER")
	db.MustExec(`INSERT INTO posting_sets (id, kind, idempotency_key, amount, currency, competence, event_at, charge_id, content_hash)
		SELECT g, 'sale', 'preload:' || g, 1000 + g % 5000, 'BRL', date '2025-01-01' + (g % 720), now(), 'preload-' || g, 'preload'
		FROM generate_series(1, $1) g`, n)
	db.MustExec(`INSERT INTO postings (posting_set_id, account_id, currency, amount, competence_month)
		SELECT s.id, a.id, 'BRL', CASE WHEN a.code = 'assets:cash' THEN s.amount ELSE -s.amount END, s.competence_month
		FROM posting_sets s CROSS JOIN accounts a WHERE a.code IN ('assets:cash', 'income:revenue')`)
	db.MustExec(`SELECT setval('posting_sets_id_seq', $1)`, n)
	setTriggers(b, db, "ENABLE ALWAYS TRIGGER USER")
	db.MustExec(`ANALYZE`)
}
