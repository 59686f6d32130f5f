package postings

import (
	"context"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/razao/razao/internal/pgtest"
)

// BenchmarkFindPlans logs, for each list filter of BenchmarkFind, the
// plan of Find's statement as run (EXPLAIN ANALYZE, the partitions it
// read, how many were pruned), and of the page's legs: how a filter
// reads a partitioned ledger. On a kept bench ledger only:
//
//	RAZAO_BENCH_PLANS=1 RAZAO_BENCH_DB=<database> go test -run '^$' -bench FindPlans -benchtime 1x -v ./postings/
func BenchmarkFindPlans(b *testing.B) {
	if os.Getenv("RAZAO_BENCH_PLANS") == "" || os.Getenv("RAZAO_BENCH_DB") == "" {
		b.Skip("set RAZAO_BENCH_PLANS=1 and RAZAO_BENCH_DB to a kept bench ledger")
	}
	db, _ := pgtest.KeptDatabase(b, func(*sqlx.DB) bool { return true }, func(*sqlx.DB) {})
	ctx := context.Background()
	d := func(s string) time.Time {
		t, _ := time.Parse(time.DateOnly, s)
		return t
	}
	utc := func(s string) time.Time {
		t, _ := time.Parse(time.RFC3339, s)
		return t
	}
	only := os.Getenv("RAZAO_BENCH_PLANS")
	for _, c := range []struct {
		name string
		f    Filter
	}{
		{"none", Filter{}},
		{"charge", Filter{Charge: "b1000006"}},
		{"partner", Filter{Partner: "bp-042"}},
		{"kind/payout", Filter{Kind: KindPayout}},
		{"account/one-partner", Filter{Account: "liabilities:commission-payable:bp-042"}},
		{"competence/one-month-2025-06", Filter{CompetenceFrom: d("2025-06-01"), CompetenceTo: d("2025-06-30")}},
		{"competence/ten-days-2024-05", Filter{CompetenceFrom: d("2024-05-11"), CompetenceTo: d("2024-05-20")}},
		{"effective/one-hour", Filter{EffectiveFrom: utc("2024-05-11T18:00:00Z"), EffectiveTo: utc("2024-05-11T19:00:00Z")}},
		{"amount/exact-4990", Filter{AmountMin: 4990, AmountMax: 4990}},
	} {
		if only != "1" && !strings.Contains(c.name, only) {
			continue
		}
		subtree, err := subtreeOf(ctx, db, c.f.Account)
		if err != nil {
			b.Fatal(err)
		}
		stmt, args, err := findStatement(ctx, db, c.f, subtree, math.MaxInt64, 101)
		if err != nil {
			b.Fatal(err)
		}
		b.Logf("%s:\n%s", c.name, explainAnalyze(b, db, stmt, args...))
		var sets []StoredSet
		if err := sqlx.SelectContext(ctx, db, &sets, stmt, args...); err != nil {
			b.Fatal(err)
		}
		if len(sets) > 100 {
			sets = sets[:100]
		}
		lstmt, largs := legsStatement(sets, false)
		b.Logf("%s, legs by set id alone (before):\n%s", c.name, explainAnalyze(b, db, lstmt, largs...))
		lstmt, largs = legsStatement(sets, true)
		b.Logf("%s, legs by set id and month (WithLegs):\n%s", c.name, explainAnalyze(b, db, lstmt, largs...))
	}
}

func explainAnalyze(b *testing.B, db *sqlx.DB, stmt string, args ...any) string {
	b.Helper()
	var lines []string
	if err := db.Select(&lines, `EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY ON) `+stmt, args...); err != nil {
		b.Fatal(err)
	}
	return strings.Join(lines, "\n")
}

// legsStatement is the statement of the page's legs: by set id alone
// (LegsOf, as WithLegs read them before), or with their months (legsIn).
func legsStatement(sets []StoredSet, months bool) (string, []any) {
	ids := make([]int64, len(sets))
	var ms []string
	for i, s := range sets {
		ids[i] = s.ID
		ms = append(ms, s.Competence.UTC().Format("2006-01")+"-01")
	}
	if !months {
		return `SELECT p.posting_set_id, p.id, a.code AS account, p.currency, p.amount
		FROM postings p JOIN accounts a ON a.id = p.account_id
		WHERE p.posting_set_id = ANY($1) ORDER BY p.posting_set_id, p.id`, []any{pq.Array(ids)}
	}
	return `SELECT p.posting_set_id, p.id, a.code AS account, p.currency, p.amount
		FROM postings p JOIN accounts a ON a.id = p.account_id
		WHERE p.posting_set_id = ANY($1) AND p.competence_month = ANY($2::date[]) ORDER BY p.posting_set_id, p.id`,
		[]any{pq.Array(ids), pq.StringArray(ms)}
}
