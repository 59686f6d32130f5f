package scheme

import (
	"encoding/base64"
	"errors"
	"strings"
	"testing"
)

const (
	abacateVectorBody = `{"event":"checkout.completed","data":{"id":"chk-1"}}`
	abacateVectorSig  = "jEs8XqRrkqkhRez4JEC/Mvnyd5fglQhbTi9hvvs+Vp8="
)

func abacateSign(key, body string) string {
	return base64.StdEncoding.EncodeToString(hmacOf([]byte(key), []byte(body)))
}

func TestAbacatepayVectorMatchesPublishedSignature(t *testing.T) {
	t.Parallel()
	if len(DefaultAbacatepayPublicKey) != 256 {
		t.Fatalf("published key has %d characters, want 256", len(DefaultAbacatepayPublicKey))
	}
	if got := abacateSign(DefaultAbacatepayPublicKey, abacateVectorBody); got != abacateVectorSig {
		t.Fatalf("recipe gives %s, PSP-SCHEMES.md says %s", got, abacateVectorSig)
	}
	s := mustNew(t, "abacatepay", Config{Secrets: []string{abacateSecret}})
	r := Request{
		Header: headers(abacatepaySignatureHeader, abacateVectorSig),
		Query:  query("webhookSecret", abacateSecret),
		Body:   []byte(abacateVectorBody),
	}
	if err := authenticate(t, s, r); err != nil {
		t.Fatalf("published vector refused: %v", err)
	}
}

func TestAbacatepayAuthenticateNeedsBothFactors(t *testing.T) {
	t.Parallel()
	body := abacateVectorBody
	sig := abacateVectorSig
	tests := []struct {
		name    string
		secrets []string
		key     string
		header  []string // name/value pairs besides the signature
		sig     string
		query   []string
		body    string
		ok      bool
	}{
		{name: "query secret", query: []string{"webhookSecret", abacateSecret}, ok: true},
		{name: "header secret", header: []string{"X-Webhook-Secret", abacateSecret}, ok: true},
		{name: "header and query agree", header: []string{"X-Webhook-Secret", abacateSecret},
			query: []string{"webhookSecret", abacateSecret}, ok: true},
		{name: "missing URL secret with a valid signature"},
		{name: "wrong query secret", query: []string{"webhookSecret", abacateSecretPrev}},
		{name: "wrong header secret", header: []string{"X-Webhook-Secret", abacateSecretPrev}},
		{name: "secret with one character changed", query: []string{"webhookSecret", abacateSecret[:len(abacateSecret)-1] + "X"}},
		{name: "secret prefix only", query: []string{"webhookSecret", abacateSecret[:31]}},
		{name: "secret with a suffix", query: []string{"webhookSecret", abacateSecret + "x"}},
		{name: "empty query secret", query: []string{"webhookSecret", ""}},
		{name: "query right, header wrong", header: []string{"X-Webhook-Secret", "wrong"},
			query: []string{"webhookSecret", abacateSecret}},
		{name: "header right, query wrong", header: []string{"X-Webhook-Secret", abacateSecret},
			query: []string{"webhookSecret", "wrong"}},
		{name: "query and header hold different rotated secrets", secrets: []string{abacateSecret, abacateSecretPrev},
			header: []string{"X-Webhook-Secret", abacateSecretPrev}, query: []string{"webhookSecret", abacateSecret}},
		{name: "two query secrets", query: []string{"webhookSecret", abacateSecret, "webhookSecret", abacateSecret}},
		{name: "two header secrets", header: []string{"X-Webhook-Secret", abacateSecret, "X-Webhook-Secret", abacateSecret}},
		{name: "secret in the wrong query parameter", query: []string{"secret", abacateSecret}},
		{name: "previous secret during rotation", secrets: []string{abacateSecret, abacateSecretPrev},
			query: []string{"webhookSecret", abacateSecretPrev}, ok: true},
		{name: "missing signature", query: []string{"webhookSecret", abacateSecret}, sig: "-"},
		{name: "signature not base64", query: []string{"webhookSecret", abacateSecret}, sig: "not base64!"},
		{name: "signature without padding", query: []string{"webhookSecret", abacateSecret}, sig: strings.TrimRight(sig, "=")},
		{name: "signature in hex", query: []string{"webhookSecret", abacateSecret},
			sig: "8c4b3c5ea46b92a92145ecf82440bf32fc9e7797e095085b4e2f61befb3e569f"},
		{name: "signature with last character changed", query: []string{"webhookSecret", abacateSecret}, sig: sig[:42] + "9="},
		{name: "signature of 2 bytes", query: []string{"webhookSecret", abacateSecret}, sig: "jE=="},
		{name: "body with one added space", query: []string{"webhookSecret", abacateSecret},
			body: strings.Replace(body, `"data":`, `"data": `, 1)},
		{name: "signed with the URL secret instead of the public key", query: []string{"webhookSecret", abacateSecret},
			sig: abacateSign(abacateSecret, body)},
		{name: "custom public key", key: "custom-public-key", query: []string{"webhookSecret", abacateSecret},
			sig: abacateSign("custom-public-key", body), ok: true},
		{name: "default key refused when a custom one is configured", key: "custom-public-key",
			query: []string{"webhookSecret", abacateSecret}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			secrets := tt.secrets
			if secrets == nil {
				secrets = []string{abacateSecret}
			}
			b := body
			if tt.body != "" {
				b = tt.body
			}
			h := headers(tt.header...)
			switch tt.sig {
			case "":
				h.Set(abacatepaySignatureHeader, sig)
			case "-":
			default:
				h.Set(abacatepaySignatureHeader, tt.sig)
			}
			s := mustNew(t, "abacatepay", Config{Secrets: secrets, PublicKey: tt.key})
			err := authenticate(t, s, Request{Header: h, Query: query(tt.query...), Body: []byte(b)})
			if tt.ok && err != nil {
				t.Fatalf("refused: %v", err)
			}
			if !tt.ok && err == nil {
				t.Fatal("accepted")
			}
		})
	}
}

