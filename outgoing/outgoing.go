// Package outgoing delivers the outbox to the selling app as webhooks: a
// webhook endpoint (a subscription) is a URL, the topics it wants and a
// secret; each event the outbox carries is POSTed to every endpoint that
// wants it, in commit order per endpoint, signed as Standard Webhooks
// specifies, retried with back-off for about three days, and never sent
// to an address the operator did not allow (see Guard).
//
// The tables webhook_endpoints, webhook_replays and webhook_attempts
// (sql/0051) are this package's alone; every statement over them is in
// sql.go.
package outgoing

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"net/netip"
	"time"

	"github.com/razao/razao/internal/kind"
)

// Errors returned by this package; callers test them with errors.Is.
var (
	// ErrInvalid: a field of the request is malformed or out of bounds;
	// the message names it.
	ErrInvalid = kind.New(kind.Invalid, "invalid-webhook-endpoint", "Invalid webhook endpoint", "invalid webhook endpoint")
	// ErrNotFound: no endpoint has the id.
	ErrNotFound = kind.New(kind.NotFound, "not-found", "Not found", "webhook endpoint not found")
	// ErrEventNotFound: a replay names an event the outbox does not hold.
	ErrEventNotFound = kind.New(kind.NotFound, "not-found", "Not found", "event not found")
	// ErrRangeArchived: a replay's time range reaches back to events
	// retention may have archived and purged; the message says until
	// when. Nothing is queued.
	ErrRangeArchived = kind.New(kind.Conflict, "replay-range-archived", "Replay range archived",
		"the replay's range reaches events archived and purged by retention")
	// ErrRefusedTarget: the URL names (or resolves to) an address razao
	// does not send to: loopback, private, link-local, metadata...
	ErrRefusedTarget = kind.New(kind.Invalid, "refused-target", "Refused target address", "the URL's address is not allowed").Precisely()
	// ErrNoKey: a secret is sealed but razao was given no key to open it.
	// ErrPlainHTTP: the URL is http:// and plain http is not allowed.
	ErrPlainHTTP = kind.New(kind.Invalid, "refused-target", "Refused target address",
		"the URL must be https (plain http is allowed only with webhooks.allow_http_targets)").Precisely()
	ErrNoKey = errors.New("webhook secret is sealed and no webhooks key is configured")
	// ErrKeyRequired: a secret would be stored in the clear by a process
	// without the key while stored secrets are sealed (see
	// Service.sealNew). A misconfigured process, not a bad request.
	// The API answers it 503: nothing changed, and the same request
	// succeeds once the key is configured.
	ErrKeyRequired = kind.New(kind.Unavailable, "webhooks-key-required", "Webhooks key required",
		"webhook secrets are stored sealed: configure the webhooks key (webhooks.secrets_key_env) to create or rotate one")
)

// Bounds of an endpoint's fields (ck_webhook_endpoints_*).
const (
	MaxURLLength         = 2000
	MaxDescriptionLength = 500
	MaxTopics            = 50
	// MaxReplay bounds the events one replay request queues.
	MaxReplay = 10000
	// excerptBytes is how much of a response body an attempt keeps.
	excerptBytes = 4096
)

// StandardSchedule is the wait after each failed attempt, as Standard
// Webhooks recommends (immediately, then 5 s, 5 min, 30 min, 2 h, 5 h,
// 10 h, 14 h, 20 h and 24 h): ten attempts over about 3 days and 3 hours.
// After the last one fails, the endpoint is disabled. Each wait is
// jittered by up to ±10 % (see Config.Jitter) so that endpoints that
// failed together do not retry together.
var StandardSchedule = []time.Duration{5 * time.Second, 5 * time.Minute, 30 * time.Minute, 2 * time.Hour, 5 * time.Hour,
	10 * time.Hour, 14 * time.Hour, 20 * time.Hour, 24 * time.Hour}

// Config is how webhooks are sent; the zero value is usable (defaults
// below, private targets refused, secrets stored unsealed).
type Config struct {
	// AllowPrivateTargets lets endpoints reach loopback, private and
	// link-local addresses: for development only.
	AllowPrivateTargets bool
	// AllowHTTPTargets lets endpoints be plain http:// URLs. Without it
	// only https is taken: the signature proves who sent an event, not
	// who read it, and an event names charges, amounts and the access
	// granted. For development and for a network that encrypts below
	// HTTP.
	AllowHTTPTargets bool
	// RootCAs are the authorities trusted for https endpoints (nil: the
	// system's).
	RootCAs *x509.CertPool
	// Key, 32 bytes, seals the signing secrets (AES-256-GCM) so that the
	// database alone does not yield them. Nil stores them as they are.
	Key []byte
	// RotationOverlap is how long a rotated-out secret still signs
	// (default 24 h).
	RotationOverlap time.Duration
	// Timeout bounds one attempt: connection, request and response
	// (default 10 s).
	Timeout time.Duration
	// Schedule is the wait after each failed attempt (default
	// StandardSchedule); len(Schedule)+1 attempts in all.
	Schedule []time.Duration
	// Jitter is the largest fraction a wait is moved by, either way
	// (default 0.1; negative: none).
	Jitter float64
	// MaxConcurrent bounds the endpoints one replica delivers to at once
	// (default 32).
	MaxConcurrent int
	// MaxPerSecond bounds the attempts one replica makes a second, all
	// endpoints together (0: no bound). Sending takes CPU the webhook
	// intake shares (on two cores, ten subscribers of every event took
	// half the intake's rate): with a bound, the endpoints fall behind
	// together under a burst and catch up after it, as the event stream
	// does under events.max_bytes_per_second.
	MaxPerSecond int
	// AttemptsRetention is how long the attempts log is kept (default 30
	// days): the age of retention's webhook_attempts (package archive,
	// which archives and purges them) unless retention gives its own.
	AttemptsRetention time.Duration
	// Interval is how often idle endpoints look for new events when no
	// notification comes (default 1 s).
	Interval time.Duration
	// Resolve, when set (tests), resolves host names instead of the
	// system's resolver.
	Resolve func(ctx context.Context, host string) ([]netip.Addr, error)
}

