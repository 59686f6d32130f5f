package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/mux"
	"github.com/jmoiron/sqlx"

	"github.com/razao/razao/adjustments"
	"github.com/razao/razao/api"
	"github.com/razao/razao/auth"
	"github.com/razao/razao/internal/contract"
	"github.com/razao/razao/internal/ledgertest"
	"github.com/razao/razao/internal/pgtest"
	"github.com/razao/razao/periods"
	"github.com/razao/razao/postings"
)

// corrections is the /v1 routes with two admin tokens of other names
// (alice proposes, bob approves), a clock the test moves, and the
// database.
type corrections struct {
	h          http.Handler
	alice, bob string
	db         *sqlx.DB
	now        *atomic.Int64 // unix seconds
}

// newCorrections is the one factory of this file's APIs: cfg is the
// approval policy; the clock starts at 2026-09-02 12:00 UTC; every
// response is validated against the OpenAPI document.
func newCorrections(t *testing.T, cfg adjustments.Config) *corrections {
	t.Helper()
	db := pgtest.New(t)
	c := &corrections{db: db, now: new(atomic.Int64)}
	c.now.Store(time.Date(2026, 9, 2, 12, 0, 0, 0, time.UTC).Unix())
	for name, tok := range map[string]*string{"alice": &c.alice, "bob": &c.bob} {
		var err error
		if *tok, _, err = auth.Create(context.Background(), db, name, []auth.Scope{auth.Admin}); err != nil {
			t.Fatal(err)
		}
	}
	cal, _ := periods.NewCalendar(periods.DefaultTimeZone)
	r := mux.NewRouter().SkipClean(true)
	r.NotFoundHandler, r.MethodNotAllowedHandler = api.NotFound(), api.MethodNotAllowed(r)
	(&api.API{DB: db, Ledger: postings.New(db, cal), Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Now: func() time.Time { return time.Unix(c.now.Load(), 0).UTC() }, Adjustments: cfg}).Register(r)
	c.h = contract.Middleware(t, r)
	return c
}