func TestAbacatepayNewRefusesShortSecrets(t *testing.T) {
	t.Parallel()
	for _, secrets := range [][]string{
		{"short-secret"},
		{abacateSecret, "short-previous-secret"},
		{strings.Repeat("x", 31)},
		{},
		nil,
	} {
		_, err := New("abacatepay", Config{Secrets: secrets})
		if !errors.Is(err, ErrConfig) {
			t.Fatalf("New(%d secrets) = %v, want ErrConfig", len(secrets), err)
		}
		for _, s := range secrets {
			if strings.Contains(err.Error(), s) {
				t.Fatalf("error %q holds a secret", err)
			}
		}
		checkNoLeak(t, err, Request{})
	}
}

const abacateCheckoutCompleted = `{
  "id": "log_abc123",
  "event": "checkout.completed",
  "apiVersion": 2,
  "devMode": false,
  "data": {
    "checkout": {
      "id": "bill_abc123xyz",
      "externalId": "pedido-123",
      "url": "https://app.abacatepay.com/pay/bill_abc123xyz",
      "amount": 10000,
      "paidAmount": 10000,
      "platformFee": 80,
      "frequency": "ONE_TIME",
      "items": [{ "id": "prod_xyz", "quantity": 1 }],
      "status": "PAID",
      "methods": ["PIX"],
      "customerId": "cust_abc123",
      "createdAt": "2024-12-06T18:56:15.538Z",
      "updatedAt": "2024-12-06T18:56:20.000Z"
    },
    "customer": {"id": "cust_abc123", "name": "João Silva"},
    "payerInformation": {"method": "PIX", "PIX": {"name": "João Silva", "isSameAsCustomer": true}}
  }
}`

