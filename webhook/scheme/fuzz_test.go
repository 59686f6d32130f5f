package scheme

import (
	"bytes"
	"encoding/hex"
	"errors"
	"strconv"
	"testing"
)

// FuzzHodleAuthenticate checks that Authenticate never panics, never accepts
// the vector's signature for any other body, always accepts a body the test
// signs itself, and accepts arbitrary headers only when they are a correct
// signature inside the window.
func FuzzHodleAuthenticate(f *testing.F) {
	f.Add([]byte(hodleVectorBody), hodleVectorTS, hodleVectorSig)
	f.Add([]byte(hodleVectorBody+" "), hodleVectorTS, hodleVectorSig)
	f.Add([]byte(`{"event":"WEBHOOK_TEST"}`), "1790035201", "00")
	f.Add([]byte{}, "", "")
	f.Add([]byte("\x00\xff"), "-1", hodleVectorSig+"00")
	const now = 1790035200
	s, err := New("hodle", Config{Secrets: []string{hodleSecret, hodleSecretPrev}})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, body []byte, ts, sig string) {
		// Arbitrary headers: accepted only if they really are a signature.
		err := s.Authenticate(hodleRequest(ts, sig, string(body), now))
		if err == nil {
			sec, perr := strconv.ParseInt(ts, 10, 64)
			mac, herr := hex.DecodeString(sig)
			valid := perr == nil && isDigits(ts) && sec >= now-300 && sec <= now+300 && herr == nil &&
				(bytes.Equal(mac, hmacOf([]byte(hodleSecret), []byte(ts+"."), body)) ||
					bytes.Equal(mac, hmacOf([]byte(hodleSecretPrev), []byte(ts+"."), body)))
			if !valid {
				t.Fatalf("accepted ts=%q sig=%q", ts, sig)
			}
		} else if !errors.Is(err, ErrUnauthenticated) {
			t.Fatalf("error %v does not wrap ErrUnauthenticated", err)
		}
		// The vector's signature over a mutated body.
		err = s.Authenticate(hodleRequest(hodleVectorTS, hodleVectorSig, string(body), now))
		if (err == nil) != bytes.Equal(body, []byte(hodleVectorBody)) {
			t.Fatalf("vector signature over %q: %v", body, err)
		}
		// A body we sign ourselves is always accepted.
		if err := s.Authenticate(hodleRequest(hodleVectorTS, hodleSign(hodleSecretPrev, hodleVectorTS, string(body)), string(body), now)); err != nil {
			t.Fatalf("own signature refused: %v", err)
		}
	})
}

// FuzzStandardAuthenticate: as FuzzHodleAuthenticate, for Standard Webhooks;
// the fuzzed id and signature header exercise the entry parser.
func FuzzStandardAuthenticate(f *testing.F) {
	v := standardVectors[0]
	f.Add([]byte(v.body), v.id, v.sig)
	f.Add([]byte(v.body), v.id, "v1, v2,"+v.sig[3:]+" "+v.sig)
	f.Add([]byte(v.body+"x"), v.id, v.sig)
	f.Add([]byte{}, "", "v1,")
	f.Add([]byte(`{}`), "msg", "v1,,,, v1 v1,====")
	now, _ := strconv.ParseInt(v.ts, 10, 64)
	s, err := New("standard", Config{Secrets: []string{v.secret}})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, body []byte, id, sigHeader string) {
		err := s.Authenticate(standardRequest(id, v.ts, sigHeader, string(body), now))
		if err != nil && !errors.Is(err, ErrUnauthenticated) {
			t.Fatalf("error %v does not wrap ErrUnauthenticated", err)
		}
		if err == nil && !bytes.Contains([]byte(sigHeader), []byte(standardSign(v.secret, id, v.ts, string(body)))) {
			t.Fatalf("accepted id=%q sig=%q without the right v1 entry", id, sigHeader)
		}
		err = s.Authenticate(standardRequest(v.id, v.ts, v.sig, string(body), now))
		if (err == nil) != bytes.Equal(body, []byte(v.body)) {
			t.Fatalf("vector signature over %q: %v", body, err)
		}
		if id != "" {
			own := standardSign(v.secret, id, v.ts, string(body))
			if err := s.Authenticate(standardRequest(id, v.ts, "v2,x "+own, string(body), now)); err != nil {
				t.Fatalf("own signature refused: %v", err)
			}
		}
	})
}

