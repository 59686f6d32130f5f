package console

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/razao/razao/auth"
)

// SessionTTL is how long a session lasts from sign-in, whatever its use:
// a working day. Past it, the token is asked for again.
const SessionTTL = 8 * time.Hour

// Cookie names. The session cookie is HttpOnly and SameSite=Strict, and
// Secure whenever the request came over TLS.
const (
	sessionCookie = "razao_console"
	// loginCookie carries the sign-in form's CSRF value (double submit):
	// before sign-in there is no session to bind it to.
	loginCookie = "razao_console_login"
)

// errNoSession is a request without a live session: no cookie, an unknown
// or expired one, or one whose token was revoked.
var errNoSession = errors.New("no live console session")

// newSecret returns 256 random bits, base64url.
func newSecret() string {
	b := make([]byte, 32)
	rand.Read(b) // never fails: crypto/rand crashes the program rather than return weak bytes
	return base64.RawURLEncoding.EncodeToString(b)
}

// csrfToken is the value every form of a session carries: an HMAC of the
// session cookie, so it needs no storage, differs per session, and cannot
// be computed by a page that cannot read the (HttpOnly) cookie.
func csrfToken(session string) string {
	m := hmac.New(sha256.New, []byte(session))
	m.Write([]byte("razao console csrf v1"))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// sameSecret compares two form values in constant time.
func sameSecret(a, b string) bool {
	return a != "" && subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}

// session is a signed-in console user: the cookie's plaintext (for the
// CSRF value) and the token it was exchanged for.
type session struct {
	plaintext string
	token     auth.Token
}

func (s session) csrf() string { return csrfToken(s.plaintext) }

// sessions is the store of the console's sessions (sessions_store.go).
func (c *Console) sessions() sessionStore { return sessionStore{db: c.DB} }

// signIn exchanges a live API token for a new session and returns the
// session's cookie plaintext. Expired sessions are swept on the way.
func (c *Console) signIn(ctx context.Context, apiToken string) (string, auth.Token, error) {
	t, err := auth.Authenticate(ctx, c.DB, apiToken)
	if err != nil {
		return "", auth.Token{}, err
	}
	now := c.Now()
	if err := c.sessions().sweepExpired(ctx, now); err != nil {
		return "", auth.Token{}, fmt.Errorf("sweep expired console sessions: %w", err)
	}
	plaintext := newSecret()
	if err := c.sessions().create(ctx, plaintext, t.ID, now, now.Add(SessionTTL)); err != nil {
		return "", auth.Token{}, fmt.Errorf("store console session: %w", err)
	}
	return plaintext, t, nil
}

// lookup returns the live session of a cookie plaintext, or errNoSession.
// The token is re-read every time, so a revoked token's sessions end at
// once; any other error is the database's.
func (c *Console) lookup(ctx context.Context, plaintext string) (session, error) {
	if len(plaintext) != 43 { // 32 bytes in unpadded base64url
		return session{}, fmt.Errorf("%w: malformed cookie", errNoSession)
	}
	tokenID, err := c.sessions().liveToken(ctx, plaintext, c.Now())
	if errors.Is(err, errSessionNotStored) {
		return session{}, fmt.Errorf("%w: unknown or expired", errNoSession)
	}
	if err != nil {
		return session{}, fmt.Errorf("look up console session: %w", err)
	}
	t, err := auth.Get(ctx, c.DB, tokenID)
	if errors.Is(err, auth.ErrNotFound) {
		return session{}, fmt.Errorf("%w: token %d does not exist", errNoSession, tokenID)
	}
	if err != nil {
		return session{}, err
	}
	if t.Revoked() {
		return session{}, fmt.Errorf("%w: token %d was revoked", errNoSession, t.ID)
	}
	return session{plaintext: plaintext, token: t}, nil
}

// signOut ends the session of a cookie plaintext.
func (c *Console) signOut(ctx context.Context, plaintext string) error {
	if err := c.sessions().remove(ctx, plaintext); err != nil {
		return fmt.Errorf("end console session: %w", err)
	}
	return nil
}

// setCookie writes a console cookie scoped to the console's paths:
// Secure when the browser reached us over TLS, ours or a proxy's.
func (c *Console) setCookie(w http.ResponseWriter, r *http.Request, name, value string, maxAge time.Duration) {
	http.SetCookie(w, &http.Cookie{
		Name: name, Value: value, Path: Prefix, MaxAge: int(maxAge / time.Second),
		HttpOnly: true, Secure: r.TLS != nil || c.BehindTLSProxy, SameSite: http.SameSiteStrictMode,
	})
}

// clearCookie removes a console cookie.
func (c *Console) clearCookie(w http.ResponseWriter, r *http.Request, name string) {
	c.setCookie(w, r, name, "", -time.Second)
}

type sessionKey struct{}

// sessionFrom returns the session the middleware put in ctx.
func sessionFrom(ctx context.Context) (session, bool) {
	s, ok := ctx.Value(sessionKey{}).(session)
	return s, ok
}
