package inbox_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/razao/razao/charges"
	"github.com/razao/razao/postings"
	"github.com/razao/razao/webhook"
)

// TestInboxKeyPartsCannotCollide: the event type "DEPOSIT_ASSET_REFUNDED|rf"
// with id "77" and the refund "DEPOSIT_ASSET_REFUNDED" with id "rf|77"
// would join into one '|'-separated key, and the real refund would be
// answered "duplicate" and never booked. Both are accepted, and the
// refund booked.
func TestInboxKeyPartsCannotCollide(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.Charge("order-1", 4990, "", 0)
	if r := e.PostHodle(hodlePaid("track-1", "order-1", "49.90")); r.Code != 200 || r.Body.Status != "accepted" {
		t.Fatalf("payment: %d %+v", r.Code, r.Body)
	}
	lookalike := `{"event":"DEPOSIT_ASSET_REFUNDED|rf","data":{"eventId":"77","externalId":"order-1"}}`
	if r := e.PostHodle(lookalike); r.Code != 200 || r.Body.Status != "ignored" {
		t.Fatalf("look-alike event: %d %+v, want 200 ignored", r.Code, r.Body)
	}
	r := e.PostHodle(hodleRefund("rf|77", "order-1", "10.00"))
	if r.Code != 200 || r.Body.Status != "accepted" {
		t.Fatalf("refund rf|77: %d %+v, want 200 accepted", r.Code, r.Body)
	}
	e.WantBalances(map[string]int64{"assets:cash": 3990, "income:revenue": -3990})
	if n := e.Count(`SELECT count(*) FROM inbox WHERE endpoint = 'hodle'`); n != 3 {
		t.Fatalf("%d inbox rows, want 3", n)
	}
	// The same refund again is a duplicate: the key still deduplicates.
	if r := e.PostHodle(hodleRefund("rf|77", "order-1", "10.00")); r.Code != 200 || r.Body.Status != "duplicate" {
		t.Fatalf("refund again: %d %+v, want 200 duplicate", r.Code, r.Body)
	}
}

// TestInboxRowsStoredBeforeKeysByPartsStillDeduplicate: a delivery stored
// under the old '|'-joined key is still found by its redelivery.
func TestInboxRowsStoredBeforeKeysByPartsStillDeduplicate(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.Charge("order-1", 4990, "", 0)
	e.DB.MustExec(`INSERT INTO inbox (delivery_key, endpoint, scheme, merchant, event_type, event_id, kind, event, body, status)
		VALUES ('hodle|DEPOSIT_ASSET_FAILED|event-1', 'hodle', 'hodle', 'loja-1', 'DEPOSIT_ASSET_FAILED', 'event-1', 'failed', '{}', '', 'processed')`)
	body := `{"event":"DEPOSIT_ASSET_FAILED","data":{"eventId":"event-1","externalId":"order-1"}}`
	if r := e.PostHodle(body); r.Code != 200 || r.Body.Status != "duplicate" {
		t.Fatalf("redelivery of an old row: %d %+v, want 200 duplicate", r.Code, r.Body)
	}
}

