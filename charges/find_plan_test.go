package charges_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/razao/razao/charges"
	"github.com/razao/razao/inbox"
	"github.com/razao/razao/internal/benchledger"
	"github.com/razao/razao/internal/pgtest"
)

// planCharges is how many charges the plan tests load: enough that,
// analysed, reading a table whole costs the planner more than any index.
const planCharges = 60_000

// filterCase is one filter of the listing and the indexes its plan must
// read: each in want, and nothing of charges or the inbox read whole.
// drop is the index of sql/0044 it needs, which the refusal test drops.
type filterCase struct {
	name  string
	f     charges.Filter
	after *charges.Position
	want  []string
	drop  string
}

func ptr[T any](v T) *T { return &v }

// filterCases are the listing's filters on benchledger.Charges' charges,
// each with a value that selects few of them (a rare state, one merchant
// of 50, a day, one amount): where a filter's own index matters.
func filterCases() []filterCase {
	day := benchledger.ChargeCreated(30_000)
	g := 30_001 // paid, its payment through bcb-pix (g mod 3 = 1)
	return []filterCase{
		{name: "no filter", want: []string{"ix_charges_created"}},
		{name: "state", f: charges.Filter{State: charges.StateFailed}, want: []string{"ix_charges_state_created"}, drop: "ix_charges_state_created"},
		{name: "state after a cursor", f: charges.Filter{State: charges.StateRefunded},
			after: &charges.Position{At: benchledger.ChargeCreated(40_003), ID: "ch-40003"},
			want:  []string{"ix_charges_state_created"}, drop: "ix_charges_state_created"},
		{name: "merchant", f: charges.Filter{Merchant: "m-7"}, want: []string{"ix_charges_merchant_created"}, drop: "ix_charges_merchant_created"},
		{name: "partner", f: charges.Filter{Partner: "p-42"}, want: []string{"ix_charges_partner_created"}, drop: "ix_charges_partner_created"},
		{name: "created range", f: charges.Filter{CreatedFrom: ptr(day), CreatedTo: ptr(day.Add(24 * time.Hour))},
			want: []string{"ix_charges_created"}, drop: "ix_charges_created"},
		{name: "paid range", f: charges.Filter{PaidFrom: ptr(day), PaidTo: ptr(day.Add(time.Hour))},
			want: []string{"ix_charges_paid_at"}, drop: "ix_charges_paid_at"},
		{name: "amount range", f: charges.Filter{AmountMin: ptr(int64(4990)), AmountMax: ptr(int64(5000))},
			want: []string{"ix_charges_amount"}, drop: "ix_charges_amount"},
		{name: "txid", f: charges.Filter{TxID: fmt.Sprintf("ch-%d", g)}, want: []string{"charges_pkey"}},
		{name: "endToEndId", f: charges.Filter{EndToEndID: fmt.Sprintf("E%d", g)},
			want: []string{"ix_charges_paid_ref", "charges_pkey", "uq_charges_psp_ref", "ix_inbox_event_id"}, drop: "ix_inbox_event_id"},
		{name: "trackId", f: charges.Filter{TrackID: fmt.Sprintf("track-%d", g-1)},
			want: []string{"ix_charges_paid_ref", "charges_pkey", "uq_charges_psp_ref", "ix_inbox_event_id"}, drop: "ix_inbox_event_id"},
		{name: "webhook-id", f: charges.Filter{WebhookID: fmt.Sprintf("msg_%d", g+1)},
			want: []string{"ix_charges_paid_ref", "charges_pkey", "uq_charges_psp_ref", "ix_inbox_event_id"}, drop: "ix_inbox_event_id"},
	}
}

// Every filter of GET /v1/charges reads an index of its own, never a
// table whole: on 60,000 analysed charges and their deliveries, the
// statement Find sends for each (custom-planned, as lib/pq's unnamed
// statements are) reads the indexes the filter needs (sql/0044's, and
// the references' older ones) and no Seq Scan of charges or the inbox.
// The check can fail: with each of sql/0044's indexes dropped (in a
// transaction rolled back), the filter's plan reads another index in the
// listing's order and filters it, or reads a table whole, and is refused.
func TestFindReadsEachFiltersIndex(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	benchledger.Charges(t, db, planCharges)
	for _, c := range filterCases() {
		if err := checkFindPlan(explainFind(t, db, c, ""), c.want); err != nil {
			t.Errorf("%s: %v", c.name, err)
		}
		if c.drop == "" {
			continue
		}
		plan := explainFind(t, db, c, `DROP INDEX `+c.drop)
		err := checkFindPlan(plan, c.want)
		t.Logf("%s without %s: refused: %.200v", c.name, c.drop, err)
		if err == nil {
			t.Errorf("%s: the check passed a plan without %s:\n%s", c.name, c.drop, plan)
		}
	}
}

// explainFind returns the EXPLAIN (FORMAT JSON) of Find's statement for
// c, a page of 101, after before (if any), in a transaction rolled back.
func explainFind(t *testing.T, db *sqlx.DB, c filterCase, before string) string {
	t.Helper()
	if err := c.f.Validate(0); err != nil {
		t.Fatalf("%s: %v", c.name, err)
	}
	q, args := charges.FindSQL(inbox.ChargeRefs{}, c.f, c.after, 101)
	tx := db.MustBegin()
	defer tx.Rollback()
	if before != "" {
		tx.MustExec(before)
	}
	var plan string
	if err := tx.Get(&plan, `EXPLAIN (FORMAT JSON) `+q, args...); err != nil {
		t.Fatalf("%s: %v\n%s", c.name, err, q)
	}
	return plan
}

// checkFindPlan says how plan reads charges or the inbox whole or misses
// an index of want.
func checkFindPlan(plan string, want []string) error {
	return checkPlan(plan, []string{"charges", "inbox"}, want)
}

// checkPlan says how plan reads one of tables whole or misses an index
// of want.
func checkPlan(plan string, tables, want []string) error {
	var doc []struct {
		Plan findPlanNode `json:"Plan"`
	}
	if err := json.Unmarshal([]byte(plan), &doc); err != nil || len(doc) != 1 {
		return fmt.Errorf("not one EXPLAIN (FORMAT JSON) plan: %v", err)
	}
	var problems, used []string
	doc[0].Plan.walk(func(n *findPlanNode) {
		if n.NodeType == "Seq Scan" && slices.Contains(tables, n.RelationName) {
			problems = append(problems, "a Seq Scan of "+n.RelationName)
		}
		if n.IndexName != "" {
			used = append(used, n.IndexName)
		}
	})
	for _, ix := range want {
		if !slices.Contains(used, ix) {
			problems = append(problems, fmt.Sprintf("%s not read (read: %v)", ix, used))
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("%s\n%s", strings.Join(problems, "; "), plan)
	}
	return nil
}

type findPlanNode struct {
	NodeType     string         `json:"Node Type"`
	RelationName string         `json:"Relation Name"`
	IndexName    string         `json:"Index Name"`
	Plans        []findPlanNode `json:"Plans"`
}

func (n *findPlanNode) walk(f func(*findPlanNode)) {
	f(n)
	for i := range n.Plans {
		n.Plans[i].walk(f)
	}
}