func (c Config) withDefaults() Config {
	if c.RotationOverlap <= 0 {
		c.RotationOverlap = 24 * time.Hour
	}
	if c.Timeout <= 0 {
		c.Timeout = 10 * time.Second
	}
	if c.Schedule == nil {
		c.Schedule = StandardSchedule
	}
	if c.Jitter == 0 {
		c.Jitter = 0.1
	} else if c.Jitter < 0 {
		c.Jitter = 0
	}
	if c.MaxConcurrent <= 0 {
		c.MaxConcurrent = 32
	}
	if c.AttemptsRetention <= 0 {
		c.AttemptsRetention = 30 * 24 * time.Hour
	}
	if c.Interval <= 0 {
		c.Interval = time.Second
	}
	return c
}

// Validate checks the configuration's values.
func (c Config) Validate() error {
	if c.Key != nil && len(c.Key) != 32 {
		return fmt.Errorf("webhooks: the secrets key must be 32 bytes (base64 of 32 random bytes), got %d", len(c.Key))
	}
	if c.MaxConcurrent < 0 || c.MaxConcurrent > 1000 {
		return fmt.Errorf("webhooks: max_concurrent must be 0..1000")
	}
	if c.MaxPerSecond < 0 || c.MaxPerSecond > 1000000 {
		return fmt.Errorf("webhooks: max_deliveries_per_second must be 0 (no bound) to 1000000")
	}
	if c.Timeout < 0 || c.Timeout > 2*time.Minute {
		return fmt.Errorf("webhooks: timeout must be at most 2m")
	}
	return nil
}

// secretPrefix starts every secret, as Standard Webhooks specifies.
const secretPrefix = "whsec_"

// newSecret is 32 random bytes in the Standard Webhooks format.
func newSecret() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("generate webhook secret: %w", err)
	}
	return secretPrefix + base64.StdEncoding.EncodeToString(b), nil
}

// How a stored secret is kept: its first byte.
const (
	storedClear  = 0
	storedSealed = 1
)

// sealAAD binds a ciphertext to its purpose.
var sealAAD = []byte("razao webhook secret v1")

// seal returns secret as stored: sealed under key when there is one.
func seal(key []byte, secret string) ([]byte, error) {
	if key == nil {
		return append([]byte{storedClear}, secret...), nil
	}
	gcm, err := newGCM(key)
	if err != nil {
		return nil, err
	}
	nonce := make([]byte, gcm.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return nil, fmt.Errorf("seal webhook secret: %w", err)
	}
	out := append([]byte{storedSealed}, nonce...)
	return gcm.Seal(out, nonce, []byte(secret), sealAAD), nil
}

// unseal is seal's inverse.
func unseal(key, stored []byte) (string, error) {
	if len(stored) == 0 {
		return "", errors.New("empty stored webhook secret")
	}
	switch stored[0] {
	case storedClear:
		return string(stored[1:]), nil
	case storedSealed:
		if key == nil {
			return "", ErrNoKey
		}
		gcm, err := newGCM(key)
		if err != nil {
			return "", err
		}
		if len(stored) < 1+gcm.NonceSize() {
			return "", errors.New("stored webhook secret cut short")
		}
		nonce, ct := stored[1:1+gcm.NonceSize()], stored[1+gcm.NonceSize():]
		plain, err := gcm.Open(nil, nonce, ct, sealAAD)
		if err != nil {
			return "", fmt.Errorf("open webhook secret (another key?): %w", err)
		}
		return string(plain), nil
	}
	return "", fmt.Errorf("stored webhook secret of unknown form %d", stored[0])
}

func newGCM(key []byte) (cipher.AEAD, error) {
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("webhooks key: %w", err)
	}
	return cipher.NewGCM(block)
}

// checkScheme refuses plain http unless AllowHTTPTargets: checked when an
// endpoint is saved and again before every attempt, so an endpoint saved
// while it was allowed is not sent to once it no longer is.
func (c Config) checkScheme(scheme string) error {
	if scheme == "http" && !c.AllowHTTPTargets {
		return ErrPlainHTTP
	}
	return nil
}
