package psp

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/razao/razao/webhook/scheme"
)

// The published vectors of PSP-SCHEMES.md, signed by Sign.
func TestSignMatchesThePublishedVectors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		ep           Endpoint
		body, id     string
		now          int64
		header, want string
	}{
		{Endpoint{Name: "h", Scheme: "hodle", Secret: "example-secret-for-local-tests-only"},
			`{"event":"DEPOSIT_ASSET_FAILED","data":{"eventId":"event-1","externalId":"order-1"}}`, "", 1790035200,
			"X-Hodle-Signature", "b10d8351f2430ba0a339249eb20aaf237da1f47a5b213e9d680035b0fb7bf050"},
		{Endpoint{Name: "s", Scheme: "standard", Secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"},
			`{"test": 2432232314}`, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330,
			"webhook-signature", "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="},
		{Endpoint{Name: "s", Scheme: "standard", Secret: "whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD"},
			`{"email":"test@example.com","username":"test_user"}`, "msg_27UH4WbU6Z5A5EzD8u03UvzRbpk", 1649367553,
			"webhook-signature", "v1,tZ1I4/hDygAJgO5TYxiSd6Sd0kDW6hPenDe+bTa3Kkw="},
		{Endpoint{Name: "a", Scheme: "abacatepay", Secret: strings.Repeat("s", 32)},
			`{"event":"checkout.completed","data":{"id":"chk-1"}}`, "", 0,
			"X-Webhook-Signature", "jEs8XqRrkqkhRez4JEC/Mvnyd5fglQhbTi9hvvs+Vp8="},
	}
	for _, tc := range tests {
		d, err := Sign(tc.ep, []byte(tc.body), tc.id, time.Unix(tc.now, 0))
		if err != nil {
			t.Fatal(err)
		}
		if got := d.Header.Get(tc.header); got != tc.want {
			t.Errorf("%s: %s = %s, want %s", tc.ep.Scheme, tc.header, got, tc.want)
		}
	}
}

// Every delivery Build writes is authentic to razao's verifier and parses
// to the event it describes.
func TestBuildIsAuthenticAndParsesBack(t *testing.T) {
	t.Parallel()
	secrets := map[string]string{"hodle": "example-secret-for-local-tests-only", "standard": "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
		"abacatepay": "url-secret-0123456789abcdefghijklmnop", "bcb-pix": "bcb-url-secret-0123456789abcdefghijk"}
	now := time.Date(2026, 8, 31, 22, 30, 0, 0, time.UTC)
	tests := []struct {
		scheme string
		ev     Event
		kind   scheme.Kind
		amount int64
	}{
		{"hodle", Event{Action: Paid, ChargeID: "order-1", Amount: 4990}, scheme.KindPaid, 4990},
		{"hodle", Event{Action: Refunded, ChargeID: "order-1", Amount: 1000, RefundID: "rf-1"}, scheme.KindRefunded, 1000},
		{"hodle", Event{Action: Failed, ChargeID: "order-1"}, scheme.KindFailed, 0},
		{"standard", Event{Action: Paid, ChargeID: "order-1", Amount: 4990}, scheme.KindPaid, 4990},
		{"standard", Event{Action: Refunded, ChargeID: "order-1", Amount: 1000, RefundID: "rf-1"}, scheme.KindRefunded, 1000},
		{"standard", Event{Action: Failed, ChargeID: "order-1"}, scheme.KindFailed, 0},
		{"abacatepay", Event{Action: Paid, ChargeID: "order-1", Amount: 4990, Fee: 80}, scheme.KindPaid, 4990},
		{"abacatepay", Event{Action: Refunded, ChargeID: "order-1"}, scheme.KindRefunded, 0},
		{"bcb-pix", Event{Action: Paid, ChargeID: "order1", Amount: 4990}, scheme.KindPaid, 4990},
		{"bcb-pix", Event{Action: Refunded, ChargeID: "order1", Amount: 1000, RefundID: "D1", PaidAmount: 4990}, scheme.KindRefunded, 1000},
	}
	for _, tc := range tests {
		t.Run(tc.scheme+"/"+string(tc.ev.Action), func(t *testing.T) {
			ep := Endpoint{Name: "ep", Scheme: tc.scheme, Secret: secrets[tc.scheme]}
			d, err := Build(ep, tc.ev, now)
			if err != nil {
				t.Fatal(err)
			}
			s, err := scheme.New(tc.scheme, scheme.Config{Secrets: []string{ep.Secret}})
			if err != nil {
				t.Fatal(err)
			}
			req := scheme.Request{Header: d.Header, Query: d.Query, Body: d.Body, Now: now}
			if err := s.Authenticate(req); err != nil {
				t.Fatalf("not authentic: %v\n%s", err, d.Body)
			}
			evs, err := scheme.ParseDelivery(s, req)
			if err != nil {
				t.Fatalf("parse: %v\n%s", err, d.Body)
			}
			last := evs[len(evs)-1] // bcb-pix: the devolução follows its Pix
			if last.Kind != tc.kind || last.Amount != tc.amount || last.ChargeID != tc.ev.ChargeID || last.EventID == "" {
				t.Fatalf("parsed %+v from %s", last, d.Body)
			}
			// The same event built again is the same delivery: a redelivery.
			again, _ := Build(ep, tc.ev, now)
			if again.ID != d.ID || string(again.Body) != string(d.Body) {
				t.Fatalf("ids are not stable: %s / %s", d.ID, again.ID)
			}
			if strings.Contains(d.Redacted(), ep.Secret) {
				t.Fatalf("Redacted shows the secret: %s", d.Redacted())
			}
		})
	}
}

