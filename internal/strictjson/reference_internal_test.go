package strictjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"unicode/utf8"
)

// tokenCheck is Check as it was written first, over encoding/json's
// tokens: the reference the byte scanner must agree with.
func tokenCheck(body []byte) error {
	if !utf8.Valid(body) {
		return ErrInvalidUTF8
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	var stack []map[string]bool // nil for an array
	expectKey, done := false, false
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			if !done {
				return fmt.Errorf("%w: unexpected end", ErrSyntax)
			}
			return nil
		}
		if err != nil {
			return fmt.Errorf("%w: %w", ErrSyntax, err)
		}
		if done {
			return ErrTrailingData
		}
		if str, ok := tok.(string); ok && strings.ContainsRune(str, 0) {
			return ErrNUL
		}
		if d, ok := tok.(json.Delim); ok && (d == '{' || d == '[') {
			keys := map[string]bool(nil)
			if d == '{' {
				keys = map[string]bool{}
			}
			stack = append(stack, keys)
			expectKey = d == '{'
			continue
		}
		if expectKey {
			key, _ := tok.(string) // the decoder only yields strings or '}' here
			if d, ok := tok.(json.Delim); !ok || d != '}' {
				top := stack[len(stack)-1]
				if top[key] {
					return fmt.Errorf("%w %.40q", ErrDuplicateKey, key)
				}
				top[key] = true
				expectKey = false
				continue
			}
		}
		if d, ok := tok.(json.Delim); ok && (d == '}' || d == ']') {
			stack = stack[:len(stack)-1]
		}
		// A value just ended: inside an object the next token is a key.
		expectKey = len(stack) > 0 && stack[len(stack)-1] != nil
		done = len(stack) == 0
	}
}

// Check accepts exactly what the token walk accepts, and refuses for the
// same reason whenever the reason is a duplicate key, a NUL or bad UTF-8.
func FuzzCheckAgreesWithTheTokenWalk(f *testing.F) {
	for _, s := range agreementSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		agree(t, s)
	})
}

var agreementSeeds = []string{
	`{"a":1,"b":[1,{"a":2}]}`, `[1,2]`, `{"a":1,"a":2}`, `{"x":{"a":1,"a":2}}`, `{"a":1} {"b":2}`, "{\"a\":\"\xff\"}",
	`{"a":`, ``, ` `, `{"a":"x\u0000y"}`, `{"a\u0000":1}`, `{"a":1,"\u0061":2}`, `{"\ud800":1,"\udc00":2}`,
	`{"\ud83d\ude00":1,"😀":2}`, `{"\ud83d\u0041":1,"\ufffdA":2}`, `{"\ud800\u0000":1}`, `"x"`, `-0.5e+7`, `01`, `1.`,
	`-`, `1e`, `[1,]`, `{"a":1,}`, `{,}`, `[}`, `{"a" 1}`, `{"a":1 "b":2}`, `nul`, `truex`, `[true,false,null]`,
	"\t\r\n[ ]\n", `"\x"`, `"\u12"`, `"\u12G4"`, "\"a\tb\"", `{"":1,"":2}`, `[[[[[]]]]]`, `{"a":{"b":{"c":[{"d":1,"d":2}]}}}`,
	`{"k0":0,"k1":1,"k2":2,"k3":3,"k4":4,"k5":5,"k6":6,"k7":7,"k8":8,"k9":9,"k10":10,"k11":11,"k12":12,"k13":13,"k14":14,"k15":15,"k16":16,"k3":3}`,
	`{"a":[1,2,{"b":"\\\"\/\b\f\n\r\t"}]}`, `{}x`, `[1 2]`, `{"a":1}}`, `]`, `"\ud800"`, `1E-2`, `0e0`, `-01`,
}

func agree(t *testing.T, s string) {
	t.Helper()
	got, want := Check([]byte(s)), tokenCheck([]byte(s))
	if (got == nil) != (want == nil) {
		t.Fatalf("Check(%q) = %v, the token walk says %v", s, got, want)
	}
	for _, reason := range []error{ErrDuplicateKey, ErrNUL, ErrInvalidUTF8} {
		if errors.Is(got, reason) != errors.Is(want, reason) {
			t.Fatalf("Check(%q) = %v, the token walk says %v", s, got, want)
		}
	}
	if got == nil && !json.Valid([]byte(s)) {
		t.Fatalf("Check(%q) accepts what encoding/json does not", s)
	}
}

func TestCheckAgreesWithTheTokenWalk(t *testing.T) {
	t.Parallel()
	for _, s := range agreementSeeds {
		agree(t, s)
	}
	// Objects and nesting beyond what a seed shows: many keys (the map),
	// the duplicate far from the first, escaped keys among raw ones.
	var b strings.Builder
	b.WriteString(`{`)
	for i := range 300 {
		fmt.Fprintf(&b, `"k%d":[{"k%d":%d}],`, i, i, i)
	}
	many := b.String()
	agree(t, many+`"k299":0}`)
	agree(t, many+`"k\u0032\u0039\u0039":0}`)
	agree(t, many+`"k300":0}`)
	agree(t, strings.Repeat(`[`, 10000)+strings.Repeat(`]`, 10000))
	agree(t, strings.Repeat(`{"a":`, 5000)+`1`+strings.Repeat(`}`, 5000))
}

// The scanner's reason to be: Check runs on every webhook body.
func BenchmarkCheck(b *testing.B) {
	body := []byte(`{"type":"charge.paid","id":"evt_0123456789","created_at":"2026-12-01T10:00:00Z",` +
		`"data":{"charge_id":"ch_0123456789","amount":4990,"fee":99,"currency":"BRL","metadata":{"order":"A-1","note":"caf\u00e9"}}}`)
	for _, c := range []struct {
		name  string
		check func([]byte) error
	}{{"scanner", Check}, {"tokens", tokenCheck}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := c.check(body); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
