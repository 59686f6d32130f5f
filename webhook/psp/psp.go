// Package psp plays a payment service provider against razao: it writes
// the body a PSP would send for a payment, a refund or a failure, in each
// scheme's format, and signs it as that scheme requires (docs/psp-schemes.md).
// `razao psp send`, `razao demo` and the tests use it, so a newcomer can pay
// a charge without writing a signer, and the signing recipe exists once.
//
// It is the sender's side of webhook/scheme, written separately from the
// verifier on purpose: its tests check it against the schemes' published
// vectors and against the verifier, so a mistake in one shows in the other.
package psp

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/razao/razao/money"
	"github.com/razao/razao/webhook/scheme"
)

// Action is what a delivery tells razao about a charge.
type Action string

// The actions a PSP can report.
const (
	Paid     Action = "paid"
	Refunded Action = "refunded"
	Failed   Action = "failed"
	// Test is the PSP's registration test (Hodle's WEBHOOK_TEST), sent
	// unsigned: Hodle sends it before it shows the secret.
	Test Action = "test"
)

// Endpoint is what a PSP knows of one razao endpoint: its name (the URL
// path), its scheme and the secret it signs with.
type Endpoint struct {
	Name   string
	Scheme string
	// Secret is the endpoint's current secret; empty when it has none yet
	// (only Test can then be sent).
	Secret string
	// PublicKey is abacatepay's HMAC key; empty means the published one.
	PublicKey string
}

// Event is one delivery to write. Ids left empty are derived from the
// charge (and refund) ids, so sending the same event twice is a
// redelivery, which razao answers "duplicate".
type Event struct {
	Action   Action
	ChargeID string
	// Amount in centavos: the amount paid, or this refund's amount.
	Amount int64
	// Fee is the PSP's fee in centavos, stated where the scheme has a
	// field for it (abacatepay platformFee); 0 states none.
	Fee int64
	// RefundID is the PSP's id of this refund (required for Refunded
	// except with abacatepay, whose envelope id is the refund's).
	RefundID string
	// ID is the PSP's id of this event or delivery (the inbox key).
	ID string
	// PSPRef is the PSP's reference of the payment (Hodle trackId,
	// AbacatePay resource id, Pix endToEndId).
	PSPRef string
	// PaidAmount is, for a bcb-pix refund, the amount of the Pix it
	// returns: the Pix API sends a devolução inside its Pix.
	PaidAmount int64
	// At is when the event happened; zero means now.
	At time.Time
}

// Delivery is one HTTP request as the PSP sends it.
type Delivery struct {
	// Path is /webhooks/{endpoint}, or /webhooks/{endpoint}/pix for
	// bcb-pix.
	Path   string
	Query  url.Values
	Header http.Header
	Body   []byte
	// ID names the delivery for a reader: the inbox key's id part.
	ID string
}

// Build writes ev in ep's scheme and signs it at now.
func Build(ep Endpoint, ev Event, now time.Time) (Delivery, error) {
	if ev.At.IsZero() {
		ev.At = now
	}
	body, id, err := Body(ep.Scheme, ev)
	if err != nil {
		return Delivery{}, err
	}
	if ev.Action == Test {
		return Delivery{Path: "/webhooks/" + ep.Name, Query: url.Values{}, Header: jsonHeader(), Body: body, ID: id}, nil
	}
	return Sign(ep, body, id, now)
}

func jsonHeader() http.Header {
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	return h
}

// Sign signs body as ep's scheme requires, at now; id is the delivery's id
// where the scheme carries it in a header (standard's webhook-id).
func Sign(ep Endpoint, body []byte, id string, now time.Time) (Delivery, error) {
	if ep.Secret == "" {
		return Delivery{}, fmt.Errorf("endpoint %s has no secret yet: only %q can be sent to it", ep.Name, Test)
	}
	d := Delivery{Path: "/webhooks/" + ep.Name, Query: url.Values{}, Header: jsonHeader(), Body: body, ID: id}
	ts := strconv.FormatInt(now.Unix(), 10)
	switch ep.Scheme {
	case "hodle":
		// HMAC-SHA256 over timestamp "." body, keyed by the secret's
		// bytes as written (not hex-decoded), in hex.
		d.Header.Set("X-Hodle-Timestamp", ts)
		d.Header.Set("X-Hodle-Signature", hex.EncodeToString(mac([]byte(ep.Secret), ts+".", body)))
	case "standard":
		// The key is the base64 after "whsec_".
		key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(ep.Secret, "whsec_"))
		if err != nil || len(key) == 0 {
			return Delivery{}, fmt.Errorf("endpoint %s: its secret is not whsec_<base64>", ep.Name)
		}
		if id == "" {
			return Delivery{}, fmt.Errorf("endpoint %s: a Standard Webhooks delivery needs an id", ep.Name)
		}
		d.Header.Set("webhook-id", id)
		d.Header.Set("webhook-timestamp", ts)
		d.Header.Set("webhook-signature", "v1,"+base64.StdEncoding.EncodeToString(mac(key, id+"."+ts+".", body)))
	case "abacatepay":
		// Origin: our secret in the registered URL (and, in newer
		// deliveries, a header). Integrity: an HMAC keyed by the PSP's
		// public key, in base64.
		key := ep.PublicKey
		if key == "" {
			key = scheme.DefaultAbacatepayPublicKey
		}
		d.Query.Set("webhookSecret", ep.Secret)
		d.Header.Set("X-Webhook-Secret", ep.Secret)
		d.Header.Set("X-Webhook-Signature", base64.StdEncoding.EncodeToString(mac([]byte(key), "", body)))
	case "bcb-pix":
		// Mutual TLS is the scheme's own authentication; without it, the
		// URL secret some PSPs document (?hmac=) is the fallback. The Pix
		// API posts to the registered URL with /pix appended, so that is
		// where a PSP's callback arrives (razao serves both).
		d.Path += "/pix"
		d.Query.Set("hmac", ep.Secret)
	default:
		return Delivery{}, fmt.Errorf("endpoint %s: unknown scheme %q", ep.Name, ep.Scheme)
	}
	return d, nil
}

