package scheme

import (
	"encoding/hex"
	"strconv"
	"strings"
	"testing"
)

const (
	hodleVectorTS   = "1790035200"
	hodleVectorBody = `{"event":"DEPOSIT_ASSET_FAILED","data":{"eventId":"event-1","externalId":"order-1"}}`
	hodleVectorSig  = "b10d8351f2430ba0a339249eb20aaf237da1f47a5b213e9d680035b0fb7bf050"
)

// hodleSign returns the hex signature of body at ts with secret.
func hodleSign(secret, ts, body string) string {
	return hex.EncodeToString(hmacOf([]byte(secret), []byte(ts+"."+body)))
}

func hodleRequest(ts, sig, body string, nowSec int64) Request {
	return Request{
		Header: headers(hodleTimestampHeader, ts, hodleSignatureHeader, sig),
		Body:   []byte(body),
		Now:    unix(nowSec),
	}
}

func TestHodleVectorMatchesPublishedSignature(t *testing.T) {
	t.Parallel()
	if got := hodleSign(hodleSecret, hodleVectorTS, hodleVectorBody); got != hodleVectorSig {
		t.Fatalf("recipe gives %s, PSP-SCHEMES.md says %s", got, hodleVectorSig)
	}
	s := mustNew(t, "hodle", Config{Secrets: []string{hodleSecret}})
	if err := authenticate(t, s, hodleRequest(hodleVectorTS, hodleVectorSig, hodleVectorBody, 1790035200)); err != nil {
		t.Fatalf("published vector refused: %v", err)
	}
}

