package api_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/mux"
	"github.com/jmoiron/sqlx"

	"github.com/razao/razao/api"
	"github.com/razao/razao/auth"
	"github.com/razao/razao/charges"
	"github.com/razao/razao/internal/contract"
	"github.com/razao/razao/internal/cursor"
	"github.com/razao/razao/internal/deliverytest"
	"github.com/razao/razao/periods"
	"github.com/razao/razao/postings"
)

// apiOver is the /v1 routes over db, checked against the OpenAPI
// document, with a read token.
func apiOver(t *testing.T, db *sqlx.DB) (http.Handler, string) {
	t.Helper()
	token, _, err := auth.Create(context.Background(), db, "test", []auth.Scope{auth.Read})
	if err != nil {
		t.Fatal(err)
	}
	cal, _ := periods.NewCalendar(periods.DefaultTimeZone)
	r := mux.NewRouter().SkipClean(true)
	r.NotFoundHandler, r.MethodNotAllowedHandler = api.NotFound(), api.MethodNotAllowed(r)
	(&api.API{DB: db, Ledger: postings.New(db, cal), Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Now: time.Now}).Register(r)
	return contract.Middleware(t, r), token
}

// chargesWorld is charges paid, refunded and paid twice through the real
// webhook front of every scheme, and the routes over them.
type chargesWorld struct {
	e     *deliverytest.Env
	h     http.Handler
	token string
}

const (
	pixE2E1 = "E00000000000000000000000000000A1"
	pixE2E2 = "E00000000000000000000000000000A2"
)

func newChargesWorld(t *testing.T) chargesWorld {
	t.Helper()
	e := deliverytest.NewWith(t, deliverytest.PixEndpoint(10))
	register := func(id string, amount int64, merchant, partner, pspRef string) {
		t.Helper()
		var bp int64
		if partner != "" {
			bp = 1000
		}
		if _, _, err := charges.Register(context.Background(), e.DB, charges.NewCharge{
			ID: id, Amount: amount, Merchant: merchant, Partner: partner, CommissionBP: bp, PSPRef: pspRef, Access: "course:x",
		}); err != nil {
			t.Fatal(err)
		}
	}
	// Registered in this order: the listing shows them the other way.
	register("order-1", 4990, "loja-1", "p1", "")
	register("order-2", 10000, "loja-1", "", "track-2")
	register("std-1", 2500, "loja-1", "p2", "")
	register("pix1", 4990, "loja-1", "", "")
	register("other-1", 700, "loja-2", "", "")

	if r := e.PostHodle(deliverytest.HodlePaid("track-1", "order-1", "49.90")); r.Code != 200 {
		t.Fatalf("hodle paid: %+v", r)
	}
	if r := e.PostStandard("msg_1", "charge.paid", map[string]any{"charge_id": "std-1", "amount": 2500}); r.Code != 200 {
		t.Fatalf("standard paid: %+v", r)
	}
	if r := e.PostStandard("msg_2", "charge.refunded", map[string]any{"charge_id": "std-1", "amount": 500, "refund_id": "rf-1"}); r.Code != 200 {
		t.Fatalf("standard refund: %+v", r)
	}
	at := deliverytest.Clock.UTC().Format(time.RFC3339)
	for _, e2e := range []string{pixE2E1, pixE2E2} { // the second is a second payment: a divergence
		body := fmt.Sprintf(`{"pix":[{"endToEndId":%q,"txid":"pix1","valor":"49.90","horario":%q}]}`, e2e, at)
		if r := e.PostPix("pix", []byte(body)); r.Code != 200 {
			t.Fatalf("pix %s: %+v", e2e, r)
		}
	}
	h, token := apiOver(t, e.DB)
	return chargesWorld{e: e, h: h, token: token}
}

// list asks for the charges query selects, every page of limit, and
// returns their ids in the order shown.
func (w chargesWorld) list(t *testing.T, query string, limit int) []string {
	t.Helper()
	var ids []string
	next := ""
	for range 20 {
		q := query + "&limit=" + fmt.Sprint(limit)
		if next != "" {
			q += "&cursor=" + next
		}
		code, m, _ := call(t, w.h, "GET", "/v1/charges?"+q, w.token, "")
		if code != 200 {
			t.Fatalf("GET /v1/charges?%s: %d %v", q, code, m)
		}
		for _, c := range m["charges"].([]any) {
			ids = append(ids, c.(map[string]any)["id"].(string))
		}
		next, _ = m["next_cursor"].(string)
		if next == "" {
			return ids
		}
	}
	t.Fatalf("%s: more than 20 pages", query)
	return nil
}

