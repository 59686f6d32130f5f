// Package strictjson refuses the JSON that encoding/json silently accepts:
// invalid UTF-8 (replaced by U+FFFD), duplicate object keys (the last one
// wins, so two parsers can read two different documents from the same
// bytes) and data after the value. Run Check before decoding input that
// carries money or is signed.
package strictjson

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf16"
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

// Check scans body once, byte by byte, with the grammar of RFC 8259 (what
// encoding/json accepts). It runs on every webhook and API body before it
// is decoded, so it allocates only for keys written with escapes and for
// objects of many keys. It keeps its own stack, so deep nesting costs
// memory, not Go stack.
func Check(body []byte) error {
	if !utf8.Valid(body) {
		return ErrInvalidUTF8
	}
	// Room for a webhook's usual depth and keys, in four allocations.
	s := scanner{b: body, open: make([]byte, 0, 16), keys: make([][]byte, 0, 32), marks: make([]int, 0, 8),
		sets: make([]map[string]struct{}, 0, 8)}
	return s.document()
}

// manyKeys is the size from which an object's keys are looked up in a map
// rather than compared one by one: beyond it a linear search would let one
// large object of distinct keys cost time quadratic in its size.
const manyKeys = 16

// scanner is Check's state: the position, the open containers and the
// keys seen in each open object.
type scanner struct {
	b     []byte
	i     int
	open  []byte                // '{' or '[' per open container, innermost last
	keys  [][]byte              // the keys of the open objects, innermost last
	marks []int                 // where each open object's keys start in keys
	sets  []map[string]struct{} // an open object's keys once it has manyKeys
}

// document scans one value and then only whitespace.
func (s *scanner) document() error {
	for {
		if err := s.value(); err != nil {
			return err
		}
		more, err := s.afterValue()
		if err != nil {
			return err
		}
		if !more {
			break
		}
	}
	s.space()
	if s.i == len(s.b) {
		return nil
	}
	// A second value is data after the first; anything else is no JSON.
	if c := s.b[s.i]; strings.IndexByte(`{["-0123456789tfn`, c) < 0 {
		return s.syntax(fmt.Sprintf("invalid character %q after top-level value", c))
	}
	return ErrTrailingData
}

// value scans a value, or opens a container and scans up to its first
// value: the containers' ends are afterValue's.
func (s *scanner) value() error {
	for {
		s.space()
		if s.i >= len(s.b) {
			return s.syntax("unexpected end")
		}
		switch c := s.b[s.i]; {
		case c == '{':
			s.i++
			s.open, s.marks, s.sets = append(s.open, '{'), append(s.marks, len(s.keys)), append(s.sets, nil)
			s.space()
			if s.i < len(s.b) && s.b[s.i] == '}' {
				s.i++
				s.closeTop()
				return nil
			}
			if err := s.member(); err != nil {
				return err
			}
		case c == '[':
			s.i++
			s.open = append(s.open, '[')
			s.space()
			if s.i < len(s.b) && s.b[s.i] == ']' {
				s.i++
				s.closeTop()
				return nil
			}
		case c == '"':
			_, err := s.str(false)
			return err
		case c == '-' || ('0' <= c && c <= '9'):
			return s.number()
		case c == 't':
			return s.literal("true")
		case c == 'f':
			return s.literal("false")
		case c == 'n':
			return s.literal("null")
		default:
			return s.syntax(fmt.Sprintf("invalid character %q looking for beginning of value", c))
		}
	}
}

// afterValue consumes what follows a value: the ends of the containers it
// closes, and the comma (and key) before the next value, in which case it
// reports more.
func (s *scanner) afterValue() (more bool, err error) {
	for len(s.open) > 0 {
		s.space()
		if s.i >= len(s.b) {
			return false, s.syntax("unexpected end")
		}
		top, c := s.open[len(s.open)-1], s.b[s.i]
		switch {
		case c == ',':
			s.i++
			if top == '{' {
				return true, s.member()
			}
			return true, nil
		case top == '{' && c == '}', top == '[' && c == ']':
			s.i++
			s.closeTop()
		default:
			return false, s.syntax(fmt.Sprintf("invalid character %q after a value", c))
		}
	}
	return false, nil
}

func (s *scanner) closeTop() {
	if s.open[len(s.open)-1] == '{' {
		n := len(s.marks) - 1
		clear(s.keys[s.marks[n]:]) // drop references to decoded keys
		s.keys, s.marks, s.sets = s.keys[:s.marks[n]], s.marks[:n], s.sets[:n]
	}
	s.open = s.open[:len(s.open)-1]
}

// member scans an object member's key and colon, and refuses a key the
// object already has.
func (s *scanner) member() error {
	s.space()
	if s.i >= len(s.b) {
		return s.syntax("unexpected end")
	}
	if s.b[s.i] != '"' {
		return s.syntax(fmt.Sprintf("invalid character %q looking for beginning of object key string", s.b[s.i]))
	}
	key, err := s.str(true)
	if err != nil {
		return err
	}
	if err := s.remember(key); err != nil {
		return err
	}
	s.space()
	if s.i >= len(s.b) {
		return s.syntax("unexpected end")
	}
	if s.b[s.i] != ':' {
		return s.syntax(fmt.Sprintf("invalid character %q after object key", s.b[s.i]))
	}
	s.i++
	return nil
}