// propose posts an adjustment under key ("" sends no Idempotency-Key).
func (c *corrections) propose(t *testing.T, token, key, body string) (int, map[string]any) {
	t.Helper()
	req := httptest.NewRequest("POST", "/v1/adjustments", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	rec := httptest.NewRecorder()
	c.h.ServeHTTP(rec, req)
	var m map[string]any
	json.Unmarshal(rec.Body.Bytes(), &m)
	return rec.Code, m
}

func (c *corrections) count(t *testing.T, query string, args ...any) int64 {
	t.Helper()
	return ledgertest.Count(t, c.db, query, args...)
}

// topics are the outbox's topics, in order.
func (c *corrections) topics(t *testing.T) string {
	t.Helper()
	var ts []string
	if err := c.db.Select(&ts, `SELECT topic FROM outbox ORDER BY id`); err != nil {
		t.Fatal(err)
	}
	return strings.Join(ts, ",")
}

func idOf(m map[string]any) string { return fmt.Sprint(int64(m["id"].(float64))) }

const cashToEquity = `{"legs":[{"account":"assets:cash","amount":1500},{"account":"equity:adjustments","amount":-1500}],
	"reason":"caixa contado a mais","competence":"2026-09-01"}`

// Four eyes: a proposal books nothing; its proposer cannot approve it;
// another name can, and then the set is booked with both names in the
// event; a second approval finds it decided.
func TestAdjustmentIsBookedOnlyWhenAnotherNameApproves(t *testing.T) {
	t.Parallel()
	c := newCorrections(t, adjustments.Config{})
	code, m := c.propose(t, c.alice, "adj-1", cashToEquity)
	if code != 201 || m["status"] != "proposed" || m["proposed_by"] != "alice" || m["four_eyes"] != true || m["posting_set_id"] != nil {
		t.Fatalf("propose: %d %v", code, m)
	}
	id := idOf(m)
	if n := c.count(t, `SELECT count(*) FROM posting_sets`); n != 0 {
		t.Fatalf("a proposal booked %d set(s)", n)
	}
	code, m, _ = call(t, c.h, "POST", "/v1/adjustments/"+id+"/approve", c.alice, "")
	if code != 403 || !strings.HasSuffix(m["type"].(string), "/four-eyes") {
		t.Fatalf("the proposer approving: %d %v", code, m)
	}
	code, m, _ = call(t, c.h, "POST", "/v1/adjustments/"+id+"/approve", c.bob, "")
	if code != 200 || m["status"] != "booked" || m["decided_by"] != "bob" || m["proposed_by"] != "alice" || m["posting_set_id"] == nil {
		t.Fatalf("approve: %d %v", code, m)
	}
	setID := int64(m["posting_set_id"].(float64))
	var set struct {
		Kind, Competence, Description string
	}
	if err := c.db.Get(&set, `SELECT kind, competence::text AS competence, description FROM posting_sets WHERE id = $1`, setID); err != nil {
		t.Fatal(err)
	}
	if set.Kind != "adjustment" || set.Competence != "2026-09-01" || set.Description != "caixa contado a mais" {
		t.Fatalf("booked set: %+v", set)
	}
	if b := ledgertest.Balance(t, c.db, "assets:cash", ""); b != 1500 {
		t.Fatalf("cash %d, want 1500", b)
	}
	if got := c.topics(t); got != "adjustment.proposed,adjustment.booked" {
		t.Fatalf("events %s", got)
	}
	var payload map[string]any
	var raw []byte
	c.db.Get(&raw, `SELECT payload FROM outbox WHERE topic = 'adjustment.booked'`)
	json.Unmarshal(raw, &payload)
	if payload["proposed_by"] != "alice" || payload["decided_by"] != "bob" || payload["posting_set_id"] != float64(setID) {
		t.Fatalf("booked event %v", payload)
	}
	code, m, _ = call(t, c.h, "POST", "/v1/adjustments/"+id+"/approve", c.bob, "")
	if code != 409 || !strings.HasSuffix(m["type"].(string), "/adjustment-decided") {
		t.Fatalf("approve again: %d %v", code, m)
	}
	code, m, _ = call(t, c.h, "GET", "/v1/adjustments/"+id, c.alice, "")
	if code != 200 || m["status"] != "booked" || m["decided_by"] != "bob" || m["decided_at"] == nil {
		t.Fatalf("get: %d %v", code, m)
	}
	if n := c.count(t, `SELECT count(*) FROM posting_sets`); n != 1 {
		t.Fatalf("%d sets booked, want 1", n)
	}
}

// The Idempotency-Key: the same key and body is the same proposal (200,
// replayed, nothing written); the same key with another body is a 422; no
// key is a 400.
func TestAdjustmentIsIdempotentOnItsKey(t *testing.T) {
	t.Parallel()
	c := newCorrections(t, adjustments.Config{})
	code, first := c.propose(t, c.alice, "adj-1", cashToEquity)
	if code != 201 {
		t.Fatalf("first: %d %v", code, first)
	}
	code, again := c.propose(t, c.alice, "adj-1", cashToEquity)
	if code != 200 || again["replayed"] != true || again["id"] != first["id"] {
		t.Fatalf("same again: %d %v", code, again)
	}
	code, m := c.propose(t, c.alice, "adj-1", strings.Replace(cashToEquity, "a mais", "a menos", 1))
	if code != 422 || !strings.HasSuffix(m["type"].(string), "/idempotency-conflict") {
		t.Fatalf("other body: %d %v", code, m)
	}
	code, m = c.propose(t, c.alice, "", cashToEquity)
	if code != 400 || !strings.HasSuffix(m["type"].(string), "/idempotency-key-required") {
		t.Fatalf("no key: %d %v", code, m)
	}
	if n := c.count(t, `SELECT count(*) FROM adjustments`); n != 1 {
		t.Fatalf("%d proposals, want 1", n)
	}
	if got := c.topics(t); got != "adjustment.proposed" {
		t.Fatalf("events %s", got)
	}
}

// Every bad input is a 4xx problem naming the field, and writes nothing:
// no proposal, no event, no set.
func TestAdjustmentRefusesBadInputWritingNothing(t *testing.T) {
	t.Parallel()
	c := newCorrections(t, adjustments.Config{})
	if code, m, _ := call(t, c.h, "POST", "/v1/periods/2026-08/close", c.alice, ""); code != 200 {
		t.Fatalf("close August: %d %v", code, m)
	}
	legs := func(n int) string {
		ls := make([]string, n)
		for i := range ls {
			amount := 1
			if i%2 == 1 {
				amount = -1
			}
			ls[i] = fmt.Sprintf(`{"account":"assets:cash","amount":%d}`, amount)
		}
		return `[` + strings.Join(ls, ",") + `]`
	}
	body := func(legs, reason, extra string) string {
		return `{"legs":` + legs + `,"reason":` + reason + extra + `}`
	}
	balanced := `[{"account":"assets:cash","amount":100},{"account":"equity:adjustments","amount":-100}]`
	for _, tc := range []struct {
		name, key, body string
		status          int
		field           string
	}{
		{"one leg", "k", body(`[{"account":"assets:cash","amount":100}]`, `"r"`, ""), 400, "legs"},
		{"no legs", "k", body(`[]`, `"r"`, ""), 400, "legs"},
		{"unbalanced", "k", body(`[{"account":"assets:cash","amount":100},{"account":"equity:adjustments","amount":-90}]`, `"r"`, ""), 400, "legs"},
		{"101 legs", "k", body(legs(101), `"r"`, ""), 400, "legs"},
		{"10,000 legs", "k", body(legs(10000), `"r"`, ""), 400, "legs"},
		{"a body beyond 1 MiB", "k", body(legs(30000), `"r"`, ""), 413, ""},
		{"an account not in the chart", "k", body(`[{"account":"assets:nope","amount":100},{"account":"equity:adjustments","amount":-100}]`, `"r"`, ""), 400, "legs[0].account"},
		{"a malformed account", "k", body(`[{"account":"Assets Cash","amount":100},{"account":"equity:adjustments","amount":-100}]`, `"r"`, ""), 400, "legs[0].account"},
		{"NUL in an account", "k", body(`[{"account":"assets:cash\u0000","amount":100},{"account":"equity:adjustments","amount":-100}]`, `"r"`, ""), 400, "legs[0].account"},
		{"an amount of 0", "k", body(`[{"account":"assets:cash","amount":0},{"account":"equity:adjustments","amount":0}]`, `"r"`, ""), 400, "legs[0].amount"},
		{"an amount above the maximum", "k", body(`[{"account":"assets:cash","amount":1000000000001},{"account":"equity:adjustments","amount":-1000000000001}]`, `"r"`, ""), 400, "legs[0].amount"},
		{"an amount beyond int64", "k", body(`[{"account":"assets:cash","amount":99999999999999999999},{"account":"equity:adjustments","amount":-1}]`, `"r"`, ""), 400, "amount"},
		{"a fractional amount", "k", body(`[{"account":"assets:cash","amount":1.5},{"account":"equity:adjustments","amount":-1.5}]`, `"r"`, ""), 400, "amount"},
		{"an empty reason", "k", body(balanced, `"  "`, ""), 400, "reason"},
		{"a 10 KB reason", "k", body(balanced, `"`+strings.Repeat("x", 10<<10)+`"`, ""), 400, "reason"},
		{"NUL in the reason", "k", body(balanced, `"a\u0000b"`, ""), 400, "reason"},
		{"no reason", "k", `{"legs":` + balanced + `}`, 400, "reason"},
		{"a closed month", "k", body(balanced, `"r"`, `,"competence":"2026-08-31"`), 409, "2026-08"},
		{"a competence that is no date", "k", body(balanced, `"r"`, `,"competence":"2026-13-01"`), 400, "competence"},
		{"a competence before go-live", "k", body(balanced, `"r"`, `,"competence":"1999-01-01"`), 400, "competence"},
		{"an unknown charge", "k", body(balanced, `"r"`, `,"charge_id":"nope"`), 400, "charge_id"},
		{"NUL in the charge", "k", body(balanced, `"r"`, `,"charge_id":"a\u0000"`), 400, "charge_id"},
		{"an unknown partner", "k", body(balanced, `"r"`, `,"partner":"p9"`), 400, "partner"},
		{"an unknown divergence", "k", body(balanced, `"r"`, `,"divergence_id":77`), 400, "divergence_id"},
		{"an unknown field", "k", body(balanced, `"r"`, `,"approved":true`), 400, "approved"},
		{"a key with a space", "a key", body(balanced, `"r"`, ""), 400, "Idempotency-Key"},
		{"a 201-byte key", strings.Repeat("k", 201), body(balanced, `"r"`, ""), 400, "Idempotency-Key"},
		{"no key", "", body(balanced, `"r"`, ""), 400, ""},
	} {
		code, m := c.propose(t, c.alice, tc.key, tc.body)
		detail, _ := m["detail"].(string)
		if code != tc.status || m["type"] == nil || !strings.Contains(detail, tc.field) {
			t.Errorf("%s: %d %v, want %d naming %q", tc.name, code, m, tc.status, tc.field)
		}
	}
	for _, table := range []string{"adjustments", "outbox", "posting_sets"} {
		if n := c.count(t, `SELECT count(*) FROM `+table); n != 0 {
			t.Errorf("%d row(s) in %s after refusals", n, table)
		}
	}
}

// Rejected (by its proposer, a withdrawal) and expired proposals book
// nothing and cannot be approved; each change is an event.
func TestAdjustmentRejectedOrExpiredIsNeverBooked(t *testing.T) {
	t.Parallel()
	c := newCorrections(t, adjustments.Config{TTL: 48 * time.Hour})
	_, m := c.propose(t, c.alice, "adj-1", cashToEquity)
	rejected := idOf(m)
	code, m, _ := call(t, c.h, "POST", "/v1/adjustments/"+rejected+"/reject", c.alice, `{"note":"errei o valor"}`)
	if code != 200 || m["status"] != "rejected" || m["decided_by"] != "alice" || m["decision_note"] != "errei o valor" {
		t.Fatalf("reject: %d %v", code, m)
	}
	code, m, _ = call(t, c.h, "POST", "/v1/adjustments/"+rejected+"/approve", c.bob, "")
	if code != 409 || !strings.HasSuffix(m["type"].(string), "/adjustment-decided") {
		t.Fatalf("approve a rejected one: %d %v", code, m)
	}
	_, m = c.propose(t, c.alice, "adj-2", strings.Replace(cashToEquity, "1500", "700", 2))
	expired := idOf(m)
	if m["expires_at"] != "2026-09-04T12:00:00Z" {
		t.Fatalf("expires_at %v, want 48 hours after it was proposed", m["expires_at"])
	}
	c.now.Add(int64(48 * time.Hour / time.Second))
	code, m, _ = call(t, c.h, "POST", "/v1/adjustments/"+expired+"/approve", c.bob, "")
	if code != 409 || !strings.HasSuffix(m["type"].(string), "/adjustment-expired") {
		t.Fatalf("approve an expired one: %d %v", code, m)
	}
	code, m, _ = call(t, c.h, "GET", "/v1/adjustments/"+expired, c.bob, "")
	if code != 200 || m["status"] != "expired" || m["decided_by"] != nil {
		t.Fatalf("expired: %d %v", code, m)
	}
	if got := c.topics(t); got != "adjustment.proposed,adjustment.rejected,adjustment.proposed,adjustment.expired" {
		t.Fatalf("events %s", got)
	}
	if n := c.count(t, `SELECT count(*) FROM posting_sets`); n != 0 {
		t.Fatalf("%d sets booked", n)
	}
}

// An adjustment whose month closes between its proposal and its approval
// is refused, not moved, and stays proposed.
func TestAdjustmentWhoseMonthClosedIsRefusedNotMoved(t *testing.T) {
	t.Parallel()
	c := newCorrections(t, adjustments.Config{})
	_, m := c.propose(t, c.alice, "adj-1", strings.Replace(cashToEquity, "2026-09-01", "2026-08-20", 1))
	id := idOf(m)
	if code, m, _ := call(t, c.h, "POST", "/v1/periods/2026-08/close", c.alice, ""); code != 200 {
		t.Fatalf("close: %d %v", code, m)
	}
	code, m, _ := call(t, c.h, "POST", "/v1/adjustments/"+id+"/approve", c.bob, "")
	if code != 409 || !strings.HasSuffix(m["type"].(string), "/closed-month") {
		t.Fatalf("approve into a closed month: %d %v", code, m)
	}
	_, m, _ = call(t, c.h, "GET", "/v1/adjustments/"+id, c.bob, "")
	if m["status"] != "proposed" || c.count(t, `SELECT count(*) FROM posting_sets`) != 0 {
		t.Fatalf("after the refusal: %v", m)
	}
}

// With approval off, one person's adjustment is booked at once, both its
// events in the proposing transaction.
func TestAdjustmentWithApprovalOffIsBookedAtOnce(t *testing.T) {
	t.Parallel()
	c := newCorrections(t, adjustments.Config{ApprovalOff: true})
	code, m := c.propose(t, c.alice, "adj-1", cashToEquity)
	if code != 201 || m["status"] != "booked" || m["four_eyes"] != false || m["decided_by"] != "alice" || m["posting_set_id"] == nil {
		t.Fatalf("propose: %d %v", code, m)
	}
	if got := c.topics(t); got != "adjustment.proposed,adjustment.booked" {
		t.Fatalf("events %s", got)
	}
}

// The reversal of a payout: proposed, approved by another name, booked as
// the payout's mirror linked to it; never twice, and a reversal is never
// reversed.
func TestPayoutReversalMirrorsItOnce(t *testing.T) {
	t.Parallel()
	c := newCorrections(t, adjustments.Config{})
	code, p := payout(t, c.h, c.alice, "po-1", `{"amount":2500,"allow_over_owed":true,"effective_at":"2026-09-01T12:00:00Z"}`)
	if code != 201 {
		t.Fatalf("payout: %d %v", code, p)
	}
	setID := fmt.Sprint(int64(p["posting_set_id"].(float64)))
	code, m, _ := call(t, c.h, "POST", "/v1/posting-sets/"+setID+"/reverse", c.alice, `{"reason":"pago em duplicidade"}`)
	if code != 201 || m["kind"] != "reversal" || m["status"] != "proposed" || fmt.Sprint(m["reverses"]) != setID {
		t.Fatalf("reverse: %d %v", code, m)
	}
	id := idOf(m)
	code, again, _ := call(t, c.h, "POST", "/v1/posting-sets/"+setID+"/reverse", c.alice, `{"reason":"pago em duplicidade"}`)
	if code != 200 || again["replayed"] != true || again["id"] != m["id"] {
		t.Fatalf("the same reversal again: %d %v", code, again)
	}
	code, other, _ := call(t, c.h, "POST", "/v1/posting-sets/"+setID+"/reverse", c.bob, `{"reason":"outro motivo"}`)
	if code != 409 || !strings.HasSuffix(other["type"].(string), "/reversal-pending") {
		t.Fatalf("another reversal while one is proposed: %d %v", code, other)
	}
	code, m, _ = call(t, c.h, "POST", "/v1/adjustments/"+id+"/approve", c.bob, "")
	if code != 200 || m["status"] != "booked" || m["competence"] != "2026-09-01" {
		t.Fatalf("approve: %d %v", code, m)
	}
	rev := fmt.Sprint(int64(m["posting_set_id"].(float64)))
	if b := ledgertest.Balance(t, c.db, "assets:cash", ""); b != 0 {
		t.Fatalf("cash %d after the payout's reversal, want 0", b)
	}
	if n := c.count(t, `SELECT count(*) FROM posting_sets WHERE id = $1 AND reverses = $2 AND kind = 'adjustment' AND partner = 'p1'`, rev, setID); n != 1 {
		t.Fatalf("reversal set %s is not linked to payout %s", rev, setID)
	}
	code, m, _ = call(t, c.h, "POST", "/v1/posting-sets/"+setID+"/reverse", c.alice, `{"reason":"de novo"}`)
	if code != 409 || !strings.HasSuffix(m["type"].(string), "/already-reversed") {
		t.Fatalf("reverse twice: %d %v", code, m)
	}
	code, m, _ = call(t, c.h, "POST", "/v1/posting-sets/"+rev+"/reverse", c.alice, `{"reason":"desfazer"}`)
	if code != 409 || !strings.HasSuffix(m["type"].(string), "/not-reversible") {
		t.Fatalf("reverse the reversal: %d %v", code, m)
	}
	if code, m, _ := call(t, c.h, "POST", "/v1/posting-sets/999999/reverse", c.alice, `{"reason":"x"}`); code != 404 {
		t.Fatalf("reverse no set: %d %v", code, m)
	}
}

// A reversal of a set of a closed month is booked in the first open month,
// on its first day, whenever it is approved.
func TestReversalOfAClosedMonthsSetGoesToTheFirstOpenMonth(t *testing.T) {
	t.Parallel()
	c := newCorrections(t, adjustments.Config{})
	_, p := payout(t, c.h, c.alice, "po-1", `{"amount":2500,"allow_over_owed":true,"effective_at":"2026-08-10T12:00:00Z"}`)
	setID := fmt.Sprint(int64(p["posting_set_id"].(float64)))
	_, m, _ := call(t, c.h, "POST", "/v1/posting-sets/"+setID+"/reverse", c.alice, `{"reason":"estorno"}`)
	id := idOf(m)
	if code, m, _ := call(t, c.h, "POST", "/v1/periods/2026-08/close", c.alice, ""); code != 200 {
		t.Fatalf("close: %d %v", code, m)
	}
	code, m, _ := call(t, c.h, "POST", "/v1/adjustments/"+id+"/approve", c.bob, "")
	if code != 200 || m["competence"] != "2026-09-01" {
		t.Fatalf("approve: %d %v", code, m)
	}
	if got := ledgertest.MonthChange(t, c.db, "assets:cash", "2026-09-01"); got != 2500 {
		t.Fatalf("September's cash change %d, want the payout's 2500 back", got)
	}
}

// Sales, refunds, commissions and their reversals follow their charge's
// state: they are not reversed (a refund or an adjustment corrects them),
// and nothing is written.
func TestChargeSetsAreNotReversed(t *testing.T) {
	t.Parallel()
	c := newCorrections(t, adjustments.Config{})
	cal, _ := periods.NewCalendar(periods.DefaultTimeZone)
	l := postings.New(c.db, cal)
	ledgertest.Commission(t, l, "c1", "p1", 10000, 1000, ledgertest.SaoPaulo(2026, 9, 1, 10, 0))
	var ids []int64
	if err := c.db.Select(&ids, `SELECT id FROM posting_sets ORDER BY id`); err != nil || len(ids) == 0 {
		t.Fatalf("sets: %v %v", ids, err)
	}
	for _, id := range ids {
		code, m, _ := call(t, c.h, "POST", fmt.Sprintf("/v1/posting-sets/%d/reverse", id), c.alice, `{"reason":"x"}`)
		if code != 409 || !strings.HasSuffix(m["type"].(string), "/not-reversible") || !strings.Contains(m["detail"].(string), "refund or an adjustment") {
			t.Errorf("reverse set %d: %d %v", id, code, m)
		}
	}
	if n := c.count(t, `SELECT count(*) FROM adjustments`) + c.count(t, `SELECT count(*) FROM outbox`); n != 0 {
		t.Fatalf("%d rows written by refusals", n)
	}
}

// The list: every proposal, oldest first, filtered by status and kind, a
// page at a time; a cursor of another filter is refused.
func TestAdjustmentsListFiltersAndPages(t *testing.T) {
	t.Parallel()
	c := newCorrections(t, adjustments.Config{})
	for i := range 3 {
		if code, m := c.propose(t, c.alice, fmt.Sprintf("adj-%d", i), cashToEquity); code != 201 {
			t.Fatalf("propose %d: %d %v", i, code, m)
		}
	}
	_, m, _ := call(t, c.h, "GET", "/v1/adjustments?limit=2", c.bob, "")
	first := m["adjustments"].([]any)
	next, _ := m["next_cursor"].(string)
	if len(first) != 2 || next == "" {
		t.Fatalf("first page: %v", m)
	}
	call(t, c.h, "POST", "/v1/adjustments/"+idOf(first[0].(map[string]any))+"/approve", c.bob, "")
	_, m, _ = call(t, c.h, "GET", "/v1/adjustments?limit=2&cursor="+next, c.bob, "")
	if list := m["adjustments"].([]any); len(list) != 1 || m["next_cursor"] != nil {
		t.Fatalf("last page: %v", m)
	}
	_, m, _ = call(t, c.h, "GET", "/v1/adjustments?status=proposed&kind=adjustment", c.bob, "")
	if list := m["adjustments"].([]any); len(list) != 2 {
		t.Fatalf("proposed: %v", m)
	}
	_, m, _ = call(t, c.h, "GET", "/v1/adjustments?status=booked", c.bob, "")
	if list := m["adjustments"].([]any); len(list) != 1 || list[0].(map[string]any)["decided_by"] != "bob" {
		t.Fatalf("booked: %v", m)
	}
	for _, q := range []string{"status=approved", "kind=sale", "limit=0", "status=booked&cursor=" + next} {
		if code, m, _ := call(t, c.h, "GET", "/v1/adjustments?"+q, c.bob, ""); code != 400 {
			t.Errorf("%s: %d %v", q, code, m)
		}
	}
}

// Two approvals of one proposal at once, forced to overlap on its row's
// lock: one books, the other finds it decided; one set, one event.
func TestTwoApprovalsAtOnceBookOnce(t *testing.T) {
	t.Parallel()
	c := newCorrections(t, adjustments.Config{})
	carol, _, err := auth.Create(context.Background(), c.db, "carol", []auth.Scope{auth.Admin})
	if err != nil {
		t.Fatal(err)
	}
	_, m := c.propose(t, c.alice, "adj-1", cashToEquity)
	id := idOf(m)
	gate, err := c.db.Beginx()
	if err != nil {
		t.Fatal(err)
	}
	defer gate.Rollback()
	if _, err := gate.Exec(`SELECT 1 FROM adjustments WHERE id = $1 FOR UPDATE`, id); err != nil {
		t.Fatal(err)
	}
	codes := make([]int, 2)
	var wg sync.WaitGroup
	for i, tok := range []string{c.bob, carol} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			codes[i], _, _ = call(t, c.h, "POST", "/v1/adjustments/"+id+"/approve", tok, "")
		}()
	}
	ledgertest.WaitForLockWaiters(t, c.db, 2)
	if err := gate.Commit(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if !(codes[0] == 200 && codes[1] == 409 || codes[0] == 409 && codes[1] == 200) {
		t.Fatalf("answers %v, want one 200 and one 409", codes)
	}
	if n := c.count(t, `SELECT count(*) FROM posting_sets`); n != 1 {
		t.Fatalf("%d sets, want 1", n)
	}
	if n := c.count(t, `SELECT count(*) FROM outbox WHERE topic = 'adjustment.booked'`); n != 1 {
		t.Fatalf("%d booked events, want 1", n)
	}
}
