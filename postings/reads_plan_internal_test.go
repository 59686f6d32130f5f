package postings

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/lib/pq"

	"github.com/razao/razao/internal/pgtest"
	"github.com/razao/razao/periods"
)

// A page of partners finds each one's last payout through the payouts'
// own index (ix_posting_sets_partner_payouts, sql/0043), one backward
// probe per partner, never through the partner's every set
// (ix_posting_sets_partner) or the table.
func TestLastPayoutsReadsThePayoutsIndex(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	ctx := context.Background()
	cal, _ := periods.NewCalendar(periods.DefaultTimeZone)
	l := New(db, cal).WithClock(func() time.Time { return time.Date(2026, 9, 2, 12, 0, 0, 0, time.UTC) })
	at := time.Date(2026, 8, 5, 13, 0, 0, 0, time.UTC)
	for i := range 40 {
		s, ok, err := CommissionSet(fmt.Sprintf("c%d", i), "p1", "BRL", 10000, 1000, at)
		if err != nil || !ok {
			t.Fatal(err)
		}
		if _, err := l.Post(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	// Other partners' payouts too, as a ledger has: the payouts of all
	// (ix_posting_sets_kind_id, sql/0045) are then no shortcut to p1's.
	for i := range 42 {
		partner := "p1"
		if i >= 2 {
			partner = fmt.Sprintf("q%d", i)
		}
		s, err := Payout(partner, fmt.Sprintf("po-%d", i), "BRL", 100, at.Add(time.Duration(i)*time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.Post(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	last, err := LastPayouts(ctx, db, []string{"p1", "p2"})
	if err != nil || len(last) != 1 || last["p1"].Key == "" {
		t.Fatalf("last payouts: %v %+v, want p1's alone", err, last)
	}
	tx := db.MustBegin()
	defer tx.Rollback()
	tx.MustExec(`ANALYZE posting_sets`)
	// On a table this small the planner would read it whole, or through
	// a bitmap; forbidding both asks which index it would use.
	tx.MustExec(`SET LOCAL enable_seqscan = off; SET LOCAL enable_bitmapscan = off`)
	var plan string
	if err := tx.Get(&plan, `EXPLAIN (FORMAT JSON) `+lastPayoutsSQL, pq.StringArray{"p1", "p2"}); err != nil {
		t.Fatal(err)
	}
	var doc []struct{ Plan planNode }
	if err := json.Unmarshal([]byte(plan), &doc); err != nil {
		t.Fatal(err)
	}
	// posting_sets is partitioned by month (sql/0056): each partition is
	// read by its own index, named for the parent's.
	root := func(name string) string {
		var r string
		if err := tx.Get(&r, `SELECT coalesce(pg_partition_root($1::text::regclass)::text, $1::text)`, name); err != nil {
			t.Fatal(err)
		}
		return r
	}
	var scans []string
	doc[0].Plan.walk(func(n planNode) {
		if n.Relation != "" && root(n.Relation) == "posting_sets" {
			scans = append(scans, n.Type+" "+root(n.Index))
		}
	})
	if len(scans) == 0 {
		t.Fatalf("posting_sets not read\n%s", plan)
	}
	for _, s := range scans {
		if s != "Index Scan Backward ix_posting_sets_partner_payouts" && s != "Index Scan ix_posting_sets_partner_payouts" {
			t.Fatalf("posting_sets read as %v, want each partition by ix_posting_sets_partner_payouts\n%s", scans, plan)
		}
	}
}

type planNode struct {
	Type     string     `json:"Node Type"`
	Relation string     `json:"Relation Name"`
	Index    string     `json:"Index Name"`
	Plans    []planNode `json:"Plans"`
}

func (n planNode) walk(f func(planNode)) {
	f(n)
	for _, c := range n.Plans {
		c.walk(f)
	}
}