// Each filter finds the charges it names, newest first; a reference is
// found where razao keeps it: a Pix txid is the charge id, an endToEndId
// or a webhook-id that paid the charge is its paid_ref, one that did not
// (a second payment, a refund) is its delivery's in the inbox, a trackId
// is the psp_ref the app registered or the paid_ref.
func TestChargesListFindsEachFilter(t *testing.T) {
	t.Parallel()
	w := newChargesWorld(t)
	var created []time.Time
	for _, id := range []string{"order-1", "order-2", "std-1", "pix1", "other-1"} {
		var at time.Time
		w.e.DB.Get(&at, `SELECT created_at FROM charges WHERE id = $1`, id)
		created = append(created, at)
	}
	var paidAt time.Time
	w.e.DB.Get(&paidAt, `SELECT paid_at FROM charges WHERE id = 'std-1'`)
	rfc := func(t time.Time) string { return url.QueryEscape(t.Format(time.RFC3339Nano)) }

	for _, c := range []struct {
		query string
		want  string
	}{
		{"", "other-1,pix1,std-1,order-2,order-1"},
		{"state=paid", "pix1,order-1"},
		{"state=partially_refunded", "std-1"},
		{"state=pending", "other-1,order-2"},
		{"state=failed", ""},
		{"merchant=loja-2", "other-1"},
		{"merchant=loja-1", "pix1,std-1,order-2,order-1"},
		{"partner=p1", "order-1"},
		{"partner=p9", ""},
		{"created_from=" + rfc(created[1]) + "&created_to=" + rfc(created[3]), "std-1,order-2"},
		{"created_from=" + rfc(created[4]), "other-1"},
		{"paid_from=" + rfc(paidAt) + "&paid_to=" + rfc(paidAt.Add(time.Microsecond)), "std-1"},
		{"paid_to=" + rfc(time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)), ""},
		{"amount_min=4990&amount_max=4990", "pix1,order-1"},
		{"amount_min=5000", "order-2"},
		{"amount_max=2500", "other-1,std-1"},
		{"txid=pix1", "pix1"},
		{"end_to_end_id=" + pixE2E1, "pix1"},
		{"end_to_end_id=" + pixE2E2, "pix1"},
		{"end_to_end_id=E999", ""},
		{"track_id=track-1", "order-1"},
		{"track_id=track-2", "order-2"},
		{"webhook_id=msg_1", "std-1"},
		{"webhook_id=msg_2", "std-1"},
		{"webhook_id=msg_3", ""},
		{"state=paid&merchant=loja-1&amount_max=4990&end_to_end_id=" + pixE2E2, "pix1"},
		{"state=pending&track_id=track-1", ""},
	} {
		for _, limit := range []int{1, 100} {
			if got := strings.Join(w.list(t, c.query, limit), ","); got != c.want {
				t.Errorf("?%s (pages of %d): %q, want %q", c.query, limit, got, c.want)
			}
		}
	}
}

// With a paid range, the listing is in the order of the payments,
// newest first, which its index gives: a month of payments is never read
// whole to be sorted by registration.
func TestChargesListWithAPaidRangeIsInPaymentOrder(t *testing.T) {
	t.Parallel()
	w := newChargesWorld(t)
	var want []string
	if err := w.e.DB.Select(&want, `SELECT id FROM charges WHERE paid_at IS NOT NULL ORDER BY paid_at DESC, id DESC`); err != nil {
		t.Fatal(err)
	}
	if len(want) != 3 {
		t.Fatalf("paid charges %v, want 3", want)
	}
	for _, limit := range []int{1, 2, 100} {
		got := w.list(t, "paid_from=2000-01-01T00:00:00Z&paid_to=2100-01-01T00:00:00Z", limit)
		if !slices.Equal(got, want) {
			t.Errorf("paid range, pages of %d: %v, want %v (by paid_at)", limit, got, want)
		}
	}
}