func mac(key []byte, prefix string, body []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(prefix))
	m.Write(body)
	return m.Sum(nil)
}

// Body writes ev in the format of the scheme called name and returns it
// with the delivery's id (the PSP's event id the inbox keys it by).
func Body(name string, ev Event) (body []byte, id string, err error) {
	if ev.Action != Test && ev.ChargeID == "" {
		return nil, "", fmt.Errorf("no charge id")
	}
	if (ev.Action == Paid || ev.Action == Refunded) && ev.Amount <= 0 && !(name == "abacatepay" && ev.Action == Refunded) {
		return nil, "", fmt.Errorf("%s needs an amount in centavos > 0", ev.Action)
	}
	if ev.At.IsZero() {
		ev.At = time.Now()
	}
	switch name {
	case "hodle":
		return hodleBody(ev)
	case "standard":
		return standardBody(ev)
	case "abacatepay":
		return abacatepayBody(ev)
	case "bcb-pix":
		return bcbBody(ev)
	default:
		return nil, "", fmt.Errorf("unknown scheme %q", name)
	}
}

// noEvent says a scheme has no such event, and what it has instead.
func noEvent(name string, a Action, why string) error {
	return fmt.Errorf("the %s scheme has no %s event: %s", name, a, why)
}

func marshal(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // maps of strings and numbers always marshal
	}
	return b
}

func or(v, def string) string {
	if v != "" {
		return v
	}
	return def
}

func needRefundID(ev Event) error {
	if ev.RefundID == "" {
		return fmt.Errorf("refunded needs the PSP's refund id (the same id again is the same refund)")
	}
	return nil
}

// hodleBody: {"event": ..., "data": {...}}; amounts in reais strings.
func hodleBody(ev Event) ([]byte, string, error) {
	reais := money.FormatReais(ev.Amount, '.')
	trackID := or(ev.PSPRef, "trk-"+ev.ChargeID)
	switch ev.Action {
	case Test:
		return []byte(`{"event":"WEBHOOK_TEST","data":{}}`), "", nil
	case Paid:
		// The published sample has no eventId: trackId keys it.
		return marshal(map[string]any{"event": "DEPOSIT_ASSET_SUCCESS", "data": map[string]any{
			"trackId": trackID, "externalId": ev.ChargeID, "valueInBrl": reais}}), trackID, nil
	case Refunded:
		if err := needRefundID(ev); err != nil {
			return nil, "", err
		}
		return marshal(map[string]any{"event": "DEPOSIT_ASSET_REFUNDED", "data": map[string]any{
			"eventId": ev.RefundID, "externalId": ev.ChargeID, "trackId": trackID, "valueInBrl": reais}}), ev.RefundID, nil
	case Failed:
		id := or(ev.ID, "fail-"+ev.ChargeID)
		return marshal(map[string]any{"event": "DEPOSIT_ASSET_FAILED", "data": map[string]any{
			"eventId": id, "externalId": ev.ChargeID, "trackId": trackID}}), id, nil
	}
	return nil, "", fmt.Errorf("unknown action %q", ev.Action)
}

// standardBody: razao's own event body; the id travels in webhook-id.
func standardBody(ev Event) ([]byte, string, error) {
	at := ev.At.UTC().Format(time.RFC3339)
	data := map[string]any{"charge_id": ev.ChargeID, "occurred_at": at}
	var typ, id string
	switch ev.Action {
	case Test:
		return nil, "", noEvent("standard", Test, "Standard Webhooks have no registration test")
	case Paid:
		typ, id = "charge.paid", "msg-"+ev.ChargeID+"-paid"
		data["amount"] = ev.Amount
	case Refunded:
		if err := needRefundID(ev); err != nil {
			return nil, "", err
		}
		typ, id = "charge.refunded", "msg-"+ev.ChargeID+"-refund-"+ev.RefundID
		data["amount"], data["refund_id"] = ev.Amount, ev.RefundID
	case Failed:
		typ, id = "charge.failed", "msg-"+ev.ChargeID+"-failed"
	default:
		return nil, "", fmt.Errorf("unknown action %q", ev.Action)
	}
	id = or(ev.ID, id)
	return marshal(map[string]any{"type": typ, "timestamp": at, "data": data}), id, nil
}

