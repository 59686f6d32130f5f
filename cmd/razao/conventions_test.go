package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/razao/razao/auth"
	"github.com/razao/razao/internal/pgtest"
	"github.com/razao/razao/webhook"
)

// syncBuffer is the service's log stream in a test: written by the
// server's goroutines, read by the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// lines parses every JSON log line written so far.
func (s *syncBuffer) lines(t *testing.T) []map[string]any {
	t.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(strings.NewReader(s.String()))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("log line is not JSON: %q", sc.Text())
		}
		out = append(out, m)
	}
	return out
}

// startLoggedServer is startServer with the service's own JSON log stream
// (newLogger, as razao serve builds it) kept for the test to read. The
// token is named "finance-bot".
func startLoggedServer(t *testing.T) (base, token string, db *sqlx.DB, logs *syncBuffer) {
	t.Helper()
	db, url := pgtest.NewWithURL(t)
	token, _, err := auth.Create(context.Background(), db, "finance-bot", []auth.Scope{auth.Admin})
	if err != nil {
		t.Fatal(err)
	}
	ep, err := webhook.NewEndpoint(webhook.EndpointConfig{Name: "psp", Scheme: "standard", Merchant: "loja", Secrets: []string{e2eSecret}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg := serveConfig{db: dbFlags{url: url}, timeZone: "America/Sao_Paulo", migrate: true,
		workerInterval: 50 * time.Millisecond, endpoints: []*webhook.Endpoint{ep}}
	logs = &syncBuffer{}
	ctx, cancel := context.WithCancel(context.Background())
	srv, err := newServer(ctx, cfg, newLogger(logs, slog.LevelInfo), time.Now)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base = "http://" + ln.Addr().String()
	listenAdmin(t, srv, base)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
		srv.Close()
	})
	return base, token, db, logs
}

type answer struct {
	status int
	header http.Header
	body   string
}

func send(t *testing.T, token, method, url, body string) answer {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return answer{resp.StatusCode, resp.Header, string(b)}
}

// requestLine returns the access log line of the request with id.
func requestLine(t *testing.T, logs *syncBuffer, id string) map[string]any {
	t.Helper()
	for _, l := range logs.lines(t) {
		if l["msg"] == "request" && l["request_id"] == id {
			return l
		}
	}
	t.Fatalf("no access log line for request %s in:\n%s", id, logs.String())
	return nil
}

// Every request leaves one JSON access log line in the service's stream:
// method, the route's template (never the raw path with its ids; a path no
// route matches is "unmatched"), status, bytes, duration, request id and
// the token's name, never the token itself.
func TestAccessLogOneLinePerRequestWithRouteTemplateAndTokenName(t *testing.T) {
	t.Parallel()
	base, token, _, logs := startLoggedServer(t)

	a := send(t, token, "GET", base+"/v1/charges/order-secret-id-42", "")
	if a.status != http.StatusNotFound {
		t.Fatalf("GET unknown charge: %d %s", a.status, a.body)
	}
	l := requestLine(t, logs, a.header.Get("X-Request-Id"))
	for k, want := range map[string]any{"method": "GET", "route": "/v1/charges/{id}", "status": float64(404),
		"bytes": float64(len(a.body)), "token": "finance-bot", "level": "INFO"} {
		if l[k] != want {
			t.Errorf("access log %s = %v, want %v (line %v)", k, l[k], want, l)
		}
	}
	if _, ok := l["duration_ms"].(float64); !ok {
		t.Errorf("access log has no duration_ms: %v", l)
	}

	a = send(t, "", "GET", base+"/no/such/path/123", "")
	l = requestLine(t, logs, a.header.Get("X-Request-Id"))
	if a.status != http.StatusNotFound || l["route"] != "unmatched" || l["token"] != nil {
		t.Errorf("unmatched path: %d, line %v; want 404, route unmatched and no token", a.status, l)
	}
	a = send(t, "", "GET", base+"/healthz", "")
	if l = requestLine(t, logs, a.header.Get("X-Request-Id")); l["route"] != "/healthz" || l["status"] != float64(200) {
		t.Errorf("healthz line %v", l)
	}

	n := 0
	for _, l := range logs.lines(t) {
		if l["msg"] == "request" {
			n++
		}
	}
	all := logs.String()
	if n != 3 {
		t.Errorf("%d access log lines for 3 requests:\n%s", n, all)
	}
	if strings.Contains(all, token) || strings.Contains(all, "order-secret-id-42") {
		t.Errorf("the log holds the token or a raw path:\n%s", all)
	}
}