func TestBuildRefusesWhatTheSchemeCannotSay(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		ep   Endpoint
		ev   Event
		want string
	}{
		{Endpoint{Scheme: "abacatepay", Secret: strings.Repeat("s", 32)}, Event{Action: Failed, ChargeID: "c"}, "no failed event"},
		{Endpoint{Scheme: "bcb-pix", Secret: strings.Repeat("s", 32)}, Event{Action: Paid, ChargeID: "order-1", Amount: 1}, "txid"},
		{Endpoint{Scheme: "hodle", Secret: "x"}, Event{Action: Refunded, ChargeID: "c", Amount: 1}, "refund id"},
		{Endpoint{Scheme: "hodle", Secret: "x"}, Event{Action: Paid, ChargeID: "c"}, "amount"},
		{Endpoint{Name: "h", Scheme: "hodle"}, Event{Action: Paid, ChargeID: "c", Amount: 1}, "no secret yet"},
	} {
		if _, err := Build(tc.ep, tc.ev, time.Now()); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s %s: %v, want %q", tc.ep.Scheme, tc.ev.Action, err, tc.want)
		}
	}
	// Hodle's test needs no secret and carries no signature.
	d, err := Build(Endpoint{Name: "h", Scheme: "hodle"}, Event{Action: Test}, time.Now())
	if err != nil || d.Header.Get("X-Hodle-Signature") != "" {
		t.Fatalf("test: %v %v", err, d.Header)
	}
}

// docs/psp-schemes.md shows real deliveries: each example there is what
// Build writes and signs for the same inputs.
func TestTheSchemesPageShowsWhatBuildSends(t *testing.T) {
	t.Parallel()
	page, err := os.ReadFile("../../docs/psp-schemes.md")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1788226200, 0)
	for _, tc := range []struct {
		ep     Endpoint
		charge string
		refund string
	}{
		{Endpoint{Name: "hodle", Scheme: "hodle", Secret: "example-secret-for-local-tests-only"}, "order-1", "rf-1"},
		{Endpoint{Name: "psp", Scheme: "standard", Secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}, "order-1", "rf-1"},
		{Endpoint{Name: "abacatepay", Scheme: "abacatepay", Secret: "url-secret-0123456789abcdefghijklmnop"}, "order-1", ""},
		{Endpoint{Name: "pix", Scheme: "bcb-pix", Secret: "bcb-url-secret-0123456789abcdefghijk"}, "order1", "D1"},
	} {
		paid, err := Build(tc.ep, Event{Action: Paid, ChargeID: tc.charge, Amount: 4990}, now)
		if err != nil {
			t.Fatal(err)
		}
		want := []string{string(paid.Body), "POST " + paid.Path}
		for _, h := range []string{"X-Hodle-Signature", "Webhook-Signature", "X-Webhook-Signature"} {
			if v := paid.Header.Get(h); v != "" {
				want = append(want, h+": "+v)
			}
		}
		if tc.refund != "" {
			refund, err := Build(tc.ep, Event{Action: Refunded, ChargeID: tc.charge, Amount: 1000, RefundID: tc.refund, PaidAmount: 4990}, now)
			if err != nil {
				t.Fatal(err)
			}
			want = append(want, string(refund.Body))
		}
		for _, w := range want {
			if !strings.Contains(string(page), w) {
				t.Errorf("docs/psp-schemes.md lacks, for %s:\n%s", tc.ep.Scheme, w)
			}
		}
	}
}

// TestBcbPixDeliveriesGoToThePixSuffix: the BCB Pix API posts to the
// registered URL with /pix appended, so a bcb-pix delivery goes to
// /webhooks/{name}/pix (the URL secret in ?hmac=); the other schemes post
// to the URL itself.
func TestBcbPixDeliveriesGoToThePixSuffix(t *testing.T) {
	t.Parallel()
	now := time.Unix(1788226200, 0)
	for _, tc := range []struct {
		ep   Endpoint
		want string
	}{
		{Endpoint{Name: "pix", Scheme: "bcb-pix", Secret: "bcb-url-secret-0123456789abcdefghijk"}, "/webhooks/pix/pix"},
		{Endpoint{Name: "hodle", Scheme: "hodle", Secret: "example-secret-for-local-tests-only"}, "/webhooks/hodle"},
	} {
		for _, ev := range []Event{
			{Action: Paid, ChargeID: "order1", Amount: 4990},
			{Action: Refunded, ChargeID: "order1", Amount: 1000, RefundID: "D1", PaidAmount: 4990},
		} {
			d, err := Build(tc.ep, ev, now)
			if err != nil {
				t.Fatal(err)
			}
			if d.Path != tc.want {
				t.Errorf("%s %s: path %s, want %s", tc.ep.Scheme, ev.Action, d.Path, tc.want)
			}
		}
	}
}
