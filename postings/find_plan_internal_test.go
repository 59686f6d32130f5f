package postings

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/razao/razao/internal/pgtest"
	"github.com/razao/razao/periods"
)

// Each filter of Find reads the index sql/0045 (or an earlier migration)
// gives it, in the listing's order, never the table: the statement Find
// builds for the filter alone is explained, with sequential and bitmap
// scans and sorts forbidden so that a tiny table is not read whole, and
// the scans of
// posting_sets and postings must include the filter's index. Dropping the
// index fails its case.
func TestFindReadsAnIndexPerFilter(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	ctx := context.Background()
	cal, _ := periods.NewCalendar(periods.DefaultTimeZone)
	l := New(db, cal).WithClock(func() time.Time { return time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC) })
	post := func(s Set, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.Post(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 300 {
		at := time.Date(2026, time.Month(8+i/100), 1+i%28, 13, 0, 0, 0, time.UTC)
		charge := fmt.Sprintf("c%d", i)
		post(Sale(charge, "BRL", int64(1000+i), 10, at))
		s, _, err := CommissionSet(charge, fmt.Sprintf("p%d", i%30), "BRL", int64(1000+i), 1000, at)
		post(s, err)
		if i%10 == 0 {
			post(Refund(charge, "r1", "BRL", 500, at.Add(time.Hour)))
		}
	}
	post(Payout("p1", "po-1", "BRL", 100, time.Date(2026, 10, 30, 13, 0, 0, 0, time.UTC)))
	post(Set{Kind: KindAdjustment, IdempotencyKey: "adj-1", Amount: 7, Currency: "BRL", EventAt: time.Date(2026, 10, 30, 14, 0, 0, 0, time.UTC),
		Legs: []Leg{{Account: "assets:cash", Amount: 7}, {Account: "equity:adjustments", Amount: -7}}}, nil)
	db.MustExec(`ANALYZE posting_sets; ANALYZE postings`)

	d := func(s string) time.Time {
		t, _ := time.Parse(time.DateOnly, s)
		return t
	}
	for _, c := range []struct {
		name  string
		f     Filter
		wants []string
	}{
		{"charge", Filter{Charge: "c7"}, []string{"ix_posting_sets_charge"}},
		{"partner", Filter{Partner: "p1"}, []string{"ix_posting_sets_partner_id"}},
		{"kind", Filter{Kind: KindAdjustment}, []string{"ix_posting_sets_kind_id"}},
		{"account", Filter{Account: "equity:adjustments"}, []string{"ix_postings_account_set"}},
		{"account-subtree", Filter{Account: "equity"}, []string{"ix_postings_account_set"}},
		{"competence", Filter{CompetenceFrom: d("2026-08-10"), CompetenceTo: d("2026-10-05")},
			[]string{"ix_posting_sets_competence_month", "ix_posting_sets_competence_id"}},
		{"effective", Filter{EffectiveFrom: time.Date(2026, 8, 10, 12, 0, 0, 0, time.UTC), EffectiveTo: time.Date(2026, 10, 5, 12, 0, 0, 0, time.UTC)},
			[]string{"ix_posting_sets_event_month", "ix_posting_sets_event_day"}},
		{"amount", Filter{AmountMin: 1005, AmountMax: 1006}, []string{"ix_posting_sets_amount_id"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			subtree, err := subtreeOf(ctx, db, c.f.Account)
			if err != nil {
				t.Fatal(err)
			}
			stmt, args, err := findStatement(ctx, db, c.f, subtree, math.MaxInt64, 101)
			if err != nil || stmt == "" {
				t.Fatalf("statement: %q %v", stmt, err)
			}
			scans, plan := explainScans(t, db, stmt, args...)
			for _, w := range c.wants {
				if !slices.Contains(scans, w) {
					t.Errorf("scans %v, want %s among them\n%s", scans, w, plan)
				}
			}
			if slices.Contains(scans, "") {
				t.Errorf("a table read without an index: %v\n%s", scans, plan)
			}
		})
	}
	t.Run("legs", func(t *testing.T) {
		scans, plan := explainScans(t, db, `SELECT p.posting_set_id, p.id, a.code AS account, p.currency, p.amount
			FROM postings p JOIN accounts a ON a.id = p.account_id
			WHERE p.posting_set_id = ANY($1) ORDER BY p.posting_set_id, p.id`, pq.Array([]int64{1, 2, 3}))
		if !slices.Contains(scans, "ix_postings_set") {
			t.Errorf("legs read as %v, want ix_postings_set\n%s", scans, plan)
		}
	})
}

// explainScans returns the index each scan of posting_sets or postings in
// stmt's plan reads ("" for none), with sequential and bitmap scans and
// sorts forbidden, and the plan.
func explainScans(t *testing.T, db *sqlx.DB, stmt string, args ...any) ([]string, string) {
	t.Helper()
	tx := db.MustBegin()
	defer tx.Rollback()
	// On a table this small the planner would read it whole, or sort a
	// bitmap's rows; forbidding both asks which index it reads in order,
	// as it does on a large ledger (BenchmarkFind).
	tx.MustExec(`SET LOCAL enable_seqscan = off; SET LOCAL enable_bitmapscan = off`)
	if strings.Contains(stmt, "LATERAL") {
		tx.MustExec(`SET LOCAL enable_sort = off`)
	}
	var plan string
	if err := tx.Get(&plan, `EXPLAIN (FORMAT JSON) `+stmt, args...); err != nil {
		t.Fatal(err)
	}
	var doc []struct{ Plan planNode }
	if err := json.Unmarshal([]byte(plan), &doc); err != nil {
		t.Fatal(err)
	}
	// posting_sets and postings are partitioned (sql/0056): a scan reads
	// a partition, by the partition's index, named for the parent's.
	root := func(name string) string {
		if name == "" {
			return ""
		}
		var r string
		if err := tx.Get(&r, `SELECT coalesce(pg_partition_root($1::text::regclass)::text, $1::text)`, name); err != nil {
			t.Fatal(err)
		}
		return r
	}
	var scans []string
	doc[0].Plan.walk(func(n planNode) {
		switch rel := root(n.Relation); {
		case n.Type == "Bitmap Index Scan":
			scans = append(scans, root(n.Index))
		case n.Type == "Bitmap Heap Scan":
			// Its index is the Bitmap Index Scan below it.
		case rel == "posting_sets" || rel == "postings":
			scans = append(scans, root(n.Index))
		}
	})
	return scans, plan
}
