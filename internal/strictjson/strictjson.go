// Package strictjson refuses the JSON that encoding/json silently accepts:
// invalid UTF-8 (replaced by U+FFFD), duplicate object keys (the last one
// wins, so two parsers can read two different documents from the same
// bytes) and data after the value. Run Check before decoding input that
// carries money or is signed.
package strictjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// Errors Check returns, wrapped with detail.
var (
	ErrInvalidUTF8  = errors.New("not valid UTF-8")
	ErrSyntax       = errors.New("not JSON")
	ErrDuplicateKey = errors.New("duplicate key")
	ErrTrailingData = errors.New("data after the JSON value")
	// ErrNUL: JSON allows \u0000 in strings, but PostgreSQL's text and
	// jsonb cannot store it, so such input could never be kept.
	ErrNUL = errors.New("string contains U+0000")
)

// Check walks body's tokens once. It keeps its own stack, so deep nesting
// costs memory, not Go stack.
func Check(body []byte) error {
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
