package auth_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gorilla/mux"
	"github.com/jmoiron/sqlx"

	"github.com/razao/razao/auth"
	"github.com/razao/razao/internal/pgtest"
)

// endpoints mirrors the /v1 routes and the scope each needs, so every one
// is checked without a token, with a revoked one and with the scope just
// below its own.
var endpoints = []struct {
	method, path string
	scope        auth.Scope
}{
	{http.MethodPost, "/v1/charges", auth.Write},
	{http.MethodGet, "/v1/charges/order-1", auth.Read},
	{http.MethodGet, "/v1/balances", auth.Read},
	{http.MethodGet, "/v1/events", auth.Read},
	{http.MethodGet, "/v1/partners/partner-42", auth.Read},
	{http.MethodPost, "/v1/partners/partner-42/payouts", auth.Write},
	{http.MethodGet, "/v1/tokens", auth.Admin},
}

// newRouter mounts a stub handler per endpoint behind Middleware and
// Require; the stub answers 200 with the id of the token it was given.
func newRouter(db *sqlx.DB) http.Handler {
	r := mux.NewRouter()
	v1 := r.PathPrefix("/v1").Subrouter()
	v1.Use(auth.Middleware(db, nil))
	stub := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t, ok := auth.FromContext(r.Context())
		if !ok {
			http.Error(w, "no token in context", http.StatusInternalServerError)
			return
		}
		fmt.Fprintf(w, "%d", t.ID)
	})
	for _, e := range endpoints {
		// gorilla/mux patterns: the concrete ids stand for {id}.
		path := strings.NewReplacer("order-1", "{id}", "partner-42", "{id}").Replace(strings.TrimPrefix(e.path, "/v1"))
		v1.Handle(path, auth.Require(e.scope)(stub)).Methods(e.method)
	}
	return r
}

type answer struct {
	code    int
	body    string
	problem map[string]any
	header  http.Header
}

