// Package auth holds the bearer tokens of the /v1 API: who may call it and
// with which scopes. Tokens are created by an operator (razao token
// create), stored only as a SHA-256 digest, shown in plaintext once, and
// revoked, never edited or deleted.
//
// Scopes form a ladder: admin implies write, write implies read.
package auth

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
)

// Scope is what a token may do.
type Scope string

// The scopes, from least to most powerful; each implies those before it.
const (
	Read  Scope = "read"
	Write Scope = "write"
	Admin Scope = "admin"
)

// rank orders the scopes; 0 is not a scope.
func (s Scope) rank() int {
	switch s {
	case Read:
		return 1
	case Write:
		return 2
	case Admin:
		return 3
	}
	return 0
}

// Valid reports whether s is one of the known scopes.
func (s Scope) Valid() bool { return s.rank() > 0 }

// Errors returned by this package; callers test them with errors.Is.
var (
	// ErrUnauthenticated is returned for a token that is missing,
	// malformed, unknown or revoked. Which one is in the wrapped text, for
	// logs; a client only ever learns "unauthenticated".
	ErrUnauthenticated = errors.New("unauthenticated")
	// ErrInvalid is returned for a bad token name or scope.
	ErrInvalid = errors.New("invalid token request")
	// ErrNotFound is returned for a token id that does not exist.
	ErrNotFound = errors.New("token not found")
)

// Prefix starts every plaintext token, so that a leaked token is
// recognisable (secret scanners, log filters) and a string that is not one
// of ours is refused before any database work.
const Prefix = "rz_"

// secretBytes is the entropy of a token: 256 bits from crypto/rand.
const secretBytes = 32

// tokenLen is the length of a plaintext token: the prefix and 32 bytes in
// unpadded base64url.
var tokenLen = len(Prefix) + base64.RawURLEncoding.EncodedLen(secretBytes)

// Token is an API token as stored: never its plaintext.
type Token struct {
	ID        int64      `json:"id"`
	Name      string     `json:"name"`
	Scopes    []Scope    `json:"scopes"`
	CreatedAt time.Time  `json:"created_at"`
	RevokedAt *time.Time `json:"revoked_at,omitempty"`
}

// Has reports whether the token grants s, directly or through a higher
// scope. A revoked token grants nothing.
func (t Token) Has(s Scope) bool {
	if t.RevokedAt != nil || !s.Valid() {
		return false
	}
	for _, g := range t.Scopes {
		if g.rank() >= s.rank() {
			return true
		}
	}
	return false
}

// Revoked reports whether the token has been revoked.
func (t Token) Revoked() bool { return t.RevokedAt != nil }

// ParseScope parses one scope name.
func ParseScope(s string) (Scope, error) {
	sc := Scope(strings.ToLower(strings.TrimSpace(s)))
	if !sc.Valid() {
		return "", fmt.Errorf("%w: unknown scope %q (want read, write or admin)", ErrInvalid, s)
	}
	return sc, nil
}

// ParseScopes parses a comma-separated list of scopes ("read,write"), as
// given to `razao token create --scope`.
func ParseScopes(list string) ([]Scope, error) {
	var out []Scope
	for _, s := range strings.Split(list, ",") {
		sc, err := ParseScope(s)
		if err != nil {
			return nil, err
		}
		out = append(out, sc)
	}
	return normalize(out)
}