// FuzzAbacatepayAuthenticate: neither factor alone ever suffices, and the
// vector's signature holds for the vector's body only.
func FuzzAbacatepayAuthenticate(f *testing.F) {
	f.Add([]byte(abacateVectorBody), abacateSecret, abacateVectorSig)
	f.Add([]byte(abacateVectorBody+" "), abacateSecret, abacateVectorSig)
	f.Add([]byte(abacateVectorBody), "", abacateVectorSig)
	f.Add([]byte{}, abacateSecret[:31], "")
	s, err := New("abacatepay", Config{Secrets: []string{abacateSecret}})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, body []byte, secret, sig string) {
		r := Request{
			Header: headers(abacatepaySignatureHeader, sig),
			Query:  query("webhookSecret", secret),
			Body:   body,
		}
		err := s.Authenticate(r)
		if err != nil && !errors.Is(err, ErrUnauthenticated) {
			t.Fatalf("error %v does not wrap ErrUnauthenticated", err)
		}
		if err == nil && (secret != abacateSecret || sig != abacateSign(DefaultAbacatepayPublicKey, string(body))) {
			t.Fatalf("accepted secret=%q sig=%q", secret, sig)
		}
		good := abacateSign(DefaultAbacatepayPublicKey, string(body))
		// The signature alone never suffices.
		if s.Authenticate(Request{Header: headers(abacatepaySignatureHeader, good), Body: body}) == nil {
			t.Fatal("accepted without the URL secret")
		}
		// The vector's signature over a mutated body.
		err = s.Authenticate(Request{Header: headers(abacatepaySignatureHeader, abacateVectorSig),
			Query: query("webhookSecret", abacateSecret), Body: body})
		if (err == nil) != bytes.Equal(body, []byte(abacateVectorBody)) {
			t.Fatalf("vector signature over %q: %v", body, err)
		}
	})
}

// checkParse asserts the invariants every Parse result keeps.
func checkParse(t *testing.T, s Scheme, body []byte) {
	t.Helper()
	events, err := s.Parse(body)
	_ = s.IsTest(Request{Body: body})
	_ = s.DeliveryID(Request{Body: body})
	if err != nil {
		var me *MalformedError
		if !errors.Is(err, ErrMalformed) || !errors.As(err, &me) || me.Field == "" {
			t.Fatalf("Parse error %v is not a MalformedError with a field", err)
		}
		if events != nil {
			t.Fatal("events returned with an error")
		}
		return
	}
	if len(events) == 0 {
		t.Fatal("no events and no error")
	}
	for _, ev := range events {
		switch ev.Kind {
		case KindPaid, KindRefunded, KindFailed, KindTest, KindIgnored, KindDisputed:
		default:
			t.Fatalf("unknown kind %q", ev.Kind)
		}
		if ev.Type == "" {
			t.Fatalf("event without Type: %+v", ev)
		}
		if ev.HasAmount && ev.Amount <= 0 {
			t.Fatalf("non-positive amount: %+v", ev)
		}
		if ev.HasFee && (ev.Fee < 0 || ev.Fee > ev.Amount) {
			t.Fatalf("fee out of range: %+v", ev)
		}
		if ev.Kind == KindPaid && !ev.HasAmount {
			t.Fatalf("paid without amount: %+v", ev)
		}
		if ev.Kind == KindPaid && ev.EventID == "" && s.Name() != standardName {
			t.Fatalf("paid without event id: %+v", ev)
		}
	}
}

