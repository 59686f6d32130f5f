package verify_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/razao/razao/internal/benchledger"
	"github.com/razao/razao/internal/pgtest"
	"github.com/razao/razao/verify"
)

// The benchmark ledger of the reports' benchmarks (internal/benchledger):
// about 10 million postings in 3.8 million sets over 2024-01..2025-12,
// 2024-01..2025-09 closed, the three months after open.
const benchPartners = 500

// BenchmarkVerify measures razao verify on the 10-million-posting ledger.
// Building it takes minutes and happens only when this benchmark runs
// (go test -run '^$' -bench Verify -benchtime 1x ./verify/); set
// RAZAO_BENCH_DB=<database name> to build it into that database and keep
// it for the next run.
func BenchmarkVerify(b *testing.B) {
	db := benchLedger(b)
	ctx := context.Background()
	// A full run first: it seals the closed months the incremental runs
	// hold to their seals. An incremental run reads the months after the
	// last one closed at that run (2025-10..12: 631,146 sets, 1,648,293
	// postings; the sets no run saw yet are among them, however many) set
	// by set, and every closed month once for its seal. Measured on
	// 2026-12-06 on two shared cores (load average 22-30): full 719 s,
	// incremental 290 s, of which the per-set checks 270 s (on tables not
	// partitioned, each still scans every posting for the window's), the
	// 21 seals 12 s, the closed months' balances 4 s.
	//
	// RAZAO_BENCH_VERIFY=incremental measures the incremental run alone:
	// on a ledger that has no clean run, after a stand-in for the full one
	// (StandInCleanRun: the run row and the seals a clean full run
	// records, no check run), for a ledger too large for a full run in the
	// time at hand (100 million postings: RAZAO_BENCH_SALES=23750000).
	only := os.Getenv("RAZAO_BENCH_VERIFY")
	if only == "incremental" {
		verify.StandInCleanRun(b, db)
	}
	for _, c := range []struct {
		name string
		run  func(context.Context, *sqlx.DB) (verify.Report, error)
	}{{"full", verify.Run}, {"incremental", verify.RunIncremental}} {
		if only != "" && only != c.name {
			continue
		}
		b.Run(c.name, func(b *testing.B) {
			var r verify.Report
			for b.Loop() {
				var err error
				if r, err = c.run(ctx, db); err != nil || !r.OK() {
					b.Fatal(err, r)
				}
			}
			var out strings.Builder
			r.WriteTo(&out)
			b.Logf("%s run's report:\n%s", c.name, out.String())
			b.ReportMetric(float64(r.Sets), "sets-checked")
			b.ReportMetric(float64(r.Postings), "postings-checked")
			b.ReportMetric(float64(r.MonthsSealed), "months-sealed")
		})
	}
}

func benchLedger(b *testing.B) *sqlx.DB {
	b.Helper()
	db, _ := pgtest.KeptDatabase(b, func(db *sqlx.DB) bool {
		var built bool
		db.Get(&built, `SELECT EXISTS (SELECT 1 FROM month_snapshots WHERE month = $1)`, benchledger.LastClosed.First())
		return built
	}, func(db *sqlx.DB) { benchledger.Build(b, db, benchledger.Sales(b), benchPartners) })
	registerCharges(b, db)
	return db
}

// registerCharges registers the bench ledger's charges (it books sets of
// charges b1, b2... that no charges row names, which verify would report
// 3.8 million times), with the figures their sets book. Once: a kept
// database keeps them.
func registerCharges(b *testing.B, db *sqlx.DB) {
	b.Helper()
	var done bool
	if err := db.Get(&done, `SELECT EXISTS (SELECT 1 FROM charges WHERE id = 'b1')`); err != nil || done {
		if err != nil {
			b.Fatal(err)
		}
		return
	}
	start := time.Now()
	res, err := db.Exec(`INSERT INTO charges (id, amount, partner, commission_bp, state, paid_amount, fee, commission, refunded_amount, request_hash)
		SELECT s.charge_id, s.amount, c.partner, CASE WHEN c.id IS NULL THEN 0 ELSE 1000 END,
			CASE WHEN r.total IS NULL THEN 'paid' ELSE 'partially_refunded' END, s.amount, 0,
			coalesce(c.amount, 0), coalesce(r.total, 0), 'bench'
		FROM posting_sets s
		LEFT JOIN posting_sets c ON c.kind = 'commission' AND c.charge_id = s.charge_id
		LEFT JOIN (SELECT charge_id, sum(amount) AS total FROM posting_sets WHERE kind = 'refund' GROUP BY 1) r ON r.charge_id = s.charge_id
		WHERE s.kind = 'sale'`)
	if err != nil {
		b.Fatalf("register the bench ledger's charges: %v", err)
	}
	n, _ := res.RowsAffected()
	db.MustExec(`VACUUM ANALYZE charges`)
	b.Logf("bench ledger: %d charges registered in %v", n, time.Since(start).Round(time.Millisecond))
}
