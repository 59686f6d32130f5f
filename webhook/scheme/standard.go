package scheme

import (
	"encoding/base64"
	"fmt"
	"strings"
)

const standardName = "standard"

// Standard Webhooks headers and razao's own event types.
const (
	standardIDHeader        = "Webhook-Id"
	standardTimestampHeader = "Webhook-Timestamp"
	standardSignatureHeader = "Webhook-Signature"
	standardSecretPrefix    = "whsec_"

	standardPaid     = "charge.paid"
	standardRefunded = "charge.refunded"
	standardFailed   = "charge.failed"
)

// standard verifies Standard Webhooks: base64(HMAC-SHA256(key,
// id + "." + timestamp + "." + body)) in any "v1," entry of webhook-signature.
type standard struct {
	keys [][]byte
}

func newStandard(cfg Config) (Scheme, error) {
	if err := requireSecrets(standardName, cfg); err != nil {
		return nil, err
	}
	s := &standard{}
	for i, secret := range cfg.Secrets {
		key, err := base64.StdEncoding.Strict().DecodeString(strings.TrimPrefix(secret, standardSecretPrefix))
		if err != nil {
			// The decoder's error names an offset, not content; still, say
			// nothing about the secret but its position.
			return nil, fmt.Errorf("%w: %s: secret %d is not whsec_<base64>", ErrConfig, standardName, i+1)
		}
		if len(key) == 0 {
			return nil, fmt.Errorf("%w: %s: secret %d decodes to an empty key", ErrConfig, standardName, i+1)
		}
		s.keys = append(s.keys, key)
	}
	return s, nil
}

// Name implements Scheme.
func (*standard) Name() string { return standardName }

// IsTest implements Scheme: Standard Webhooks have no registration test.
func (*standard) IsTest(Request) bool { return false }

// Authenticate implements Scheme. Any matching v1 entry authenticates;
// entries of other versions and malformed entries are skipped, as the spec
// lets a sender list several signatures during a key rotation.
func (s *standard) Authenticate(r Request) error {
	id, err := singleHeader(r.Header, standardIDHeader)
	if err != nil {
		return err
	}
	ts, err := singleHeader(r.Header, standardTimestampHeader)
	if err != nil {
		return err
	}
	if err := checkTimestamp(standardTimestampHeader, ts, r.Now); err != nil {
		return err
	}
	sigs := r.Header.Values(standardSignatureHeader)
	if len(sigs) == 0 {
		return unauthenticated("missing %s header", standardSignatureHeader)
	}
	macs := make([][]byte, len(s.keys))
	for i, key := range s.keys {
		macs[i] = macSHA256(key, []byte(id), []byte("."), []byte(ts), []byte("."), r.Body)
	}
	for _, header := range sigs {
		for _, entry := range strings.Split(header, " ") {
			if standardEntryMatches(entry, macs) {
				return nil
			}
		}
	}
	return unauthenticated("no v1 entry of %s matches a configured secret", standardSignatureHeader)
}

// standardEntryMatches reports whether one "v1,<base64>" entry holds one of
// the expected MACs.
func standardEntryMatches(entry string, macs [][]byte) bool {
	version, sigB64, ok := strings.Cut(entry, ",")
	if !ok || version != "v1" {
		return false
	}
	sig, err := decodeBase64MAC(sigB64)
	if err != nil || len(sig) == 0 {
		return false
	}
	for _, mac := range macs {
		if macEqual(sig, mac) {
			return true
		}
	}
	return false
}

// DeliveryID implements Scheme: webhook-id is the event's id and the inbox
// key. A missing or repeated header gives "".
func (*standard) DeliveryID(r Request) string {
	vs := r.Header.Values(standardIDHeader)
	if len(vs) != 1 {
		return ""
	}
	return vs[0]
}

// Parse implements Scheme for razao's own body:
//
//	{"type": "charge.paid" | "charge.refunded" | "charge.failed",
//	 "timestamp": RFC 3339,
//	 "data": {"charge_id", "amount" (centavos), "refund_id", "occurred_at"}}
//
// EventID is left empty: it is the webhook-id header (see ParseDelivery).
// charge.paid needs amount; charge.refunded needs refund_id and may omit
// amount (a divergence downstream). Other types are ignored, so a sender can
// add event types without razao answering 400.
func (*standard) Parse(body []byte) ([]Event, error) {
	env, err := decodeObject(body)
	if err != nil {
		return nil, err
	}
	typ, err := env.str("type")
	if err != nil {
		return nil, err
	}
	if _, ok, err := env.time("timestamp"); err != nil || !ok {
		return nil, orRequired(err, "timestamp")
	}
	ev := Event{Type: typ}
	switch typ {
	case standardPaid:
		ev.Kind = KindPaid
	case standardRefunded:
		ev.Kind = KindRefunded
	case standardFailed:
		ev.Kind = KindFailed
	default:
		ev.Kind = KindIgnored
		return []Event{ev}, nil
	}
	if err := standardFill(&ev, env); err != nil {
		return nil, err
	}
	return []Event{ev}, nil
}

// standardFill reads data into ev.
func standardFill(ev *Event, env object) error {
	data, err := env.object("data")
	if err != nil {
		return err
	}
	if ev.ChargeID, err = data.str("charge_id"); err != nil {
		return err
	}
	if ev.Amount, ev.HasAmount, err = data.centavos("amount", false); err != nil {
		return err
	}
	if ev.Kind == KindPaid && !ev.HasAmount {
		return malformed(data.field("amount"), "required for "+ev.Type)
	}
	if ev.Kind == KindRefunded {
		if ev.RefundID, err = data.str("refund_id"); err != nil {
			return err
		}
	}
	if ev.OccurredAt, _, err = data.time("occurred_at"); err != nil {
		return err
	}
	return nil
}
