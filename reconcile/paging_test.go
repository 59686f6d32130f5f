package reconcile_test

import (
	"encoding/json"
	"net/http"
	"strconv"
	"testing"

	"github.com/razao/razao/api"
	"github.com/razao/razao/auth"
)

// TestReconciliationPagesAreBoundedAndEndExactly: the runs and a run's
// lines are paged as the rest of the API pages (internal/cursor): a
// limit over 1000 serves 1000, and a last page exactly full names no
// next page (not one whose page would be empty).
func TestReconciliationPagesAreBoundedAndEndExactly(t *testing.T) {
	e := newEnv(t)
	h, tok := apiEnv(e)
	e.db.MustExec(`INSERT INTO reconciliation_runs (endpoint, source, window_from, window_to, final, scheduled, claimed_by, lease_until)
		SELECT 'hodle', 'csv', $1::timestamptz, $2::timestamptz, false, false, 'test', $2::timestamptz
		FROM generate_series(1, 1001)`, winFrom, winTo)
	var run int64
	if err := e.db.Get(&run, `SELECT max(id) FROM reconciliation_runs`); err != nil {
		t.Fatal(err)
	}
	e.db.MustExec(`INSERT INTO reconciliation_lines (run_id, line, kind, amount, outcome, reason)
		SELECT $1, i, 'paid', 100, 'divergence', 'unknown_charge' FROM generate_series(1, 1001) i`, run)

	get := func(target string, v any) {
		t.Helper()
		rr := call(h, "GET", target, tok[auth.Read], "", nil)
		if rr.Code != http.StatusOK || json.Unmarshal(rr.Body.Bytes(), v) != nil {
			t.Fatalf("GET %s: %d %s", target, rr.Code, rr.Body)
		}
	}
	runs := func(q string) api.RunPage {
		var p api.RunPage
		get("/v1/reconciliations?"+q, &p)
		return p
	}
	lines := func(q string) api.RunDetail {
		var d api.RunDetail
		get("/v1/reconciliations/"+strconv.FormatInt(run, 10)+"?"+q, &d)
		return d
	}

	if p := runs("limit=5000"); len(p.Runs) != 1000 || p.NextBefore == nil || *p.NextBefore != run-999 {
		t.Errorf("runs with limit 5000: %d, next %v", len(p.Runs), p.NextBefore)
	}
	if p := runs("limit=1&before=" + strconv.FormatInt(run-999, 10)); len(p.Runs) != 1 || p.NextBefore != nil {
		t.Errorf("the last run, a full page of 1: %d, next %v", len(p.Runs), p.NextBefore)
	}
	if p := runs("limit=2&before=" + strconv.FormatInt(run-998, 10)); len(p.Runs) != 2 || p.NextBefore != nil {
		t.Errorf("the last two runs, a full page of 2: %d, next %v", len(p.Runs), p.NextBefore)
	}
	if p := runs(""); len(p.Runs) != 100 || p.NextBefore == nil {
		t.Errorf("runs by default: %d, next %v", len(p.Runs), p.NextBefore)
	}

	if d := lines("limit=5000"); len(d.Unmatched) != 1000 || d.NextAfter == nil || *d.NextAfter != 1000 {
		t.Errorf("lines with limit 5000: %d, next %v", len(d.Unmatched), d.NextAfter)
	}
	if d := lines("limit=1&after=1000"); len(d.Unmatched) != 1 || d.Unmatched[0].Line != 1001 || d.NextAfter != nil {
		t.Errorf("the last line, a full page of 1: %d, next %v", len(d.Unmatched), d.NextAfter)
	}
	if d := lines("limit=2&after=999"); len(d.Unmatched) != 2 || d.NextAfter != nil {
		t.Errorf("the last two lines, a full page of 2: %d, next %v", len(d.Unmatched), d.NextAfter)
	}
}