// An error logged while serving a request carries that request's id, in
// the API (an unknown failure, logged once as a 500) as in auth (the token
// store failing).
func TestErrorLogLinesCarryTheRequestID(t *testing.T) {
	t.Parallel()
	base, token, db, logs := startLoggedServer(t)
	db.MustExec(`ALTER TABLE charges RENAME TO charges_gone`)
	a := send(t, token, "GET", base+"/v1/charges/order-1", "")
	if a.status != http.StatusInternalServerError {
		t.Fatalf("GET with the charges table gone: %d %s", a.status, a.body)
	}
	db.MustExec(`ALTER TABLE api_tokens RENAME TO api_tokens_gone`)
	b := send(t, token, "GET", base+"/v1/balances", "")
	if b.status != http.StatusServiceUnavailable {
		t.Fatalf("GET with the token store gone: %d %s", b.status, b.body)
	}
	for _, tc := range []struct {
		msg string
		id  string
	}{{"request failed", a.header.Get("X-Request-Id")}, {"api token check failed", b.header.Get("X-Request-Id")}} {
		found := false
		for _, l := range logs.lines(t) {
			if l["level"] == "ERROR" && l["msg"] == tc.msg {
				found = true
				if l["request_id"] != tc.id {
					t.Errorf("%q logged with request_id %v, want %s", tc.msg, l["request_id"], tc.id)
				}
			}
		}
		if !found {
			t.Errorf("no error line %q in:\n%s", tc.msg, logs.String())
		}
	}
}