func TestAbacatepayParseMapsEvents(t *testing.T) {
	t.Parallel()
	s := mustNew(t, "abacatepay", Config{Secrets: []string{abacateSecret}})
	tests := []parseCase{
		{"checkout.completed sample", abacateCheckoutCompleted, Event{Kind: KindPaid, Type: "checkout.completed",
			EventID: "log_abc123", ChargeID: "pedido-123", PSPRef: "bill_abc123xyz",
			Amount: 10000, HasAmount: true, Fee: 80, HasFee: true}},
		{"transparent.completed in dev mode", `{"id":"log_2","event":"transparent.completed","apiVersion":2,"devMode":true,
			"data":{"transparent":{"id":"char_xyz789","externalId":"pedido-456","amount":5000,"paidAmount":5000,"platformFee":50,"status":"PAID"}}}`,
			Event{Kind: KindPaid, Type: "transparent.completed", EventID: "log_2", ChargeID: "pedido-456", PSPRef: "char_xyz789",
				Amount: 5000, HasAmount: true, Fee: 50, HasFee: true, Extra: map[string]string{"devMode": "true"}}},
		{"paid without fee", `{"id":"log_3","event":"transparent.completed","data":{"transparent":{"id":"char_1","paidAmount":5000}}}`,
			Event{Kind: KindPaid, Type: "transparent.completed", EventID: "log_3", PSPRef: "char_1", Amount: 5000, HasAmount: true}},
		{"paid with zero fee", `{"id":"log_3","event":"checkout.completed","data":{"checkout":{"externalId":"o","paidAmount":5000,"platformFee":0}}}`,
			Event{Kind: KindPaid, Type: "checkout.completed", EventID: "log_3", ChargeID: "o", Amount: 5000, HasAmount: true, HasFee: true}},
		{"v1 billing.paid under data.billing", `{"id":"log_4","event":"billing.paid","devMode":false,
			"data":{"billing":{"id":"bill_1","externalId":"o-1","paidAmount":2990,"platformFee":80}}}`,
			Event{Kind: KindPaid, Type: "billing.paid", EventID: "log_4", ChargeID: "o-1", PSPRef: "bill_1",
				Amount: 2990, HasAmount: true, Fee: 80, HasFee: true}},
		{"v1 billing.paid with data as the billing", `{"id":"log_5","event":"billing.paid","data":{"id":"bill_2","paidAmount":100,"status":"PAID"}}`,
			Event{Kind: KindPaid, Type: "billing.paid", EventID: "log_5", PSPRef: "bill_2", Amount: 100, HasAmount: true}},
		{"checkout.refunded is a full refund", `{"id":"log_6","event":"checkout.refunded","apiVersion":2,
			"data":{"checkout":{"id":"bill_abc123xyz","externalId":"pedido-123","paidAmount":10000,"status":"REFUNDED"}}}`,
			Event{Kind: KindRefunded, Type: "checkout.refunded", EventID: "log_6", ChargeID: "pedido-123",
				PSPRef: "bill_abc123xyz", RefundID: "log_6", FullRefund: true}},
		{"transparent.refunded", `{"id":"log_7","event":"transparent.refunded","data":{"transparent":{"id":"char_1","externalId":"o"}}}`,
			Event{Kind: KindRefunded, Type: "transparent.refunded", EventID: "log_7", ChargeID: "o", PSPRef: "char_1",
				RefundID: "log_7", FullRefund: true}},
		{"checkout.refunded stating its amount is a refund of that amount", `{"id":"log_6b","event":"checkout.refunded",
			"data":{"checkout":{"id":"bill_1","externalId":"o","paidAmount":10000,"refundedAmount":2500}}}`,
			Event{Kind: KindRefunded, Type: "checkout.refunded", EventID: "log_6b", ChargeID: "o", PSPRef: "bill_1",
				RefundID: "log_6b", Amount: 2500, HasAmount: true}},
		{"refund of an undocumented resource", `{"id":"log_8","event":"pix_key.refunded","data":{"pixKey":{"id":"tran_1"}}}`,
			Event{Kind: KindRefunded, Type: "pix_key.refunded", EventID: "log_8"}},
		{"checkout.disputed", `{"id":"log_9","event":"checkout.disputed","data":{"checkout":{"id":"bill_1","externalId":"o"},"reason":"requested_by_customer"}}`,
			Event{Kind: KindDisputed, Type: "checkout.disputed", EventID: "log_9", ChargeID: "o", PSPRef: "bill_1",
				Extra: map[string]string{"reason": "requested_by_customer"}}},
		{"other events are ignored", `{"id":"log_10","event":"subscription.renewed","data":{"x":1}}`,
			Event{Kind: KindIgnored, Type: "subscription.renewed", EventID: "log_10"}},
		{"ignored without data", `{"id":"log_11","event":"payout.done"}`,
			Event{Kind: KindIgnored, Type: "payout.done", EventID: "log_11"}},
	}
	checkParses(t, s, tests)
}