// remember adds key to the innermost object's keys, or refuses it if the
// object has it already.
func (s *scanner) remember(key []byte) error {
	n := len(s.marks) - 1
	if set := s.sets[n]; set != nil {
		if _, dup := set[string(key)]; dup {
			return fmt.Errorf("%w %.40q", ErrDuplicateKey, key)
		}
		set[string(key)] = struct{}{}
		return nil
	}
	seen := s.keys[s.marks[n]:]
	for _, k := range seen {
		if bytes.Equal(k, key) {
			return fmt.Errorf("%w %.40q", ErrDuplicateKey, key)
		}
	}
	if len(seen) < manyKeys {
		s.keys = append(s.keys, key)
		return nil
	}
	set := make(map[string]struct{}, 2*manyKeys)
	for _, k := range seen {
		set[string(k)] = struct{}{}
	}
	set[string(key)] = struct{}{}
	s.sets[n] = set
	return nil
}

// str scans a string. For a key it returns the string's value, as
// encoding/json decodes it (a lone surrogate is U+FFFD), so that keys
// written differently but decoded alike are one key; the value aliases the
// body unless the key has escapes.
func (s *scanner) str(key bool) ([]byte, error) {
	s.i++ // the opening quote
	start := s.i
	var decoded []byte // nil until the first escape of a key
	nul := false       // refused once the string is whole, as a token would be
	for s.i < len(s.b) {
		c := s.b[s.i]
		switch {
		case c == '"':
			raw := s.b[start:s.i]
			s.i++
			if nul {
				return nil, ErrNUL
			}
			if decoded != nil {
				return decoded, nil
			}
			return raw, nil
		case c < 0x20:
			return nil, s.syntax(fmt.Sprintf("invalid character %q in string literal", c))
		case c != '\\':
			if decoded != nil {
				decoded = append(decoded, c)
			}
			s.i++
			continue
		}
		if key && decoded == nil {
			decoded = append([]byte{}, s.b[start:s.i]...)
		}
		r, err := s.escape()
		if err != nil {
			return nil, err
		}
		nul = nul || r == 0
		if key {
			decoded = utf8.AppendRune(decoded, r)
		}
	}
	return nil, s.syntax("unexpected end in string literal")
}

// escape scans the escape at s.i and returns the rune it stands for.
func (s *scanner) escape() (rune, error) {
	if s.i+1 >= len(s.b) {
		return 0, s.syntax("unexpected end in string escape")
	}
	c := s.b[s.i+1]
	s.i += 2
	switch c {
	case '"', '\\', '/':
		return rune(c), nil
	case 'b':
		return '\b', nil
	case 'f':
		return '\f', nil
	case 'n':
		return '\n', nil
	case 'r':
		return '\r', nil
	case 't':
		return '\t', nil
	case 'u':
	default:
		return 0, s.syntax(fmt.Sprintf("invalid character %q in string escape code", c))
	}
	r, ok := hex4(s.b[s.i:])
	if !ok {
		return 0, s.syntax("invalid \\u escape in string literal")
	}
	s.i += 4
	if !utf16.IsSurrogate(r) {
		return r, nil
	}
	// A surrogate pair is one rune; anything else is U+FFFD, and a second
	// escape that does not complete the pair is a rune of its own.
	if s.i+1 < len(s.b) && s.b[s.i] == '\\' && s.b[s.i+1] == 'u' {
		if r2, ok := hex4(s.b[s.i+2:]); ok {
			if d := utf16.DecodeRune(r, r2); d != unicode.ReplacementChar {
				s.i += 6
				return d, nil
			}
		}
	}
	return unicode.ReplacementChar, nil
}

func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[:4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// number scans -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (s *scanner) number() error {
	if s.b[s.i] == '-' {
		s.i++
	}
	switch {
	case s.i < len(s.b) && s.b[s.i] == '0':
		s.i++
	case s.digits() == 0:
		return s.syntax("invalid number")
	}
	if s.i < len(s.b) && s.b[s.i] == '.' {
		s.i++
		if s.digits() == 0 {
			return s.syntax("invalid number: no digit after the decimal point")
		}
	}
	if s.i < len(s.b) && (s.b[s.i] == 'e' || s.b[s.i] == 'E') {
		s.i++
		if s.i < len(s.b) && (s.b[s.i] == '+' || s.b[s.i] == '-') {
			s.i++
		}
		if s.digits() == 0 {
			return s.syntax("invalid number: no digit in the exponent")
		}
	}
	return nil
}

func (s *scanner) digits() int {
	start := s.i
	for s.i < len(s.b) && '0' <= s.b[s.i] && s.b[s.i] <= '9' {
		s.i++
	}
	return s.i - start
}

func (s *scanner) literal(word string) error {
	if !bytes.HasPrefix(s.b[s.i:], []byte(word)) {
		return s.syntax(fmt.Sprintf("invalid literal, want %s", word))
	}
	s.i += len(word)
	return nil
}

func (s *scanner) space() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

func (s *scanner) syntax(what string) error {
	return fmt.Errorf("%w: %s at offset %d", ErrSyntax, what, s.i)
}
