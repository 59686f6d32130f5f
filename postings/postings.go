// Package postings writes the ledger: posting sets (journal entries) of two
// or more signed postings in integer centavos that sum to zero per currency.
// Sets are append-only; a correction is a new set. Go checks every rule
// first and returns typed errors; the database enforces the same rules as
// the last barrier, and its refusals are mapped back to the same errors by
// constraint name.
package postings

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"time"

	"github.com/razao/razao/accounts"
	"github.com/razao/razao/internal/kind"
	"github.com/razao/razao/money"
)

// Kind says what business event a posting set records.
type Kind string

// The kinds of posting set.
const (
	KindSale               Kind = "sale"
	KindCommission         Kind = "commission"
	KindRefund             Kind = "refund"
	KindCommissionReversal Kind = "commission_reversal"
	KindPayout             Kind = "payout"
	KindAdjustment         Kind = "adjustment"
)

// Errors a caller can test with errors.Is.
var (
	ErrInvalid             = errors.New("invalid posting set")
	ErrTooFewLegs          = errors.New("posting set needs at least two postings")
	ErrZeroAmount          = errors.New("posting amount is zero")
	ErrUnbalanced          = errors.New("posting set does not balance")
	ErrCurrencyMismatch    = errors.New("posting currency differs from its account's")
	ErrClosedMonth         = kind.New(kind.Conflict, "closed-month", "Competence month is closed", "competence month is closed")
	ErrAlreadyPosted       = errors.New("business event already posted")
	ErrIdempotencyConflict = kind.New(kind.Refused, "idempotency-conflict", "Idempotency key reused with other content", "idempotency key reused with different content")
	ErrRefundExceedsSale   = errors.New("refunds exceed the sale")
	ErrSealed              = errors.New("posting set is sealed")
	ErrUnknownAccount      = accounts.ErrUnknownAccount
)

// Leg is one posting: a signed amount on an account. Debits are positive,
// credits negative.
type Leg struct {
	Account  string `json:"account"`
	Amount   int64  `json:"amount"`
	Currency string `json:"currency"`
}

// Set is a posting set to write.
type Set struct {
	Kind           Kind
	IdempotencyKey string
	// Amount is the business amount of the event (the sale's total, the
	// refund's amount...), always positive.
	Amount   int64
	Currency string
	// EventAt is when the event happened; its date in the ledger's time
	// zone is the competence, unless Competence is set.
	EventAt time.Time
	// Competence, when not zero, books the set on that date and fails with
	// ErrClosedMonth if its month is closed. When zero, the competence comes
	// from EventAt, and a late event for a closed month is booked on the
	// first day of the first open month.
	Competence  time.Time
	ChargeID    string
	RefundID    string
	Partner     string
	InboxID     int64
	Description string
	// ReturnID and Nature are a refund's: the PSP's id of the transfer
	// back (bcb-pix rtrId) and what kind of refund it is (bcb-pix
	// natureza), as the PSP stated them; "" when it stated none.
	ReturnID, Nature string
	Legs             []Leg
}

// Posted is the outcome of writing a set.
type Posted struct {
	ID         int64
	Competence time.Time // the date booked, at 00:00 UTC
	// Replayed is true when the idempotency key already held this same set
	// and nothing new was written.
	Replayed bool
}

// Validate checks a set without touching the database.
func (s *Set) Validate() error {
	if err := s.validateHeader(); err != nil {
		return err
	}
	if len(s.Legs) < 2 {
		return fmt.Errorf("%w: %s %q has %d", ErrTooFewLegs, s.Kind, s.IdempotencyKey, len(s.Legs))
	}
	sums := map[string]int64{}
	for i, l := range s.Legs {
		if l.Amount == 0 {
			return fmt.Errorf("%w: leg %d on %s", ErrZeroAmount, i, l.Account)
		}
		if ceiling := money.Limit(money.Ceiling); !ceiling.Allows(l.Amount) {
			return fmt.Errorf("%w: %w", ErrInvalid, ceiling.Check(fmt.Sprintf("leg %d on %s", i, l.Account), l.Amount))
		}
		if err := accounts.ValidateCode(l.Account); err != nil {
			return fmt.Errorf("%w: leg %d: %w", ErrInvalid, i, err)
		}
		cur := l.currency(s.Currency)
		if !validCurrency(cur) {
			return fmt.Errorf("%w: leg %d currency %q", ErrInvalid, i, cur)
		}
		sum, ok := addChecked(sums[cur], l.Amount)
		if !ok {
			return fmt.Errorf("%w: %s legs overflow int64", ErrInvalid, cur)
		}
		sums[cur] = sum
	}
	for cur, sum := range sums {
		if sum != 0 {
			return fmt.Errorf("%w: %s legs sum to %d", ErrUnbalanced, cur, sum)
		}
	}
	// The set's amount is what it moves: the sum of its debits in its
	// currency (the database checks the same at commit).
	var debits int64
	for _, l := range s.Legs {
		if l.Amount > 0 && l.currency(s.Currency) == s.Currency {
			var ok bool
			if debits, ok = money.Add(debits, l.Amount); !ok {
				return fmt.Errorf("%w: %s debits overflow int64", ErrInvalid, s.Currency)
			}
		}
	}
	if debits != s.Amount {
		return fmt.Errorf("%w: amount %d but debits %d", ErrInvalid, s.Amount, debits)
	}
	return nil
}

