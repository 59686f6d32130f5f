package api_test

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/razao/razao/auth"
	"github.com/razao/razao/internal/ledgertest"
	"github.com/razao/razao/periods"
	"github.com/razao/razao/postings"
)

// TestJournalAsLedgerFilesOverHTTP: a read token downloads August's
// journal as an hledger journal and a beancount file, each named for its
// month and format; a bad month is a 400 problem before any byte.
func TestJournalAsLedgerFilesOverHTTP(t *testing.T) {
	t.Parallel()
	h, token, db := newAPI(t, auth.Read)
	cal, _ := periods.NewCalendar(periods.DefaultTimeZone)
	ledgertest.PostAugust(t, postings.New(db, cal))
	for _, tt := range []struct {
		path, file string
		want       []string
	}{
		{"/v1/exports/journal.hledger?month=2026-08", "razao-journal-2026-08.hledger",
			[]string{"account liabilities:commission-payable:p1  ; type: L\n", "2026-08-31 * (3) sale c2\n",
				"    ; event_at: 2026-09-01T01:30:00Z\n", "| Repasse de agosto, \"p1\"%3B à vista\n"}},
		{"/v1/exports/journal.beancount?month=2026-08", "razao-journal-2026-08.beancount",
			[]string{"2026-08-01 open Liabilities:Commission-payable:P1 BRL\n", `2026-08-28 * "payout p1" "Repasse de agosto, \"p1\"; à vista"`,
				"  idempotency_key: \"sale:c2\"\n"}},
	} {
		req := httptest.NewRequest("GET", tt.path, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != 200 || rec.Header().Get("Content-Type") != "text/plain; charset=utf-8" ||
			rec.Header().Get("Content-Disposition") != `attachment; filename="`+tt.file+`"` {
			t.Fatalf("%s: %d %v\n%s", tt.path, rec.Code, rec.Header(), rec.Body.String())
		}
		for _, w := range tt.want {
			if !strings.Contains(rec.Body.String(), w) {
				t.Errorf("%s lacks %q:\n%s", tt.path, w, rec.Body.String())
			}
		}
	}
	for _, path := range []string{"/v1/exports/journal.hledger?month=2026-13", "/v1/exports/journal.beancount"} {
		if code, m, _ := call(t, h, "GET", path, token, ""); code != 400 || !strings.HasSuffix(m["type"].(string), "/invalid-parameter") {
			t.Errorf("%s: %d %v", path, code, m)
		}
	}
	for _, path := range []string{"/v1/exports/journal.ledger?month=2026-08", "/v1/exports/trial-balance.hledger?month=2026-08"} {
		if code, _, _ := call(t, h, "GET", path, token, ""); code != 404 {
			t.Errorf("%s: %d, want 404", path, code)
		}
	}
}