// A page's cursor holds its place while charges are registered: the
// pages after it show the older charges once each, and the new ones are
// not among them.
func TestChargesListCursorIsStableUnderInserts(t *testing.T) {
	t.Parallel()
	w := newChargesWorld(t)
	code, m, _ := call(t, w.h, "GET", "/v1/charges?limit=2", w.token, "")
	if code != 200 {
		t.Fatal(code, m)
	}
	next := m["next_cursor"].(string)
	for i := range 3 {
		if _, _, err := charges.Register(context.Background(), w.e.DB, charges.NewCharge{ID: fmt.Sprintf("new-%d", i), Amount: 100}); err != nil {
			t.Fatal(err)
		}
	}
	var rest []string
	for next != "" {
		code, m, _ := call(t, w.h, "GET", "/v1/charges?limit=2&cursor="+next, w.token, "")
		if code != 200 {
			t.Fatal(code, m)
		}
		for _, c := range m["charges"].([]any) {
			rest = append(rest, c.(map[string]any)["id"].(string))
		}
		next, _ = m["next_cursor"].(string)
	}
	if got := strings.Join(rest, ","); got != "std-1,order-2,order-1" {
		t.Fatalf("pages after the first: %s, want std-1,order-2,order-1", got)
	}
	if got := w.list(t, "", 100); len(got) != 8 || !slices.Equal(got[:3], []string{"new-2", "new-1", "new-0"}) {
		t.Fatalf("from the top again: %v, want the new ones first", got)
	}
}

// Every bad value of every filter, a parameter the listing does not take
// and a cursor it did not issue are 400 problems naming the parameter.
func TestChargesListRefusesBadFilters(t *testing.T) {
	t.Parallel()
	h, token, _ := newAPI(t, "read")
	long := strings.Repeat("a", 300)
	for _, c := range []struct{ query, param string }{
		{"state=open", "state"},
		{"state=PAID", "state"},
		{"state=paid&state=failed", "state"},
		{"merchant=" + url.QueryEscape("loja\x00"), "merchant"},
		{"merchant=" + long, "merchant"},
		{"partner=P1", "partner"},
		{"partner=a:b", "partner"},
		{"partner=" + url.QueryEscape("p\x00"), "partner"},
		{"created_from=2026-08-01", "created_from"},
		{"created_from=yesterday", "created_from"},
		{"created_to=2026-08-01T00:00:00", "created_to"},
		{"created_from=0001-01-01T00:00:00Z", "created_from"},
		{"created_to=0001-01-01T00:00:00Z", "created_to"},
		{"created_from=2026-09-01T00:00:00Z&created_to=2026-08-01T00:00:00Z", "created_from"},
		{"paid_from=0001-01-01", "paid_from"},
		{"paid_to=" + url.QueryEscape("2026-08-01 00:00:00"), "paid_to"},
		{"paid_from=2026-09-01T00:00:00-03:00&paid_to=2026-09-01T00:00:00Z", "paid_from"},
		{"amount_min=abc", "amount_min"},
		{"amount_min=1.5", "amount_min"},
		{"amount_min=-1", "amount_min"},
		{"amount_max=1000000000001", "amount_max"},
		{"amount_max=99999999999999999999", "amount_max"},
		{"amount_min=500&amount_max=400", "amount_min"},
		{"txid=" + url.QueryEscape("pix1|x"), "txid"},
		{"txid=" + url.QueryEscape("pix\x00"), "txid"},
		{"txid=" + long, "txid"},
		{"end_to_end_id=" + url.QueryEscape("E1|2"), "end_to_end_id"},
		{"end_to_end_id=" + url.QueryEscape("E1\x00"), "end_to_end_id"},
		{"end_to_end_id=" + long, "end_to_end_id"},
		{"track_id=" + url.QueryEscape("t|1"), "track_id"},
		{"track_id=" + url.QueryEscape("t\x00"), "track_id"},
		{"track_id=" + long, "track_id"},
		{"webhook_id=" + url.QueryEscape("msg|1"), "webhook_id"},
		{"webhook_id=" + url.QueryEscape("msg\x00"), "webhook_id"},
		{"webhook_id=" + long, "webhook_id"},
		{"webhook_id=" + url.QueryEscape("msg 1"), "webhook_id"},
		{"status=paid", "status"},
		{"from=2026-08-01T00:00:00Z", "from"},
		{"limit=0", "limit"},
		{"limit=abc", "limit"},
		{"cursor=" + cursor.EncodeKey("partners", "p1"), "cursor"},
		{"cursor=" + cursor.EncodeKey("charges", "x,order-1"), "cursor"},
		{"cursor=" + cursor.EncodeKey("charges", "1,order|1"), "cursor"},
		{"cursor=" + cursor.EncodeKey("charges", "1,"+long), "cursor"},
		{"cursor=not-a-cursor", "cursor"},
		// A cursor of the registrations' order is not one of the payments'.
		{"paid_from=2026-01-01T00:00:00Z&cursor=" + cursor.EncodeKey("charges", "1,order-1"), "cursor"},
	} {
		code, m, hdr := call(t, h, "GET", "/v1/charges?"+c.query, token, "")
		detail, _ := m["detail"].(string)
		if code != 400 || hdr.Get("Content-Type") != "application/problem+json" || !strings.Contains(detail, c.param) ||
			!strings.HasSuffix(fmt.Sprint(m["type"]), "/invalid-parameter") {
			t.Errorf("?%.80s: %d %v, want a 400 invalid-parameter naming %s", c.query, code, m, c.param)
		}
	}
}

