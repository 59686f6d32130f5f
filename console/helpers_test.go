package console

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/mux"
	"github.com/jmoiron/sqlx"

	"github.com/razao/razao/api"
	"github.com/razao/razao/auth"
	"github.com/razao/razao/events"
	"github.com/razao/razao/internal/ledgertest"
	"github.com/razao/razao/internal/pgtest"
	"github.com/razao/razao/periods"
	"github.com/razao/razao/postings"
)

// afterSeptember is the console's clock in the tests: August and
// September 2026 are over in São Paulo, October is open.
var afterSeptember = time.Date(2026, 10, 2, 12, 0, 0, 0, time.UTC)

// fixture is a console and the /v1 API over one database, with the
// example months booked, an admin and a read token.
type fixture struct {
	db          *sqlx.DB
	dbURL       string
	ledger      *postings.Ledger
	console     *Console
	hub         *events.Hub
	router      *mux.Router
	admin, read string
	// later moves the console's clock forward, in nanoseconds.
	later atomic.Int64
}

// setup is how most console tests begin: the example months booked
// (newFixture) and a test server over the console and the /v1 API,
// closed when the test ends.
func setup(t *testing.T) (*fixture, *httptest.Server) {
	t.Helper()
	f := newFixture(t)
	return f, serve(t, f.router)
}

// serve starts a test server over h, closed when the test ends.
func serve(t testing.TB, h http.Handler) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	f := newBareFixture(t)
	postAugust(t, f.ledger)
	ledgertest.PostSeptember(t, f.ledger)
	return f
}

// newBareFixture is newFixture with nothing booked.
func newBareFixture(t testing.TB) *fixture {
	t.Helper()
	db, dbURL := pgtest.NewWithURL(t)
	cal, err := periods.NewCalendar(periods.DefaultTimeZone)
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{}
	// The clock moves only when a test says so (fixture.later).
	now := func() time.Time { return afterSeptember.Add(time.Duration(f.later.Load())) }
	ledger := postings.New(db, cal).WithClock(now)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	// Not running until withHub: streams read only when they open.
	hub := events.NewHub(db, dbURL, log)
	c, err := New(db, ledger, hub, log, now)
	if err != nil {
		t.Fatal(err)
	}
	r := mux.NewRouter().SkipClean(true)
	r.NotFoundHandler, r.MethodNotAllowedHandler = api.NotFound(), api.MethodNotAllowed(r)
	(&api.API{DB: db, Ledger: ledger, Log: log, Now: now, Events: hub}).Register(r)
	c.Register(r)
	f.db, f.dbURL, f.ledger, f.console, f.hub, f.router = db, dbURL, ledger, c, hub, r
	f.admin = newToken(t, db, "finance-admin", auth.Admin)
	f.read = newToken(t, db, "finance-read", auth.Read)
	return f
}

// sessions counts the console's sessions, live or not.
func (f *fixture) sessions(t testing.TB) int {
	t.Helper()
	var n int
	if err := f.db.Get(&n, `SELECT count(*) FROM console_sessions`); err != nil {
		t.Fatal(err)
	}
	return n
}

func newToken(t testing.TB, db *sqlx.DB, name string, s auth.Scope) string {
	t.Helper()
	tok, _, err := auth.Create(context.Background(), db, name, []auth.Scope{s})
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// sp is a wall-clock time in São Paulo.
func sp(y int, m time.Month, d, hh, mm int) time.Time {
	loc, err := time.LoadLocation("America/Sao_Paulo")
	if err != nil {
		panic(err)
	}
	return time.Date(y, m, d, hh, mm, 0, 0, loc)
}

func post(t *testing.T, l *postings.Ledger, s postings.Set, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("build %s: %v", s.IdempotencyKey, err)
	}
	if _, err := l.Post(context.Background(), s); err != nil {
		t.Fatalf("post %s: %v", s.IdempotencyKey, err)
	}
}

func commission(t *testing.T, l *postings.Ledger, charge, partner string, amount, rate int64, at time.Time) {
	t.Helper()
	s, _, err := postings.CommissionSet(charge, partner, "BRL", amount, rate, at)
	post(t, l, s, err)
}

func refund(t *testing.T, l *postings.Ledger, charge, refundID, partner string, sale, comm, before, amount int64, at time.Time) {
	t.Helper()
	s, err := postings.Refund(charge, refundID, "BRL", amount, at)
	post(t, l, s, err)
	r, ok, err := postings.CommissionReversalSet(charge, refundID, partner, "BRL", postings.ReversalAmount(comm, sale, before, amount), at)
	if ok || err != nil {
		post(t, l, r, err)
	}
}

// postAugust and postSeptember book the example months of the reports
// tests (reports/helpers_test.go): three sales, commissions, a payout in
// August; refunds, a sale and a payout in September. The payout's
// description carries HTML, which every page must show escaped.
func postAugust(t *testing.T, l *postings.Ledger) {
	t.Helper()
	s, err := postings.Sale("c1", "BRL", 10000, 150, sp(2026, 8, 5, 10, 0))
	post(t, l, s, err)
	commission(t, l, "c1", "p1", 10000, 1000, sp(2026, 8, 5, 10, 0))
	s, err = postings.Sale("c2", "BRL", 4990, 75, sp(2026, 8, 31, 22, 30))
	post(t, l, s, err)
	commission(t, l, "c2", "p2", 4990, 500, sp(2026, 8, 31, 22, 30))
	s, err = postings.Sale("c3", "BRL", 2500, 0, sp(2026, 8, 20, 9, 15))
	post(t, l, s, err)
	s, err = postings.Payout("p1", "2026-08", "BRL", 500, sp(2026, 8, 28, 17, 0))
	s.Description = `Repasse <b>agosto</b> <script>alert(1)</script>`
	post(t, l, s, err)
}

