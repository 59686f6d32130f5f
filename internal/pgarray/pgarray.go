// Package pgarray encodes Go slices as PostgreSQL array literals for query
// parameters: the text lib/pq's pq.Array sends, byte for byte, built in
// one buffer sized up front. The hot path sends a few dozen arrays per
// batch (the inbox's twelve, the ledger's eighteen, the charges' eleven);
// pq.StringArray copied every element to a []byte of its own and grew its
// buffer from three bytes per element, and pq.Array of a slice of
// pointers walks it by reflection. Slices this package has no type for go
// through pq.Array.
package pgarray

import (
	"database/sql/driver"
	"strconv"
	"strings"
	"time"

	"github.com/lib/pq"
)

// Text is a text[] parameter; a nil Text is NULL.
type Text []string

// Value implements driver.Valuer.
func (a Text) Value() (driver.Value, error) {
	if a == nil {
		return nil, nil
	}
	size := 1 + len(a)
	for _, s := range a {
		size += quotedLen(s)
	}
	var b strings.Builder
	b.Grow(size)
	b.WriteByte('{')
	for i, s := range a {
		if i > 0 {
			b.WriteByte(',')
		}
		quote(&b, s)
	}
	b.WriteByte('}')
	return b.String(), nil
}

// NullText is a text[] parameter whose nil elements are NULL.
type NullText []*string

// Value implements driver.Valuer.
func (a NullText) Value() (driver.Value, error) {
	return encode(a, 8, func(b *strings.Builder, s *string) { quote(b, *s) })
}

// NullInt64 is a bigint[] parameter whose nil elements are NULL.
type NullInt64 []*int64

// Value implements driver.Valuer.
func (a NullInt64) Value() (driver.Value, error) {
	return encode(a, 8, func(b *strings.Builder, v *int64) {
		var digits [20]byte
		b.Write(strconv.AppendInt(digits[:0], *v, 10))
	})
}

// NullTime is a timestamptz[] parameter whose nil elements are NULL,
// each time written as lib/pq writes one (pq.FormatTimestamp, which knows
// the years before 1 AD).
type NullTime []*time.Time

// Value implements driver.Valuer.
func (a NullTime) Value() (driver.Value, error) {
	return encode(a, 32, func(b *strings.Builder, t *time.Time) { b.Write(pq.FormatTimestamp(*t)) })
}

// encode writes a as an array literal of its elements, NULL for the nil
// ones, each about width bytes.
func encode[T any](a []*T, width int, write func(*strings.Builder, *T)) (driver.Value, error) {
	if a == nil {
		return nil, nil
	}
	var b strings.Builder
	b.Grow(2 + len(a)*(width+1))
	b.WriteByte('{')
	for i, v := range a {
		if i > 0 {
			b.WriteByte(',')
		}
		if v == nil {
			b.WriteString("NULL")
			continue
		}
		write(&b, v)
	}
	b.WriteByte('}')
	return b.String(), nil
}

// quote writes s double-quoted, with a backslash before each '"' and '\'.
func quote(b *strings.Builder, s string) {
	b.WriteByte('"')
	start := 0
	for i := 0; i < len(s); i++ {
		if c := s[i]; c == '"' || c == '\\' {
			b.WriteString(s[start:i])
			b.WriteByte('\\')
			start = i // the byte itself goes out with what follows
		}
	}
	b.WriteString(s[start:])
	b.WriteByte('"')
}

// quotedLen is the length of s quoted.
func quotedLen(s string) int {
	return len(s) + 2 + strings.Count(s, `"`) + strings.Count(s, `\`)
}
