package scheme

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/razao/razao/internal/strictjson"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/razao/razao/money"
)

// MalformedError says which field of an authentic payload is wrong. It
// matches ErrMalformed with errors.Is, and unwraps to the cause, if any
// (e.g. money.ErrInvalidAmount).
type MalformedError struct {
	Field  string // JSON path, e.g. "data.eventId" or "pix[0].valor"
	Reason string
	Err    error // the cause, may be nil
}

// Error implements error.
func (e *MalformedError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("%v: %s: %s: %v", ErrMalformed, e.Field, e.Reason, e.Err)
	}
	return fmt.Sprintf("%v: %s: %s", ErrMalformed, e.Field, e.Reason)
}

// Is makes errors.Is(err, ErrMalformed) true.
func (e *MalformedError) Is(target error) bool { return target == ErrMalformed }

// Unwrap returns the cause.
func (e *MalformedError) Unwrap() error { return e.Err }

func malformed(field, reason string) error {
	return &MalformedError{Field: field, Reason: reason}
}

// decodeObject decodes body as exactly one JSON object, numbers kept as
// json.Number. It refuses what encoding/json would silently accept: invalid
// UTF-8 (replaced by U+FFFD), duplicate keys (last one wins, so two parsers
// could read two different payloads from the same signed bytes) and data
// after the object.
func decodeObject(body []byte) (object, error) {
	if !utf8.Valid(body) {
		return object{}, malformed("body", "not valid UTF-8")
	}
	if err := checkKeys(body); err != nil {
		return object{}, err
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return object{}, &MalformedError{Field: "body", Reason: "not JSON", Err: err}
	}
	m, ok := v.(map[string]any)
	if !ok {
		return object{}, malformed("body", "not a JSON object")
	}
	return object{m: m}, nil
}

// checkKeys refuses duplicate keys, trailing data and bad UTF-8.
func checkKeys(body []byte) error {
	err := strictjson.Check(body)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, strictjson.ErrSyntax):
		// err says "not JSON: ..." itself.
		return malformed("body", err.Error())
	}
	return malformed("body", err.Error())
}

// object is a decoded JSON object with its path, so every accessor can say
// exactly which field is wrong.
type object struct {
	path string
	m    map[string]any
}

func (o object) field(key string) string {
	if o.path == "" {
		return key
	}
	return o.path + "." + key
}

// has reports whether key is present and not null.
func (o object) has(key string) bool {
	v, ok := o.m[key]
	return ok && v != nil
}

// object returns the required object at key.
func (o object) object(key string) (object, error) {
	v, ok := o.m[key].(map[string]any)
	if !ok {
		return object{}, malformed(o.field(key), "must be an object")
	}
	return object{path: o.field(key), m: v}, nil
}

// str returns the required non-empty string at key.
func (o object) str(key string) (string, error) {
	s, ok := o.m[key].(string)
	if !ok || s == "" {
		return "", malformed(o.field(key), "must be a non-empty string")
	}
	return s, nil
}

// optStr returns the string at key, "" when absent or null; any other type
// is an error, because a number where an id belongs means the sender and we
// disagree on the contract.
func (o object) optStr(key string) (string, error) {
	if !o.has(key) {
		return "", nil
	}
	s, ok := o.m[key].(string)
	if !ok {
		return "", malformed(o.field(key), "must be a string")
	}
	return s, nil
}

// centavos returns the integer amount of centavos at key (false when absent
// or null). A fraction, exponent, sign or zero is refused: integers in these
// payloads are centavos, and a decimal would mean reais.
func (o object) centavos(key string, allowZero bool) (int64, bool, error) {
	if !o.has(key) {
		return 0, false, nil
	}
	n, ok := o.m[key].(json.Number)
	if !ok {
		return 0, false, malformed(o.field(key), "must be an integer number of centavos")
	}
	v, err := strconv.ParseInt(string(n), 10, 64)
	if err != nil || v < 0 || (v == 0 && !allowZero) || strings.HasPrefix(string(n), "-") {
		return 0, false, malformed(o.field(key), "must be a positive integer number of centavos")
	}
	return v, true, nil
}

// reais returns the amount at key, given in reais as a JSON string or
// number, converted exactly to centavos (false when absent or null).
func (o object) reais(key string) (int64, bool, error) {
	if !o.has(key) {
		return 0, false, nil
	}
	var text string
	switch v := o.m[key].(type) {
	case string:
		text = v
	case json.Number:
		text = string(v)
	default:
		return 0, false, malformed(o.field(key), "must be an amount in reais")
	}
	c, err := money.ParseReais(text)
	if err != nil {
		return 0, false, &MalformedError{Field: o.field(key), Reason: "not an amount in reais", Err: err}
	}
	return c, true, nil
}

// time returns the RFC 3339 time at key (false when absent or null).
func (o object) time(key string) (time.Time, bool, error) {
	if !o.has(key) {
		return time.Time{}, false, nil
	}
	s, ok := o.m[key].(string)
	if !ok {
		return time.Time{}, false, malformed(o.field(key), "must be an RFC 3339 time string")
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, false, malformed(o.field(key), "must be an RFC 3339 time")
	}
	if t.IsZero() {
		// 0001-01-01T00:00:00Z is Go's zero time, which Event.OccurredAt
		// uses for "no time carried": it must not pass for an absent one.
		return time.Time{}, false, malformed(o.field(key), "must be a real time, not 0001-01-01T00:00:00Z")
	}
	return t, true, nil
}

// text renders a scalar for Extra: strings as they are, anything else as
// its JSON text.
func (o object) text(key string) (string, bool) {
	if !o.has(key) {
		return "", false
	}
	switch v := o.m[key].(type) {
	case string:
		return v, true
	case json.Number:
		return string(v), true
	default:
		b, err := json.Marshal(v)
		return string(b), err == nil
	}
}

// orRequired returns err, or a "required" error for field when err is nil
// (the accessor found nothing).
func orRequired(err error, field string) error {
	if err != nil {
		return err
	}
	return malformed(field, "required")
}