// divergence stores an open divergence behind a webhook delivery, as the
// webhook front does, with chargeID and detail as given, and returns its id.
func divergence(t testing.TB, db *sqlx.DB, eventID, chargeID, detail string) int64 {
	t.Helper()
	var inbox int64
	err := db.Get(&inbox, `INSERT INTO inbox (delivery_key, endpoint, scheme, merchant, event_type, event_id, kind, event, body, status)
		VALUES ('psp|charge.paid|' || $1, 'psp', 'generic', 'shop', 'charge.paid', $1, 'paid', '{}', '\x7b7d', 'divergent') RETURNING id`, eventID)
	if err != nil {
		t.Fatal(err)
	}
	var id int64
	err = db.Get(&id, `INSERT INTO divergences (inbox_id, charge_id, reason, detail) VALUES ($1, $2, 'unknown_charge', $3) RETURNING id`,
		inbox, chargeID, detail)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// client is a browser-like HTTP client of a test server: a cookie jar,
// no redirects followed (so each answer can be checked).
type client struct {
	t   testing.TB
	srv *httptest.Server
	hc  *http.Client
}

func newClient(t testing.TB, srv *httptest.Server) *client {
	jar, _ := cookiejar.New(nil)
	// A copy: srv.Client() is one client for every caller, and each
	// client here has cookies of its own.
	shared := *srv.Client()
	hc := &shared
	hc.Jar = jar
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &client{t: t, srv: srv, hc: hc}
}

func (c *client) do(req *http.Request) (*http.Response, string) {
	c.t.Helper()
	res, err := c.hc.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		c.t.Fatal(err)
	}
	return res, string(b)
}

func (c *client) get(path string) (*http.Response, string) {
	c.t.Helper()
	req, _ := http.NewRequest(http.MethodGet, c.srv.URL+path, nil)
	return c.do(req)
}

func (c *client) postForm(path string, form url.Values) (*http.Response, string) {
	c.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, c.srv.URL+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return c.do(req)
}

// api calls a /v1 route with a bearer token and decodes its JSON into v.
func (c *client) api(token, path string, v any) {
	c.t.Helper()
	req, _ := http.NewRequest(http.MethodGet, c.srv.URL+path, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := http.DefaultClient.Do(req)
	if c.srv.TLS != nil {
		res, err = c.srv.Client().Do(req)
	}
	if err != nil {
		c.t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		c.t.Fatalf("GET %s: %d", path, res.StatusCode)
	}
	if err := json.NewDecoder(res.Body).Decode(v); err != nil {
		c.t.Fatal(err)
	}
}

var csrfRE = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// csrfOf returns the first CSRF value of a page's forms.
func csrfOf(t testing.TB, page string) string {
	t.Helper()
	m := csrfRE.FindStringSubmatch(page)
	if m == nil {
		t.Fatal("no csrf field on the page")
	}
	return m[1]
}

// signIn signs c in with token and fails the test unless it worked.
func (c *client) signIn(token string) {
	c.t.Helper()
	_, page := c.get("/console/login")
	res, body := c.postForm("/console/login", url.Values{"csrf": {csrfOf(c.t, page)}, "token": {token}})
	if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/console/" {
		c.t.Fatalf("sign-in: %d %s\n%s", res.StatusCode, res.Header.Get("Location"), body)
	}
}

// signedIn returns a new client of srv, signed in with token.
func signedIn(t testing.TB, srv *httptest.Server, token string) *client {
	t.Helper()
	c := newClient(t, srv)
	c.signIn(token)
	return c
}

// signOut posts the sign-out form of a page c is shown and fails the test
// unless the console took it.
func (c *client) signOut() {
	c.t.Helper()
	_, page := c.get("/console/month/2026-08")
	if res, _ := c.postForm("/console/logout", url.Values{"csrf": {csrfOf(c.t, page)}}); res.StatusCode != http.StatusSeeOther {
		c.t.Fatalf("logout: %d", res.StatusCode)
	}
}

// wantStatuses fails the test unless each path, fetched by c, answers its
// status.
func (c *client) wantStatuses(want map[string]int) {
	c.t.Helper()
	for p, status := range want {
		if res, _ := c.get(p); res.StatusCode != status {
			c.t.Errorf("%s: %d, want %d", p, res.StatusCode, status)
		}
	}
}

// field returns the text of the cell with data-field name in the row
// with attribute attr=value, e.g. field(page, "data-account", "assets:cash", "closing").
func field(t *testing.T, page, attr, value, name string) string {
	t.Helper()
	row := regexp.MustCompile(`(?s)<tr ` + regexp.QuoteMeta(attr+`="`+value+`"`) + `(?:\s[^>]*)?>(.*?)</tr>`).FindStringSubmatch(page)
	if row == nil {
		t.Fatalf("no row %s=%q on the page", attr, value)
	}
	cell := regexp.MustCompile(`data-field="` + regexp.QuoteMeta(name) + `">([^<]*)<`).FindStringSubmatch(row[1])
	if cell == nil {
		t.Fatalf("row %s=%q has no %s", attr, value, name)
	}
	return cell[1]
}

// wantFigures fails the test unless each named cell of the row with
// attribute attr=value shows the API's figure, written as the pages write
// money; what names the row in the message.
func wantFigures(t *testing.T, page, attr, value, what string, want map[string]int64) {
	t.Helper()
	for name, w := range want {
		if got := field(t, page, attr, value, name); got != brl(w) {
			t.Errorf("%s %s: page %q, API %d", what, name, got, w)
		}
	}
}

var (
	aug2026 = periods.Month{Year: 2026, Month: time.August}
	sep2026 = periods.Month{Year: 2026, Month: time.September}
)
