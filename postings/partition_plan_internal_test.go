package postings

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lib/pq"

	"github.com/razao/razao/internal/pgtest"
)

// A month's reads (the journal, a month's sets) and a page's legs read
// their months' partitions of posting_sets and postings (sql/0056) and no
// other: their statements, planned for their parameters as the driver's
// unnamed statements are, name only those partitions. By competence_month
// alone, posting_sets (partitioned by competence) and a set's postings
// (by set id) are read in every month's partition.
func TestMonthReadsReadTheirMonthsPartitionsOnly(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	// A migrated ledger's months after its past partition, as a close
	// makes them.
	db.MustExec(`SELECT ledger_ensure_month_partitions((date_trunc('month', now()) + interval '4 months')::date)`)
	var parts []string
	if err := db.Select(&parts, `SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
		WHERE i.inhparent = 'postings'::regclass AND c.relname ~ '^postings_[0-9]{4}_[0-9]{2}$' ORDER BY 1 LIMIT 2`); err != nil || len(parts) < 2 {
		t.Fatalf("month partitions: %v %v", parts, err)
	}
	month := func(part string) string {
		m, err := time.Parse("2006_01", strings.TrimPrefix(part, "postings_"))
		if err != nil {
			t.Fatal(err)
		}
		return m.Format(time.DateOnly)
	}
	m1, m2 := month(parts[0]), month(parts[1])
	suffix := func(m string) string { return strings.ReplaceAll(m[:7], "-", "_") }
	for _, c := range []struct {
		name string
		stmt string
		args []any
		want []string
	}{
		{"journal", MonthPostingsSQL, []any{m1}, []string{"posting_sets_" + suffix(m1), "postings_" + suffix(m1)}},
		{"month sets", monthSetsSQL, []any{m2, 0, 100}, []string{"posting_sets_" + suffix(m2)}},
		{"legs", legsInSQL, []any{pq.Array([]int64{1, 2}), pq.StringArray([]string{m1, m2})},
			[]string{"postings_" + suffix(m1), "postings_" + suffix(m2)}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var plan string
			if err := db.Get(&plan, `EXPLAIN (FORMAT JSON) `+c.stmt, c.args...); err != nil {
				t.Fatal(err)
			}
			var doc []struct{ Plan planNode }
			if err := json.Unmarshal([]byte(plan), &doc); err != nil {
				t.Fatal(err)
			}
			var read []string
			doc[0].Plan.walk(func(n planNode) {
				if strings.HasPrefix(n.Relation, "posting") && !slices.Contains(read, n.Relation) {
					read = append(read, n.Relation)
				}
			})
			slices.Sort(read)
			if !slices.Equal(read, c.want) {
				t.Errorf("reads %v, want %v only\n%s", read, c.want, plan)
			}
		})
	}
}
