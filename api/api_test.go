package api_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/mux"
	"github.com/jmoiron/sqlx"

	"github.com/razao/razao/api"
	"github.com/razao/razao/auth"
	"github.com/razao/razao/internal/contract"
	"github.com/razao/razao/internal/pgtest"
	"github.com/razao/razao/periods"
	"github.com/razao/razao/postings"
)

// newAPI returns the /v1 routes over a fresh database and a token with
// the scopes asked for (admin when none); every response they give is
// validated against the OpenAPI document.
func newAPI(t *testing.T, scopes ...auth.Scope) (http.Handler, string, *sqlx.DB) {
	t.Helper()
	return newAPIWith(t, apiOptions{scopes: scopes})
}

// apiOptions are what the tests' APIs differ in; the zero value is
// newAPI's.
type apiOptions struct {
	scopes    []auth.Scope     // the token's; none means admin
	now       func() time.Time // the API's clock; nil means 2026-09-02 12:00 UTC
	merchants []string         // the merchants the webhook endpoints are configured with
	unchecked bool             // responses not validated against the OpenAPI document
}

// newAPIWith is the one factory of the tests' APIs: the /v1 routes over a
// fresh database, and a token.
func newAPIWith(t *testing.T, o apiOptions) (http.Handler, string, *sqlx.DB) {
	t.Helper()
	db := pgtest.New(t)
	if len(o.scopes) == 0 {
		o.scopes = []auth.Scope{auth.Admin}
	}
	if o.now == nil {
		o.now = func() time.Time { return time.Date(2026, 9, 2, 12, 0, 0, 0, time.UTC) }
	}
	token, _, err := auth.Create(context.Background(), db, "test", o.scopes)
	if err != nil {
		t.Fatal(err)
	}
	cal, _ := periods.NewCalendar(periods.DefaultTimeZone)
	// No path cleaning: a path with .. is not redirected anywhere; it
	// simply matches no route.
	r := mux.NewRouter().SkipClean(true)
	r.NotFoundHandler, r.MethodNotAllowedHandler = api.NotFound(), api.MethodNotAllowed(r)
	(&api.API{DB: db, Ledger: postings.New(db, cal), Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Now: o.now, Merchants: o.merchants}).Register(r)
	if o.unchecked {
		return r, token, db
	}
	return contract.Middleware(t, r), token, db
}

