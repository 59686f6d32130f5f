package scheme

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"
)

// Secrets used across the tests. No error message may contain any of them,
// nor any MAC that a configured key would produce for the request at hand.
const (
	hodleSecret     = "example-secret-for-local-tests-only"
	hodleSecretPrev = "previous-hodle-secret-being-rotated-out"
	hodleSecretElse = "some-other-merchant-hodle-secret"

	abacateSecret     = "url-secret-0123456789abcdefghijklmnop"
	abacateSecretPrev = "url-secret-previous-ABCDEFGHIJKLMNOPQRS"

	standardSecret1 = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	standardSecret2 = "whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD"

	bcbSecret     = "bcb-url-secret-0123456789abcdefghijk"
	bcbSecretPrev = "bcb-url-secret-previous-0123456789xyz"
)

// allSecrets lists every secret string and key the tests configure.
func allSecrets() []string {
	s := []string{
		hodleSecret, hodleSecretPrev, hodleSecretElse,
		abacateSecret, abacateSecretPrev,
		standardSecret1, standardSecret2,
		strings.TrimPrefix(standardSecret1, "whsec_"), strings.TrimPrefix(standardSecret2, "whsec_"),
		bcbSecret, bcbSecretPrev,
	}
	return s
}

// expectedMACs lists, for r, every MAC any test key would produce, in the
// encodings the schemes use, so tests can prove none leaks.
func expectedMACs(r Request) []string {
	var out []string
	add := func(mac []byte) {
		out = append(out, hex.EncodeToString(mac), strings.ToUpper(hex.EncodeToString(mac)),
			base64.StdEncoding.EncodeToString(mac))
	}
	ts := r.Header.Get(hodleTimestampHeader)
	for _, s := range []string{hodleSecret, hodleSecretPrev, hodleSecretElse} {
		add(hmacOf([]byte(s), []byte(ts+"."), r.Body))
	}
	add(hmacOf([]byte(DefaultAbacatepayPublicKey), r.Body))
	id, sts := r.Header.Get(standardIDHeader), r.Header.Get(standardTimestampHeader)
	for _, s := range []string{standardSecret1, standardSecret2} {
		add(hmacOf(standardKey(s), []byte(id+"."+sts+"."), r.Body))
	}
	return out
}

// checkNoLeak fails the test if err's message holds a secret or a MAC.
func checkNoLeak(t *testing.T, err error, r Request) {
	t.Helper()
	if err == nil {
		return
	}
	msg := err.Error()
	for _, probe := range append(allSecrets(), expectedMACs(r)...) {
		if probe != "" && strings.Contains(msg, probe) {
			t.Fatalf("error message leaks a secret or MAC: %q", msg)
		}
	}
}

func hmacOf(key []byte, parts ...[]byte) []byte {
	m := hmac.New(sha256.New, key)
	for _, p := range parts {
		m.Write(p)
	}
	return m.Sum(nil)
}

func standardKey(secret string) []byte {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil {
		panic(err)
	}
	return key
}

// mustNew builds a scheme or stops the test.
func mustNew(t *testing.T, name string, cfg Config) Scheme {
	t.Helper()
	s, err := New(name, cfg)
	if err != nil {
		t.Fatalf("New(%q): %v", name, err)
	}
	return s
}

// authenticate runs Authenticate and checks the error for leaks.
func authenticate(t *testing.T, s Scheme, r Request) error {
	t.Helper()
	err := s.Authenticate(r)
	checkNoLeak(t, err, r)
	if err != nil && !errors.Is(err, ErrUnauthenticated) {
		t.Fatalf("Authenticate error %v does not wrap ErrUnauthenticated", err)
	}
	return err
}

// parse runs Parse and checks the error's type and message.
func parse(t *testing.T, s Scheme, body string) ([]Event, error) {
	t.Helper()
	events, err := s.Parse([]byte(body))
	checkNoLeak(t, err, Request{Body: []byte(body)})
	if err != nil {
		var me *MalformedError
		if !errors.Is(err, ErrMalformed) || !errors.As(err, &me) || me.Field == "" {
			t.Fatalf("Parse error %v is not a *MalformedError naming a field", err)
		}
	}
	return events, err
}

// headers builds an http.Header from name/value pairs, canonicalising names
// the way net/http does for real requests.
func headers(kv ...string) http.Header {
	h := http.Header{}
	for i := 0; i+1 < len(kv); i += 2 {
		h.Add(kv[i], kv[i+1])
	}
	return h
}

func query(kv ...string) url.Values {
	q := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		q.Add(kv[i], kv[i+1])
	}
	return q
}

func unix(sec int64) time.Time { return time.Unix(sec, 0).UTC() }

func mustTime(t *testing.T, s string) time.Time {
	t.Helper()
	tm, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatal(err)
	}
	return tm
}

// wantMalformedField asserts err is a MalformedError for field.
func wantMalformedField(t *testing.T, err error, field string) {
	t.Helper()
	var me *MalformedError
	if !errors.As(err, &me) {
		t.Fatalf("got %v, want a MalformedError for %s", err, field)
	}
	if field != "" && me.Field != field {
		t.Fatalf("got MalformedError for %q (%v), want %q", me.Field, err, field)
	}
}

// parseCase is one payload and the single event it must map to.
type parseCase struct {
	name string
	body string
	want Event
}

// checkParses runs each case through s's parser in parallel.
func checkParses(t *testing.T, s Scheme, cases []parseCase) {
	t.Helper()
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := parse(t, s, tt.body)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if len(got) != 1 || !reflect.DeepEqual(got[0], tt.want) {
				t.Fatalf("Parse =\n%+v\nwant\n%+v", got, tt.want)
			}
		})
	}
}
