// Package cursor is the paging of razao's id-ordered listings (the
// journal, the divergences): a page size served within bounds, and
// cursors that are opaque to clients but bound to the listing that issued
// them, "<scope>|<last id>" in base64url, so that a cursor for August is
// refused for September rather than silently skipping rows.
package cursor

import (
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"

	"github.com/razao/razao/internal/kind"
)

// Page sizes of the listings.
const (
	DefaultLimit = 100
	MaxLimit     = 1000
)

// ErrInvalid: a cursor not issued for the same listing (another month,
// another status), or not a cursor at all.
var ErrInvalid = kind.New(kind.Invalid, "invalid-parameter", "Invalid parameter", "invalid cursor")

// Limit maps a requested page size to the one served: DefaultLimit when
// ≤ 0, at most MaxLimit.
func Limit(limit int) int {
	switch {
	case limit <= 0:
		return DefaultLimit
	case limit > MaxLimit:
		return MaxLimit
	}
	return limit
}

// Encode is the cursor of the page after lastID in the listing scope.
func Encode(scope string, lastID int64) string {
	return EncodeKey(scope, strconv.FormatInt(lastID, 10))
}

// EncodeKey is the cursor of the page after key in the listing scope, for
// a listing ordered by a text key (partners, by id).
func EncodeKey(scope, key string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(scope + "|" + key))
}

// Decode returns the last id a cursor of scope names; "" is the first
// page (0).
func Decode(cursor, scope string) (int64, error) {
	if cursor == "" {
		return 0, nil
	}
	idText, err := DecodeKey(cursor, scope)
	if err != nil {
		return 0, err
	}
	id, err := strconv.ParseInt(idText, 10, 64)
	if err != nil || id < 0 {
		return 0, fmt.Errorf("%w: bad position", ErrInvalid)
	}
	return id, nil
}

// DecodeKey returns the key a cursor of scope names; "" is the first page
// (""). The caller checks the key is one its listing could have issued.
func DecodeKey(cursor, scope string) (string, error) {
	if cursor == "" {
		return "", nil
	}
	raw, err := base64.RawURLEncoding.DecodeString(cursor)
	if err != nil {
		return "", fmt.Errorf("%w: not base64url", ErrInvalid)
	}
	s, key, ok := strings.Cut(string(raw), "|")
	if !ok || s != scope {
		return "", fmt.Errorf("%w: issued for another listing", ErrInvalid)
	}
	return key, nil
}
