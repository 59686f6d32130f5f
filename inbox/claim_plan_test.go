package inbox_test

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/razao/razao/inbox"
	"github.com/razao/razao/internal/pgtest"
)

// The workers' claim follows ix_inbox_due's order exactly, so that it
// reads a batch's worth of index entries however long the backlog: on an
// analysed inbox of 60,000 applied deliveries, 50,000 due ones and 5,000
// backing off, the claim as the worker sends it (prepared, its limit a
// parameter) reads the partial index in order and stops at the batch: a
// Limit over LockRows over an Index Scan of ix_inbox_due, no Sort, no Seq
// Scan, a few dozen pages. Both plans PostgreSQL may run it with are
// checked: the custom plan of its first executions and the generic plan a
// long-lived connection switches to (its limit unknown, estimated as a
// tenth of the rows).
func TestClaimIsIndexOrderedOnABacklog(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	fillBacklog(t, db)
	for _, mode := range []string{"force_custom_plan", "force_generic_plan"} {
		plan := explainClaim(t, db, mode, inbox.ClaimDueSQL, "")
		if err := checkClaimPlan(plan, inbox.MaxBatch); err != nil {
			t.Errorf("%s: %v\n%s", mode, err, plan)
		}
	}
}

// The check above fails where the claim would read the backlog: without
// the partial index, or with an ORDER BY the index does not give.
func TestClaimPlanCheckRefusesPlansThatReadTheBacklog(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	fillBacklog(t, db)
	for _, c := range []struct{ name, query, before string }{
		{"index dropped", inbox.ClaimDueSQL, `DROP INDEX ix_inbox_due`},
		{"ordered by id", strings.Replace(inbox.ClaimDueSQL, "ORDER BY next_attempt_at", "ORDER BY id", 1), ""},
		{"ordered by received_at", strings.Replace(inbox.ClaimDueSQL, "ORDER BY next_attempt_at", "ORDER BY received_at", 1), ""},
	} {
		if c.query == inbox.ClaimDueSQL && c.before == "" {
			t.Fatalf("%s: the claim statement no longer reads %q", c.name, "ORDER BY next_attempt_at")
		}
		for _, mode := range []string{"force_custom_plan", "force_generic_plan"} {
			plan := explainClaim(t, db, mode, c.query, c.before)
			err := checkClaimPlan(plan, inbox.MaxBatch)
			t.Logf("%s, %s: refused: %v", c.name, mode, err)
			if err == nil {
				t.Errorf("%s, %s: the check passed a plan that reads the backlog:\n%s", c.name, mode, plan)
			}
		}
	}
}

// fillBacklog stores what a backlog looks like once analysed: deliveries
// applied long ago, a backlog due now (the oldest first) and deliveries
// backing off, due later.
func fillBacklog(t *testing.T, db *sqlx.DB) {
	t.Helper()
	for _, q := range []string{
		`INSERT INTO inbox (delivery_key, endpoint, scheme, merchant, event_type, event_id, kind, event, body, status, processed_at)
		SELECT 'a' || g, 'std', 'standard', 'loja-1', 'charge.paid', 'a' || g, 'paid', '{}', '\x00', 'processed', now()
		FROM generate_series(1, 60000) g`,
		`INSERT INTO inbox (delivery_key, endpoint, scheme, merchant, event_type, event_id, kind, event, body, status, next_attempt_at)
		SELECT 'k' || g, 'std', 'standard', 'loja-1', 'charge.paid', 'e' || g, 'paid', '{}', '\x00', 'pending', now() - g * interval '1 millisecond'
		FROM generate_series(1, 50000) g`,
		`INSERT INTO inbox (delivery_key, endpoint, scheme, merchant, event_type, event_id, kind, event, body, status, attempts, next_attempt_at)
		SELECT 'b' || g, 'std', 'standard', 'loja-1', 'charge.paid', 'b' || g, 'paid', '{}', '\x00', 'pending', 3, now() + g * interval '1 second'
		FROM generate_series(1, 5000) g`,
		`ANALYZE inbox`,
	} {
		db.MustExec(q)
	}
}

// explainClaim runs query as the worker's prepared statement does, with
// the batch as its parameter, under plan_cache_mode mode, after before
// (if any), and returns its EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON). All
// in a transaction rolled back: the rows it locks and what before
// changed are undone.
func explainClaim(t *testing.T, db *sqlx.DB, mode, query, before string) string {
	t.Helper()
	tx := db.MustBegin()
	defer tx.Rollback() // runs after the DEALLOCATE below
	if before != "" {
		tx.MustExec(before)
	}
	tx.MustExec(`SET LOCAL plan_cache_mode = ` + mode)
	tx.MustExec(`PREPARE claim (int) AS ` + query)
	defer tx.Exec(`DEALLOCATE claim`) // a prepared statement outlives the transaction
	var plan string
	if err := tx.Get(&plan, fmt.Sprintf(`EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) EXECUTE claim(%d)`, inbox.MaxBatch)); err != nil {
		t.Fatal(err)
	}
	return plan
}

// maxClaimPages is how many shared buffers a claim of a batch may touch:
// a few index pages and the heap pages of its rows. Reading the backlog
// (or the table) touches thousands.
const maxClaimPages = 200