// maxReturnID and natureRE are ck_posting_sets_return_id and
// ck_posting_sets_refund_nature.
const maxReturnID = 64

var natureRE = regexp.MustCompile(`^[A-Z][A-Z0-9_]{0,34}$`)

// MaxKeyLength is the longest idempotency key a posting set may have, as
// ck_posting_sets_key says.
const MaxKeyLength = 300

func (s *Set) validateHeader() error {
	switch s.Kind {
	case KindSale, KindCommission, KindRefund, KindCommissionReversal, KindPayout, KindAdjustment:
	default:
		return fmt.Errorf("%w: kind %q", ErrInvalid, s.Kind)
	}
	switch {
	case s.IdempotencyKey == "" || len(s.IdempotencyKey) > MaxKeyLength:
		return fmt.Errorf("%w: idempotency key must have 1 to %d bytes", ErrInvalid, MaxKeyLength)
	case s.Amount <= 0:
		return fmt.Errorf("%w: amount %d must be positive", ErrInvalid, s.Amount)
	case s.Amount > money.Ceiling:
		return fmt.Errorf("%w: %w", ErrInvalid, money.Limit(money.Ceiling).Check("amount", s.Amount))
	case !validCurrency(s.Currency):
		return fmt.Errorf("%w: currency %q", ErrInvalid, s.Currency)
	case s.EventAt.IsZero():
		return fmt.Errorf("%w: event time missing", ErrInvalid)
	}
	needs := map[Kind][]struct{ name, v string }{
		KindSale:               {{"charge", s.ChargeID}},
		KindCommission:         {{"charge", s.ChargeID}, {"partner", s.Partner}},
		KindRefund:             {{"charge", s.ChargeID}, {"refund", s.RefundID}},
		KindCommissionReversal: {{"charge", s.ChargeID}, {"refund", s.RefundID}, {"partner", s.Partner}},
		KindPayout:             {{"partner", s.Partner}},
	}
	if s.Kind != KindRefund && (s.ReturnID != "" || s.Nature != "") {
		return fmt.Errorf("%w: a %s set carries no refund's return id or natureza", ErrInvalid, s.Kind)
	}
	if len(s.ReturnID) > maxReturnID || (s.Nature != "" && !natureRE.MatchString(s.Nature)) {
		return fmt.Errorf("%w: refund return id of %d bytes (at most %d) or natureza %.40q", ErrInvalid, len(s.ReturnID), maxReturnID, s.Nature)
	}
	for _, f := range needs[s.Kind] {
		if f.v == "" {
			return fmt.Errorf("%w: a %s set needs its %s id", ErrInvalid, s.Kind, f.name)
		}
	}
	return nil
}

func (l Leg) currency(def string) string {
	if l.Currency == "" {
		return def
	}
	return l.Currency
}

func validCurrency(c string) bool {
	if len(c) != 3 {
		return false
	}
	for i := 0; i < 3; i++ {
		if c[i] < 'A' || c[i] > 'Z' {
			return false
		}
	}
	return true
}

func addChecked(a, b int64) (int64, bool) { return money.Add(a, b) }

// contentHash fingerprints the intent of a set: what money it moves and
// for which business event, not where or when it was booked. The event
// time is left out on purpose: a client retrying a payout a minute later,
// or a replay after its month closed, is the same set, not a conflict.
func (s *Set) contentHash() string {
	legs := make([]Leg, len(s.Legs))
	for i, l := range s.Legs {
		legs[i] = Leg{Account: l.Account, Amount: l.Amount, Currency: l.currency(s.Currency)}
	}
	var competence string
	if !s.Competence.IsZero() {
		competence = s.Competence.Format(time.DateOnly)
	}
	b, _ := json.Marshal(struct {
		Kind       Kind   `json:"kind"`
		Key        string `json:"key"`
		Amount     int64  `json:"amount"`
		Currency   string `json:"currency"`
		Competence string `json:"competence,omitempty"`
		Charge     string `json:"charge,omitempty"`
		Refund     string `json:"refund,omitempty"`
		Partner    string `json:"partner,omitempty"`
		Legs       []Leg  `json:"legs"`
		Return     string `json:"return,omitempty"`
		Nature     string `json:"nature,omitempty"`
	}{s.Kind, s.IdempotencyKey, s.Amount, s.Currency, competence, s.ChargeID, s.RefundID, s.Partner, legs, s.ReturnID, s.Nature})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