// Requests are counted per route template, method and code, with a
// duration histogram per route and method: ids in the path make no new
// series.
func TestHTTPMetricsCountPerRouteTemplate(t *testing.T) {
	t.Parallel()
	base, token, _, _ := startLoggedServer(t)
	for _, id := range []string{"order-a", "order-b", "order-c"} {
		send(t, token, "GET", base+"/v1/charges/"+id, "")
	}
	send(t, "", "GET", base+"/nothing/here", "")
	send(t, "", "BREW", base+"/healthz", "")
	scrape := send(t, "", "GET", adminURL(t, base)+"/metrics", "").body
	for _, want := range []string{
		`razao_http_requests_total{code="404",method="GET",route="/v1/charges/{id}"} 3`,
		`razao_http_request_duration_seconds_count{method="GET",route="/v1/charges/{id}"} 3`,
		`razao_http_requests_total{code="404",method="GET",route="unmatched"} 1`,
		`razao_http_requests_total{code="405",method="OTHER",route="unmatched"} 1`,
	} {
		if !strings.Contains(scrape, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	if regexp.MustCompile(`razao_http_[a-z_]+\{[^}]*order-`).MatchString(scrape) {
		t.Errorf("an id from a path became a label:\n%s", scrape)
	}
}

// Every 405 says in Allow which methods the path takes: the router's
// (from the routes themselves) and the webhook handler's.
func TestMethodNotAllowedSaysAllow(t *testing.T) {
	t.Parallel()
	base, token, _, _ := startLoggedServer(t)
	for _, tc := range []struct{ method, path, allow string }{
		{"POST", "/v1/balances", "GET"},
		{"DELETE", "/v1/charges", "GET, POST"},
		{"GET", "/v1/adjustments/7/approve", "POST"},
		{"PUT", "/v1/charges/order-1", "GET"},
		{"GET", "/v1/periods/2026-08/close", "POST"},
		{"POST", "/healthz", "GET"},
		{"GET", "/webhooks/psp", "POST"},
	} {
		a := send(t, token, tc.method, base+tc.path, "")
		if a.status != http.StatusMethodNotAllowed || a.header.Get("Allow") != tc.allow {
			t.Errorf("%s %s: %d, Allow %q; want 405, Allow %q", tc.method, tc.path, a.status, a.header.Get("Allow"), tc.allow)
		}
	}
}

// A body of the wrong JSON type is answered with a problem naming the
// field and the JSON type expected, never encoding/json's Go names.
func TestBadJSONTypeProblemNamesNoGoTypes(t *testing.T) {
	t.Parallel()
	base, token, _, _ := startLoggedServer(t)
	goNames := regexp.MustCompile(`Go |int64|struct|charges\.|api\.|NewCharge|payoutRequest|time\.Time|\*string|unmarshal`)
	for _, tc := range []struct{ path, body, field, want string }{
		{"/v1/charges", `{"id":"o-1","amount":1.5}`, "amount", "an integer"},
		{"/v1/charges", `{"id":7,"amount":100}`, "id", "a string"},
		{"/v1/charges", `["not","an","object"]`, "", "an object"},
		{"/v1/partners/p1/payouts", `{"amount":"100"}`, "amount", "an integer"},
		{"/v1/partners/p1/payouts", `{"amount":100,"allow_over_owed":"yes"}`, "allow_over_owed", "true or false"},
		{"/v1/partners/p1/payouts", `{"amount":100,"effective_at":20260801}`, "effective_at", "a string"},
		{"/v1/partners/p1/payouts", `{"amount":100,"effective_at":"yesterday"}`, "effective_at", "RFC 3339"},
	} {
		req, _ := http.NewRequest("POST", base+tc.path, strings.NewReader(tc.body))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", "k-1")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var p struct{ Type, Detail string }
		json.NewDecoder(resp.Body).Decode(&p)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || goNames.MatchString(p.Detail) ||
			!strings.Contains(p.Detail, tc.field) || !strings.Contains(p.Detail, tc.want) {
			t.Errorf("POST %s %s: %d %q; want 400 naming %q and %q, no Go names", tc.path, tc.body, resp.StatusCode, p.Detail, tc.field, tc.want)
		}
	}
}

// A month closed through the API records the token's name as closed_by,
// not the database role the service connects as.
func TestClosedByIsTheTokenName(t *testing.T) {
	t.Parallel()
	base, token, db, _ := startLoggedServer(t)
	if a := send(t, token, "POST", base+"/v1/periods/2020-11/close", ""); a.status != http.StatusOK {
		t.Fatalf("close 2020-11: %d %s", a.status, a.body)
	}
	var by string
	if err := db.Get(&by, `SELECT closed_by FROM closed_periods WHERE month = '2020-11-01'`); err != nil || by != "finance-bot" {
		t.Fatalf("closed_by = %q (%v), want the token's name finance-bot", by, err)
	}
	a := send(t, token, "GET", base+"/v1/periods", "")
	if !strings.Contains(a.body, `"closed_by":"finance-bot"`) {
		t.Fatalf("GET /v1/periods does not show closed_by finance-bot: %.300s", a.body)
	}
}

// A payout carries the date it was made: effective_at dates it, in its own
// month, or, when that month is closed, in the first open month with
// effective_at kept as its event time; in the future it is refused (400);
// absent, it is now.
func TestPayoutEffectiveAt(t *testing.T) {
	t.Parallel()
	base, token, db, _ := startLoggedServer(t)
	sp, _ := time.LoadLocation("America/Sao_Paulo")
	if a := send(t, token, "POST", base+"/v1/periods/2020-11/close", ""); a.status != http.StatusOK {
		t.Fatalf("close 2020-11: %d %s", a.status, a.body)
	}
	payout := func(key, body string) (int, map[string]any) {
		t.Helper()
		req, _ := http.NewRequest("POST", base+"/v1/partners/p1/payouts", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var m map[string]any
		json.NewDecoder(resp.Body).Decode(&m)
		return resp.StatusCode, m
	}
	eventAt := func(id any) time.Time {
		t.Helper()
		var at time.Time
		if err := db.Get(&at, `SELECT event_at FROM posting_sets WHERE id = $1`, id); err != nil {
			t.Fatal(err)
		}
		return at
	}

	// Made in November 2020, closed: booked on the first day of December,
	// the first open month, dated as made.
	code, m := payout("late", `{"amount":500,"allow_over_owed":true,"effective_at":"2020-11-20T15:00:00-03:00"}`)
	made := time.Date(2020, 11, 20, 15, 0, 0, 0, sp)
	if code != http.StatusCreated || m["competence"] != "2020-12-01" {
		t.Fatalf("payout made in a closed month: %d %v; want 201 booked 2020-12-01", code, m)
	}
	if at := eventAt(m["posting_set_id"]); !at.Equal(made) || m["effective_at"] != "2020-11-20T15:00:00-03:00" {
		t.Fatalf("event_at %s, effective_at %v; want %s kept", at, m["effective_at"], made)
	}

	// The same key again: stating the same time is a replay, another time
	// a conflict, like another amount.
	if code, m := payout("late", `{"amount":500,"allow_over_owed":true,"effective_at":"2020-11-20T18:00:00Z"}`); code != http.StatusCreated && code != http.StatusOK || m["posting_set_id"] == nil {
		t.Fatalf("retry stating the same time: %d %v", code, m)
	}
	if code, m := payout("late", `{"amount":500,"allow_over_owed":true,"effective_at":"2020-11-21T15:00:00-03:00"}`); code != http.StatusUnprocessableEntity {
		t.Fatalf("the same key stating another time: %d %v; want 422 idempotency-conflict", code, m)
	}

	// Made in an open month: booked on its own date in São Paulo.
	code, m = payout("open", `{"amount":300,"allow_over_owed":true,"effective_at":"2021-01-01T01:30:00Z"}`)
	if code != http.StatusCreated || m["competence"] != "2020-12-31" {
		t.Fatalf("payout made 2021-01-01T01:30Z: %d %v; want 201 booked 2020-12-31 (São Paulo)", code, m)
	}

	// In the future: refused, nothing booked.
	future := time.Now().Add(time.Hour).Format(time.RFC3339)
	code, m = payout("future", `{"amount":300,"allow_over_owed":true,"effective_at":"`+future+`"}`)
	if code != http.StatusBadRequest || m["type"] != "https://razao.dev/problems/invalid-payout" {
		t.Fatalf("payout in the future: %d %v; want 400 invalid-payout", code, m)
	}

	// Absent: now.
	before := time.Now()
	code, m = payout("now", `{"amount":200,"allow_over_owed":true}`)
	after := time.Now()
	if code != http.StatusCreated || m["competence"] != before.In(sp).Format(time.DateOnly) && m["competence"] != after.In(sp).Format(time.DateOnly) {
		t.Fatalf("payout without effective_at: %d %v; want 201 booked today", code, m)
	}
	if at := eventAt(m["posting_set_id"]); at.Before(before.Truncate(time.Microsecond)) || at.After(after) {
		t.Fatalf("payout without effective_at has event_at %s, want between %s and %s", at, before, after)
	}
	var n int
	if db.Get(&n, `SELECT count(*) FROM posting_sets WHERE kind = 'payout'`); n != 3 {
		t.Fatalf("%d payouts booked, want 3", n)
	}
}

// razao serve says where it listens in its JSON log stream, like every
// other line it writes, not as loose text on stdout.
func TestServeListeningMessageIsInTheJSONStream(t *testing.T) {
	t.Parallel()
	_, url := pgtest.NewWithURL(t)
	ctx, cancel := context.WithCancel(context.Background())
	stdout, stderr := &syncBuffer{}, &syncBuffer{}
	done := make(chan error, 1)
	go func() {
		done <- cmdServe(ctx, []string{"-database-url", url, "-listen", "127.0.0.1:0", "-admin-listen", "127.0.0.1:0", "-migrate=false"}, stdout, stderr)
	}()
	var line map[string]any
	for deadline := time.Now().Add(30 * time.Second); line == nil; {
		for _, l := range stderr.lines(t) {
			if l["msg"] == "razao listening" {
				line = l
			}
		}
		select {
		case err := <-done:
			t.Fatalf("serve ended before listening: %v\n%s", err, stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("no listening line in:\n%s", stderr.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("serve: %v", err)
	}
	if u, _ := line["url"].(string); !strings.HasPrefix(u, "http://127.0.0.1:") || line["level"] != "INFO" {
		t.Errorf("listening line %v", line)
	}
	if stdout.String() != "" {
		t.Errorf("serve wrote outside its log stream: %q", stdout.String())
	}
}