func TestAbacatepayParseRefusesMalformedPayloads(t *testing.T) {
	t.Parallel()
	s := mustNew(t, "abacatepay", Config{Secrets: []string{abacateSecret}})
	paid := func(res string) string {
		return `{"id":"log_1","event":"checkout.completed","data":{"checkout":` + res + `}}`
	}
	tests := []struct {
		name, body, field string
	}{
		{"not an object", `[1]`, "body"},
		{"duplicate envelope id", `{"id":"log_1","id":"log_2","event":"payout.done"}`, "body"},
		{"duplicate paidAmount", paid(`{"id":"b","paidAmount":1,"paidAmount":100000}`), "body"},
		{"vector body has no id", abacateVectorBody, "id"},
		{"empty id", `{"id":"","event":"payout.done"}`, "id"},
		{"numeric id", `{"id":7,"event":"payout.done"}`, "id"},
		{"missing event", `{"id":"log_1"}`, "event"},
		{"paid without data", `{"id":"log_1","event":"checkout.completed"}`, "data"},
		{"paid without data.checkout", `{"id":"log_1","event":"checkout.completed","data":{}}`, "data.checkout"},
		{"transparent under the checkout key", `{"id":"log_1","event":"transparent.completed","data":{"checkout":{"id":"b","paidAmount":1}}}`, "data.transparent"},
		{"data.billing not an object", `{"id":"log_1","event":"billing.paid","data":{"billing":"bill_1"}}`, "data.billing"},
		{"no externalId nor id", paid(`{"paidAmount":100}`), "data.checkout.externalId"},
		{"empty externalId and id", paid(`{"id":"","externalId":"","paidAmount":100}`), "data.checkout.externalId"},
		{"numeric externalId", paid(`{"id":"b","externalId":123,"paidAmount":100}`), "data.checkout.externalId"},
		{"numeric resource id", paid(`{"id":5,"paidAmount":100}`), "data.checkout.id"},
		{"missing paidAmount", paid(`{"id":"b","amount":100}`), "data.checkout.paidAmount"},
		{"zero paidAmount", paid(`{"id":"b","paidAmount":0}`), "data.checkout.paidAmount"},
		{"negative paidAmount", paid(`{"id":"b","paidAmount":-100}`), "data.checkout.paidAmount"},
		{"fractional paidAmount", paid(`{"id":"b","paidAmount":100.5}`), "data.checkout.paidAmount"},
		{"paidAmount 100.0", paid(`{"id":"b","paidAmount":100.0}`), "data.checkout.paidAmount"},
		{"paidAmount with exponent", paid(`{"id":"b","paidAmount":1e4}`), "data.checkout.paidAmount"},
		{"paidAmount as string", paid(`{"id":"b","paidAmount":"100"}`), "data.checkout.paidAmount"},
		{"paidAmount overflow", paid(`{"id":"b","paidAmount":9223372036854775808}`), "data.checkout.paidAmount"},
		{"negative platformFee", paid(`{"id":"b","paidAmount":100,"platformFee":-1}`), "data.checkout.platformFee"},
		{"platformFee as string", paid(`{"id":"b","paidAmount":100,"platformFee":"80"}`), "data.checkout.platformFee"},
		{"platformFee above paidAmount", paid(`{"id":"b","paidAmount":100,"platformFee":101}`), "data.checkout.platformFee"},
		{"refund without resource", `{"id":"log_1","event":"checkout.refunded","data":{}}`, "data.checkout"},
		{"refund without ids", `{"id":"log_1","event":"transparent.refunded","data":{"transparent":{}}}`, "data.transparent.externalId"},
		{"dispute without data", `{"id":"log_1","event":"transparent.disputed"}`, "data"},
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

func TestAbacatepayDeliveryIDIsTheEnvelopeID(t *testing.T) {
	t.Parallel()
	s := mustNew(t, "abacatepay", Config{Secrets: []string{abacateSecret}})
	tests := []struct{ body, want string }{
		{abacateCheckoutCompleted, "log_abc123"},
		{`{"id":"log_x","event":"checkout.completed","data":"broken"}`, "log_x"},
		{`{"id":7}`, ""},
		{`{"id":"a","id":"b"}`, ""},
		{`not json`, ""},
		{abacateVectorBody, ""},
	}
	for _, tt := range tests {
		if got := s.DeliveryID(Request{Body: []byte(tt.body)}); got != tt.want {
			t.Errorf("DeliveryID(%s) = %q, want %q", tt.body, got, tt.want)
		}
	}
	if s.IsTest(Request{Body: []byte(`{"event":"WEBHOOK_TEST"}`)}) {
		t.Error("abacatepay has no test event")
	}
}