// abacatepayBody: the v2 envelope of a transparent (Pix QR code) charge;
// amounts in centavos.
func abacatepayBody(ev Event) ([]byte, string, error) {
	res := map[string]any{"id": or(ev.PSPRef, "pix_char_"+ev.ChargeID), "externalId": ev.ChargeID}
	var event, id string
	switch ev.Action {
	case Test:
		return nil, "", noEvent("abacatepay", Test, "AbacatePay sends no registration test")
	case Failed:
		return nil, "", noEvent("abacatepay", Failed, "it reports payments, refunds and disputes")
	case Paid:
		event, id = "transparent.completed", "log_"+ev.ChargeID+"_paid"
		res["status"], res["paidAmount"] = "PAID", ev.Amount
		if ev.Fee > 0 {
			res["platformFee"] = ev.Fee
		}
	case Refunded:
		// AbacatePay documents refunds as total and names no amount
		// field: razao refunds what is left of the charge.
		event, id = "transparent.refunded", "log_"+ev.ChargeID+"_refund_"+or(ev.RefundID, "full")
		res["status"] = "REFUNDED"
	default:
		return nil, "", fmt.Errorf("unknown action %q", ev.Action)
	}
	id = or(ev.ID, id)
	return marshal(map[string]any{"id": id, "event": event, "apiVersion": 2, "devMode": false,
		"data": map[string]any{"transparent": res}}), id, nil
}

// bcbBody: the Pix API callback {"pix": [...]}; a refund is a devolução
// inside the Pix it returns.
func bcbBody(ev Event) ([]byte, string, error) {
	if !alnum(ev.ChargeID, 35) {
		return nil, "", fmt.Errorf("bcb-pix: the charge id is the Pix txid, 1 to 35 letters and digits; %q is not", ev.ChargeID)
	}
	e2e := or(ev.PSPRef, "E"+hash32(ev.ChargeID)[:31])
	at := ev.At.UTC().Format(time.RFC3339)
	item := map[string]any{"endToEndId": e2e, "txid": ev.ChargeID, "horario": at}
	switch ev.Action {
	case Test:
		return nil, "", noEvent("bcb-pix", Test, "the Pix API sends no registration test")
	case Failed:
		return nil, "", noEvent("bcb-pix", Failed, "a Pix is credited or not; a devolução that failed is NAO_REALIZADO")
	case Paid:
		item["valor"] = money.FormatReais(ev.Amount, '.')
		return marshal(map[string]any{"pix": []any{item}}), e2e, nil
	case Refunded:
		if err := needRefundID(ev); err != nil {
			return nil, "", err
		}
		if !alnum(ev.RefundID, 35) {
			return nil, "", fmt.Errorf("bcb-pix: a devolução id is 1 to 35 letters and digits; %q is not", ev.RefundID)
		}
		if ev.PaidAmount <= 0 {
			return nil, "", fmt.Errorf("bcb-pix: a devolução travels inside its Pix: the amount paid is needed")
		}
		item["valor"] = money.FormatReais(ev.PaidAmount, '.')
		item["devolucoes"] = []any{map[string]any{
			"id": ev.RefundID, "rtrId": "D" + hash32(ev.ChargeID + ":" + ev.RefundID)[:31],
			"valor":   money.FormatReais(ev.Amount, '.'),
			"horario": map[string]any{"solicitacao": at, "liquidacao": at},
			"status":  "DEVOLVIDO",
		}}
		return marshal(map[string]any{"pix": []any{item}}), e2e + ":" + ev.RefundID + ":DEVOLVIDO", nil
	}
	return nil, "", fmt.Errorf("unknown action %q", ev.Action)
}

// hash32 is a stable hex digest: derived ids stay the same on every send.
func hash32(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

func alnum(s string, max int) bool {
	if s == "" || len(s) > max {
		return false
	}
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return false
		}
	}
	return true
}

// Request is d as an HTTP request to the service at base.
func (d Delivery) Request(base string) (*http.Request, error) {
	u := strings.TrimRight(base, "/") + d.Path
	if len(d.Query) > 0 {
		u += "?" + d.Query.Encode()
	}
	req, err := http.NewRequest(http.MethodPost, u, strings.NewReader(string(d.Body)))
	if err != nil {
		return nil, err
	}
	for k, vs := range d.Header {
		req.Header[k] = vs
	}
	return req, nil
}

// Redacted is d's URL (path and query) with every secret in it replaced,
// for printing.
func (d Delivery) Redacted() string {
	q := url.Values{}
	for k, vs := range d.Query {
		for range vs {
			q.Add(k, "REDACTED")
		}
	}
	if len(q) == 0 {
		return d.Path
	}
	return d.Path + "?" + q.Encode()
}
