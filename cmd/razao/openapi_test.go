package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"mime"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/mux"

	"github.com/razao/razao/api"
	"github.com/razao/razao/auth"
	"github.com/razao/razao/charges"
	"github.com/razao/razao/events"
	"github.com/razao/razao/internal/pgtest"
	"github.com/razao/razao/partners"
	"github.com/razao/razao/periods"
	"github.com/razao/razao/reports"
	"github.com/razao/razao/webhook"
)

// The OpenAPI document (api/openapi.json) is checked against the server it
// describes: the set of operations against the router's routes, each
// operation's scope against the scope the route enforces, and every answer
// the probes below get against the statuses and media types documented for
// it. A route added, removed or re-scoped without the document fails here.

// openapiDoc is the part of the document the tests read.
type openapiDoc struct {
	OpenAPI string `json:"openapi"`
	Info    struct {
		Title       string `json:"title"`
		Version     string `json:"version"`
		Description string `json:"description"`
	} `json:"info"`
	Servers []struct {
		URL string `json:"url"`
	} `json:"servers"`
	Security   *[]map[string][]string                `json:"security"`
	Paths      map[string]map[string]json.RawMessage `json:"paths"`
	Components struct {
		SecuritySchemes map[string]struct {
			Type   string `json:"type"`
			Scheme string `json:"scheme"`
		} `json:"securitySchemes"`
		Parameters map[string]openapiParam    `json:"parameters"`
		Responses  map[string]openapiResponse `json:"responses"`
	} `json:"components"`
}

type openapiOp struct {
	OperationID   string                     `json:"operationId"`
	Description   string                     `json:"description"`
	Security      *[]map[string][]string     `json:"security"`
	RequiredScope string                     `json:"x-required-scope"`
	Parameters    []openapiParam             `json:"parameters"`
	Responses     map[string]openapiResponse `json:"responses"`
	RequestBody   *struct {
		Content map[string]struct {
			Schema struct {
				Ref string `json:"$ref"`
			} `json:"schema"`
		} `json:"content"`
	} `json:"requestBody"`
}

type openapiParam struct {
	Ref      string          `json:"$ref"`
	Name     string          `json:"name"`
	In       string          `json:"in"`
	Required bool            `json:"required"`
	Example  json.RawMessage `json:"example"`
}

type openapiResponse struct {
	Ref     string                     `json:"$ref"`
	Content map[string]json.RawMessage `json:"content"`
}

// httpMethods are the operation keys of a path item; the other keys it may
// hold are pathItemFields.
var (
	httpMethods    = []string{"get", "put", "post", "delete", "options", "head", "patch", "trace"}
	pathItemFields = []string{"$ref", "summary", "description", "servers", "parameters"}
)

// scopeLadder lists the scopes from least to most powerful.
var scopeLadder = []auth.Scope{auth.Read, auth.Write, auth.Admin}

// operationKey names an operation as "METHOD /path/{template}".
func operationKey(method, path string) string { return strings.ToUpper(method) + " " + path }

func splitKey(key string) (method, path string) {
	method, path, _ = strings.Cut(key, " ")
	return method, path
}

func loadOpenAPI(t *testing.T) openapiDoc {
	t.Helper()
	var doc openapiDoc
	if err := json.Unmarshal(api.OpenAPI, &doc); err != nil {
		t.Fatalf("api/openapi.json is not valid JSON: %v", err)
	}
	return doc
}

// operations returns the document's operations by operationKey, and the
// path-level parameters of each path.
func (d openapiDoc) operations(t *testing.T) (map[string]openapiOp, map[string][]openapiParam) {
	t.Helper()
	ops := map[string]openapiOp{}
	pathParams := map[string][]openapiParam{}
	for path, item := range d.Paths {
		for key, raw := range item {
			switch {
			case key == "parameters":
				var ps []openapiParam
				if err := json.Unmarshal(raw, &ps); err != nil {
					t.Errorf("%s: parameters: %v", path, err)
				}
				pathParams[path] = ps
			case slices.Contains(httpMethods, key):
				var op openapiOp
				if err := json.Unmarshal(raw, &op); err != nil {
					t.Errorf("%s %s: %v", key, path, err)
					continue
				}
				ops[operationKey(key, path)] = op
			case slices.Contains(pathItemFields, key), strings.HasPrefix(key, "x-"):
			default:
				t.Errorf("%s: %q is neither an HTTP method nor a path item field", path, key)
			}
		}
	}
	return ops, pathParams
}

