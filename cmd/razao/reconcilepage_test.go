package main

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/razao/razao/internal/pgtest"
)

// TestConsoleReconciliationPage: the runs and a run's unmatched lines,
// with both sides, every value escaped.
func TestConsoleReconciliationPage(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	db.MustExec(`INSERT INTO reconciliation_runs (endpoint, source, window_from, window_to, final, claimed_by, lease_until, status, lines, divergences)
		VALUES ('hodle', 'csv', '2026-11-01', '2026-11-02', true, 't', now(), 'succeeded', 2, 1)`)
	db.MustExec(`INSERT INTO reconciliation_lines (run_id, line, kind, psp_id, charge_ref, amount, outcome, reason, ledger_amount)
		VALUES (1, 1, 'paid', 't1', 'c1', 100, 'matched', NULL, 100),
		       (1, 2, 'paid', '<script>x</script>', 'c2', 990, 'divergence', 'amount_mismatch', 1000)`)
	h := reconciliationPage(db, slog.New(slog.NewTextHandler(io.Discard, nil)))
	for target, want := range map[string][]string{
		"/console/reconciliation":       {`href="/console/reconciliation?run=1"`, "hodle (csv)", "(final)"},
		"/console/reconciliation?run=1": {"amount_mismatch", "R$ 9,90", "R$ 10,00", "&lt;script&gt;x&lt;/script&gt;"},
	} {
		rr := httptest.NewRecorder()
		h.ServeHTTP(rr, httptest.NewRequest(http.MethodGet, target, nil))
		body := rr.Body.String()
		if rr.Code != 200 || strings.Contains(body, "<script>") {
			t.Fatalf("%s: %d\n%s", target, rr.Code, body)
		}
		for _, w := range want {
			if !strings.Contains(body, w) {
				t.Errorf("%s lacks %q", target, w)
			}
		}
		if target == "/console/reconciliation?run=1" && strings.Contains(body, "<td>t1</td>") {
			t.Error("a matched line is listed as unmatched")
		}
	}
	rr := httptest.NewRecorder()
	h.ServeHTTP(rr, httptest.NewRequest(http.MethodGet, "/console/reconciliation?run=x", nil))
	if rr.Code != http.StatusNotFound {
		t.Fatalf("unknown run: %d", rr.Code)
	}
}
