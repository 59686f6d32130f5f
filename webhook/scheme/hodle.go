package scheme

import (
	"encoding/hex"
)

const hodleName = "hodle"

// Hodle's headers and event types.
const (
	hodleTimestampHeader = "X-Hodle-Timestamp"
	hodleSignatureHeader = "X-Hodle-Signature"

	hodleTest     = "WEBHOOK_TEST"
	hodleSuccess  = "DEPOSIT_ASSET_SUCCESS"
	hodleFailed   = "DEPOSIT_ASSET_FAILED"
	hodleRefunded = "DEPOSIT_ASSET_REFUNDED"
)

// hodleSignatureLen is the hex length of an HMAC-SHA256.
const hodleSignatureLen = 64

// hodle verifies HMAC-SHA256(secret, timestamp + "." + body) in hex.
type hodle struct {
	keys [][]byte // each secret's UTF-8 bytes, not hex-decoded
}

func newHodle(cfg Config) (Scheme, error) {
	if err := requireSecrets(hodleName, cfg); err != nil {
		return nil, err
	}
	h := &hodle{}
	for _, s := range cfg.Secrets {
		h.keys = append(h.keys, []byte(s))
	}
	return h, nil
}

// Name implements Scheme.
func (*hodle) Name() string { return hodleName }

// hodleMaxTestBody bounds the body IsTest parses. The published test
// event is `{"event":"WEBHOOK_TEST","data":{}}`; a larger one is looked at
// only once authenticated (the handler answers a signed test as a test).
const hodleMaxTestBody = 1 << 10

// IsTest implements Scheme: Hodle sends WEBHOOK_TEST before it shows the
// secret, so it cannot be authenticated and must not need to be. It runs on
// anyone's bytes, before authentication: a body larger than
// hodleMaxTestBody is refused on its length alone, and only a body of at
// most that size is parsed (strictly), so its cost is bounded whatever an
// attacker sends. (A scan for the event name would not do: JSON may escape
// it, as in "WEBHOOK\u005fTEST".)
func (*hodle) IsTest(r Request) bool {
	if len(r.Body) > hodleMaxTestBody {
		return false
	}
	env, err := decodeObject(r.Body)
	if err != nil {
		return false
	}
	event, ok := env.m["event"].(string)
	return ok && event == hodleTest
}

// Authenticate implements Scheme.
func (h *hodle) Authenticate(r Request) error {
	ts, err := singleHeader(r.Header, hodleTimestampHeader)
	if err != nil {
		return err
	}
	sigHex, err := singleHeader(r.Header, hodleSignatureHeader)
	if err != nil {
		return err
	}
	if err := checkTimestamp(hodleTimestampHeader, ts, r.Now); err != nil {
		return err
	}
	// Exactly 64 hex characters, either case: hex.DecodeString accepts both,
	// and the decoded bytes are what is compared.
	if len(sigHex) != hodleSignatureLen {
		return unauthenticated("%s must be %d hex characters, got %d",
			hodleSignatureHeader, hodleSignatureLen, len(sigHex))
	}
	sig, err := hex.DecodeString(sigHex)
	if err != nil {
		return unauthenticated("%s is not hex", hodleSignatureHeader)
	}
	for _, key := range h.keys {
		if macEqual(sig, macSHA256(key, []byte(ts), []byte("."), r.Body)) {
			return nil
		}
	}
	return unauthenticated("%s matches no configured secret", hodleSignatureHeader)
}

// DeliveryID implements Scheme: Hodle sends no delivery id, and its event ids
// are per event type, so a malformed delivery is keyed by its body's hash.
func (*hodle) DeliveryID(Request) string { return "" }

// Parse implements Scheme.
//
// DEPOSIT_ASSET_SUCCESS is keyed by data.trackId (the published sample has
// no eventId); DEPOSIT_ASSET_FAILED and DEPOSIT_ASSET_REFUNDED by
// data.eventId, and both need data.externalId. data.fee, whose unit Hodle
// does not document, goes to Extra["fee"] and is never booked.
func (*hodle) Parse(body []byte) ([]Event, error) {
	env, err := decodeObject(body)
	if err != nil {
		return nil, err
	}
	event, err := env.str("event")
	if err != nil {
		return nil, err
	}
	if event == hodleTest {
		return []Event{{Kind: KindTest, Type: event}}, nil
	}
	switch event {
	case hodleSuccess:
		return hodleDeposit(env, event)
	case hodleFailed, hodleRefunded:
		return hodleFailure(env, event)
	default:
		return []Event{hodleIgnored(env, event)}, nil
	}
}

// hodleDeposit maps DEPOSIT_ASSET_SUCCESS.
func hodleDeposit(env object, event string) ([]Event, error) {
	data, err := env.object("data")
	if err != nil {
		return nil, err
	}
	trackID, err := data.str("trackId")
	if err != nil {
		return nil, err
	}
	externalID, err := data.optStr("externalId")
	if err != nil {
		return nil, err
	}
	amount, ok, err := data.reais("valueInBrl")
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, malformed(data.field("valueInBrl"), "required for "+event)
	}
	return []Event{{
		Kind: KindPaid, Type: event, EventID: trackID,
		ChargeID: externalID, PSPRef: trackID,
		Amount: amount, HasAmount: true,
		Extra: hodleExtra(data),
	}}, nil
}

// hodleFailure maps DEPOSIT_ASSET_FAILED and DEPOSIT_ASSET_REFUNDED. The
// amount is optional for both: a refund without one becomes a divergence
// downstream, and a failure moves no money.
func hodleFailure(env object, event string) ([]Event, error) {
	data, err := env.object("data")
	if err != nil {
		return nil, err
	}
	eventID, err := data.str("eventId")
	if err != nil {
		return nil, err
	}
	externalID, err := data.str("externalId")
	if err != nil {
		return nil, err
	}
	trackID, err := data.optStr("trackId")
	if err != nil {
		return nil, err
	}
	amount, hasAmount, err := data.reais("valueInBrl")
	if err != nil {
		return nil, err
	}
	ev := Event{
		Kind: KindFailed, Type: event, EventID: eventID,
		ChargeID: externalID, PSPRef: trackID,
		Amount: amount, HasAmount: hasAmount,
		Extra: hodleExtra(data),
	}
	if event == hodleRefunded {
		ev.Kind, ev.RefundID = KindRefunded, eventID
	}
	return []Event{ev}, nil
}

// hodleIgnored maps any other event: answered 200 with no effect, keyed by
// whatever id the payload has, else "" for the caller to replace.
func hodleIgnored(env object, event string) Event {
	ev := Event{Kind: KindIgnored, Type: event}
	data, err := env.object("data")
	if err != nil {
		return ev
	}
	for _, key := range []string{"eventId", "trackId"} {
		if id, ok := data.m[key].(string); ok && id != "" {
			ev.EventID = id
			break
		}
	}
	return ev
}

// hodleExtra keeps data.fee for audit.
func hodleExtra(data object) map[string]string {
	fee, ok := data.text("fee")
	if !ok {
		return nil
	}
	return map[string]string{"fee": fee}
}
