package scheme

import (
	"fmt"
	"strings"
)

const abacatepayName = "abacatepay"

// DefaultAbacatepayPublicKey is the HMAC key AbacatePay publishes in its docs
// and SDKs. Being public, a signature made with it proves integrity only;
// origin is proven by the URL secret.
const DefaultAbacatepayPublicKey = "t9dXRhHHo3yDEj5pVDYz0frf7q6bMKyMRmxxCPIPp3RCplBfXRxqlC6ZpiWmOqj4L63qEaeUOtrCI8P0VMUgo6iIga2ri9ogaHFs0WIIywSMg0q7RmBfybe1E5XJcfC4IW3alNqym0tXoAKkzvfEjZxV6bE0oG2zJrNNYmUCKZyV0KZ3JS8Votf9EAWWYdiDkMkpbMdPggfh1EqHlVkMiTady6jOR3hyzGEHrIz2Ret0xHKMbiqkr9HS1JhNHDX9"

// AbacatePay's headers and query parameter.
const (
	abacatepaySecretQuery     = "webhookSecret"
	abacatepaySecretHeader    = "X-Webhook-Secret"
	abacatepaySignatureHeader = "X-Webhook-Signature"
)

// minURLSecretLen is the shortest URL secret accepted: the URL secret is the
// only proof of origin, so it must be unguessable.
const minURLSecretLen = 32

// abacatepay requires both the URL secret (origin) and the public-key HMAC
// of the body (integrity).
type abacatepay struct {
	secrets   []string
	publicKey []byte
}

func newAbacatepay(cfg Config) (Scheme, error) {
	if err := requireSecrets(abacatepayName, cfg); err != nil {
		return nil, err
	}
	for i, s := range cfg.Secrets {
		if len(s) < minURLSecretLen {
			return nil, fmt.Errorf("%w: %s: secret %d is shorter than %d characters",
				ErrConfig, abacatepayName, i+1, minURLSecretLen)
		}
	}
	key := cfg.PublicKey
	if key == "" {
		key = DefaultAbacatepayPublicKey
	}
	return &abacatepay{secrets: append([]string(nil), cfg.Secrets...), publicKey: []byte(key)}, nil
}

// Name implements Scheme.
func (*abacatepay) Name() string { return abacatepayName }

// IsTest implements Scheme: AbacatePay has no registration test event.
func (*abacatepay) IsTest(Request) bool { return false }

// Authenticate implements Scheme. The URL secret may come as the
// webhookSecret query parameter, the X-Webhook-Secret header, or both; when
// both are present they must both hold the same configured secret.
func (a *abacatepay) Authenticate(r Request) error {
	if err := a.checkURLSecret(r); err != nil {
		return err
	}
	sigB64, err := singleHeader(r.Header, abacatepaySignatureHeader)
	if err != nil {
		return err
	}
	sig, err := decodeBase64MAC(sigB64)
	if err != nil {
		return unauthenticated("%s is not base64", abacatepaySignatureHeader)
	}
	if !macEqual(sig, macSHA256(a.publicKey, r.Body)) {
		return unauthenticated("%s does not match the body", abacatepaySignatureHeader)
	}
	return nil
}

// checkURLSecret proves origin from the secret registered in the URL.
func (a *abacatepay) checkURLSecret(r Request) error {
	presented := make([]string, 0, 2)
	switch q := r.Query[abacatepaySecretQuery]; len(q) {
	case 0:
	case 1:
		presented = append(presented, q[0])
	default:
		return unauthenticated("%d %s query parameters, want one", len(q), abacatepaySecretQuery)
	}
	switch h := r.Header.Values(abacatepaySecretHeader); len(h) {
	case 0:
	case 1:
		presented = append(presented, h[0])
	default:
		return unauthenticated("%d %s headers, want one", len(h), abacatepaySecretHeader)
	}
	if len(presented) == 0 {
		return unauthenticated("missing URL secret (%s query or %s header)",
			abacatepaySecretQuery, abacatepaySecretHeader)
	}
	for _, want := range a.secrets {
		if allEqual(presented, want) {
			return nil
		}
	}
	return unauthenticated("URL secret matches no configured secret")
}

// allEqual reports whether every presented value equals want, comparing all
// of them so the time taken does not depend on which one differs.
func allEqual(presented []string, want string) bool {
	ok := true
	for _, p := range presented {
		ok = secretEqual(p, want) && ok
	}
	return ok
}

