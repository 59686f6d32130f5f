package main

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/razao/razao"
	"github.com/razao/razao/auth"
	"github.com/razao/razao/internal/standby"
	"github.com/razao/razao/outgoing"
	"github.com/razao/razao/webhook"
)

// ledgerOnPair creates and migrates razao's database on the pair's
// primary, with an admin token, and returns the database's URL on each
// node (the standby's once it has replayed it).
func ledgerOnPair(ctx context.Context, t testing.TB, p *standby.Pair) (primaryURL, standbyURL, token string) {
	t.Helper()
	admin, err := sqlx.Open("postgres", p.Primary.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	if _, err := admin.ExecContext(ctx, `CREATE DATABASE razao`); err != nil {
		t.Fatal(err)
	}
	primaryURL, standbyURL = p.Primary.DatabaseURL("razao"), p.Standby.DatabaseURL("razao")
	db, err := razao.Open(ctx, primaryURL)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := razao.Migrate(ctx, db); err != nil {
		t.Fatal(err)
	}
	if token, _, err = auth.Create(ctx, db, "standby", []auth.Scope{auth.Admin}); err != nil {
		t.Fatal(err)
	}
	if err := p.WaitReplay(ctx); err != nil {
		t.Fatal(err)
	}
	return primaryURL, standbyURL, token
}

// serveOnPair runs the real wiring of razao serve on the pair, reads
// from the standby bounded by maxLag, checked before every read.
func serveOnPair(t testing.TB, primaryURL, standbyURL string, maxLag time.Duration) (base string, srv *server) {
	t.Helper()
	ep, err := webhook.NewEndpoint(webhook.EndpointConfig{Name: "psp", Scheme: "standard", Merchant: "loja", Secrets: []string{e2eSecret}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg := serveConfig{db: dbFlags{url: primaryURL}, readURL: standbyURL, readMaxLag: maxLag, timeZone: "America/Sao_Paulo",
		workerInterval: 50 * time.Millisecond, endpoints: []*webhook.Endpoint{ep},
		// Subscribers in the tests are on loopback, over http; a short
		// attempt timeout makes a lease lost with the primary run out in
		// 9 s (3 × (timeout + 1 s)).
		webhooks: outgoing.Config{AllowPrivateTargets: true, AllowHTTPTargets: true, Timeout: 2 * time.Second}}
	ctx, cancel := context.WithCancel(context.Background())
	if srv, err = newServer(ctx, cfg, slog.New(slog.NewJSONHandler(io.Discard, nil)), time.Now); err != nil {
		cancel()
		t.Fatal(err)
	}
	srv.reads.Recheck = 0
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
		srv.Close()
	})
	return "http://" + ln.Addr().String(), srv
}

// get answers a GET's status and body.
func get(t *testing.T, token, url string, header ...string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestServeReadsListsFromTheStandbyAndWritesOnThePrimary runs razao serve
// with read_database_url on a real streaming standby. The list of charges
// comes from the standby: with its replay paused it does not show a charge
// just registered, while the charge itself (by id), a no-cache read and a
// second razao with a strict read_max_lag do (the primary); resumed, it
// shows it. The console, signed in as a browser is, reads the same way:
// its search from the standby, a charge's own page from the primary. Every write meanwhile (a charge, a signed delivery and its
// booking) goes to the primary: on the standby it would fail, read-only.
// With the standby stopped, the list comes from the primary: a 200, never
// a 500.
func TestServeReadsListsFromTheStandbyAndWritesOnThePrimary(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	p := standby.Start(t, standby.Options{})
	primaryURL, standbyURL, token := ledgerOnPair(ctx, t, p)
	base, _ := serveOnPair(t, primaryURL, standbyURL, time.Hour)

	register := func(id string) {
		t.Helper()
		if code, m := apiCall(t, token, "POST", base+"/v1/charges", `{"id":"`+id+`","amount":4990,"partner":"p1","commission_bp":1000,"access":"course:go"}`); code != 201 {
			t.Fatalf("register %s: %d %v", id, code, m)
		}
	}
	listed := func(id string, header ...string) bool {
		t.Helper()
		code, body := get(t, token, base+"/v1/charges", header...)
		if code != 200 {
			t.Fatalf("GET /v1/charges: %d %s", code, body)
		}
		return strings.Contains(body, `"`+id+`"`)
	}

	register("order-1")
	if err := p.WaitReplay(ctx); err != nil {
		t.Fatal(err)
	}
	if !listed("order-1") {
		t.Fatal("a replayed charge is not listed")
	}

	if err := p.PauseReplay(ctx); err != nil {
		t.Fatal(err)
	}
	register("order-2")
	if listed("order-2") {
		t.Fatal("a charge the paused standby has not replayed is listed: the list was not read from the standby")
	}
	if code, body := get(t, token, base+"/v1/charges/order-2"); code != 200 {
		t.Fatalf("the charge just registered, by id: %d %s (want it from the primary)", code, body)
	}
	// The console reads as the API does: its search from the standby, a
	// charge's own page from the primary.
	console := consoleSignIn(t, base, token)
	// Signing in was a POST: for read_max_lag after it (the razao_wrote
	// cookie) the browser's pages read the primary, as after any form.
	if found := consoleGet(t, console, base+"/console/search?q=order-2"); !strings.Contains(found, `data-charge="order-2"`) {
		t.Error("right after signing in, the console's search does not find the charge just registered (want the primary: read-your-writes)")
	}
	// Once the cookie has run out, as it does read_max_lag after:
	u, _ := url.Parse(base + "/")
	console.Jar.SetCookies(u, []*http.Cookie{{Name: "razao_wrote", Path: "/", MaxAge: -1}})
	if found := consoleGet(t, console, base+"/console/search?q=order-2"); strings.Contains(found, `data-charge="order-2"`) {
		t.Error("the console's search finds a charge the paused standby has not replayed: it was not read from the standby")
	}
	if page := consoleGet(t, console, base+"/console/charges/order-2"); !strings.Contains(page, "order-2") {
		t.Error("the console's page of the charge just registered does not show it (want it from the primary)")
	}
	if !listed("order-2", "Cache-Control", "no-cache") {
		t.Error("a no-cache read does not see the write before it")
	}
	// A write's whole path on the primary while the standby is used: the
	// delivery is taken and booked.
	now := time.Now().Format(time.RFC3339)
	body := []byte(`{"type":"charge.paid","timestamp":"` + now + `","data":{"charge_id":"order-2","amount":4990,"occurred_at":"` + now + `"}}`)
	resp := signedStandard(t, base, "msg-order-2", body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("signed delivery while reads use the standby: %d", resp.StatusCode)
	}
	primary, err := sqlx.Open("postgres", primaryURL)
	if err != nil {
		t.Fatal(err)
	}
	defer primary.Close()
	waitFor(ctx, t, "the delivery booked on the primary", func() bool {
		var n int
		primary.GetContext(ctx, &n, `SELECT count(*) FROM posting_sets WHERE kind = 'sale'`)
		return n == 1
	})

	// A second razao whose bound the paused standby has passed.
	strict, _ := serveOnPair(t, primaryURL, standbyURL, time.Millisecond)
	waitFor(ctx, t, "a standby lagging beyond read_max_lag is left for the primary", func() bool {
		code, body := get(t, token, strict+"/v1/charges")
		return code == 200 && strings.Contains(body, `"order-2"`)
	})

	if err := p.ResumeReplay(ctx); err != nil {
		t.Fatal(err)
	}
	if err := p.WaitReplay(ctx); err != nil {
		t.Fatal(err)
	}
	if !listed("order-2") {
		t.Fatal("the charge, replayed, is not listed")
	}
	if found := consoleGet(t, console, base+"/console/search?q=order-2"); !strings.Contains(found, `data-charge="order-2"`) {
		t.Error("the console's search does not find the charge once the standby replayed it")
	}

	if err := p.StopStandby(); err != nil {
		t.Fatal(err)
	}
	register("order-3")
	if !listed("order-3") {
		t.Fatal("with the standby down, the list does not come from the primary")
	}
	for _, path := range []string{"/v1/reports/trial-balance/" + time.Now().Format("2006-01"), "/v1/posting-sets", "/v1/partners"} {
		if code, body := get(t, token, base+path); code != 200 {
			t.Errorf("GET %s with the standby down: %d %s", path, code, body)
		}
	}
}

// waitFor polls cond until it holds or ctx ends: a wait for a state,
// never a verdict on how long it took.
func waitFor(ctx context.Context, t *testing.T, what string, cond func() bool) {
	t.Helper()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("never: %s", what)
		case <-time.After(25 * time.Millisecond):
		}
	}
}

// consoleSignIn signs in to the console at base with token, as a browser
// would (the login form's CSRF cookie and value, then the session
// cookie), and returns a client holding the session.
func consoleSignIn(t *testing.T, base, token string) *http.Client {
	t.Helper()
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	c := &http.Client{Jar: jar}
	form := consoleGet(t, c, base+"/console/login")
	m := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindStringSubmatch(form)
	if m == nil {
		t.Fatalf("the console's login form has no CSRF value:\n%s", form)
	}
	resp, err := c.PostForm(base+"/console/login", url.Values{"csrf": {m[1]}, "token": {token}})
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Request.URL.Path == "/console/login" {
		t.Fatalf("console sign-in: %d at %s", resp.StatusCode, resp.Request.URL.Path)
	}
	return c
}

// consoleGet is a console page's HTML; anything but a 200 fails the test.
func consoleGet(t *testing.T, c *http.Client, u string) string {
	t.Helper()
	resp, err := c.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %s", u, resp.StatusCode, b)
	}
	return string(b)
}
