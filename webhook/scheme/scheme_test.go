package scheme

import (
	"errors"
	"strings"
	"testing"

	"github.com/razao/razao/money"
)

func TestNewBuildsEachScheme(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		cfg  Config
	}{
		{"hodle", Config{Secrets: []string{hodleSecret}}},
		{"hodle", Config{Secrets: []string{hodleSecret, hodleSecretPrev}}},
		{"abacatepay", Config{Secrets: []string{abacateSecret}}},
		{"standard", Config{Secrets: []string{standardSecret1, standardSecret2}}},
		{"bcb-pix", Config{}},
		{"bcb-pix", Config{Secrets: []string{bcbSecret}}},
	}
	for _, tt := range tests {
		s := mustNew(t, tt.name, tt.cfg)
		if s.Name() != tt.name {
			t.Errorf("New(%q).Name() = %q", tt.name, s.Name())
		}
	}
}

func TestNewRefusesBadConfigWithoutNamingSecrets(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		scheme string
		cfg    Config
	}{
		{"unknown scheme", "stripe", Config{Secrets: []string{hodleSecret}}},
		{"scheme name in another case", "Hodle", Config{Secrets: []string{hodleSecret}}},
		{"three secrets", "hodle", Config{Secrets: []string{hodleSecret, hodleSecretPrev, hodleSecretElse}}},
		{"empty current secret", "hodle", Config{Secrets: []string{""}}},
		{"empty previous secret", "hodle", Config{Secrets: []string{hodleSecret, ""}}},
		{"hodle without secret", "hodle", Config{}},
		{"abacatepay without secret", "abacatepay", Config{}},
		{"abacatepay short secret", "abacatepay", Config{Secrets: []string{hodleSecret[:20]}}},
		{"standard without secret", "standard", Config{}},
		{"standard undecodable secret", "standard", Config{Secrets: []string{"whsec_" + hodleSecret}}},
		{"standard empty key", "standard", Config{Secrets: []string{"whsec_"}}},
		{"bcb-pix empty secret", "bcb-pix", Config{Secrets: []string{""}}},
		{"bcb-pix short secret", "bcb-pix", Config{Secrets: []string{hodleSecret[:20]}}},
		{"bcb-pix three secrets", "bcb-pix", Config{Secrets: []string{bcbSecret, bcbSecretPrev, bcbSecret}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, err := New(tt.scheme, tt.cfg)
			if !errors.Is(err, ErrConfig) {
				t.Fatalf("New = %v, %v; want ErrConfig", s, err)
			}
			checkNoLeak(t, err, Request{})
			for _, secret := range tt.cfg.Secrets {
				if len(secret) > 4 && strings.Contains(err.Error(), secret) {
					t.Fatalf("error %q names a secret", err)
				}
			}
		})
	}
}

func TestStrictJSONDecoding(t *testing.T) {
	t.Parallel()
	tests := []struct {
		body string
		ok   bool
	}{
		{`{}`, true},
		{` {"a":1} `, true},
		{"\n{\"a\":1}\n", true},
		{`{"a":{"b":1},"c":{"b":2}}`, true},            // the same key in sibling objects
		{`{"a":[{"b":1},{"b":2}]}`, true},              // and in array elements
		{`{"a":[[{"b":1,"c":[]}],{}],"b":null}`, true}, // nesting resets expectations correctly
		{`{"a":1,"a":1}`, false},
		{`{"a":{"b":1,"b":2}}`, false},
		{`{"a":[{"b":1,"b":2}]}`, false},
		{`{"a":[1,2],"a":[1]}`, false},
		{`{"a":1,"A":1}`, true}, // keys are case-sensitive here (encoding/json's struct matching is not; we use maps)
		{`{"a":"\u0061","\u0061":1}`, false},
		{`{} {}`, false},
		{`{}]`, false},
		{`{}x`, false},
		{`{"a":1`, false},
		{`[]`, false},
		{`1`, false},
		{`null`, false},
		{`"s"`, false},
		{``, false},
		{"{\"a\":\"\xff\"}", false},
		{strings.Repeat("[", 20000) + strings.Repeat("]", 20000), false},
		{`{"a":` + strings.Repeat("[", 5000) + strings.Repeat("]", 5000) + `}`, true},
	}
	for i, tt := range tests {
		_, err := decodeObject([]byte(tt.body))
		if tt.ok && err != nil {
			t.Errorf("case %d: decodeObject refused %.60s: %v", i, tt.body, err)
		}
		if !tt.ok && !errors.Is(err, ErrMalformed) {
			t.Errorf("case %d: decodeObject(%.60s) = %v, want ErrMalformed", i, tt.body, err)
		}
	}
}