// normalize validates scopes and returns them without duplicates, in
// ladder order.
func normalize(scopes []Scope) ([]Scope, error) {
	if len(scopes) == 0 {
		return nil, fmt.Errorf("%w: a token needs at least one scope", ErrInvalid)
	}
	out := make([]Scope, 0, len(scopes))
	for _, s := range scopes {
		if !s.Valid() {
			return nil, fmt.Errorf("%w: unknown scope %q (want read, write or admin)", ErrInvalid, s)
		}
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	slices.SortFunc(out, func(a, b Scope) int { return a.rank() - b.rank() })
	return out, nil
}

func validName(name string) error {
	if name == "" || len(name) > 100 {
		return fmt.Errorf("%w: name must have 1 to 100 bytes", ErrInvalid)
	}
	for _, r := range name {
		if unicode.IsControl(r) || r == unicode.ReplacementChar {
			return fmt.Errorf("%w: name %q has a control or invalid character", ErrInvalid, name)
		}
	}
	return nil
}

// digest is what the database stores for a plaintext token.
//
// A fast, unsalted SHA-256 is the right tool here, unlike for passwords:
// the plaintext is 256 bits from crypto/rand, so no dictionary or brute
// force can reach it whatever the hash costs, and a slow KDF would only
// make every API request slower. Being deterministic, the digest is also
// the lookup key, so authentication is one indexed point lookup.
func digest(plaintext string) []byte {
	sum := sha256.Sum256([]byte(plaintext))
	return sum[:]
}

// wellFormed reports whether s has the shape of a token we issued, so that
// garbage is refused without touching the database.
func wellFormed(s string) bool {
	if len(s) != tokenLen || !strings.HasPrefix(s, Prefix) {
		return false
	}
	b, err := base64.RawURLEncoding.Strict().DecodeString(s[len(Prefix):])
	return err == nil && len(b) == secretBytes
}

const selectToken = `SELECT id, name, scopes, created_at, revoked_at FROM api_tokens`

type tokenRow struct {
	ID        int64          `db:"id"`
	Name      string         `db:"name"`
	Scopes    pq.StringArray `db:"scopes"`
	CreatedAt time.Time      `db:"created_at"`
	RevokedAt sql.NullTime   `db:"revoked_at"`
}

func (r tokenRow) token() Token {
	t := Token{ID: r.ID, Name: r.Name, CreatedAt: r.CreatedAt}
	for _, s := range r.Scopes {
		t.Scopes = append(t.Scopes, Scope(s))
	}
	if r.RevokedAt.Valid {
		at := r.RevokedAt.Time
		t.RevokedAt = &at
	}
	return t
}

// Create makes a token called name with scopes and returns its plaintext,
// which exists nowhere else: show it once and forget it. The plaintext is
// "rz_" and 32 random bytes in unpadded base64url.
func Create(ctx context.Context, db sqlx.ExtContext, name string, scopes []Scope) (plaintext string, t Token, err error) {
	if err := validName(name); err != nil {
		return "", Token{}, err
	}
	scopes, err = normalize(scopes)
	if err != nil {
		return "", Token{}, err
	}
	secret := make([]byte, secretBytes)
	rand.Read(secret) // never fails: crypto/rand crashes the program rather than return weak bytes
	plaintext = Prefix + base64.RawURLEncoding.EncodeToString(secret)

	names := make([]string, len(scopes))
	for i, s := range scopes {
		names[i] = string(s)
	}
	var row tokenRow
	err = sqlx.GetContext(ctx, db, &row, `INSERT INTO api_tokens (name, token_hash, scopes) VALUES ($1, $2, $3)
		RETURNING id, name, scopes, created_at, revoked_at`, name, digest(plaintext), pq.StringArray(names))
	if err != nil {
		return "", Token{}, fmt.Errorf("create token %q: %w", name, err)
	}
	return plaintext, row.token(), nil
}

// Authenticate returns the live token whose plaintext is token, or an error
// wrapping ErrUnauthenticated when token is empty, malformed, unknown or
// revoked. Any other error is the database's and means "could not tell".
//
// The lookup is by digest through a unique index. Its timing can at most
// hint at the digest's leading bytes, which says nothing usable about a
// plaintext with 256 bits of entropy, so no constant-time comparison of
// plaintexts is needed (nor possible without a scan).
func Authenticate(ctx context.Context, q sqlx.QueryerContext, token string) (Token, error) {
	if !wellFormed(token) {
		return Token{}, fmt.Errorf("%w: malformed token", ErrUnauthenticated)
	}
	var row tokenRow
	err := sqlx.GetContext(ctx, q, &row, selectToken+` WHERE token_hash = $1`, digest(token))
	if errors.Is(err, sql.ErrNoRows) {
		return Token{}, fmt.Errorf("%w: unknown token", ErrUnauthenticated)
	}
	if err != nil {
		return Token{}, fmt.Errorf("authenticate: %w", err)
	}
	t := row.token()
	if t.Revoked() {
		return Token{}, fmt.Errorf("%w: token %d (%s) was revoked at %s", ErrUnauthenticated, t.ID, t.Name, t.RevokedAt.UTC().Format(time.RFC3339))
	}
	return t, nil
}

// Revoke revokes token id from now on and returns it. Revoking a revoked
// token changes nothing and returns it with its original revocation time.
// The database refuses any other change to a token.
func Revoke(ctx context.Context, db sqlx.ExtContext, id int64) (Token, error) {
	var row tokenRow
	err := sqlx.GetContext(ctx, db, &row, `UPDATE api_tokens SET revoked_at = now()
		WHERE id = $1 AND revoked_at IS NULL
		RETURNING id, name, scopes, created_at, revoked_at`, id)
	if errors.Is(err, sql.ErrNoRows) {
		return Get(ctx, db, id)
	}
	if err != nil {
		return Token{}, fmt.Errorf("revoke token %d: %w", id, err)
	}
	return row.token(), nil
}

// Get returns token id.
func Get(ctx context.Context, q sqlx.QueryerContext, id int64) (Token, error) {
	var row tokenRow
	err := sqlx.GetContext(ctx, q, &row, selectToken+` WHERE id = $1`, id)
	if errors.Is(err, sql.ErrNoRows) {
		return Token{}, fmt.Errorf("%w: %d", ErrNotFound, id)
	}
	if err != nil {
		return Token{}, fmt.Errorf("load token %d: %w", id, err)
	}
	return row.token(), nil
}

// List returns every token, revoked ones included, oldest first.
func List(ctx context.Context, q sqlx.QueryerContext) ([]Token, error) {
	var rows []tokenRow
	if err := sqlx.SelectContext(ctx, q, &rows, selectToken+` ORDER BY id`); err != nil {
		return nil, fmt.Errorf("list tokens: %w", err)
	}
	out := make([]Token, len(rows))
	for i, r := range rows {
		out[i] = r.token()
	}
	return out, nil
}

// RevokedAmong returns which of the tokens ids have been revoked, in one
// indexed query whatever their number, so that open event streams can be
// re-checked at every keepalive without a query per stream. An id that
// does not exist is not reported: tokens are never deleted, so it cannot
// have authenticated a stream.
func RevokedAmong(ctx context.Context, q sqlx.QueryerContext, ids []int64) ([]int64, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	var out []int64
	if err := sqlx.SelectContext(ctx, q, &out, `SELECT id FROM api_tokens WHERE id = ANY($1) AND revoked_at IS NOT NULL`, pq.Array(ids)); err != nil {
		return nil, fmt.Errorf("check %d token(s) for revocation: %w", len(ids), err)
	}
	return out, nil
}