// A charge's timeline has every delivery naming it, its posting sets,
// divergences and events, in time order, each typed.
func TestChargeTimelineMergesEveryKindInTimeOrder(t *testing.T) {
	t.Parallel()
	w := newChargesWorld(t)
	code, m, _ := call(t, w.h, "GET", "/v1/charges/pix1/timeline", w.token, "")
	if code != 200 {
		t.Fatalf("timeline: %d %v", code, m)
	}
	entries := m["entries"].([]any)
	var types []string
	var last time.Time
	count := map[string]int{}
	for _, e := range entries {
		e := e.(map[string]any)
		typ := e["type"].(string)
		types = append(types, typ)
		count[typ]++
		at, err := time.Parse(time.RFC3339Nano, e["at"].(string))
		if err != nil || at.Before(last) {
			t.Errorf("entry %v out of time order (after %v)", e, last)
		}
		last = at
		if e[typ] == nil {
			t.Errorf("entry of type %s without its %s: %v", typ, typ, e)
		}
	}
	// Two Pix deliveries; the sale (no partner: no commission); the
	// second payment's divergence; charge.paid, access.granted and
	// divergence.opened.
	if count["delivery"] != 2 || count["posting_set"] != 1 || count["divergence"] != 1 || count["event"] != 3 {
		t.Fatalf("timeline of pix1: %v, want 2 deliveries, 1 set, 1 divergence, 3 events\n%v", types, m)
	}
	if len(m["truncated"].([]any)) != 0 || m["per_kind_limit"] != float64(charges.MaxTimelinePerKind) {
		t.Fatalf("timeline of pix1: truncated %v, per kind %v", m["truncated"], m["per_kind_limit"])
	}
	if types[0] != "delivery" {
		t.Errorf("timeline of pix1 begins with %s, want its first delivery", types[0])
	}
	// std-1: two Standard deliveries, sale, commission, refund and
	// reversal, and its events.
	code, m, _ = call(t, w.h, "GET", "/v1/charges/std-1/timeline", w.token, "")
	if code != 200 {
		t.Fatalf("timeline: %d %v", code, m)
	}
	count = map[string]int{}
	for _, e := range m["entries"].([]any) {
		count[e.(map[string]any)["type"].(string)]++
	}
	if count["delivery"] != 2 || count["posting_set"] != 4 || count["divergence"] != 0 || count["event"] < 3 {
		t.Fatalf("timeline of std-1: %v\n%v", count, m)
	}
	if code, m, _ := call(t, w.h, "GET", "/v1/charges/nope/timeline", w.token, ""); code != 404 || !strings.HasSuffix(fmt.Sprint(m["type"]), "/not-found") {
		t.Fatalf("timeline of an unknown charge: %d %v, want 404", code, m)
	}
}