func FuzzParseHodle(f *testing.F) {
	for _, b := range []string{
		hodleVectorBody,
		`{"event":"DEPOSIT_ASSET_SUCCESS","data":{"trackId":"trk","externalId":"o","valueInBrl":"49.90","fee":"0.75"}}`,
		`{"event":"DEPOSIT_ASSET_REFUNDED","data":{"eventId":"e","externalId":"o","valueInBrl":"1.00"}}`,
		`{"event":"WEBHOOK_TEST"}`,
		`{"event":"X","event":"Y"}`,
		`[]`,
	} {
		f.Add([]byte(b))
	}
	s, err := New("hodle", Config{Secrets: []string{hodleSecret}})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, body []byte) { checkParse(t, s, body) })
}

func FuzzParseAbacatepay(f *testing.F) {
	for _, b := range []string{
		abacateCheckoutCompleted,
		`{"id":"log_2","event":"transparent.completed","devMode":true,"data":{"transparent":{"id":"c","paidAmount":5000,"platformFee":50}}}`,
		`{"id":"log_4","event":"billing.paid","data":{"id":"bill_2","paidAmount":100}}`,
		`{"id":"log_6","event":"checkout.refunded","data":{"checkout":{"id":"b","externalId":"o"}}}`,
		`{"id":"log_9","event":"checkout.disputed","data":{"checkout":{"id":"b"},"reason":"x"}}`,
		abacateVectorBody,
	} {
		f.Add([]byte(b))
	}
	s, err := New("abacatepay", Config{Secrets: []string{abacateSecret}})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, body []byte) { checkParse(t, s, body) })
}

func FuzzParseStandard(f *testing.F) {
	for _, b := range []string{
		`{"type":"charge.paid","timestamp":"2026-08-31T22:30:05-03:00","data":{"charge_id":"c","amount":4990,"occurred_at":"2026-08-31T22:30:00-03:00"}}`,
		`{"type":"charge.refunded","timestamp":"2026-09-01T10:00:00Z","data":{"charge_id":"c","refund_id":"r","amount":1}}`,
		`{"type":"charge.failed","timestamp":"2026-09-01T10:00:00Z","data":{"charge_id":"c"}}`,
		standardVectors[0].body,
	} {
		f.Add([]byte(b))
	}
	s, err := New("standard", Config{Secrets: []string{standardSecret1}})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, body []byte) { checkParse(t, s, body) })
}

func FuzzParseBCBPix(f *testing.F) {
	for _, b := range []string{
		`{"pix":[{"endToEndId":"` + e2eA + `","txid":"t1","valor":"49.90","horario":"2026-08-31T22:30:00.358-03:00"}]}`,
		`{"pix":[{"endToEndId":"` + e2eB + `","valor":"1.00","horario":"2026-09-01T10:00:00Z","devolucoes":[{"id":"d1","valor":"1.00",` +
			`"horario":{"solicitacao":"2026-09-02T10:00:00Z","liquidacao":"2026-09-02T10:00:05Z"},"status":"DEVOLVIDO"}]}]}`,
		`{"pix":[{"endToEndId":"` + e2eB + `","valor":"1.00","horario":"2026-09-01T10:00:00Z","devolucoes":{"id":"d2","valor":"0.50","status":"EM_PROCESSAMENTO"}}]}`,
		`{"pix":[]}`,
	} {
		f.Add([]byte(b))
	}
	s, err := New("bcb-pix", Config{})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, body []byte) { checkParse(t, s, body) })
}

// FuzzBCBPixAuthenticate: without a client certificate only the exact URL
// secret authenticates.
func FuzzBCBPixAuthenticate(f *testing.F) {
	f.Add(bcbSecret)
	f.Add(bcbSecret + " ")
	f.Add("")
	s, err := New("bcb-pix", Config{Secrets: []string{bcbSecret}})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, secret string) {
		err := s.Authenticate(Request{Query: query("hmac", secret)})
		if (err == nil) != (secret == bcbSecret) {
			t.Fatalf("secret %q: %v", secret, err)
		}
	})
}