func TestMalformedErrorUnwrapsToItsCause(t *testing.T) {
	t.Parallel()
	s := mustNew(t, "hodle", Config{Secrets: []string{hodleSecret}})
	_, err := s.Parse([]byte(`{"event":"DEPOSIT_ASSET_SUCCESS","data":{"trackId":"t","valueInBrl":"1.001"}}`))
	if !errors.Is(err, ErrMalformed) || !errors.Is(err, money.ErrInvalidAmount) || !errors.Is(err, money.ErrTooManyDecimals) {
		t.Fatalf("got %v, want ErrMalformed wrapping money.ErrTooManyDecimals", err)
	}
	var me *MalformedError
	if !errors.As(err, &me) || me.Field != "data.valueInBrl" {
		t.Fatalf("got %#v, want field data.valueInBrl", err)
	}
	if errors.Is(err, ErrUnauthenticated) {
		t.Fatal("a malformed payload is not an authentication failure")
	}
}

func TestOnlyHodleHasATestEvent(t *testing.T) {
	t.Parallel()
	r := Request{Body: []byte(`{"event":"WEBHOOK_TEST","type":"WEBHOOK_TEST","id":"WEBHOOK_TEST"}`)}
	for _, s := range []Scheme{
		mustNew(t, "abacatepay", Config{Secrets: []string{abacateSecret}}),
		mustNew(t, "standard", Config{Secrets: []string{standardSecret1}}),
		mustNew(t, "bcb-pix", Config{}),
	} {
		if s.IsTest(r) {
			t.Errorf("%s.IsTest = true", s.Name())
		}
	}
	if !mustNew(t, "hodle", Config{Secrets: []string{hodleSecret}}).IsTest(r) {
		t.Error("hodle.IsTest = false for WEBHOOK_TEST")
	}
}

func TestParseDeliveryKeepsPayloadEventIDs(t *testing.T) {
	t.Parallel()
	s := mustNew(t, "abacatepay", Config{Secrets: []string{abacateSecret}})
	events, err := ParseDelivery(s, Request{Body: []byte(abacateCheckoutCompleted)})
	if err != nil || len(events) != 1 || events[0].EventID != "log_abc123" {
		t.Fatalf("ParseDelivery = %+v, %v", events, err)
	}
	h := mustNew(t, "hodle", Config{Secrets: []string{hodleSecret}})
	events, err = ParseDelivery(h, Request{Body: []byte(`{"event":"OTHER"}`)})
	if err != nil || len(events) != 1 || events[0].EventID != "" || events[0].Kind != KindIgnored {
		t.Fatalf("ParseDelivery = %+v, %v; want one ignored event without id", events, err)
	}
}

// A body that is not JSON says so once ("not JSON: not JSON: unexpected
// end" before).
func TestNotJSONSaysItOnce(t *testing.T) {
	for _, body := range []string{``, `{"a":`, `{"a":1} x`} {
		_, err := decodeObject([]byte(body))
		if err == nil || strings.Count(err.Error(), "not JSON") != 1 || !strings.Contains(err.Error(), "malformed: body: not JSON: ") {
			t.Errorf("%q: %v, want one \"malformed: body: not JSON...\"", body, err)
		}
	}
}