// TestNULOrBadUTF8InAnIDIsMalformed: PostgreSQL's text and jsonb refuse
// a NUL and invalid UTF-8, so such an id would fail to store (503) and,
// for the PSP, look like an outage. It is authentic but malformed: 400,
// kept. (strictjson refuses a NUL escaped in a JSON body; a header id
// does not go through it.)
func TestNULOrBadUTF8InAnIDIsMalformed(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.Charge("order-1", 4990, "", 0)
	if r := e.PostHodle(hodlePaid("track-1", "order-1", "49.90")); r.Code != 200 {
		t.Fatalf("payment: %d %+v", r.Code, r.Body)
	}
	for _, body := range []string{
		`{"event":"DEPOSIT_ASSET_REFUNDED","data":{"eventId":"rf\u000077","externalId":"order-1","valueInBrl":"10.00"}}`,
		`{"event":"DEPOSIT_ASSET_FAILED","data":{"eventId":"ev-1","externalId":"order\u0000-1"}}`,
		`{"event":"DEPOSIT_ASSET_SUCCESS","data":{"trackId":"track-2","externalId":"order-1","valueInBrl":"49.90","fee":"0\u0000"}}`,
		`{"event":"SOMETHING_ELSE","data":{"eventId":"x\u0000"}}`,
	} {
		if r := e.PostHodle(body); r.Code != http.StatusBadRequest || r.Body.Status != "malformed" {
			t.Errorf("%s: got %d %+v, want 400 malformed", body, r.Code, r.Body)
		}
	}
	// An abacatepay delivery names itself by its envelope id, which is
	// then the malformed delivery's key: a NUL there is hashed.
	abacate := `{"id":"log_\u0000","event":"billing.paid","devMode":false,"data":{}}`
	if r := e.PostAbacate(abacate); r.Code != http.StatusBadRequest || r.Body.Status != "malformed" {
		t.Errorf("abacatepay envelope id with a NUL: got %d %+v, want 400 malformed", r.Code, r.Body)
	}
	// A standard webhook-id with invalid UTF-8 (net/http lets it through).
	body := []byte(`{"type":"charge.paid","timestamp":"` + clock.UTC().Format(time.RFC3339) + `","data":{"charge_id":"order-1","amount":4990}}`)
	if r := e.Post("/webhooks/std", standardHeaders("msg-\xff", clock.Unix(), body), body); r.Code != http.StatusBadRequest || r.Body.Status != "malformed" {
		t.Errorf("webhook-id with invalid UTF-8: got %d %+v, want 400 malformed", r.Code, r.Body)
	}
	// And with a NUL, for a handler reached without net/http's server,
	// which refuses control characters in headers.
	if r := e.Post("/webhooks/std", standardHeaders("msg-\x00", clock.Unix(), body), body); r.Code != http.StatusBadRequest || r.Body.Status != "malformed" {
		t.Errorf("webhook-id with a NUL: got %d %+v, want 400 malformed", r.Code, r.Body)
	}
	if n := e.Count(`SELECT count(*) FROM divergences WHERE reason = 'malformed'`); n != 7 {
		t.Fatalf("%d malformed divergences, want 7", n)
	}
	e.WantBalances(map[string]int64{"assets:cash": 4990, "income:revenue": -4990})
}

// TestRefundIDTooLongForItsSetKeysIsMalformed: a refund id within the id
// limit (256 bytes) made, with a 100-byte charge id, posting-set keys
// longer than ck_posting_sets_key's 300 bytes: answered 200, then failed
// attempt after attempt. It is refused at intake (400, kept); a refund id
// whose keys fit with the longest charge id is booked.
func TestRefundIDTooLongForItsSetKeysIsMalformed(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	charge := strings.Repeat("c", charges.MaxIDLength)
	e.Charge(charge, 4990, "partner-42", 1000)
	if r := e.PostHodle(hodlePaid("track-1", charge, "49.90")); r.Code != 200 || r.Body.Status != "accepted" {
		t.Fatalf("payment: %d %+v", r.Code, r.Body)
	}
	tooLong := strings.Repeat("r", 200)
	if r := e.PostHodle(hodleRefund(tooLong, charge, "10.00")); r.Code != http.StatusBadRequest || r.Body.Status != "malformed" {
		t.Fatalf("refund id of 200 bytes: got %d %+v, want 400 malformed", r.Code, r.Body)
	}
	if n := e.Count(`SELECT count(*) FROM divergences WHERE reason = 'malformed'`); n != 1 {
		t.Fatalf("%d malformed divergences, want 1", n)
	}
	// The longest that fits: "commission_reversal:100:" + 100 + ":" + id.
	longest := strings.Repeat("s", postings.MaxKeyLength-len("commission_reversal:100:")-charges.MaxIDLength-len(":"))
	if r := e.PostHodle(hodleRefund(longest, charge, "10.00")); r.Code != 200 || r.Body.Status != "accepted" {
		t.Fatalf("refund id of %d bytes: got %d %+v, want 200 accepted", len(longest), r.Code, r.Body)
	}
	if n := e.Count(`SELECT count(*) FROM inbox WHERE attempts > 0 AND status = 'pending'`); n != 0 {
		t.Fatalf("%d deliveries failed and wait for a retry", n)
	}
	e.WantBalances(map[string]int64{"assets:cash": 3990, "income:revenue": -3990,
		"expenses:commission": 499 - 100, "liabilities:commission-payable:partner-42": -499 + 100})
}

