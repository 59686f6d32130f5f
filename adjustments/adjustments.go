// Package adjustments holds the corrections of the ledger and the people
// who make them. A correction is a new balanced set, never an edit: an
// adjustment (legs on accounts of the chart, a reason, an optional link to
// a charge, a partner or a divergence) or the reversal of a set (its
// mirror, in the first open month, at most once: postings.ReverseTx).
// Either is first a proposal, a row of the adjustments table (sql/0046),
// which this package alone reads and writes; a second person approves it
// (four eyes), and only then is its set booked, in the approving
// transaction. A proposal may be rejected, or expire unapproved. Every
// state change appends its outbox event in the same transaction.
package adjustments

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	"github.com/razao/razao/internal/kind"
)

// Kind says what a proposal books.
type Kind string

// The kinds of proposal.
const (
	KindAdjustment Kind = "adjustment"
	KindReversal   Kind = "reversal"
)

// Status is where a proposal stands. It leaves Proposed once.
type Status string

// The statuses.
const (
	StatusProposed Status = "proposed"
	StatusBooked   Status = "booked"
	StatusRejected Status = "rejected"
	StatusExpired  Status = "expired"
)

// Statuses lists every status, in the order a proposal goes through them.
var Statuses = []Status{StatusProposed, StatusBooked, StatusRejected, StatusExpired}

// Bounds of a proposal's fields (ck_adjustments_*).
const (
	MinLegs         = 2
	MaxLegs         = 100
	MaxReasonLength = 1000 // characters
	MaxKeyLength    = 200  // bytes, printable ASCII
	maxRefLength    = 200  // a linked charge's or partner's id, bytes
	maxNameLength   = 100  // a token's name, as auth allows
)

// Errors returned by this package; callers test them with errors.Is.
// Ledger refusals come from postings (ErrClosedMonth,
// ErrIdempotencyConflict, ErrNotReversible...).
var (
	// ErrInvalid: a field of the request is malformed or out of bounds;
	// the message names it.
	ErrInvalid = kind.New(kind.Invalid, "invalid-adjustment", "Invalid adjustment", "invalid adjustment")
	// ErrNotFound: no proposal has the id.
	ErrNotFound = kind.New(kind.NotFound, "not-found", "Not found", "adjustment not found")
	// ErrDecided: the proposal was booked or rejected already, or expired.
	ErrDecided = kind.New(kind.Conflict, "adjustment-decided", "Adjustment already decided", "adjustment already decided")
	// ErrExpired: the proposal's time ran out before anyone approved it.
	ErrExpired = kind.New(kind.Conflict, "adjustment-expired", "Adjustment expired", "adjustment expired")
	// ErrOwnProposal: the proposer may not approve its own proposal.
	ErrOwnProposal = kind.New(kind.Forbidden, "four-eyes", "Approval by another person required", "the proposer cannot approve its own adjustment")
	// ErrReversalPending: the set has a reversal proposed already.
	ErrReversalPending = kind.New(kind.Conflict, "reversal-pending", "Reversal already proposed", "reversal already proposed")
)

// DefaultTTL is how long a proposal waits for its approval by default.
const DefaultTTL = 7 * 24 * time.Hour

// Bounds of Config.TTL.
const (
	MinTTL = time.Hour
	MaxTTL = 90 * 24 * time.Hour
)

// Config is how corrections are approved (the config file's adjustments
// section).
type Config struct {
	// ApprovalOff books a proposal at once, by its proposer: for a
	// one-person shop (adjustments.approval: off). The zero Config asks
	// for four eyes.
	ApprovalOff bool
	// TTL is how long a proposal may wait for its approval; 0 is
	// DefaultTTL.
	TTL time.Duration
}

// Validate refuses a TTL outside MinTTL..MaxTTL (0 is the default).
func (c Config) Validate() error {
	if c.TTL != 0 && (c.TTL < MinTTL || c.TTL > MaxTTL) {
		return fmt.Errorf("adjustments: ttl %s must be between %s and %s", c.TTL, MinTTL, MaxTTL)
	}
	return nil
}

func (c Config) ttl() time.Duration {
	if c.TTL == 0 {
		return DefaultTTL
	}
	return c.TTL
}

// Actor is who proposes or decides: an API token (its name and id), or
// an operator at the command line (a name, no token).
type Actor struct {
	Name    string
	TokenID int64
}

func (a Actor) check() error {
	if a.Name == "" || len(a.Name) > maxNameLength {
		return fmt.Errorf("%w: who acts must be named (1 to %d bytes)", ErrInvalid, maxNameLength)
	}
	return nil
}

// Leg is one leg of an adjustment: a signed amount (debit > 0, credit <
// 0) on an account of the chart, in the account's currency.
type Leg struct {
	Account string `json:"account"`
	Amount  int64  `json:"amount"`
}

// Adjustment is a proposal as the API shows it.
type Adjustment struct {
	ID     int64  `json:"id"`
	Kind   Kind   `json:"kind"`
	Status Status `json:"status"`
	Reason string `json:"reason"`
	Legs   []Leg  `json:"legs"`
	// Amount is what the set moves: the sum of its debits.
	Amount   int64  `json:"amount"`
	Currency string `json:"currency"`
	// Competence is the date the set is (or was) booked on: an
	// adjustment's, stated when proposed; a reversal's, once booked.
	Competence     string    `json:"competence,omitempty"`
	IdempotencyKey string    `json:"idempotency_key,omitempty"`
	ChargeID       string    `json:"charge_id,omitempty"`
	Partner        string    `json:"partner,omitempty"`
	DivergenceID   int64     `json:"divergence_id,omitempty"`
	Reverses       int64     `json:"reverses,omitempty"`
	FourEyes       bool      `json:"four_eyes"`
	ProposedBy     string    `json:"proposed_by"`
	ProposedAt     time.Time `json:"proposed_at"`
	ExpiresAt      time.Time `json:"expires_at"`
	// DecidedBy approved (booked) or rejected it; empty while proposed
	// and when it expired.
	DecidedBy    string     `json:"decided_by,omitempty"`
	DecidedAt    *time.Time `json:"decided_at,omitempty"`
	DecisionNote string     `json:"decision_note,omitempty"`
	PostingSetID int64      `json:"posting_set_id,omitempty"`
	// Replayed is true when the request was the same as one already
	// made: nothing new was written.
	Replayed bool `json:"replayed"`
}

// requestHash fingerprints what a request asks, as it asked it, so that
// a retry under the same key is recognised as the same request.
func requestHash(v any) string {
	b, _ := json.Marshal(v)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