func TestHodleAuthenticate(t *testing.T) {
	t.Parallel()
	const now = 1790035200
	body := hodleVectorBody
	signedAt := func(sec int64) Request {
		ts := strconv.FormatInt(sec, 10)
		return hodleRequest(ts, hodleSign(hodleSecret, ts, body), body, now)
	}
	tests := []struct {
		name    string
		secrets []string
		req     Request
		ok      bool
	}{
		{"vector", nil, hodleRequest(hodleVectorTS, hodleVectorSig, body, now), true},
		{"uppercase hex signature", nil, hodleRequest(hodleVectorTS, strings.ToUpper(hodleVectorSig), body, now), true},
		{"one added space in the body", nil, hodleRequest(hodleVectorTS, hodleVectorSig,
			strings.Replace(body, `"data":`, `"data": `, 1), now), false},
		{"trailing newline in the body", nil, hodleRequest(hodleVectorTS, hodleVectorSig, body+"\n", now), false},
		{"another secret", []string{hodleSecretElse}, hodleRequest(hodleVectorTS, hodleVectorSig, body, now), false},
		{"timestamp 301 s old", nil, signedAt(now - 301), false},
		{"timestamp 301 s ahead", nil, signedAt(now + 301), false},
		{"timestamp 300 s old", nil, signedAt(now - 300), true},
		{"timestamp 300 s ahead", nil, signedAt(now + 300), true},
		{"vector replayed 301 s later", nil, hodleRequest(hodleVectorTS, hodleVectorSig, body, now+301), false},
		{"vector received 301 s early", nil, hodleRequest(hodleVectorTS, hodleVectorSig, body, now-301), false},
		{"signature of 2 characters", nil, hodleRequest(hodleVectorTS, "b1", body, now), false},
		{"signature of 66 characters", nil, hodleRequest(hodleVectorTS, hodleVectorSig+"00", body, now), false},
		{"signature of 63 characters", nil, hodleRequest(hodleVectorTS, hodleVectorSig[:63], body, now), false},
		{"signature not hex", nil, hodleRequest(hodleVectorTS, "zz"+hodleVectorSig[2:], body, now), false},
		{"signature base64 of the MAC", nil, hodleRequest(hodleVectorTS, "sQ2DUfJDC6CjOSSesgqvI32h9HpaITPp1oADWw+3vwU=", body, now), false},
		{"signature with last character changed", nil, hodleRequest(hodleVectorTS, hodleVectorSig[:63]+"1", body, now), false},
		{"empty signature", nil, hodleRequest(hodleVectorTS, "", body, now), false},
		{"empty timestamp", nil, hodleRequest("", hodleVectorSig, body, now), false},
		{"missing signature header", nil, Request{Header: headers(hodleTimestampHeader, hodleVectorTS), Body: []byte(body), Now: unix(now)}, false},
		{"missing timestamp header", nil, Request{Header: headers(hodleSignatureHeader, hodleVectorSig), Body: []byte(body), Now: unix(now)}, false},
		{"no headers", nil, Request{Body: []byte(body), Now: unix(now)}, false},
		{"two signature headers", nil, Request{Header: headers(hodleTimestampHeader, hodleVectorTS,
			hodleSignatureHeader, hodleVectorSig, hodleSignatureHeader, hodleVectorSig), Body: []byte(body), Now: unix(now)}, false},
		{"two timestamp headers", nil, Request{Header: headers(hodleTimestampHeader, hodleVectorTS, hodleTimestampHeader, hodleVectorTS,
			hodleSignatureHeader, hodleVectorSig), Body: []byte(body), Now: unix(now)}, false},
		{"zero clock", nil, Request{Header: headers(hodleTimestampHeader, hodleVectorTS, hodleSignatureHeader, hodleVectorSig),
			Body: []byte(body)}, false},
		{"previous secret during rotation", []string{hodleSecret + "-new", hodleSecret}, hodleRequest(hodleVectorTS, hodleVectorSig, body, now), true},
		{"current secret during rotation", []string{hodleSecret, hodleSecretPrev}, hodleRequest(hodleVectorTS, hodleVectorSig, body, now), true},
		{"neither rotated secret", []string{hodleSecretPrev, hodleSecretElse}, hodleRequest(hodleVectorTS, hodleVectorSig, body, now), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			secrets := tt.secrets
			if secrets == nil {
				secrets = []string{hodleSecret}
			}
			s := mustNew(t, "hodle", Config{Secrets: secrets})
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

func TestHodleRefusesNonNumericTimestampsEvenWhenSigned(t *testing.T) {
	t.Parallel()
	s := mustNew(t, "hodle", Config{Secrets: []string{hodleSecret}})
	for _, ts := range []string{
		"17900352OO", "+1790035200", "-1790035200", " 1790035200", "1790035200 ",
		"1790035200.0", "1.79e9", "0x6ab0e600", "1790035200\n", "１790035200",
		"99999999999999999999999", "abc",
	} {
		t.Run(ts, func(t *testing.T) {
			t.Parallel()
			r := hodleRequest(ts, hodleSign(hodleSecret, ts, hodleVectorBody), hodleVectorBody, 1790035200)
			if err := authenticate(t, s, r); err == nil {
				t.Fatalf("timestamp %q accepted", ts)
			}
		})
	}
}

func TestHodleIsTestOnlyForTheExactTestEvent(t *testing.T) {
	t.Parallel()
	s := mustNew(t, "hodle", Config{Secrets: []string{hodleSecret}})
	tests := []struct {
		body string
		want bool
	}{
		{`{"event":"WEBHOOK_TEST"}`, true},
		{`{"event":"WEBHOOK_TEST","data":{}}`, true},
		{` {"event" : "WEBHOOK_TEST"} `, true},
		{`{"event":"WEBHOOK\u005fTEST"}`, true}, // the same string, JSON-escaped
		{`{"event":"webhook_test"}`, false},
		{`{"event":" WEBHOOK_TEST"}`, false},
		{`{"event":"WEBHOOK_TEST "}`, false},
		{`{"event":"WEBHOOK_TEST\u0000"}`, false},
		{`{"event":"WEBHOOK_TEST","event":"DEPOSIT_ASSET_SUCCESS"}`, false},
		{`{"event":"DEPOSIT_ASSET_SUCCESS","event":"WEBHOOK_TEST"}`, false},
		{`{"event":"WEBHOOK_TEST"}{"event":"DEPOSIT_ASSET_SUCCESS"}`, false},
		{`{"event":"WEBHOOK_TEST"} x`, false},
		{`[{"event":"WEBHOOK_TEST"}]`, false},
		{`{"data":{"event":"WEBHOOK_TEST"}}`, false},
		{`{"event":["WEBHOOK_TEST"]}`, false},
		{`{"Event":"WEBHOOK_TEST"}`, false},
		{`{"event":"WEBHOOK_TEST"`, false},
		{`"WEBHOOK_TEST"`, false},
		{"{\"event\":\"WEBHOOK_TEST\",\"x\":\"\xff\"}", false},
		{hodleVectorBody, false},
		{``, false},
	}
	for _, tt := range tests {
		t.Run(tt.body, func(t *testing.T) {
			t.Parallel()
			if got := s.IsTest(Request{Body: []byte(tt.body)}); got != tt.want {
				t.Fatalf("IsTest(%s) = %v, want %v", tt.body, got, tt.want)
			}
		})
	}
}

func TestHodleParseMapsEvents(t *testing.T) {
	t.Parallel()
	s := mustNew(t, "hodle", Config{Secrets: []string{hodleSecret}})
	tests := []parseCase{
		{"failed vector", hodleVectorBody, Event{Kind: KindFailed, Type: "DEPOSIT_ASSET_FAILED",
			EventID: "event-1", ChargeID: "order-1"}},
		{"success sample", `{"event":"DEPOSIT_ASSET_SUCCESS","data":{"trackId":"trk-9","externalId":"order-1","valueInBrl":"49.90","fee":"0.75"}}`,
			Event{Kind: KindPaid, Type: "DEPOSIT_ASSET_SUCCESS", EventID: "trk-9", ChargeID: "order-1", PSPRef: "trk-9",
				Amount: 4990, HasAmount: true, Extra: map[string]string{"fee": "0.75"}}},
		{"success without externalId", `{"event":"DEPOSIT_ASSET_SUCCESS","data":{"trackId":"trk-9","valueInBrl":"0.01"}}`,
			Event{Kind: KindPaid, Type: "DEPOSIT_ASSET_SUCCESS", EventID: "trk-9", PSPRef: "trk-9", Amount: 1, HasAmount: true}},
		{"success with numeric reais and fee", `{"event":"DEPOSIT_ASSET_SUCCESS","data":{"trackId":"t","externalId":null,"valueInBrl":49.9,"fee":0.75}}`,
			Event{Kind: KindPaid, Type: "DEPOSIT_ASSET_SUCCESS", EventID: "t", PSPRef: "t", Amount: 4990, HasAmount: true,
				Extra: map[string]string{"fee": "0.75"}}},
		{"refund with amount", `{"event":"DEPOSIT_ASSET_REFUNDED","data":{"eventId":"ev-2","externalId":"order-1","trackId":"trk-9","valueInBrl":"10.00"}}`,
			Event{Kind: KindRefunded, Type: "DEPOSIT_ASSET_REFUNDED", EventID: "ev-2", ChargeID: "order-1", PSPRef: "trk-9",
				RefundID: "ev-2", Amount: 1000, HasAmount: true}},
		{"refund without amount", `{"event":"DEPOSIT_ASSET_REFUNDED","data":{"eventId":"ev-3","externalId":"order-1"}}`,
			Event{Kind: KindRefunded, Type: "DEPOSIT_ASSET_REFUNDED", EventID: "ev-3", ChargeID: "order-1", RefundID: "ev-3"}},
		{"test event", `{"event":"WEBHOOK_TEST"}`, Event{Kind: KindTest, Type: "WEBHOOK_TEST"}},
		{"other event keyed by eventId", `{"event":"WITHDRAW_DONE","data":{"eventId":"w-1","trackId":"t-1"}}`,
			Event{Kind: KindIgnored, Type: "WITHDRAW_DONE", EventID: "w-1"}},
		{"other event keyed by trackId", `{"event":"DEPOSIT_ASSET_PENDING","data":{"trackId":"t-1"}}`,
			Event{Kind: KindIgnored, Type: "DEPOSIT_ASSET_PENDING", EventID: "t-1"}},
		{"other event without ids", `{"event":"SOMETHING"}`, Event{Kind: KindIgnored, Type: "SOMETHING"}},
	}
	checkParses(t, s, tests)
}

func TestHodleParseRefusesMalformedPayloads(t *testing.T) {
	t.Parallel()
	s := mustNew(t, "hodle", Config{Secrets: []string{hodleSecret}})
	const (
		success = `"event":"DEPOSIT_ASSET_SUCCESS"`
		failed  = `"event":"DEPOSIT_ASSET_FAILED"`
		refund  = `"event":"DEPOSIT_ASSET_REFUNDED"`
	)
	tests := []struct {
		name, body, field string
	}{
		{"not JSON", `event=x`, "body"},
		{"array", `[]`, "body"},
		{"string", `"x"`, "body"},
		{"null", `null`, "body"},
		{"empty body", ``, "body"},
		{"trailing data", `{"event":"X"} {}`, "body"},
		{"duplicate key", `{"event":"X","event":"Y"}`, "body"},
		{"duplicate nested key", `{` + failed + `,"data":{"eventId":"a","eventId":"b","externalId":"o"}}`, "body"},
		{"invalid UTF-8", "{\"event\":\"\xc3\x28\"}", "body"},
		{"missing event", `{"data":{}}`, "event"},
		{"empty event", `{"event":""}`, "event"},
		{"numeric event", `{"event":1}`, "event"},
		{"success without data", `{` + success + `}`, "data"},
		{"success data not object", `{` + success + `,"data":[]}`, "data"},
		{"success without trackId", `{` + success + `,"data":{"valueInBrl":"1.00"}}`, "data.trackId"},
		{"success empty trackId", `{` + success + `,"data":{"trackId":"","valueInBrl":"1.00"}}`, "data.trackId"},
		{"success numeric trackId", `{` + success + `,"data":{"trackId":7,"valueInBrl":"1.00"}}`, "data.trackId"},
		{"success numeric externalId", `{` + success + `,"data":{"trackId":"t","externalId":7,"valueInBrl":"1.00"}}`, "data.externalId"},
		{"success without valueInBrl", `{` + success + `,"data":{"trackId":"t"}}`, "data.valueInBrl"},
		{"success null valueInBrl", `{` + success + `,"data":{"trackId":"t","valueInBrl":null}}`, "data.valueInBrl"},
		{"success 3 decimals", `{` + success + `,"data":{"trackId":"t","valueInBrl":"49.901"}}`, "data.valueInBrl"},
		{"success negative", `{` + success + `,"data":{"trackId":"t","valueInBrl":"-49.90"}}`, "data.valueInBrl"},
		{"success zero", `{` + success + `,"data":{"trackId":"t","valueInBrl":"0.00"}}`, "data.valueInBrl"},
		{"success exponent", `{` + success + `,"data":{"trackId":"t","valueInBrl":1e2}}`, "data.valueInBrl"},
		{"success decimal comma", `{` + success + `,"data":{"trackId":"t","valueInBrl":"49,90"}}`, "data.valueInBrl"},
		{"success boolean amount", `{` + success + `,"data":{"trackId":"t","valueInBrl":true}}`, "data.valueInBrl"},
		{"success overflow", `{` + success + `,"data":{"trackId":"t","valueInBrl":"92233720368547758.08"}}`, "data.valueInBrl"},
		{"failed without data", `{` + failed + `}`, "data"},
		{"failed without eventId", `{` + failed + `,"data":{"externalId":"o"}}`, "data.eventId"},
		{"failed empty eventId", `{` + failed + `,"data":{"eventId":"","externalId":"o"}}`, "data.eventId"},
		{"failed without externalId", `{` + failed + `,"data":{"eventId":"e"}}`, "data.externalId"},
		{"failed empty externalId", `{` + failed + `,"data":{"eventId":"e","externalId":""}}`, "data.externalId"},
		{"failed numeric trackId", `{` + failed + `,"data":{"eventId":"e","externalId":"o","trackId":1}}`, "data.trackId"},
		{"failed bad amount", `{` + failed + `,"data":{"eventId":"e","externalId":"o","valueInBrl":"x"}}`, "data.valueInBrl"},
		{"refund without eventId", `{` + refund + `,"data":{"externalId":"o"}}`, "data.eventId"},
		{"refund null eventId", `{` + refund + `,"data":{"eventId":null,"externalId":"o"}}`, "data.eventId"},
		{"refund without externalId", `{` + refund + `,"data":{"eventId":"e"}}`, "data.externalId"},
		{"refund empty externalId", `{` + refund + `,"data":{"eventId":"e","externalId":""}}`, "data.externalId"},
		{"refund bad amount", `{` + refund + `,"data":{"eventId":"e","externalId":"o","valueInBrl":"1.001"}}`, "data.valueInBrl"},
		{"refund zero amount", `{` + refund + `,"data":{"eventId":"e","externalId":"o","valueInBrl":"0"}}`, "data.valueInBrl"},
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

func TestHodleDeliveryIDIsEmpty(t *testing.T) {
	t.Parallel()
	s := mustNew(t, "hodle", Config{Secrets: []string{hodleSecret}})
	if id := s.DeliveryID(Request{Body: []byte(hodleVectorBody)}); id != "" {
		t.Fatalf("DeliveryID = %q, want empty", id)
	}
}

// IsTest runs before authentication, on anyone's bytes: past its bound it
// decides on the length alone, without reading the body as JSON (no
// allocation), even for a well-formed test event. Not parallel:
// AllocsPerRun counts the whole process's allocations.
func TestHodleIsTestLooksAtNoLargeBody(t *testing.T) {
	s := mustNew(t, "hodle", Config{Secrets: []string{hodleSecret}})
	var b strings.Builder
	b.WriteString(`{"event":"WEBHOOK_TEST","data":{`)
	for i := 0; b.Len() < 256<<10; i++ {
		b.WriteString(`"k` + strconv.Itoa(i) + `":0,`)
	}
	b.WriteString(`"end":0}}`)
	r := Request{Body: []byte(b.String())}
	var got bool
	if allocs := testing.AllocsPerRun(5, func() { got = s.IsTest(r) }); allocs != 0 || got {
		t.Fatalf("IsTest of a 256 KB test event: %v after %.0f allocations, want false after none", got, allocs)
	}
	small := Request{Body: []byte(`{"event":"WEBHOOK_TEST","data":{"note":"` + strings.Repeat("x", 900) + `"}}`)}
	if !s.IsTest(small) {
		t.Fatal("IsTest of a test event under 1 KiB = false")
	}
}
