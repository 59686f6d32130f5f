package scheme

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// TimestampTolerance is how far a signed timestamp may be from our clock,
// in either direction: past it a captured delivery can no longer be
// replayed. periods.MaxAhead, the latest event time the ledger accepts,
// is this plus 5 minutes.
const TimestampTolerance = 300 * time.Second

const timestampWindow = TimestampTolerance

// macSHA256 is HMAC-SHA256(key, parts...) over the exact bytes given.
func macSHA256(key []byte, parts ...[]byte) []byte {
	m := hmac.New(sha256.New, key)
	for _, p := range parts {
		m.Write(p)
	}
	return m.Sum(nil)
}

// macEqual compares a received MAC with the expected one in constant time.
// The length is checked first: hmac.Equal would also return false, but the
// explicit check documents that a wrong length is never a partial match.
func macEqual(got, want []byte) bool {
	if len(got) != len(want) {
		return false
	}
	return hmac.Equal(got, want)
}

// secretEqual compares a secret presented in a URL or header with a
// configured one. Both are hashed first so the comparison is constant-time
// over equal-length inputs and leaks not even the secret's length.
func secretEqual(got, want string) bool {
	g := sha256.Sum256([]byte(got))
	w := sha256.Sum256([]byte(want))
	return subtle.ConstantTimeCompare(g[:], w[:]) == 1
}

// singleHeader returns the one value of header name. Absent and repeated
// headers are both refused: with two values, the one we verify and the one
// another component reads could differ.
func singleHeader(h http.Header, name string) (string, error) {
	vs := h.Values(name)
	switch len(vs) {
	case 0:
		return "", unauthenticated("missing %s header", name)
	case 1:
		if vs[0] == "" {
			return "", unauthenticated("empty %s header", name)
		}
		return vs[0], nil
	default:
		return "", unauthenticated("%d %s headers, want one", len(vs), name)
	}
}

// checkTimestamp parses a Unix-seconds timestamp (ASCII digits only, no sign
// or spaces) and requires it within timestampWindow of now, both ways.
func checkTimestamp(name, ts string, now time.Time) error {
	if now.IsZero() {
		return unauthenticated("no clock to check %s against", name)
	}
	if len(ts) > 19 || !isDigits(ts) {
		return unauthenticated("%s is not Unix seconds in digits", name)
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return unauthenticated("%s is not Unix seconds in digits", name)
	}
	// sec >= 0 and now.Unix() is a real clock, so the subtraction cannot
	// overflow.
	skew, window := now.Unix()-sec, int64(timestampWindow/time.Second)
	if skew > window || skew < -window {
		return unauthenticated("%s is %ds away from our clock, beyond ±%ds", name, skew, window)
	}
	return nil
}

// isDigits reports whether s is non-empty and all ASCII digits.
func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// isAlnum reports whether s is non-empty and all ASCII letters and digits.
func isAlnum(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'z') && (c < 'A' || c > 'Z') {
			return false
		}
	}
	return true
}

// decodeBase64MAC decodes a signature strictly. Go's base64 decoder skips
// CR and LF even in Strict mode, so "ab\ncd" would decode like "abcd": the
// same MAC under another spelling. A signature is one canonical spelling.
func decodeBase64MAC(s string) ([]byte, error) {
	if strings.ContainsAny(s, "\r\n") {
		return nil, errors.New("line break in a base64 signature")
	}
	return base64.StdEncoding.Strict().DecodeString(s)
}