// param resolves a parameter that may be a $ref to components/parameters.
func (d openapiDoc) param(p openapiParam) (openapiParam, bool) {
	if p.Ref == "" {
		return p, true
	}
	name, ok := strings.CutPrefix(p.Ref, "#/components/parameters/")
	if !ok {
		return p, false
	}
	q, ok := d.Components.Parameters[name]
	return q, ok
}

// response resolves a response that may be a $ref to components/responses.
func (d openapiDoc) response(r openapiResponse) (openapiResponse, bool) {
	if r.Ref == "" {
		return r, true
	}
	name, ok := strings.CutPrefix(r.Ref, "#/components/responses/")
	if !ok {
		return r, false
	}
	q, ok := d.Components.Responses[name]
	return q, ok
}

var templateVarRE = regexp.MustCompile(`\{([^{}:]+)(?::[^{}]*)?\}`)

// openapiPath turns a mux path template into an OpenAPI one: {id:[0-9]+}
// becomes {id}.
func openapiPath(tpl string) string { return templateVarRE.ReplaceAllString(tpl, "{$1}") }

func templateVars(path string) []string {
	var vs []string
	for _, m := range templateVarRE.FindAllStringSubmatch(path, -1) {
		vs = append(vs, m[1])
	}
	return vs
}

func TestOpenAPIDocumentIsWellFormed(t *testing.T) {
	t.Parallel()
	doc := loadOpenAPI(t)
	if !strings.HasPrefix(doc.OpenAPI, "3.1.") {
		t.Errorf("openapi %q, want 3.1.x", doc.OpenAPI)
	}
	if doc.Info.Title == "" || doc.Info.Version == "" || doc.Info.Description == "" {
		t.Errorf("info needs a title, a version and a description: %+v", doc.Info)
	}
	if len(doc.Servers) == 0 {
		t.Error("no servers")
	}
	if doc.Security != nil && len(*doc.Security) > 0 {
		t.Error("a root security requirement would apply to the open endpoints: declare it per operation")
	}
	if s := doc.Components.SecuritySchemes["bearerAuth"]; s.Type != "http" || s.Scheme != "bearer" {
		t.Errorf("components.securitySchemes.bearerAuth = %+v, want an http bearer scheme", s)
	}

	var generic any
	if err := json.Unmarshal(api.OpenAPI, &generic); err != nil {
		t.Fatal(err)
	}
	checkRefs(t, generic, generic, "#")

	ops, pathParams := doc.operations(t)
	if len(ops) == 0 {
		t.Fatal("the document has no operations")
	}
	ids := map[string]string{}
	for _, key := range slices.Sorted(maps.Keys(ops)) {
		op := ops[key]
		method, path := splitKey(key)
		if op.OperationID == "" {
			t.Errorf("%s: no operationId", key)
		} else if other, dup := ids[op.OperationID]; dup {
			t.Errorf("%s: operationId %q is also %s's", key, op.OperationID, other)
		}
		ids[op.OperationID] = key
		checkResponses(t, doc, key, op)
		checkPathParams(t, doc, key, path, append(slices.Clone(pathParams[path]), op.Parameters...))

		bearer := op.Security != nil && slices.ContainsFunc(*op.Security, func(req map[string][]string) bool {
			_, ok := req["bearerAuth"]
			return ok && len(req) == 1
		})
		if strings.HasPrefix(path, "/v1/") {
			if !bearer || len(*op.Security) != 1 {
				t.Errorf("%s: security must be exactly [{bearerAuth: []}]", key)
			}
			if !slices.Contains(scopeLadder, auth.Scope(op.RequiredScope)) {
				t.Errorf("%s: x-required-scope %q is not one of %v", key, op.RequiredScope, scopeLadder)
			} else if !strings.Contains(op.Description, "`"+op.RequiredScope+"` scope") {
				t.Errorf("%s: the description does not name the %s scope", key, op.RequiredScope)
			}
			for _, code := range []string{"401", "403"} {
				if _, ok := op.Responses[code]; !ok {
					t.Errorf("%s: no %s response", key, code)
				}
			}
		} else {
			if bearer || op.RequiredScope != "" {
				t.Errorf("%s: only /v1 operations take a bearer token", key)
			}
		}
		if method == "GET" || method == "DELETE" {
			var body struct {
				RequestBody json.RawMessage `json:"requestBody"`
			}
			json.Unmarshal(doc.Paths[path][strings.ToLower(method)], &body)
			if body.RequestBody != nil {
				t.Errorf("%s: a %s with a request body", key, method)
			}
		}
	}
}