func call(t *testing.T, h http.Handler, method, path, auth, body string) (int, map[string]any, http.Header) {
	t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if auth != "" {
		req.Header.Set("Authorization", "Bearer "+auth)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	var m map[string]any
	json.Unmarshal(rec.Body.Bytes(), &m)
	return rec.Code, m, rec.Header()
}

func TestRegisterChargeIsIdempotentOnID(t *testing.T) {
	t.Parallel()
	h, token, _ := newAPI(t)
	body := `{"id":"order-1","amount":4990,"partner":"partner-42","commission_bp":1000,"access":"course:go","metadata":{"b":1,"a":2}}`
	if code, m, _ := call(t, h, "POST", "/v1/charges", token, body); code != 201 || m["state"] != "pending" {
		t.Fatalf("first: %d %v", code, m)
	}
	// Same content, other key order and spacing: the same charge.
	same := `{"metadata":{"a":2, "b":1},"id":"order-1","amount":4990,"partner":"partner-42","commission_bp":1000,"access":"course:go"}`
	if code, m, _ := call(t, h, "POST", "/v1/charges", token, same); code != 200 || m["id"] != "order-1" {
		t.Fatalf("same again: %d %v", code, m)
	}
	code, m, hdr := call(t, h, "POST", "/v1/charges", token, strings.Replace(body, "4990", "5000", 1))
	if code != 409 || hdr.Get("Content-Type") != "application/problem+json" || !strings.HasSuffix(m["type"].(string), "/charge-conflict") {
		t.Fatalf("different content: %d %v", code, m)
	}
	code, m, _ = call(t, h, "GET", "/v1/charges/order-1", token, "")
	if code != 200 || m["amount"].(float64) != 4990 || m["refunds"] == nil || m["posting_sets"] == nil {
		t.Fatalf("get: %d %v", code, m)
	}
	if code, _, _ := call(t, h, "GET", "/v1/charges/nope", token, ""); code != 404 {
		t.Fatalf("get unknown: %d", code)
	}
}

func TestRegisterChargeRefusesBadInput(t *testing.T) {
	t.Parallel()
	h, token, _ := newAPI(t)
	for _, body := range []string{
		`{"id":"order-1","amount":0}`,
		`{"id":"order-1","amount":-5}`,
		`{"id":"order-1","amount":49.90}`,
		`{"id":"order-1","amount":99999999999999999999}`,
		`{"id":"","amount":100}`,
		`{"id":"../etc/passwd","amount":100}`,
		`{"id":"order-1","amount":100,"commission_bp":100}`,
		`{"id":"order-1","amount":100,"partner":"Partner 42","commission_bp":100}`,
		`{"id":"order-1","amount":100,"currency":"USD"}`,
		`{"id":"order-1","amount":100,"metadata":[1,2]}`,
		`{"id":"order-1","amount":100,"unknown":true}`,
		`{"id":"order-1","amount":100} {"id":"x"}`,
		`{"id":"order-1","amount":100,"amount":1}`,
		"{\"id\":\"order-1\",\"amount\":100,\"access\":\"\xff\"}",
		`{"id":"order-1","amount":4.99e3}`,
		`{"id":"x'; DROP TABLE postings;--","amount":100}`,
		`not json`,
	} {
		code, m, hdr := call(t, h, "POST", "/v1/charges", token, body)
		if code != 400 || hdr.Get("Content-Type") != "application/problem+json" {
			t.Errorf("%s: %d %v, want 400 problem", body, code, m)
		}
	}
	if code, _, _ := call(t, h, "POST", "/v1/charges", token, `{"id":"x","amount":1,"metadata":{"p":"`+strings.Repeat("a", 70<<10)+`"}}`); code != 413 {
		t.Errorf("huge body: %d, want 413", code)
	}
}

// Every route: no token → 401, revoked token → 401, a scope too low →
// 403, the scope it needs → not an auth error.
func TestEveryRouteDemandsTokenAndScope(t *testing.T) {
	t.Parallel()
	h, _, db := newAPI(t)
	routes := []struct {
		method, path, body string
		needs              auth.Scope
	}{
		{"POST", "/v1/charges", `{"id":"x","amount":1}`, auth.Write},
		{"GET", "/v1/charges/x", "", auth.Read},
		{"GET", "/v1/balances", "", auth.Read},
		{"GET", "/v1/partners/p1", "", auth.Read},
		{"POST", "/v1/partners/p1/payouts", `{"amount":1}`, auth.Write},
		{"GET", "/v1/reports/trial-balance/2026-08", "", auth.Read},
		{"GET", "/v1/reports/income-statement/2026-08", "", auth.Read},
		{"GET", "/v1/reports/journal/2026-08", "", auth.Read},
		{"GET", "/v1/accounts/assets:cash/series?from=2026-01&to=2026-08", "", auth.Read},
		{"GET", "/v1/periods", "", auth.Read},
		{"POST", "/v1/periods/2026-07/close", "", auth.Admin},
		{"GET", "/v1/divergences", "", auth.Read},
		{"GET", "/v1/divergences/1", "", auth.Read},
		{"POST", "/v1/divergences/1/resolve", `{"note":"x"}`, auth.Admin},
		{"GET", "/v1/exports/journal.csv?month=2026-08", "", auth.Read},
	}
	ctx := context.Background()
	readTok, _, _ := auth.Create(ctx, db, "reader", []auth.Scope{auth.Read})
	writeTok, _, _ := auth.Create(ctx, db, "writer", []auth.Scope{auth.Write})
	adminTok, _, _ := auth.Create(ctx, db, "admin", []auth.Scope{auth.Admin})
	revokedTok, revoked, _ := auth.Create(ctx, db, "gone", []auth.Scope{auth.Admin})
	if _, err := auth.Revoke(ctx, db, revoked.ID); err != nil {
		t.Fatal(err)
	}
	for _, rt := range routes {
		t.Run(rt.method+" "+rt.path, func(t *testing.T) {
			for _, c := range []struct {
				token string
				want  int
			}{{"", 401}, {revokedTok, 401}, {"rz_not-a-real-token", 401}} {
				if code, _, _ := call(t, h, rt.method, rt.path, c.token, rt.body); code != c.want {
					t.Errorf("token %q: %d, want %d", c.token, code, c.want)
				}
			}
			lower, good := "", readTok
			switch rt.needs {
			case auth.Write:
				lower, good = readTok, writeTok
			case auth.Admin:
				lower, good = writeTok, adminTok
			}
			if lower != "" {
				if code, _, _ := call(t, h, rt.method, rt.path, lower, rt.body); code != 403 {
					t.Errorf("token one scope too low: %d, want 403", code)
				}
			}
			if code, _, _ := call(t, h, rt.method, rt.path, good, rt.body); code == 401 || code == 403 {
				t.Errorf("token with scope %s: %d", rt.needs, code)
			}
		})
	}
}

func TestPayoutNeedsKeyIsIdempotentAndRefusesOverPayout(t *testing.T) {
	t.Parallel()
	h, token, db := newAPI(t)
	cal, _ := periods.NewCalendar(periods.DefaultTimeZone)
	at := time.Date(2026, 8, 10, 12, 0, 0, 0, time.UTC)
	for _, s := range []func() (postings.Set, error){
		func() (postings.Set, error) { return postings.Sale("c1", "BRL", 4990, 0, at) },
		func() (postings.Set, error) {
			s, _, err := postings.CommissionSet("c1", "p1", "BRL", 4990, 1000, at)
			return s, err
		},
	} {
		set, _ := s()
		if _, err := postings.New(db, cal).Post(context.Background(), set); err != nil {
			t.Fatal(err)
		}
	}
	if code, _ := payout(t, h, token, "", `{"amount":100}`); code != 400 {
		t.Fatalf("without key: %d, want 400", code)
	}
	code, first := payout(t, h, token, "po-1", `{"amount":300}`)
	if code != 201 {
		t.Fatalf("payout: %d %v", code, first)
	}
	if code, again := payout(t, h, token, "po-1", `{"amount":300}`); code != 200 || again["posting_set_id"] != first["posting_set_id"] {
		t.Fatalf("same key again: %d %v (first %v)", code, again, first)
	}
	if code, m := payout(t, h, token, "po-1", `{"amount":301}`); code != 422 || !strings.HasSuffix(m["type"].(string), "/idempotency-conflict") {
		t.Fatalf("same key, other amount: %d %v", code, m)
	}
	if code, m := payout(t, h, token, "po-2", `{"amount":200}`); code != 422 || !strings.HasSuffix(m["type"].(string), "/over-owed") {
		t.Fatalf("over-payout: %d %v", code, m)
	}
	code, m, _ := call(t, h, "GET", "/v1/partners/p1", token, "")
	if code != 200 || m["owed"].(float64) != 199 || m["paid"].(float64) != 300 {
		t.Fatalf("partner: %d %v", code, m)
	}
	if n := 0; db.Get(&n, `SELECT count(*) FROM posting_sets WHERE kind = 'payout'`) != nil || n != 1 {
		t.Fatalf("%d payout sets, want 1", n)
	}
}

func TestReportsAndStreamedExportOverHTTP(t *testing.T) {
	t.Parallel()
	h, token, db := newAPI(t)
	cal, _ := periods.NewCalendar(periods.DefaultTimeZone)
	sale, _ := postings.Sale("c1", "BRL", 4990, 0, time.Date(2026, 8, 10, 12, 0, 0, 0, time.UTC))
	if _, err := postings.New(db, cal).Post(context.Background(), sale); err != nil {
		t.Fatal(err)
	}
	code, m, _ := call(t, h, "GET", "/v1/reports/income-statement/2026-08", token, "")
	if code != 200 {
		t.Fatalf("income statement: %d %v", code, m)
	}
	code, m, _ = call(t, h, "GET", "/v1/reports/trial-balance/2026-13", token, "")
	if code != 400 || !strings.HasSuffix(m["type"].(string), "/invalid-parameter") {
		t.Fatalf("bad month: %d %v", code, m)
	}
	req := httptest.NewRequest("GET", "/v1/exports/journal.csv?month=2026-08&dialect=br", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != 200 || !strings.HasPrefix(rec.Header().Get("Content-Type"), "text/csv") ||
		!strings.Contains(rec.Header().Get("Content-Disposition"), "razao-journal-2026-08-br.csv") ||
		!strings.HasPrefix(rec.Body.String(), "\ufeff") || !strings.Contains(rec.Body.String(), "49,90") {
		t.Fatalf("export: %d %v\n%s", rec.Code, rec.Header(), rec.Body.String())
	}
	for _, path := range []string{"/v1/exports/passwd.csv?month=2026-08", "/v1/exports/..%2f..%2fetc%2fpasswd.csv?month=2026-08", "/v1/exports/journal.csv?month=2026-08&dialect=xls"} {
		if code, _, _ := call(t, h, "GET", path, token, ""); code != 404 {
			t.Errorf("%s: %d, want 404", path, code)
		}
	}
	// The month has not ended at the API's clock (2026-09-02)? August has.
	if code, m, _ := call(t, h, "POST", "/v1/periods/2026-08/close", token, ""); code != 200 {
		t.Fatalf("close August: %d %v", code, m)
	}
	if code, m, _ := call(t, h, "POST", "/v1/periods/2026-09/close", token, ""); code != 409 {
		t.Fatalf("close September before it ends: %d %v", code, m)
	}
}