func do(t *testing.T, h http.Handler, method, path string, authz ...string) answer {
	t.Helper()
	req := httptest.NewRequest(method, path, nil)
	for _, a := range authz {
		req.Header.Add("Authorization", a)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	a := answer{code: rec.Code, body: rec.Body.String(), header: rec.Header()}
	if rec.Header().Get("Content-Type") == "application/problem+json" {
		if err := json.Unmarshal(rec.Body.Bytes(), &a.problem); err != nil {
			t.Fatalf("%s %s: problem body %q: %v", method, path, rec.Body.String(), err)
		}
	}
	return a
}

func wantProblem(t *testing.T, what string, a answer, status int, kind string) {
	t.Helper()
	if a.code != status || a.problem == nil ||
		a.problem["type"] != "https://razao.dev/problems/"+kind || a.problem["status"] != float64(status) || a.problem["title"] == "" {
		t.Errorf("%s: %d %q, want %d problem %s", what, a.code, a.body, status, kind)
	}
	if a.header.Get("Cache-Control") != "no-store" {
		t.Errorf("%s: Cache-Control %q, want no-store", what, a.header.Get("Cache-Control"))
	}
}

func TestEveryEndpointRefusesMissingRevokedAndUnderScopedTokens(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	h := newRouter(db)
	tokens := map[auth.Scope]string{}
	ids := map[auth.Scope]int64{}
	for _, s := range []auth.Scope{auth.Read, auth.Write, auth.Admin} {
		plain, tok := mustCreate(t, db, string(s)+" token", s)
		tokens[s], ids[s] = plain, tok.ID
	}
	revoked, rt := mustCreate(t, db, "revoked admin", auth.Admin)
	if _, err := auth.Revoke(context.Background(), db, rt.ID); err != nil {
		t.Fatal(err)
	}
	below := map[auth.Scope]auth.Scope{auth.Write: auth.Read, auth.Admin: auth.Write}

	for _, e := range endpoints {
		name := e.method + " " + e.path
		t.Run(name, func(t *testing.T) {
			a := do(t, h, e.method, e.path)
			wantProblem(t, "no token", a, http.StatusUnauthorized, "unauthorized")
			if got := a.header.Get("WWW-Authenticate"); got != `Bearer realm="razao"` {
				t.Errorf("no token: WWW-Authenticate %q", got)
			}

			a = do(t, h, e.method, e.path, "Bearer "+revoked)
			wantProblem(t, "revoked token", a, http.StatusUnauthorized, "unauthorized")
			if got := a.header.Get("WWW-Authenticate"); got != `Bearer realm="razao", error="invalid_token"` {
				t.Errorf("revoked token: WWW-Authenticate %q", got)
			}

			if lower, ok := below[e.scope]; ok {
				a = do(t, h, e.method, e.path, "Bearer "+tokens[lower])
				wantProblem(t, "scope "+string(lower), a, http.StatusForbidden, "forbidden")
				want := fmt.Sprintf(`Bearer realm="razao", error="insufficient_scope", scope="%s"`, e.scope)
				if got := a.header.Get("WWW-Authenticate"); got != want {
					t.Errorf("wrong scope: WWW-Authenticate %q, want %q", got, want)
				}
				if a.problem["detail"] != "this endpoint needs the "+string(e.scope)+" scope" {
					t.Errorf("wrong scope: detail %v", a.problem["detail"])
				}
			}

			// The scope itself and every higher one get through, and the
			// handler sees the token.
			for _, s := range []auth.Scope{auth.Read, auth.Write, auth.Admin} {
				tok := auth.Token{Scopes: []auth.Scope{s}}
				if !tok.Has(e.scope) {
					continue
				}
				a = do(t, h, e.method, e.path, "Bearer "+tokens[s])
				if a.code != http.StatusOK || a.body != fmt.Sprint(ids[s]) {
					t.Errorf("scope %s: %d %q, want 200 with token %d", s, a.code, a.body, ids[s])
				}
			}
		})
	}
}

func TestMiddlewareParsesTheAuthorizationHeader(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	h := newRouter(db)
	plain, tok := mustCreate(t, db, "reader", auth.Read)
	for _, tc := range []struct {
		name   string
		authz  []string
		status int
	}{
		{"canonical", []string{"Bearer " + plain}, 200},
		{"scheme is case-insensitive", []string{"bearer " + plain}, 200},
		{"extra spaces", []string{"  Bearer   " + plain + "  "}, 200},
		{"basic scheme", []string{"Basic " + plain}, 401},
		{"no scheme", []string{plain}, 401},
		{"scheme only", []string{"Bearer"}, 401},
		{"scheme and space", []string{"Bearer "}, 401},
		{"two headers", []string{"Bearer " + plain, "Bearer " + plain}, 401},
		{"token with junk after it", []string{"Bearer " + plain + " x"}, 401},
		{"unknown token", []string{"Bearer rz_" + strings.Repeat("A", 43)}, 401},
	} {
		a := do(t, h, http.MethodGet, "/v1/balances", tc.authz...)
		if a.code != tc.status {
			t.Errorf("%s: %d %q, want %d", tc.name, a.code, a.body, tc.status)
		}
		if tc.status == 200 && a.body != fmt.Sprint(tok.ID) {
			t.Errorf("%s: handler saw token %q, want %d", tc.name, a.body, tok.ID)
		}
	}
}

// Revocation takes effect on the next request: nothing is cached.
func TestRevokedTokenIsRefusedOnTheNextRequest(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	h := newRouter(db)
	plain, tok := mustCreate(t, db, "soon revoked", auth.Write)
	if a := do(t, h, http.MethodPost, "/v1/charges", "Bearer "+plain); a.code != 200 {
		t.Fatalf("before revocation: %d", a.code)
	}
	if _, err := auth.Revoke(context.Background(), db, tok.ID); err != nil {
		t.Fatal(err)
	}
	wantProblem(t, "after revocation", do(t, h, http.MethodPost, "/v1/charges", "Bearer "+plain), 401, "unauthorized")
}

// When the database cannot tell whether a token is valid, the answer is
// 503, never 401 (which would tell a valid client its token is bad) nor a
// pass.
func TestMiddlewareAnswers503WhenTheDatabaseIsDown(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	plain, _ := mustCreate(t, db, "reader", auth.Read)
	h := newRouter(db)
	db.Close()
	a := do(t, h, http.MethodGet, "/v1/balances", "Bearer "+plain)
	wantProblem(t, "database closed", a, http.StatusServiceUnavailable, "unavailable")
	// Malformed tokens are refused before the database is asked.
	wantProblem(t, "garbage with database closed", do(t, h, http.MethodGet, "/v1/balances", "Bearer nope"), 401, "unauthorized")
}

// A route mounted with Require but without Middleware fails closed.
func TestRequireWithoutMiddlewareIsUnauthorized(t *testing.T) {
	t.Parallel()
	h := auth.Require(auth.Read)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Error("handler reached without a token")
	}))
	wantProblem(t, "no middleware", do(t, h, http.MethodGet, "/v1/balances", "Bearer whatever"), 401, "unauthorized")

	// With a token in the context (as Middleware leaves it) it passes.
	ok := auth.Require(auth.Read)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	req := httptest.NewRequest(http.MethodGet, "/v1/balances", nil)
	req = req.WithContext(auth.NewContext(req.Context(), auth.Token{ID: 7, Scopes: []auth.Scope{auth.Admin}}))
	rec := httptest.NewRecorder()
	ok.ServeHTTP(rec, req)
	if rec.Code != 200 {
		t.Fatalf("token in context: %d", rec.Code)
	}
}

func TestRequirePanicsOnUnknownScope(t *testing.T) {
	t.Parallel()
	defer func() {
		if recover() == nil {
			t.Fatal("Require(\"root\") did not panic")
		}
	}()
	auth.Require("root")
}
