package postings_test

import (
	"context"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/razao/razao/internal/benchledger"
	"github.com/razao/razao/internal/pgtest"
	"github.com/razao/razao/postings"
)

// The reports benchmark's ledger (internal/benchledger): 2,375,000 sales
// over 2024 and 2025, about 10 million postings in 3.8 million sets, 500
// partners.
const (
	benchSales    = 2_375_000
	benchPartners = 500
)

// BenchmarkFind measures the first page (100 sets, with their legs) of
// GET /v1/posting-sets for each filter alone on the 10-million-posting
// ledger. Building it takes several minutes and happens only when this
// benchmark runs (go test -run '^$' -bench Find -benchtime 20x
// ./postings/). Set RAZAO_BENCH_DB=<database name> to build into that
// database on the test server and keep it (about 3 GB), and to reuse it on
// the next run, as the reports benchmark does.
func BenchmarkFind(b *testing.B) {
	db := benchLedger(b)
	ctx := context.Background()
	d := func(s string) time.Time {
		t, _ := time.Parse(time.DateOnly, s)
		return t
	}
	utc := func(s string) time.Time {
		t, _ := time.Parse(time.RFC3339, s)
		return t
	}
	for _, c := range []struct {
		name string
		f    postings.Filter
	}{
		{"none", postings.Filter{}},
		{"charge", postings.Filter{Charge: "b1000006"}},
		{"partner", postings.Filter{Partner: "bp-042"}},
		{"kind/sale", postings.Filter{Kind: postings.KindSale}},
		{"kind/payout", postings.Filter{Kind: postings.KindPayout}},
		{"kind/adjustment-none", postings.Filter{Kind: postings.KindAdjustment}},
		{"account/income:revenue", postings.Filter{Account: "income:revenue"}},
		{"account/one-partner", postings.Filter{Account: "liabilities:commission-payable:bp-042"}},
		{"account/parent-of-500", postings.Filter{Account: "liabilities:commission-payable"}},
		{"account/assets", postings.Filter{Account: "assets"}},
		{"competence/one-month-2025-06", postings.Filter{CompetenceFrom: d("2025-06-01"), CompetenceTo: d("2025-06-30")}},
		{"competence/mid-month-edges-2024-03-10-to-2025-02-20", postings.Filter{CompetenceFrom: d("2024-03-10"), CompetenceTo: d("2025-02-20")}},
		{"competence/ten-days-2024-05", postings.Filter{CompetenceFrom: d("2024-05-11"), CompetenceTo: d("2024-05-20")}},
		{"competence/from-2000-to-2099", postings.Filter{CompetenceFrom: d("2000-01-01"), CompetenceTo: d("2099-12-31")}},
		{"effective/one-month-2025-06", postings.Filter{EffectiveFrom: utc("2025-06-01T03:00:00Z"), EffectiveTo: utc("2025-07-01T02:59:59Z")}},
		{"effective/mid-day-edges-2024-03-10-to-2025-02-20", postings.Filter{EffectiveFrom: utc("2024-03-10T17:30:00Z"), EffectiveTo: utc("2025-02-20T16:00:00Z")}},
		{"effective/one-hour", postings.Filter{EffectiveFrom: utc("2024-05-11T18:00:00Z"), EffectiveTo: utc("2024-05-11T19:00:00Z")}},
		{"amount/exact-4990", postings.Filter{AmountMin: 4990, AmountMax: 4990}},
		{"amount/40000-to-50000", postings.Filter{AmountMin: 40000, AmountMax: 50000}},
		{"amount/above-49990", postings.Filter{AmountMin: 49990}},
	} {
		p, err := postings.Find(ctx, db, c.f, "", 100)
		if err != nil {
			b.Fatal(c.name, err)
		}
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := postings.Find(ctx, db, c.f, "", 100); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(p.Sets)), "sets")
		})
	}
}

// benchLedger is the reports benchmark's: a fresh database, or the kept
// one RAZAO_BENCH_DB names, migrated and built once.
func benchLedger(b *testing.B) *sqlx.DB {
	b.Helper()
	db, _ := pgtest.KeptDatabase(b, func(db *sqlx.DB) bool {
		var built bool
		db.Get(&built, `SELECT EXISTS (SELECT 1 FROM month_snapshots WHERE month = $1)`, benchledger.LastClosed.First())
		return built
	}, func(db *sqlx.DB) { benchledger.Build(b, db, benchledger.Sales(b), benchPartners) })
	return db
}