// checkClaimPlan says how plan, an EXPLAIN (ANALYZE, BUFFERS, FORMAT
// JSON) of the claim, is not an index-ordered claim of batch rows.
func checkClaimPlan(plan string, batch int) error {
	var doc []struct {
		Plan planNode `json:"Plan"`
	}
	if err := json.Unmarshal([]byte(plan), &doc); err != nil || len(doc) != 1 {
		return fmt.Errorf("not one EXPLAIN (FORMAT JSON) plan: %v", err)
	}
	var problems []string
	top := doc[0].Plan
	path := []string{}
	for n := &top; ; {
		path = append(path, n.NodeType)
		rows := n.rowSources()
		if len(rows) != 1 {
			break
		}
		n = rows[0]
	}
	if got := strings.Join(path, " > "); got != "Limit > LockRows > Index Scan" {
		problems = append(problems, fmt.Sprintf("plan %s, want Limit > LockRows > Index Scan", got))
	}
	top.walk(func(n *planNode) {
		switch {
		case n.NodeType == "Sort" || n.NodeType == "Incremental Sort":
			var in float64
			if len(n.Plans) > 0 {
				in = n.Plans[0].ActualRows
			}
			problems = append(problems, fmt.Sprintf("a %s of %v rows", n.NodeType, in))
		case n.NodeType == "Seq Scan" || strings.HasPrefix(n.NodeType, "Bitmap"):
			problems = append(problems, fmt.Sprintf("a %s of %s", n.NodeType, n.RelationName))
		case n.RelationName == "inbox" && n.IndexName != "ix_inbox_due":
			problems = append(problems, fmt.Sprintf("inbox read through %q, not ix_inbox_due", n.IndexName))
		case n.RelationName == "inbox" && n.ScanDirection != "Forward":
			problems = append(problems, fmt.Sprintf("ix_inbox_due read %s, not oldest due first", n.ScanDirection))
		}
	})
	if top.ActualRows != float64(batch) {
		problems = append(problems, fmt.Sprintf("claimed %v rows, want %d", top.ActualRows, batch))
	}
	if pages := top.SharedHit + top.SharedRead; pages > maxClaimPages {
		problems = append(problems, fmt.Sprintf("touched %v pages, want at most %d", pages, maxClaimPages))
	}
	if len(problems) > 0 {
		return fmt.Errorf("not an index-ordered claim: %s", strings.Join(problems, "; "))
	}
	return nil
}

// planNode is what checkClaimPlan reads of a plan node.
type planNode struct {
	NodeType      string     `json:"Node Type"`
	RelationName  string     `json:"Relation Name"`
	IndexName     string     `json:"Index Name"`
	ScanDirection string     `json:"Scan Direction"`
	ActualRows    float64    `json:"Actual Rows"`
	SharedHit     float64    `json:"Shared Hit Blocks"`
	SharedRead    float64    `json:"Shared Read Blocks"`
	Plans         []planNode `json:"Plans"`
	// Parent is how the node feeds its parent: "InitPlan" for a value
	// computed once (the claim's last closed month), "Outer" for rows.
	Parent string `json:"Parent Relationship"`
}

// rowSources are the children that feed n rows: not an InitPlan, which
// computes a value once.
func (n *planNode) rowSources() []*planNode {
	var out []*planNode
	for i := range n.Plans {
		if n.Plans[i].Parent != "InitPlan" {
			out = append(out, &n.Plans[i])
		}
	}
	return out
}

func (n *planNode) walk(f func(*planNode)) {
	f(n)
	for i := range n.Plans {
		n.Plans[i].walk(f)
	}
}

// The claim reads the last closed month under the close lock, once per
// claim and only when it claims a row: an idle worker's empty claim takes
// no lock a close would wait for.
func TestClaimTakesTheCloseLockOnlyWhenItClaims(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	held := func(tx *sqlx.Tx) bool {
		t.Helper()
		var n int
		if err := tx.Get(&n, `SELECT count(*) FROM pg_locks WHERE pid = pg_backend_pid()
			AND relation = 'month_close_lock'::regclass AND mode = 'RowExclusiveLock' AND granted`); err != nil {
			t.Fatal(err)
		}
		return n > 0
	}
	claim := func() (rows int, lastClosed []sql.NullTime, locked bool) {
		t.Helper()
		tx := db.MustBegin()
		defer tx.Rollback()
		var got []struct {
			ID   int64        `db:"id"`
			Last sql.NullTime `db:"last_closed"`
		}
		q := `SELECT id, last_closed FROM (` + inbox.ClaimDueSQL + `) c`
		if err := tx.Select(&got, strings.Replace(q, "$1", "10", 1)); err != nil {
			t.Fatal(err)
		}
		for _, r := range got {
			lastClosed = append(lastClosed, r.Last)
		}
		return len(got), lastClosed, held(tx)
	}
	if n, _, locked := claim(); n != 0 || locked {
		t.Fatalf("empty claim: %d rows, close lock held %v; want none, not held", n, locked)
	}
	db.MustExec(`INSERT INTO inbox (delivery_key, endpoint, scheme, merchant, event_type, event_id, kind, event, body, status)
		SELECT 'k' || g, 'std', 'standard', 'loja-1', 'charge.paid', 'e' || g, 'paid', '{}', '\x00', 'pending' FROM generate_series(1, 3) g`)
	db.MustExec(`INSERT INTO closed_periods (month, closed_by) VALUES ('2020-11-01', 'test')`)
	n, last, locked := claim()
	if n != 3 || !locked {
		t.Fatalf("claim of 3: %d rows, close lock held %v; want 3, held", n, locked)
	}
	for _, l := range last {
		if !l.Valid || l.Time.Format(time.DateOnly) != "2020-11-01" {
			t.Errorf("a claimed row's last closed month is %v, want 2020-11-01", l)
		}
	}
}