// TestBCBPixCallbackStoresItsBodyOnce: each Pix of a callback is its own
// inbox row, and the callback's body is stored once for all of them
// (docs/performance.md, "bcb-pix callbacks: one body per delivery");
// every Pix is booked.
func TestBCBPixCallbackStoresItsBodyOnce(t *testing.T) {
	t.Parallel()
	e := newEnvWith(t, webhook.EndpointConfig{Name: "pix", Scheme: "bcb-pix", Merchant: "loja-1",
		Secrets: []string{bcbSecret}, MaxItems: 2500})
	body, ids := pixCallback("c", 0, 2200)
	if len(body) > webhook.DefaultMaxBody {
		t.Fatalf("callback of %d bytes, above the body limit", len(body))
	}
	e.ChargesFor(ids)
	r := e.PostPix("pix", body)
	if r.Code != 200 || r.Body.Status != "accepted" || len(r.Body.Events) != 2200 {
		t.Fatalf("callback: %d %s %q, %d events", r.Code, r.Body.Status, r.Body.Error, len(r.Body.Events))
	}
	if n := e.Count(`SELECT count(*) FROM posting_sets WHERE kind = 'sale'`); n != 2200 {
		t.Fatalf("%d sales booked, want 2200", n)
	}
	stored := e.Count(`SELECT coalesce(sum(octet_length(body)), 0) FROM inbox`) +
		e.Count(`SELECT coalesce(sum(octet_length(body)), 0) FROM inbox_bodies`)
	if stored != int64(len(body)) {
		t.Fatalf("%d body bytes stored for a callback of %d", stored, len(body))
	}
	if n := e.Count(`SELECT count(DISTINCT body_id) FROM inbox WHERE body IS NULL`); n != 1 {
		t.Fatalf("inbox rows refer to %d bodies, want 1", n)
	}
	// Its redelivery stores nothing more.
	if r := e.PostPix("pix", body); r.Code != 200 || r.Body.Status != "duplicate" {
		t.Fatalf("redelivery: %d %s %q", r.Code, r.Body.Status, r.Body.Error)
	}
	if n := e.Count(`SELECT count(*) FROM inbox_bodies`); n != 1 {
		t.Fatalf("%d bodies stored after the redelivery, want 1", n)
	}
}

// TestBCBPixCallbackAboveItsItemBoundIsRefused: a callback of more events
// than the endpoint's max_items is kept as malformed (400, one inbox row,
// a divergence for finance) with a message naming the bound; at the bound
// it is accepted.
func TestBCBPixCallbackAboveItsItemBoundIsRefused(t *testing.T) {
	t.Parallel()
	e := newEnvWith(t, webhook.EndpointConfig{Name: "pix", Scheme: "bcb-pix", Merchant: "loja-1",
		Secrets: []string{bcbSecret}, MaxItems: 10})
	over, ids := pixCallback("c", 0, 11)
	e.ChargesFor(ids)
	r := e.PostPix("pix", over)
	if r.Code != http.StatusBadRequest || r.Body.Status != "malformed" || !strings.Contains(r.Body.Error, "max_items of 10") {
		t.Fatalf("11 Pix: got %d %+v, want 400 malformed naming max_items", r.Code, r.Body)
	}
	if n := e.Count(`SELECT count(*) FROM inbox`); n != 1 {
		t.Fatalf("%d inbox rows, want the one malformed delivery", n)
	}
	if n := e.Count(`SELECT count(*) FROM divergences WHERE reason = 'malformed'`); n != 1 {
		t.Fatalf("%d malformed divergences, want 1", n)
	}
	atBound, _ := pixCallback("c", 0, 10)
	if r := e.PostPix("pix", atBound); r.Code != 200 || r.Body.Status != "accepted" {
		t.Fatalf("10 Pix: got %d %+v, want 200 accepted", r.Code, r.Body)
	}
	if n := e.Count(`SELECT count(*) FROM posting_sets WHERE kind = 'sale'`); n != 10 {
		t.Fatalf("%d sales booked, want 10", n)
	}
}