func checkResponses(t *testing.T, doc openapiDoc, key string, op openapiOp) {
	t.Helper()
	if len(op.Responses) == 0 {
		t.Errorf("%s: no responses", key)
	}
	for code, r := range op.Responses {
		if n, err := strconv.Atoi(code); code != "default" && (err != nil || n < 100 || n > 599) {
			t.Errorf("%s: response key %q is not a status code", key, code)
		}
		r, ok := doc.response(r)
		if !ok {
			t.Errorf("%s: response %s: unresolvable $ref", key, code)
			continue
		}
		for mt := range r.Content {
			if _, _, err := mime.ParseMediaType(mt); err != nil {
				t.Errorf("%s: response %s: media type %q: %v", key, code, mt, err)
			}
		}
		_, path := splitKey(key)
		if n, _ := strconv.Atoi(code); n >= 400 && strings.HasPrefix(path, "/v1/") {
			if _, ok := r.Content["application/problem+json"]; !ok || len(r.Content) != 1 {
				t.Errorf("%s: error response %s is not application/problem+json", key, code)
			}
		}
	}
}

// checkPathParams checks that the path parameters declared are exactly the
// template's variables, each required.
func checkPathParams(t *testing.T, doc openapiDoc, key, path string, params []openapiParam) {
	t.Helper()
	declared := map[string]bool{}
	for _, p := range params {
		p, ok := doc.param(p)
		if !ok {
			t.Errorf("%s: unresolvable parameter $ref", key)
			continue
		}
		if p.In != "path" {
			continue
		}
		if !p.Required {
			t.Errorf("%s: path parameter %s is not required", key, p.Name)
		}
		declared[p.Name] = true
	}
	for _, v := range templateVars(path) {
		if !declared[v] {
			t.Errorf("%s: path variable {%s} has no path parameter", key, v)
		}
		delete(declared, v)
	}
	for name := range declared {
		t.Errorf("%s: path parameter %s is not in the path", key, name)
	}
}

// checkRefs checks that every local $ref in v points at something in root.
func checkRefs(t *testing.T, root, v any, at string) {
	t.Helper()
	switch v := v.(type) {
	case map[string]any:
		if ref, ok := v["$ref"].(string); ok {
			if _, err := jsonPointer(root, ref); err != nil {
				t.Errorf("%s: $ref %s: %v", at, ref, err)
			}
		}
		for k, e := range v {
			checkRefs(t, root, e, at+"/"+k)
		}
	case []any:
		for i, e := range v {
			checkRefs(t, root, e, fmt.Sprintf("%s/%d", at, i))
		}
	}
}

func jsonPointer(root any, ref string) (any, error) {
	p, ok := strings.CutPrefix(ref, "#")
	if !ok {
		return nil, errors.New("not a local reference")
	}
	cur := root
	for _, tok := range strings.Split(strings.TrimPrefix(p, "/"), "/") {
		tok = strings.NewReplacer("~1", "/", "~0", "~").Replace(tok)
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%q: not an object", tok)
		}
		if cur, ok = m[tok]; !ok {
			return nil, fmt.Errorf("%q: no such member", tok)
		}
	}
	return cur, nil
}

