package scheme

import (
	"encoding/base64"
	"errors"
	"strconv"
	"strings"
	"testing"
)

// The vectors published by the Standard Webhooks reference libraries.
var standardVectors = []struct {
	secret, id, ts, body, sig string
}{
	{standardSecret1, "msg_p5jXN8AQM9LWM0D4loKWxJek", "1614265330", `{"test": 2432232314}`,
		"v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="},
	{standardSecret2, "msg_27UH4WbU6Z5A5EzD8u03UvzRbpk", "1649367553", `{"email":"test@example.com","username":"test_user"}`,
		"v1,tZ1I4/hDygAJgO5TYxiSd6Sd0kDW6hPenDe+bTa3Kkw="},
}

func standardSign(secret, id, ts, body string) string {
	return "v1," + base64.StdEncoding.EncodeToString(hmacOf(standardKey(secret), []byte(id+"."+ts+"."+body)))
}

func standardRequest(id, ts, sig, body string, nowSec int64) Request {
	return Request{
		Header: headers("webhook-id", id, "webhook-timestamp", ts, "webhook-signature", sig),
		Body:   []byte(body),
		Now:    unix(nowSec),
	}
}

func TestStandardVectorsAuthenticate(t *testing.T) {
	t.Parallel()
	for _, v := range standardVectors {
		t.Run(v.id, func(t *testing.T) {
			t.Parallel()
			if got := standardSign(v.secret, v.id, v.ts, v.body); got != v.sig {
				t.Fatalf("recipe gives %s, PSP-SCHEMES.md says %s", got, v.sig)
			}
			now, _ := strconv.ParseInt(v.ts, 10, 64)
			for _, secret := range []string{v.secret, strings.TrimPrefix(v.secret, "whsec_")} {
				s := mustNew(t, "standard", Config{Secrets: []string{secret}})
				if err := authenticate(t, s, standardRequest(v.id, v.ts, v.sig, v.body, now)); err != nil {
					t.Fatalf("vector refused (secret prefix %v): %v", strings.HasPrefix(secret, "whsec_"), err)
				}
			}
		})
	}
}

func TestStandardAuthenticate(t *testing.T) {
	t.Parallel()
	v := standardVectors[0]
	const now = 1614265330
	lastChanged := v.sig[:len(v.sig)-2] + "0="
	signedAt := func(sec int64) Request {
		ts := strconv.FormatInt(sec, 10)
		return standardRequest(v.id, ts, standardSign(v.secret, v.id, ts, v.body), v.body, now)
	}
	tests := []struct {
		name    string
		secrets []string
		req     Request
		ok      bool
	}{
		{"vector", nil, standardRequest(v.id, v.ts, v.sig, v.body, now), true},
		{"v1, alone", nil, standardRequest(v.id, v.ts, "v1,", v.body, now), false},
		{"v2 entry alone", nil, standardRequest(v.id, v.ts, "v2,"+v.sig[3:], v.body, now), false},
		{"v1a entry alone", nil, standardRequest(v.id, v.ts, "v1a,"+v.sig[3:], v.body, now), false},
		{"last character changed", nil, standardRequest(v.id, v.ts, lastChanged, v.body, now), false},
		{"no version", nil, standardRequest(v.id, v.ts, v.sig[3:], v.body, now), false},
		{"bad entries around a valid one", nil, standardRequest(v.id, v.ts,
			"v1, v2,"+v.sig[3:]+" v1,!!! "+lastChanged+" "+v.sig+" v1a,zzz garbage", v.body, now), true},
		{"valid entry in a second header", nil, Request{Header: headers("webhook-id", v.id, "webhook-timestamp", v.ts,
			"webhook-signature", lastChanged, "webhook-signature", v.sig), Body: []byte(v.body), Now: unix(now)}, true},
		{"unpadded signature", nil, standardRequest(v.id, v.ts, strings.TrimRight(v.sig, "="), v.body, now), false},
		{"body changed", nil, standardRequest(v.id, v.ts, v.sig, `{"test": 2432232315}`, now), false},
		{"body with one added space", nil, standardRequest(v.id, v.ts, v.sig, `{"test":  2432232314}`, now), false},
		{"id changed", nil, standardRequest(v.id+"x", v.ts, v.sig, v.body, now), false},
		{"other vector's secret", []string{standardSecret2}, standardRequest(v.id, v.ts, v.sig, v.body, now), false},
		{"previous secret during rotation", []string{standardSecret2, standardSecret1}, standardRequest(v.id, v.ts, v.sig, v.body, now), true},
		{"timestamp 301 s old", nil, signedAt(now - 301), false},
		{"timestamp 301 s ahead", nil, signedAt(now + 301), false},
		{"timestamp 300 s old", nil, signedAt(now - 300), true},
		{"timestamp 300 s ahead", nil, signedAt(now + 300), true},
		{"vector replayed 301 s later", nil, standardRequest(v.id, v.ts, v.sig, v.body, now+301), false},
		{"non-numeric timestamp", nil, standardRequest(v.id, "1614265330a", standardSign(v.secret, v.id, "1614265330a", v.body), v.body, now), false},
		{"signed negative timestamp", nil, standardRequest(v.id, "-1", standardSign(v.secret, v.id, "-1", v.body), v.body, now), false},
		{"missing webhook-id", nil, Request{Header: headers("webhook-timestamp", v.ts, "webhook-signature", v.sig),
			Body: []byte(v.body), Now: unix(now)}, false},
		{"missing webhook-timestamp", nil, Request{Header: headers("webhook-id", v.id, "webhook-signature", v.sig),
			Body: []byte(v.body), Now: unix(now)}, false},
		{"missing webhook-signature", nil, Request{Header: headers("webhook-id", v.id, "webhook-timestamp", v.ts),
			Body: []byte(v.body), Now: unix(now)}, false},
		{"two webhook-id headers", nil, Request{Header: headers("webhook-id", v.id, "webhook-id", "msg_other",
			"webhook-timestamp", v.ts, "webhook-signature", v.sig), Body: []byte(v.body), Now: unix(now)}, false},
		{"empty signature header", nil, standardRequest(v.id, v.ts, "", v.body, now), false},
		{"zero clock", nil, Request{Header: headers("webhook-id", v.id, "webhook-timestamp", v.ts, "webhook-signature", v.sig),
			Body: []byte(v.body)}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			secrets := tt.secrets
			if secrets == nil {
				secrets = []string{v.secret}
			}
			s := mustNew(t, "standard", Config{Secrets: secrets})
			err := authenticate(t, s, tt.req)
			if tt.ok && err != nil {
				t.Fatalf("refused: %v", err)
			}
			if !tt.ok && err == nil {
				t.Fatal("accepted")
			}
		})
	}
}

