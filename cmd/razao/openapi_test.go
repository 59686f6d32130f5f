package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/mux"

	"github.com/razao/razao/api"
	"github.com/razao/razao/auth"
	"github.com/razao/razao/internal/contract"
	"github.com/razao/razao/internal/pgtest"
	"github.com/razao/razao/webhook"
)

// The OpenAPI document (api/openapi.yaml) is validated by a library
// (internal/contract), every response the API and end-to-end tests receive
// is validated against it, and the tests below hold its operations and
// scopes against the router's.

// TestOpenAPIDocumentIsValidOpenAPI31: the document, checked by
// libopenapi-validator against the OpenAPI 3.1 schema.
func TestOpenAPIDocumentIsValidOpenAPI31(t *testing.T) {
	t.Parallel()
	contract.Validate(t)
	if v := contract.Model(t).Version; v != "3.1.0" {
		t.Errorf("openapi %q, want 3.1.0", v)
	}
}

func openapiServer(t *testing.T) *server {
	t.Helper()
	_, dbURL := pgtest.NewWithURL(t)
	ep, err := webhook.NewEndpoint(webhook.EndpointConfig{Name: "psp", Scheme: "standard", Merchant: "loja", Secrets: []string{e2eSecret}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg := serveConfig{db: dbFlags{url: dbURL}, timeZone: "America/Sao_Paulo", migrate: true,
		workerInterval: time.Second, endpoints: []*webhook.Endpoint{ep}}
	srv, err := newServer(context.Background(), cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), time.Now)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv
}

var templateVarRE = regexp.MustCompile(`\{([^}:]+)(:[^}]*)?\}`)

// routeSet returns the router's operations as "METHOD /path/{var}". A route
// without Methods (the webhook route) takes POST, as its 405 says.
func routeSet(t *testing.T, srv *server) []string {
	t.Helper()
	v1 := &api.API{DB: srv.db, Ledger: srv.applier.Ledger, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Now: time.Now, Events: srv.hub}
	router, ok := srv.routes(http.NotFoundHandler(), v1, nil).(*mux.Router)
	if !ok {
		t.Fatal("routes() no longer returns a *mux.Router; adapt this test")
	}
	var set []string
	err := router.Walk(func(route *mux.Route, _ *mux.Router, _ []*mux.Route) error {
		if route.GetHandler() == nil {
			return nil // a subrouter's mount point
		}
		tpl, err := route.GetPathTemplate()
		if err != nil {
			return err
		}
		methods, err := route.GetMethods()
		if err != nil {
			methods = []string{http.MethodPost}
		}
		for _, m := range methods {
			set = append(set, m+" "+templateVarRE.ReplaceAllString(tpl, "{$1}"))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(set)
	return slices.Compact(set)
}

// documented returns the document's operations and each one's
// x-required-scope.
func documented(t *testing.T) (ops []string, scope map[string]string) {
	t.Helper()
	scope = map[string]string{}
	m := contract.Model(t)
	for path, item := range m.Paths.PathItems.FromOldest() {
		for method, op := range item.GetOperations().FromOldest() {
			key := strings.ToUpper(method) + " " + path
			ops = append(ops, key)
			if n, ok := op.Extensions.Get("x-required-scope"); ok {
				scope[key] = n.Value
			}
		}
	}
	slices.Sort(ops)
	return ops, scope
}

// TestOpenAPIMatchesRouterAndScopes: the document has exactly the
// router's operations, and each /v1 operation's x-required-scope is the
// lowest scope its route lets through (every answer validated against the
// document on the way).
func TestOpenAPIMatchesRouterAndScopes(t *testing.T) {
	t.Parallel()
	srv := openapiServer(t)
	routes := routeSet(t, srv)
	ops, scope := documented(t)
	if !slices.Equal(routes, ops) {
		t.Errorf("the router's operations\n  %s\nare not the document's\n  %s", strings.Join(routes, "\n  "), strings.Join(ops, "\n  "))
	}
	ladder := []auth.Scope{auth.Read, auth.Write, auth.Admin}
	tokens := map[auth.Scope]string{}
	for _, s := range ladder {
		tok, _, err := auth.Create(context.Background(), srv.db, "openapi-"+string(s), []auth.Scope{s})
		if err != nil {
			t.Fatal(err)
		}
		tokens[s] = tok
	}
	h := contract.Middleware(t, srv.http.Handler)
	samples := map[string]string{"endpoint": "psp", "id": "1", "month": "2026-08", "code": "assets:cash", "kind": "journal"}
	for _, key := range ops {
		method, path, _ := strings.Cut(key, " ")
		if !strings.HasPrefix(path, "/v1/") {
			if scope[key] != "" {
				t.Errorf("%s is open, but documents x-required-scope %q", key, scope[key])
			}
			continue
		}
		url := templateVarRE.ReplaceAllStringFunc(path, func(v string) string { return samples[templateVarRE.FindStringSubmatch(v)[1]] })
		call := func(token string) int {
			r := httptest.NewRequest(method, url, strings.NewReader("{}"))
			r.Header.Set("Content-Type", "application/json")
			if token != "" {
				r.Header.Set("Authorization", "Bearer "+token)
			}
			ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second) // the event stream ends with its request
			defer cancel()
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r.WithContext(ctx))
			return w.Code
		}
		if got := call(""); got != http.StatusUnauthorized {
			t.Errorf("%s without a token: %d, want 401", key, got)
		}
		var lowest auth.Scope
		for _, s := range ladder {
			got := call(tokens[s])
			switch {
			case got == http.StatusForbidden && lowest != "":
				t.Errorf("%s: a %s token is refused though %s is let through", key, s, lowest)
			case got != http.StatusForbidden && lowest == "":
				lowest = s
			}
		}
		if string(lowest) != scope[key] {
			t.Errorf("%s: x-required-scope %q, but the route lets through %q and up", key, scope[key], lowest)
		}
	}
}

// TestOpenAPIServedAsJSON: /openapi.json serves the YAML document as JSON.
func TestOpenAPIServedAsJSON(t *testing.T) {
	t.Parallel()
	srv := openapiServer(t)
	w := httptest.NewRecorder()
	contract.Middleware(t, srv.http.Handler).ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/openapi.json", nil))
	if w.Code != http.StatusOK {
		t.Fatalf("GET /openapi.json: %d", w.Code)
	}
	if mt, _, err := mime.ParseMediaType(w.Header().Get("Content-Type")); err != nil || mt != "application/json" {
		t.Errorf("Content-Type %q, want application/json", w.Header().Get("Content-Type"))
	}
	var doc struct {
		OpenAPI string                     `json:"openapi"`
		Paths   map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(w.Body.Bytes(), &doc); err != nil || doc.OpenAPI != "3.1.0" {
		t.Fatalf("not the OpenAPI document: %v", err)
	}
	ops, _ := documented(t)
	for _, key := range ops {
		if _, path, _ := strings.Cut(key, " "); doc.Paths[path] == nil {
			t.Errorf("%s is not in the served document", fmt.Sprint(path))
		}
	}
}