// DeliveryID implements Scheme: the envelope id ("log_…") identifies the
// delivery and is also its inbox key.
func (*abacatepay) DeliveryID(r Request) string {
	env, err := decodeObject(r.Body)
	if err != nil {
		return ""
	}
	id, _ := env.m["id"].(string)
	return id
}

// Parse implements Scheme.
//
// Where the payment sits depends on the event. Documented v2 shapes put it
// under data.<resource>, named by the event's prefix: data.transparent for
// transparent.*, data.checkout for checkout.*, each with id, externalId,
// paidAmount and platformFee in centavos. v1 billing.* events put it under
// data.billing when present, else data itself is the billing (the v1 sample
// shows data = {id, amount, status, …}). Other resources' *.refunded and
// *.disputed events (e.g. pix_key.refunded) are still reported, with no
// charge id, so that finance sees money that moved.
func (*abacatepay) Parse(body []byte) ([]Event, error) {
	env, err := decodeObject(body)
	if err != nil {
		return nil, err
	}
	id, err := env.str("id")
	if err != nil {
		return nil, err
	}
	event, err := env.str("event")
	if err != nil {
		return nil, err
	}
	ev := Event{Kind: abacatepayKind(event), Type: event, EventID: id}
	if ev.Kind == KindIgnored {
		return []Event{ev}, nil
	}
	data, err := env.object("data")
	if err != nil {
		return nil, err
	}
	if err := abacatepayFill(&ev, data); err != nil {
		return nil, err
	}
	// A test-mode event reaching a production endpoint is worth a look.
	if devMode, ok := env.m["devMode"].(bool); ok && devMode {
		ev.setExtra("devMode", "true")
	}
	return []Event{ev}, nil
}

// abacatepayKind maps an event name to its business kind.
func abacatepayKind(event string) Kind {
	switch {
	case event == "transparent.completed", event == "checkout.completed", event == "billing.paid":
		return KindPaid
	case strings.HasSuffix(event, ".refunded"):
		return KindRefunded
	case strings.HasSuffix(event, ".disputed"):
		return KindDisputed
	default:
		return KindIgnored
	}
}

// abacatepayFill reads the resource's ids and amounts into ev.
func abacatepayFill(ev *Event, data object) error {
	res, found, err := abacatepayResource(ev.Type, data)
	if err != nil || !found {
		// An undocumented resource: report the kind with nothing to match.
		return err
	}
	if ev.ChargeID, err = res.optStr("externalId"); err != nil {
		return err
	}
	if ev.PSPRef, err = res.optStr("id"); err != nil {
		return err
	}
	if ev.ChargeID == "" && ev.PSPRef == "" {
		return malformed(res.field("externalId"), "neither externalId nor id identifies the payment")
	}
	switch ev.Kind {
	case KindPaid:
		return abacatepayPaid(ev, res)
	case KindRefunded:
		// A refund that states its amount (refundedAmount, centavos, on
		// the resource) is booked for that amount. Without it, AbacatePay's
		// documented refund is of the full remaining amount; razao never
		// takes the refund's amount from the payment's own paidAmount,
		// which is what was paid, not what was returned.
		ev.RefundID = ev.EventID
		amount, ok, err := res.centavos("refundedAmount", false)
		if err != nil {
			return err
		}
		ev.Amount, ev.HasAmount, ev.FullRefund = amount, ok, !ok
	case KindDisputed:
		if reason, ok := data.text("reason"); ok {
			ev.setExtra("reason", reason)
		}
	}
	return nil
}

// abacatepayResource finds the payment object for the event's resource;
// found is false for a resource this scheme does not know.
func abacatepayResource(event string, data object) (object, bool, error) {
	prefix, _, _ := strings.Cut(event, ".")
	switch prefix {
	case "transparent", "checkout":
		res, err := data.object(prefix)
		return res, err == nil, err
	case "billing":
		if !data.has("billing") {
			return data, true, nil
		}
		res, err := data.object("billing")
		return res, err == nil, err
	default:
		return object{}, false, nil
	}
}

// abacatepayPaid reads paidAmount and platformFee, both centavos.
func abacatepayPaid(ev *Event, res object) error {
	amount, ok, err := res.centavos("paidAmount", false)
	if err != nil {
		return err
	}
	if !ok {
		return malformed(res.field("paidAmount"), "required for "+ev.Type)
	}
	ev.Amount, ev.HasAmount = amount, true
	fee, ok, err := res.centavos("platformFee", true)
	if err != nil {
		return err
	}
	if ok && fee > amount {
		return malformed(res.field("platformFee"), "larger than paidAmount")
	}
	ev.Fee, ev.HasFee = fee, ok
	return nil
}