func TestStandardNewRefusesBadSecrets(t *testing.T) {
	t.Parallel()
	for _, secret := range []string{
		"whsec_", "whsec_!!!not-base64!!!", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaS", // 31 chars: bad length
		"not base64 at all", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw====", "",
	} {
		_, err := New("standard", Config{Secrets: []string{standardSecret1, secret}})
		if !errors.Is(err, ErrConfig) {
			t.Fatalf("New with secret %q = %v, want ErrConfig", secret, err)
		}
		if bare := strings.TrimPrefix(secret, "whsec_"); bare != "" && strings.Contains(err.Error(), bare) {
			t.Fatalf("error %q holds the secret", err)
		}
		checkNoLeak(t, err, Request{})
	}
}

func TestStandardParseMapsEvents(t *testing.T) {
	t.Parallel()
	s := mustNew(t, "standard", Config{Secrets: []string{standardSecret1}})
	tests := []parseCase{
		{"charge.paid", `{"type":"charge.paid","timestamp":"2026-08-31T22:30:05-03:00",
			"data":{"charge_id":"ch_1","amount":4990,"occurred_at":"2026-08-31T22:30:00-03:00"}}`,
			Event{Kind: KindPaid, Type: "charge.paid", ChargeID: "ch_1", Amount: 4990, HasAmount: true,
				OccurredAt: mustTime(t, "2026-08-31T22:30:00-03:00")}},
		{"charge.paid without occurred_at", `{"type":"charge.paid","timestamp":"2026-08-31T22:30:05Z","data":{"charge_id":"ch_1","amount":1}}`,
			Event{Kind: KindPaid, Type: "charge.paid", ChargeID: "ch_1", Amount: 1, HasAmount: true}},
		{"charge.refunded", `{"type":"charge.refunded","timestamp":"2026-09-01T10:00:00Z",
			"data":{"charge_id":"ch_1","amount":1000,"refund_id":"rf_1","occurred_at":"2026-09-01T09:59:59.5Z"}}`,
			Event{Kind: KindRefunded, Type: "charge.refunded", ChargeID: "ch_1", RefundID: "rf_1", Amount: 1000, HasAmount: true,
				OccurredAt: mustTime(t, "2026-09-01T09:59:59.5Z")}},
		{"charge.refunded without amount", `{"type":"charge.refunded","timestamp":"2026-09-01T10:00:00Z","data":{"charge_id":"ch_1","refund_id":"rf_2"}}`,
			Event{Kind: KindRefunded, Type: "charge.refunded", ChargeID: "ch_1", RefundID: "rf_2"}},
		{"charge.failed", `{"type":"charge.failed","timestamp":"2026-09-01T10:00:00Z","data":{"charge_id":"ch_1"}}`,
			Event{Kind: KindFailed, Type: "charge.failed", ChargeID: "ch_1"}},
		{"other types are ignored", `{"type":"charge.created","timestamp":"2026-09-01T10:00:00Z","data":{}}`,
			Event{Kind: KindIgnored, Type: "charge.created"}},
	}
	checkParses(t, s, tests)
}

