package console

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"errors"
	"time"

	"github.com/jmoiron/sqlx"
)

// sessionStore holds every statement over console_sessions
// (sql/0026_console_sessions.sql), the console's own table: the session
// code calls its typed methods and writes no SQL of its own. A session is
// stored under the digest of its cookie, never the cookie itself.
type sessionStore struct {
	db sqlx.ExtContext
}

// errSessionNotStored is a cookie with no session stored under it that is
// live at the time asked.
var errSessionNotStored = errors.New("no live session stored under the cookie")

// sessionDigest is what the database stores for a session cookie. As for
// API tokens, a fast hash suffices: the plaintext has 256 random bits.
func sessionDigest(plaintext string) []byte {
	sum := sha256.Sum256([]byte(plaintext))
	return sum[:]
}

// sweepExpired deletes the sessions expired at now.
func (s sessionStore) sweepExpired(ctx context.Context, now time.Time) error {
	_, err := s.db.ExecContext(ctx, `DELETE FROM console_sessions WHERE expires_at <= $1`, now)
	return err
}

// create stores the session of cookie plaintext for the API token tokenID,
// created at now and live until expires.
func (s sessionStore) create(ctx context.Context, plaintext string, tokenID int64, now, expires time.Time) error {
	_, err := s.db.ExecContext(ctx, `INSERT INTO console_sessions (session_hash, token_id, created_at, expires_at)
		VALUES ($1, $2, $3, $4)`, sessionDigest(plaintext), tokenID, now, expires)
	return err
}

// liveToken returns the API token id of the session of cookie plaintext
// that is live at now, or errSessionNotStored.
func (s sessionStore) liveToken(ctx context.Context, plaintext string, now time.Time) (int64, error) {
	var tokenID int64
	err := sqlx.GetContext(ctx, s.db, &tokenID, `SELECT token_id FROM console_sessions
		WHERE session_hash = $1 AND expires_at > $2`, sessionDigest(plaintext), now)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, errSessionNotStored
	}
	return tokenID, err
}

// remove deletes the session of cookie plaintext, if any.
func (s sessionStore) remove(ctx context.Context, plaintext string) error {
	_, err := s.db.ExecContext(ctx, `DELETE FROM console_sessions WHERE session_hash = $1`, sessionDigest(plaintext))
	return err
}
