package main

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// delivery is one signed webhook request.
type delivery struct {
	path   string
	body   []byte
	header http.Header
}

// scheme builds signed deliveries as a PSP would, the way razao's demo
// command does.
type scheme interface {
	name() string
	// paid is a confirmation of chargeID for amount centavos; id is the
	// PSP's stable event id (the inbox key).
	paid(id, chargeID string, amount int64, now time.Time) delivery
	// refund is one partial refund refundID of amount centavos.
	refund(id, chargeID, refundID string, amount int64, now time.Time) delivery
}

func newScheme(name string, getenv func(string) string) (scheme, error) {
	switch name {
	case "standard":
		secret := getenv("RAZAO_DEV_STANDARD_SECRET")
		if secret == "" {
			return nil, fmt.Errorf("set RAZAO_DEV_STANDARD_SECRET (source the file that scripts/dev-secrets.sh prints)")
		}
		key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
		if err != nil || len(key) == 0 {
			return nil, fmt.Errorf("RAZAO_DEV_STANDARD_SECRET is not whsec_<base64>")
		}
		return standardScheme{key: key}, nil
	case "hodle":
		secret := getenv("RAZAO_DEV_HODLE_SECRET")
		if secret == "" {
			return nil, fmt.Errorf("set RAZAO_DEV_HODLE_SECRET (source the file that scripts/dev-secrets.sh prints)")
		}
		return hodleScheme{secret: []byte(secret)}, nil
	}
	return nil, fmt.Errorf("unknown scheme %q", name)
}

// standardScheme signs Standard Webhooks for razao's /webhooks/psp:
// webhook-signature = "v1," + base64(HMAC-SHA256(key, id.ts.body)).
type standardScheme struct{ key []byte }

func (standardScheme) name() string { return "standard" }

type standardData struct {
	ChargeID   string `json:"charge_id"`
	Amount     int64  `json:"amount"`
	RefundID   string `json:"refund_id,omitempty"`
	OccurredAt string `json:"occurred_at"`
}

func (s standardScheme) event(id, typ string, data standardData, now time.Time) delivery {
	ts := now.UTC().Format(time.RFC3339)
	data.OccurredAt = ts
	body, _ := json.Marshal(struct {
		Type      string       `json:"type"`
		Timestamp string       `json:"timestamp"`
		Data      standardData `json:"data"`
	}{typ, ts, data})
	unix := strconv.FormatInt(now.Unix(), 10)
	return delivery{path: "/webhooks/psp", body: body, header: http.Header{
		"Content-Type":      {"application/json"},
		"Webhook-Id":        {id},
		"Webhook-Timestamp": {unix},
		"Webhook-Signature": {standardSignature(s.key, id, unix, body)},
	}}
}

func standardSignature(key []byte, id, ts string, body []byte) string {
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id + "." + ts + "."))
	mac.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

func (s standardScheme) paid(id, chargeID string, amount int64, now time.Time) delivery {
	return s.event(id, "charge.paid", standardData{ChargeID: chargeID, Amount: amount}, now)
}

func (s standardScheme) refund(id, chargeID, refundID string, amount int64, now time.Time) delivery {
	return s.event(id, "charge.refunded", standardData{ChargeID: chargeID, Amount: amount, RefundID: refundID}, now)
}

// hodleScheme signs Hodle deliveries for /webhooks/hodle:
// X-Hodle-Signature = hex(HMAC-SHA256(secret, ts.body)). Hodle keys a
// payment by data.trackId (the id given) and a refund by data.eventId (the
// refund id).
type hodleScheme struct{ secret []byte }

func (hodleScheme) name() string { return "hodle" }

func (h hodleScheme) sign(body []byte, now time.Time) delivery {
	ts := strconv.FormatInt(now.Unix(), 10)
	return delivery{path: "/webhooks/hodle", body: body, header: http.Header{
		"Content-Type":      {"application/json"},
		"X-Hodle-Timestamp": {ts},
		"X-Hodle-Signature": {hodleSignature(h.secret, ts, body)},
	}}
}

func hodleSignature(secret []byte, ts string, body []byte) string {
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte(ts + "."))
	mac.Write(body)
	return hex.EncodeToString(mac.Sum(nil))
}

func (h hodleScheme) paid(id, chargeID string, amount int64, now time.Time) delivery {
	body := fmt.Sprintf(`{"event":"DEPOSIT_ASSET_SUCCESS","data":{"trackId":%q,"externalId":%q,"valueInBrl":%q}}`,
		id, chargeID, reais(amount))
	return h.sign([]byte(body), now)
}

// refund keys the refund by refundID, which Hodle calls eventId and razao
// books as the refund id; id is unused.
func (h hodleScheme) refund(_, chargeID, refundID string, amount int64, now time.Time) delivery {
	body := fmt.Sprintf(`{"event":"DEPOSIT_ASSET_REFUNDED","data":{"eventId":%q,"externalId":%q,"valueInBrl":%q}}`,
		refundID, chargeID, reais(amount))
	return h.sign([]byte(body), now)
}

// reais formats centavos as Hodle's decimal string: 4990 -> "49.90".
func reais(centavos int64) string {
	return fmt.Sprintf("%d.%02d", centavos/100, centavos%100)
}