func TestStandardParseRefusesMalformedPayloads(t *testing.T) {
	t.Parallel()
	s := mustNew(t, "standard", Config{Secrets: []string{standardSecret1}})
	body := func(typ, data string) string {
		return `{"type":"` + typ + `","timestamp":"2026-09-01T10:00:00Z","data":` + data + `}`
	}
	tests := []struct {
		name, body, field string
	}{
		{"not an object", `"charge.paid"`, "body"},
		{"duplicate type", `{"type":"charge.failed","type":"charge.paid","timestamp":"2026-09-01T10:00:00Z","data":{"charge_id":"c","amount":1}}`, "body"},
		{"missing type", `{"timestamp":"2026-09-01T10:00:00Z","data":{}}`, "type"},
		{"empty type", `{"type":"","timestamp":"2026-09-01T10:00:00Z"}`, "type"},
		{"missing timestamp", `{"type":"charge.paid","data":{"charge_id":"c","amount":1}}`, "timestamp"},
		{"numeric timestamp", `{"type":"charge.paid","timestamp":1614265330,"data":{"charge_id":"c","amount":1}}`, "timestamp"},
		{"timestamp not RFC 3339", `{"type":"charge.paid","timestamp":"2026-09-01 10:00:00","data":{"charge_id":"c","amount":1}}`, "timestamp"},
		{"missing data", `{"type":"charge.paid","timestamp":"2026-09-01T10:00:00Z"}`, "data"},
		{"data not an object", body("charge.paid", `[]`), "data"},
		{"missing charge_id", body("charge.paid", `{"amount":1}`), "data.charge_id"},
		{"empty charge_id", body("charge.failed", `{"charge_id":""}`), "data.charge_id"},
		{"numeric charge_id", body("charge.paid", `{"charge_id":1,"amount":1}`), "data.charge_id"},
		{"paid without amount", body("charge.paid", `{"charge_id":"c"}`), "data.amount"},
		{"paid with zero amount", body("charge.paid", `{"charge_id":"c","amount":0}`), "data.amount"},
		{"paid with negative amount", body("charge.paid", `{"charge_id":"c","amount":-1}`), "data.amount"},
		{"paid with decimal amount", body("charge.paid", `{"charge_id":"c","amount":49.90}`), "data.amount"},
		{"paid with string amount", body("charge.paid", `{"charge_id":"c","amount":"4990"}`), "data.amount"},
		{"paid with -0 amount", body("charge.paid", `{"charge_id":"c","amount":-0}`), "data.amount"},
		{"refund without refund_id", body("charge.refunded", `{"charge_id":"c","amount":1}`), "data.refund_id"},
		{"refund with empty refund_id", body("charge.refunded", `{"charge_id":"c","refund_id":""}`), "data.refund_id"},
		{"refund with bad amount", body("charge.refunded", `{"charge_id":"c","refund_id":"r","amount":1.5}`), "data.amount"},
		{"bad occurred_at", body("charge.paid", `{"charge_id":"c","amount":1,"occurred_at":"yesterday"}`), "data.occurred_at"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			events, err := parse(t, s, tt.body)
			if err == nil {
				t.Fatalf("Parse accepted %s as %+v", tt.body, events)
			}
			wantMalformedField(t, err, tt.field)
		})
	}
}

func TestStandardParseDeliveryTakesEventIDFromWebhookID(t *testing.T) {
	t.Parallel()
	s := mustNew(t, "standard", Config{Secrets: []string{standardSecret1}})
	body := `{"type":"charge.paid","timestamp":"2026-09-01T10:00:00Z","data":{"charge_id":"c","amount":1}}`
	r := standardRequest("msg_abc", "1", "v1,x", body, 1)
	if got := s.DeliveryID(r); got != "msg_abc" {
		t.Fatalf("DeliveryID = %q", got)
	}
	events, err := ParseDelivery(s, r)
	if err != nil {
		t.Fatal(err)
	}
	if len(events) != 1 || events[0].EventID != "msg_abc" {
		t.Fatalf("ParseDelivery = %+v, want EventID msg_abc", events)
	}
	if _, err := ParseDelivery(s, Request{Body: []byte(`{}`)}); !errors.Is(err, ErrMalformed) {
		t.Fatalf("ParseDelivery of a bad body = %v, want ErrMalformed", err)
	}
	if got := s.DeliveryID(Request{Header: headers("webhook-id", "a", "webhook-id", "b")}); got != "" {
		t.Fatalf("DeliveryID with two ids = %q, want empty", got)
	}
}
