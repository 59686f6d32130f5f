package events

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/razao/razao/internal/pgtest"
)

// Every read of the hub asks whether committed events are held back.
// Asked as an EXISTS (whose ORDER BY and LIMIT PostgreSQL drops, against a
// horizon unknown at planning time) it can plan as a scan of the whole
// outbox: a cost that grows with every event ever written, paid on every
// read of every wake. On an analysed outbox of 20,000 events, the read as
// the driver sends it (parameters, not literals) must touch the outbox
// only through its cursor index.
func TestReadFindsHeldEventsThroughTheCursorIndex(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	ctx := context.Background()
	// One xid per event, as deliveries write them, all in the past.
	if _, err := db.ExecContext(ctx, `INSERT INTO outbox (xid, topic, charge_id, payload)
		SELECT greatest(1, pg_current_xact_id()::text::bigint - 20001 + g)::text::xid8, 'charge.paid', 'c' || g, '{}'
		FROM generate_series(1, 20000) g`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, `ANALYZE outbox`); err != nil {
		t.Fatal(err)
	}
	var xid string
	var id int64
	if err := db.QueryRowContext(ctx, `SELECT xid::text, id FROM outbox ORDER BY xid, id OFFSET 19990 LIMIT 1`).Scan(&xid, &id); err != nil {
		t.Fatal(err)
	}
	var plan string
	if err := db.QueryRowContext(ctx, `EXPLAIN (FORMAT JSON) `+readSQL, xid, id, MaxLimit, false).Scan(&plan); err != nil {
		t.Fatal(err)
	}
	var nodes []map[string]any
	if err := json.Unmarshal([]byte(plan), &nodes); err != nil {
		t.Fatal(err)
	}
	var scans []string
	walkPlan(nodes[0]["Plan"], func(n map[string]any) {
		if n["Relation Name"] == "outbox" {
			scans = append(scans, n["Node Type"].(string)+" using "+stringOf(n["Index Name"]))
		}
	})
	if len(scans) == 0 {
		t.Fatalf("no scan of outbox in the plan:\n%s", plan)
	}
	// A stream far behind (from the beginning): the held check starts at
	// the horizon, not at the cursor, so it reads a few index pages, not
	// the 20,000 entries before the horizon.
	if err := db.QueryRowContext(ctx, `EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) `+readSQL, "0", 0, MaxLimit, true).Scan(&plan); err != nil {
		t.Fatal(err)
	}
	nodes = nil
	if err := json.Unmarshal([]byte(plan), &nodes); err != nil {
		t.Fatal(err)
	}
	walkPlan(nodes[0]["Plan"], func(n map[string]any) {
		if n["Relation Name"] == "outbox" && n["Node Type"] == "Index Only Scan" {
			pages, _ := n["Shared Hit Blocks"].(float64)
			read, _ := n["Shared Read Blocks"].(float64)
			if pages+read > 10 {
				t.Errorf("the held check from the beginning read %v index pages, want a few: it must start at the horizon\n%s", pages+read, plan)
			}
		}
	})
	for _, s := range scans {
		if !strings.HasSuffix(s, "using ix_outbox_cursor") {
			t.Errorf("the read scans outbox as %q, want only the cursor index (ix_outbox_cursor); plan:\n%s", s, plan)
		}
	}
}

// walkPlan calls f on every node of an EXPLAIN (FORMAT JSON) plan.
func walkPlan(node any, f func(map[string]any)) {
	n, ok := node.(map[string]any)
	if !ok {
		return
	}
	f(n)
	kids, _ := n["Plans"].([]any)
	for _, k := range kids {
		walkPlan(k, f)
	}
}

func stringOf(v any) string {
	s, _ := v.(string)
	return s
}
