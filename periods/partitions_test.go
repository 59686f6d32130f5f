package periods_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/razao/razao/internal/ledgertest"
	"github.com/razao/razao/monthsums"
	"github.com/razao/razao/periods"
	"github.com/razao/razao/postings"
)

// A close makes the partitions of the months ahead before it closes
// (sql/0056): PartitionsAhead months after the month it closes. A set of
// such a month is then written to its month's partition, not to the
// DEFAULT one.
func TestACloseMakesThePartitionsOfTheMonthsAhead(t *testing.T) {
	t.Parallel()
	l, db := ledgertest.New(t)
	ctx := context.Background()
	// The past partition ends where sql/0054 put it, when the test
	// database was migrated: the month before that bound is the last
	// month it holds. Close it, once it has ended.
	var bound time.Time
	if err := db.Get(&bound, `SELECT substring(pg_get_expr(relpartbound, oid) FROM 'TO \(''([0-9-]+)''\)')::date
		FROM pg_class WHERE oid = 'posting_sets_past'::regclass`); err != nil {
		t.Fatal(err)
	}
	last := periods.MonthOf(bound).Prev()
	partition := func(table string, m periods.Month) string {
		return fmt.Sprintf("%s_%04d_%02d", table, m.Year, int(m.Month))
	}
	exists := func(name string) bool {
		var ok bool
		if err := db.Get(&ok, `SELECT to_regclass($1) IS NOT NULL`, name); err != nil {
			t.Fatal(err)
		}
		return ok
	}
	if exists(partition("posting_sets", last.Next())) {
		t.Fatalf("%s exists before any close", partition("posting_sets", last.Next()))
	}
	now := last.End(l.Calendar().Location()).Add(time.Hour)
	if err := periods.Close(ctx, db, l.Calendar(), last, now, "", monthsums.Closing); err != nil {
		t.Fatal(err)
	}
	m := last
	for range periods.PartitionsAhead {
		m = m.Next()
		for _, table := range []string{"posting_sets", "postings"} {
			if !exists(partition(table, m)) {
				t.Errorf("no partition %s after closing %s", partition(table, m), last)
			}
		}
	}
	if exists(partition("posting_sets", m.Next())) {
		t.Errorf("%s made, beyond %d months ahead", partition("posting_sets", m.Next()), periods.PartitionsAhead)
	}
	s, err := postings.Sale("ch-ahead", "BRL", 1000, 0, last.Next().First().Add(36*time.Hour))
	p := ledgertest.Post(t, l.WithClock(func() time.Time { return last.Next().First().Add(48 * time.Hour) }), s, err)
	var in string
	if err := db.Get(&in, `SELECT tableoid::regclass::text FROM posting_sets WHERE id = $1`, p.ID); err != nil {
		t.Fatal(err)
	}
	if in != partition("posting_sets", last.Next()) {
		t.Errorf("the sale of %s is in %s", last.Next(), in)
	}
}

// ledger_ensure_month_partitions makes at most 36 months ahead and says
// so; a month before the partitions it has is nothing to make.
func TestEnsurePartitionsRefusesMonthsFarAhead(t *testing.T) {
	t.Parallel()
	_, db := ledgertest.New(t)
	for _, through := range []string{"9999-12-01", "2126-01-01"} {
		if _, err := db.Exec(`SELECT ledger_ensure_month_partitions($1)`, through); err == nil {
			t.Errorf("partitions through %s: made", through)
		}
	}
	if _, err := db.Exec(`SELECT ledger_ensure_month_partitions(NULL)`); err == nil {
		t.Error("partitions through NULL: made")
	}
	var made int
	if err := db.Get(&made, `SELECT ledger_ensure_month_partitions('0001-01-01')`); err != nil || made != 0 {
		t.Errorf("partitions through 0001-01: %d, %v; want none", made, err)
	}
}
