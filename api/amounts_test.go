package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/jmoiron/sqlx"

	"github.com/razao/razao/accounts"
)

// payout posts a payout to partner p1 under key (no Idempotency-Key
// header when key is "").
func payout(t *testing.T, h http.Handler, token, key, body string) (int, map[string]any) {
	t.Helper()
	req := httptest.NewRequest("POST", "/v1/partners/p1/payouts", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	var m map[string]any
	json.Unmarshal(rec.Body.Bytes(), &m)
	return rec.Code, m
}

func wantAboveMax(t *testing.T, what string, code int, m map[string]any, field, limit string) {
	t.Helper()
	typ, _ := m["type"].(string)
	detail, _ := m["detail"].(string)
	if code != 400 || !strings.HasSuffix(typ, "/amount-above-max") || !strings.Contains(detail, field) || !strings.Contains(detail, limit) {
		t.Errorf("%s: %d %v, want 400 amount-above-max naming %q and %s", what, code, m, field, limit)
	}
}

func count(t *testing.T, db *sqlx.DB, query string) int {
	t.Helper()
	var n int
	if err := db.Get(&n, query); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}

// TestAmountsAboveTheMaximumAreRefusedAndBookNothing: a payout of 2^63−1
// (an advance, with allow_over_owed) or of the maximum plus one centavo,
// and a charge above the maximum, are 400 problems naming the field and
// the limit; nothing is booked and every report still answers.
func TestAmountsAboveTheMaximumAreRefusedAndBookNothing(t *testing.T) {
	t.Parallel()
	h, token, db := newAPI(t)
	const limit = "1000000000000" // the default: R$ 10 billion
	for _, tt := range []struct{ name, body string }{
		{"2^63-1 advance", `{"amount":9223372036854775807,"allow_over_owed":true}`},
		{"max+1 advance", `{"amount":1000000000001,"allow_over_owed":true}`},
		{"max+1", `{"amount":1000000000001}`},
	} {
		code, m := payout(t, h, token, "po-"+strings.ReplaceAll(tt.name, " ", "-"), tt.body)
		wantAboveMax(t, "payout "+tt.name, code, m, "amount", limit)
	}
	for _, amount := range []string{"1000000000001", "9223372036854775807"} {
		code, m, _ := call(t, h, "POST", "/v1/charges", token, fmt.Sprintf(`{"id":"big-%s","amount":%s,"access":"x"}`, amount, amount))
		wantAboveMax(t, "charge of "+amount, code, m, "amount", limit)
	}
	if n := count(t, db, `SELECT count(*) FROM posting_sets`); n != 0 {
		t.Fatalf("%d posting sets booked, want none", n)
	}
	if n := count(t, db, `SELECT count(*) FROM charges`); n != 0 {
		t.Fatalf("%d charges registered, want none", n)
	}
	// The maximum itself is taken: as an advance, and as a charge.
	if code, m := payout(t, h, token, "po-max", `{"amount":1000000000000,"allow_over_owed":true}`); code != 201 {
		t.Fatalf("payout of the maximum: %d %v", code, m)
	}
	if code, m, _ := call(t, h, "POST", "/v1/charges", token, `{"id":"max","amount":1000000000000,"access":"x"}`); code != 201 {
		t.Fatalf("charge of the maximum: %d %v", code, m)
	}
	// Advances over what is owed are bounded in total: p1 already owes
	// back the maximum.
	code, m := payout(t, h, token, "po-one-more", `{"amount":1,"allow_over_owed":true}`)
	wantAboveMax(t, "an advance beyond the maximum in total", code, m, "advance", limit)
	if n := count(t, db, `SELECT count(*) FROM posting_sets`); n != 1 {
		t.Fatalf("%d posting sets, want the one payout of the maximum", n)
	}
	for _, path := range []string{"/v1/balances", "/v1/partners/p1", "/v1/reports/trial-balance/2026-09",
		"/v1/reports/income-statement/2026-09", "/v1/accounts/assets/series?from=2026-01&to=2026-12"} {
		if code, m, _ := call(t, h, "GET", path, token, ""); code != 200 {
			t.Errorf("%s: %d %v", path, code, m)
		}
	}
	code, m, _ = call(t, h, "GET", "/v1/reports/trial-balance/2026-09", token, "")
	if totals := m["totals"].([]any); len(totals) != 1 || totals[0].(map[string]any)["debits"].(float64) != 1e12 ||
		totals[0].(map[string]any)["balanced"] != true {
		t.Errorf("trial balance totals: %d %v", code, m["totals"])
	}
}

// bookHuge writes n adjustment sets of 10^15 centavos each (the database's
// ceiling on one amount) in August 2026, through plain SQL with every
// trigger on: a ledger no bounded request builds, but one that thousands
// of them, or a corrupted database, could hold.
func bookHuge(t *testing.T, db *sqlx.DB, tag string, n int, debit, credit string) {
	t.Helper()
	for _, code := range []string{debit, credit} {
		if _, err := accounts.Ensure(context.Background(), db, code); err != nil {
			t.Fatal(err)
		}
	}
	_, err := db.Exec(`
		WITH s AS (
			INSERT INTO posting_sets (kind, idempotency_key, amount, currency, competence, event_at, description, content_hash)
			SELECT 'adjustment', 'huge:' || $1 || ':' || g, 1000000000000000, 'BRL', '2026-08-10', '2026-08-10T12:00:00Z', 'huge', 'test'
			FROM generate_series(1, $2) g RETURNING id
		)
		INSERT INTO postings (posting_set_id, account_id, currency, amount, competence_month)
		SELECT s.id, a.id, 'BRL', v.amount, '2026-08-01'
		FROM s CROSS JOIN (VALUES ($3::text, 1000000000000000::bigint), ($4::text, -1000000000000000::bigint)) AS v (code, amount)
		JOIN accounts a ON a.code = v.code`, tag, n, debit, credit)
	if err != nil {
		t.Fatalf("book %d huge sets: %v", n, err)
	}
}

// TestSumsBeyondInt64AreAClearProblem: a ledger whose sums do not fit
// int64, whether only across accounts (the Go roll-up) or within one (the
// database's sum), makes every report that needs such a sum answer 422
// sum-overflow naming the figure: never a wrong figure, never a bare 500.
func TestSumsBeyondInt64AreAClearProblem(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name  string
		book  func(t *testing.T, db *sqlx.DB)
		paths []string
	}{
		{"each account fits, their sum does not", func(t *testing.T, db *sqlx.DB) {
			bookHuge(t, db, "a", 5000, "expenses:commission", "income:revenue")
			bookHuge(t, db, "b", 5000, "expenses:psp-fees", "assets:cash")
		}, []string{"/v1/reports/trial-balance/2026-08", "/v1/balances", "/v1/accounts/expenses/series?from=2026-08&to=2026-08",
			"/v1/exports/trial-balance.csv?month=2026-08", "/v1/exports/trial-balance.csv?month=2026-08&dialect=br"}},
		{"one account's sum does not fit", func(t *testing.T, db *sqlx.DB) {
			bookHuge(t, db, "c", 9300, "expenses:commission", "liabilities:commission-payable:p1")
		}, []string{"/v1/reports/trial-balance/2026-08", "/v1/reports/income-statement/2026-08", "/v1/balances",
			"/v1/partners/p1", "/v1/accounts/expenses:commission/series?from=2026-08&to=2026-08",
			"/v1/exports/trial-balance.csv?month=2026-08", "/v1/exports/income-statement.csv?month=2026-08&dialect=br",
			"/v1/reports/trial-balance/2026-09"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h, token, db := newAPI(t)
			tt.book(t, db)
			for _, path := range tt.paths {
				code, m, hdr := call(t, h, "GET", path, token, "")
				typ, _ := m["type"].(string)
				detail, _ := m["detail"].(string)
				if code != 422 || hdr.Get("Content-Type") != "application/problem+json" ||
					!strings.HasSuffix(typ, "/sum-overflow") || !strings.Contains(detail, "int64") {
					t.Errorf("%s: %d %v, want 422 sum-overflow", path, code, m)
				}
				t.Logf("%s: %s", path, detail)
			}
			// What has no sum still answers: the journal lists the postings.
			if code, m, _ := call(t, h, "GET", "/v1/reports/journal/2026-08?limit=2", token, ""); code != 200 {
				t.Errorf("journal: %d %v", code, m)
			}
		})
	}
}