// openapiServer is the real server wiring on a database of its own, with
// one webhook endpoint, "psp".
func openapiServer(t *testing.T) (*server, *slog.Logger) {
	t.Helper()
	_, dbURL := pgtest.NewWithURL(t)
	ep, err := webhook.NewEndpoint(webhook.EndpointConfig{Name: "psp", Scheme: "standard", Merchant: "loja", Secrets: []string{e2eSecret}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	cfg := serveConfig{db: dbFlags{url: dbURL}, timeZone: "America/Sao_Paulo", migrate: true,
		workerInterval: time.Second, endpoints: []*webhook.Endpoint{ep}}
	srv, err := newServer(context.Background(), cfg, logger, time.Now)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv, logger
}

// sampleValues fill the path variables and required query parameters of
// probe requests when the document gives no example: values that reach the
// handlers (a configured webhook endpoint, a valid month...).
var sampleValues = map[string]string{
	"endpoint": "psp",
	"id":       "1",
	"month":    "2026-08",
	"code":     "assets:cash",
	"kind":     "journal",
}

// routeSet walks the router that routes() builds, wired as newServer wires
// it, and returns its operations by operationKey. A route without Methods
// takes the methods its handler names in the Allow header of its 405 to a
// GET (the webhook route: POST).
func routeSet(t *testing.T, srv *server, logger *slog.Logger) map[string]bool {
	t.Helper()
	v1 := &api.API{DB: srv.db, Ledger: srv.applier.Ledger, Log: logger, Now: time.Now, Events: srv.hub}
	router, ok := srv.routes(http.NotFoundHandler(), v1, http.NotFoundHandler()).(*mux.Router)
	if !ok {
		t.Fatal("routes() no longer returns a *mux.Router; adapt this test")
	}
	set := map[string]bool{}
	err := router.Walk(func(route *mux.Route, _ *mux.Router, _ []*mux.Route) error {
		if route.GetHandler() == nil {
			return nil // a subrouter's mount point, e.g. PathPrefix("/v1")
		}
		tpl, err := route.GetPathTemplate()
		if err != nil {
			return fmt.Errorf("a route without a path cannot be documented: %w", err)
		}
		if re, _ := route.GetPathRegexp(); !strings.HasSuffix(re, "$") {
			return fmt.Errorf("%s is a path prefix: document its paths and mount them one by one", tpl)
		}
		path := openapiPath(tpl)
		methods, err := route.GetMethods()
		if err != nil {
			methods = allowedByHandler(t, srv, path)
		}
		for _, m := range methods {
			set[operationKey(m, path)] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return set
}

// allowedByHandler asks the real handler which methods a route without
// Methods takes.
func allowedByHandler(t *testing.T, srv *server, path string) []string {
	t.Helper()
	res := probe(t, srv.http.Handler, httptest.NewRequest(http.MethodGet, fillPath(path, nil), nil))
	allow := res.header.Get("Allow")
	if res.status != http.StatusMethodNotAllowed || allow == "" {
		t.Errorf("route %s has no Methods and its handler, asked with GET, answered %d with Allow %q: say which methods it takes", path, res.status, allow)
		return nil
	}
	var ms []string
	for _, m := range strings.Split(allow, ",") {
		ms = append(ms, strings.ToUpper(strings.TrimSpace(m)))
	}
	return ms
}

func fillPath(path string, examples map[string]string) string {
	return templateVarRE.ReplaceAllStringFunc(path, func(v string) string {
		name := templateVarRE.FindStringSubmatch(v)[1]
		if e, ok := examples[name]; ok {
			return url.PathEscape(e)
		}
		if s, ok := sampleValues[name]; ok {
			return s
		}
		return "x"
	})
}

func TestOpenAPIMatchesRouter(t *testing.T) {
	t.Parallel()
	doc := loadOpenAPI(t)
	ops, pathParams := doc.operations(t)
	srv, logger := openapiServer(t)
	routes := routeSet(t, srv, logger)

	var missing, extra []string
	for key := range routes {
		if _, ok := ops[key]; !ok {
			missing = append(missing, key)
		}
	}
	for key := range ops {
		if !routes[key] {
			extra = append(extra, key)
		}
	}
	sort.Strings(missing)
	sort.Strings(extra)
	if len(missing)+len(extra) > 0 {
		var b strings.Builder
		b.WriteString("api/openapi.json and the router disagree:\n")
		for _, k := range missing {
			fmt.Fprintf(&b, "  + %s\t(served, not documented)\n", k)
		}
		for _, k := range extra {
			fmt.Fprintf(&b, "  - %s\t(documented, not served)\n", k)
		}
		t.Error(b.String())
	}

	ctx := context.Background()
	tokens := map[auth.Scope]string{}
	for _, s := range scopeLadder {
		tok, _, err := auth.Create(ctx, srv.db, "openapi-"+string(s), []auth.Scope{s})
		if err != nil {
			t.Fatal(err)
		}
		tokens[s] = tok
	}

	// Every operation, documented and served, is called through the real
	// server: unauthenticated, then (under /v1) with a token of each scope.
	// Each answer must come from the route's handler, not from the router
	// (a mux 404 or 405), and be documented with its media type; under /v1
	// the lowest scope let through must be x-required-scope.
	for _, key := range slices.Sorted(maps.Keys(ops)) {
		if !routes[key] {
			continue
		}
		op := ops[key]
		method, path := splitKey(key)
		newReq := func(token string) *http.Request {
			r := exampleRequest(doc, method, path, append(slices.Clone(pathParams[path]), op.Parameters...))
			if token != "" {
				r.Header.Set("Authorization", "Bearer "+token)
			}
			return r
		}
		anon := probe(t, srv.http.Handler, newReq(""))
		checkAnswer(t, doc, key, op, "without a token", anon)
		if !strings.HasPrefix(path, "/v1/") {
			t.Logf("%s: %d", key, anon.status)
			continue
		}
		if anon.status != http.StatusUnauthorized {
			t.Errorf("%s without a token: %d, want 401", key, anon.status)
		}
		enforced := auth.Scope("")
		statuses := []string{fmt.Sprint("none ", anon.status)}
		for _, s := range scopeLadder {
			res := probe(t, srv.http.Handler, newReq(tokens[s]))
			checkAnswer(t, doc, key, op, "with a token of scope "+string(s), res)
			statuses = append(statuses, fmt.Sprint(s, " ", res.status))
			switch {
			case res.status == http.StatusForbidden && enforced != "":
				t.Errorf("%s: a %s token is refused though %s is let through", key, s, enforced)
			case res.status != http.StatusForbidden && enforced == "":
				enforced = s
			}
		}
		t.Logf("%s: %s", key, strings.Join(statuses, ", "))
		if string(enforced) != op.RequiredScope {
			t.Errorf("%s: x-required-scope %q, but the route lets through %q and up", key, op.RequiredScope, enforced)
		}

		// A JSON body with every documented property must get past the
		// decoder, which refuses unknown fields.
		if op.RequestBody == nil || enforced == "" {
			continue
		}
		body, ok := exampleBody(t, op.RequestBody.Content["application/json"].Schema.Ref)
		if !ok {
			continue
		}
		r := newReq(tokens[enforced])
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		r.Header.Set("Content-Type", "application/json")
		res := probe(t, srv.http.Handler, r)
		checkAnswer(t, doc, key, op, "with every documented body field", res)
		var p api.Problem
		if json.Unmarshal([]byte(res.body), &p) == nil && strings.HasSuffix(p.Type, "/invalid-json") {
			t.Errorf("%s: the handler refuses the documented body %s: %s", key, body, p.Detail)
		}
		t.Logf("%s with %s: %d", key, body, res.status)
	}
}

// exampleBody builds a JSON object with every property of the schema at
// ref, each a plain value of its type (the first of its enum).
func exampleBody(t *testing.T, ref string) ([]byte, bool) {
	t.Helper()
	var root any
	json.Unmarshal(api.OpenAPI, &root)
	s, err := jsonPointer(root, ref)
	if err != nil {
		t.Errorf("request body $ref %q: %v", ref, err)
		return nil, false
	}
	schema, _ := s.(map[string]any)
	props, _ := schema["properties"].(map[string]any)
	if len(props) == 0 {
		t.Errorf("request body schema %q has no properties", ref)
		return nil, false
	}
	body := map[string]any{}
	for name, p := range props {
		p, _ := p.(map[string]any)
		if enum, ok := p["enum"].([]any); ok && len(enum) > 0 {
			body[name] = enum[0]
			continue
		}
		switch p["type"] {
		case "integer", "number":
			body[name] = 1
		case "boolean":
			body[name] = false
		case "object":
			body[name] = map[string]any{}
		case "array":
			body[name] = []any{}
		default:
			body[name] = "probe"
		}
	}
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	return b, true
}

// exampleRequest builds a request for an operation from its parameters'
// examples: path variables, required query parameters and required headers.
func exampleRequest(doc openapiDoc, method, path string, params []openapiParam) *http.Request {
	pathValues := map[string]string{}
	query := url.Values{}
	header := http.Header{}
	for _, p := range params {
		p, ok := doc.param(p)
		if !ok {
			continue
		}
		var ex string
		if json.Unmarshal(p.Example, &ex) != nil {
			ex = ""
		}
		switch {
		case p.In == "path" && ex != "":
			pathValues[p.Name] = ex
		case p.In == "query" && p.Required:
			query.Set(p.Name, cmp.Or(ex, sampleValues[p.Name], "x"))
		case p.In == "header" && p.Required:
			header.Set(p.Name, cmp.Or(ex, "openapi-probe"))
		}
	}
	target := fillPath(path, pathValues)
	if len(query) > 0 {
		target += "?" + query.Encode()
	}
	r := httptest.NewRequest(method, target, nil)
	for k, vs := range header {
		r.Header[k] = vs
	}
	return r
}

// checkAnswer checks that res came from the operation's handler and that
// its status and media type are documented for the operation.
func checkAnswer(t *testing.T, doc openapiDoc, key string, op openapiOp, how string, res probeResult) {
	t.Helper()
	if res.status == http.StatusNotFound && res.body == "404 page not found\n" ||
		res.status == http.StatusMethodNotAllowed && res.body == "" && res.header.Get("Content-Type") == "" {
		t.Errorf("%s %s: the router answered %d itself: the real server does not serve this operation", key, how, res.status)
		return
	}
	r, ok := op.Responses[strconv.Itoa(res.status)]
	if !ok {
		r, ok = op.Responses["default"]
	}
	if !ok {
		t.Errorf("%s %s: answered %d, which is not documented (body %.200q)", key, how, res.status, res.body)
		return
	}
	r, _ = doc.response(r)
	ct := res.header.Get("Content-Type")
	if ct == "" || len(r.Content) == 0 {
		if (ct == "") != (len(r.Content) == 0) {
			t.Errorf("%s %s: answered %d with Content-Type %q; the document says %v", key, how, res.status, ct, slices.Sorted(maps.Keys(r.Content)))
		}
		return
	}
	mt, _, err := mime.ParseMediaType(ct)
	if _, documented := r.Content[mt]; err != nil || !documented {
		t.Errorf("%s %s: answered %d with Content-Type %q; the document says %v", key, how, res.status, ct, slices.Sorted(maps.Keys(r.Content)))
	}
}

type probeResult struct {
	status int
	header http.Header
	body   string
}

// probe serves req with h and returns the answer. A stream (the event
// stream) never ends by itself: once its headers are sent, its request is
// cancelled.
func probe(t *testing.T, h http.Handler, req *http.Request) probeResult {
	t.Helper()
	ctx, cancel := context.WithCancel(req.Context())
	defer cancel()
	w := &probeWriter{header: http.Header{}, started: make(chan struct{})}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer func() {
			if p := recover(); p != nil && p != http.ErrAbortHandler {
				panic(p)
			}
		}()
		h.ServeHTTP(w, req.WithContext(ctx))
	}()
	select {
	case <-done:
	case <-w.started:
		if mt, _, _ := mime.ParseMediaType(w.sent.Get("Content-Type")); mt == "text/event-stream" {
			cancel()
		}
	}
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatalf("%s %s: the handler did not return", req.Method, req.URL)
	}
	w.WriteHeader(http.StatusOK) // a handler that wrote nothing answered 200
	return probeResult{status: w.status, header: w.sent, body: w.body.String()}
}

// probeWriter records an answer; it tells on started when the headers are
// sent, with a copy of them in sent.
type probeWriter struct {
	header  http.Header
	once    sync.Once
	started chan struct{}
	status  int
	sent    http.Header
	body    bytes.Buffer
}

func (w *probeWriter) Header() http.Header { return w.header }

func (w *probeWriter) WriteHeader(code int) {
	w.once.Do(func() {
		w.status, w.sent = code, w.header.Clone()
		close(w.started)
	})
}

func (w *probeWriter) Write(p []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return w.body.Write(p)
}

// Flush lets the event stream flush, as it does on a real connection.
func (w *probeWriter) Flush() {}

func TestOpenAPIServedAsJSON(t *testing.T) {
	t.Parallel()
	srv, _ := openapiServer(t)
	res := probe(t, srv.http.Handler, httptest.NewRequest(http.MethodGet, "/openapi.json", nil))
	if res.status != http.StatusOK {
		t.Fatalf("GET /openapi.json: %d", res.status)
	}
	if mt, _, err := mime.ParseMediaType(res.header.Get("Content-Type")); err != nil || mt != "application/json" {
		t.Errorf("GET /openapi.json: Content-Type %q, want application/json", res.header.Get("Content-Type"))
	}
	if res.body != string(api.OpenAPI) {
		t.Error("GET /openapi.json does not serve api/openapi.json")
	}
	var doc map[string]any
	if err := json.Unmarshal([]byte(res.body), &doc); err != nil || doc["openapi"] == nil || doc["paths"] == nil {
		t.Errorf("GET /openapi.json: not an OpenAPI document: %v", err)
	}
}

// schemaTypes are the Go types whose JSON the document's schemas describe.
// Request bodies are marked: which of their fields a client must send is
// the handler's rule, not the struct's.
var schemaTypes = map[string]struct {
	value   any
	request bool
}{
	"Problem":            {value: api.Problem{}},
	"NewCharge":          {value: charges.NewCharge{}, request: true},
	"Charge":             {value: charges.Charge{}},
	"ChargeDetail":       {value: charges.Detail{}},
	"Refund":             {value: charges.Refund{}},
	"ChargePostingSet":   {value: charges.PostingSet{}},
	"ChargePosting":      {value: charges.Posting{}},
	"AccessGrant":        {value: charges.Grant{}},
	"AccountBalance":     {value: reports.AccountBalance{}},
	"PartnerSummary":     {value: partners.Summary{}},
	"PayoutResult":       {value: partners.Result{}},
	"TrialBalanceReport": {value: reports.TrialBalanceReport{}},
	"TrialBalanceLine":   {value: reports.TrialBalanceLine{}},
	"TrialBalanceTotal":  {value: reports.TrialBalanceTotal{}},
	"IncomeStatement":    {value: reports.Income{}},
	"JournalPage":        {value: reports.JournalPage{}},
	"JournalSet":         {value: reports.JournalSet{}},
	"JournalPosting":     {value: reports.JournalPosting{}},
	"Series":             {value: reports.Series{}},
	"SeriesPoint":        {value: reports.SeriesPoint{}},
	"Period":             {value: periods.Period{}},
	"Divergence":         {value: reports.Divergence{}},
	"DivergencePage":     {value: reports.DivergencePage{}},
	"Event":              {value: events.Event{}},
	"WebhookResponse":    {value: webhook.Response{}},
	"WebhookEventStatus": {value: webhook.EventStatus{}},
}

type openapiSchema struct {
	Properties map[string]struct {
		Ref    string          `json:"$ref"`
		Type   json.RawMessage `json:"type"`
		Format string          `json:"format"`
	} `json:"properties"`
	Required []string `json:"required"`
}

// TestOpenAPISchemasMatchGoTypes checks each schema against the Go type the
// API encodes: the same JSON field names, required exactly when the field
// is always present (not omitempty), and the JSON type of each field, int64
// amounts as integer/int64.
func TestOpenAPISchemasMatchGoTypes(t *testing.T) {
	t.Parallel()
	var doc struct {
		Components struct {
			Schemas map[string]openapiSchema `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(api.OpenAPI, &doc); err != nil {
		t.Fatal(err)
	}
	for _, name := range slices.Sorted(maps.Keys(schemaTypes)) {
		st := schemaTypes[name]
		schema, ok := doc.Components.Schemas[name]
		if !ok {
			t.Errorf("components.schemas has no %s", name)
			continue
		}
		// Fields always present: those of the zero value's JSON.
		b, err := json.Marshal(st.value)
		if err != nil {
			t.Fatal(err)
		}
		var zero map[string]json.RawMessage
		if err := json.Unmarshal(b, &zero); err != nil {
			t.Fatal(err)
		}
		fields := map[string]reflect.Type{}
		if _, custom := st.value.(json.Marshaler); custom {
			for k := range zero {
				fields[k] = nil // encoded by hand: names only
			}
		} else {
			jsonFields(reflect.TypeOf(st.value), fields)
		}
		for _, f := range slices.Sorted(maps.Keys(fields)) {
			p, ok := schema.Properties[f]
			if !ok {
				t.Errorf("%s: field %q of %T is not in the schema", name, f, st.value)
				continue
			}
			if want := fields[f]; want != nil {
				checkSchemaType(t, name+"."+f, want, p.Ref, p.Type, p.Format)
			}
		}
		for _, p := range slices.Sorted(maps.Keys(schema.Properties)) {
			if _, ok := fields[p]; !ok {
				t.Errorf("%s: property %q is not a JSON field of %T", name, p, st.value)
			}
		}
		if st.request {
			continue
		}
		required := slices.Sorted(maps.Keys(zero))
		got := slices.Sorted(slices.Values(schema.Required))
		if !slices.Equal(got, required) {
			t.Errorf("%s: required %v, want the fields %T always encodes: %v", name, got, st.value, required)
		}
	}
}

// jsonFields collects the JSON field names of struct type typ as
// encoding/json names them, with their Go types.
func jsonFields(typ reflect.Type, into map[string]reflect.Type) {
	for typ.Kind() == reflect.Pointer {
		typ = typ.Elem()
	}
	for i := range typ.NumField() {
		f := typ.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			jsonFields(f.Type, into)
			continue
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		into[name] = f.Type
	}
}

var rawMessageType = reflect.TypeFor[json.RawMessage]()

// checkSchemaType checks that a property's schema has the JSON type of the
// Go type typ.
func checkSchemaType(t *testing.T, at string, typ reflect.Type, ref string, rawType json.RawMessage, format string) {
	t.Helper()
	for typ.Kind() == reflect.Pointer {
		typ = typ.Elem()
	}
	var want, wantFormat string
	switch {
	case typ == rawMessageType:
		return // any JSON; the schema says which
	case typ == reflect.TypeFor[time.Time]():
		want, wantFormat = "string", "date-time"
	case typ.Kind() == reflect.Int64:
		want, wantFormat = "integer", "int64"
	case typ.Kind() >= reflect.Int && typ.Kind() <= reflect.Uint64:
		want = "integer"
	case typ.Kind() == reflect.String:
		want = "string"
	case typ.Kind() == reflect.Bool:
		want = "boolean"
	case typ.Kind() == reflect.Slice:
		want = "array"
	case typ.Kind() == reflect.Struct, typ.Kind() == reflect.Map:
		if ref != "" {
			return
		}
		want = "object"
	default:
		t.Errorf("%s: Go type %s has no JSON type here", at, typ)
		return
	}
	var types []string
	var one string
	if json.Unmarshal(rawType, &one) == nil {
		types = []string{one}
	} else {
		json.Unmarshal(rawType, &types)
	}
	if !slices.Contains(types, want) {
		t.Errorf("%s: schema type %s, want %q for Go %s", at, rawType, want, typ)
	}
	if wantFormat != "" && format != wantFormat {
		t.Errorf("%s: format %q, want %q for Go %s", at, format, wantFormat, typ)
	}
}
