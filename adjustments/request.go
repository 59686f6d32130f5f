package adjustments

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/jmoiron/sqlx"

	"github.com/razao/razao/accounts"
	"github.com/razao/razao/charges"
	"github.com/razao/razao/divergences"
	"github.com/razao/razao/money"
	"github.com/razao/razao/periods"
)

// Request asks for an adjustment.
type Request struct {
	// IdempotencyKey is the caller's key (the Idempotency-Key header): 1
	// to MaxKeyLength printable ASCII characters. The same key with the
	// same request is the same proposal; with another, a conflict.
	IdempotencyKey string `json:"-"`
	Legs           []Leg  `json:"legs"`
	Reason         string `json:"reason"`
	// Competence is the date to book on, YYYY-MM-DD; "" is today in the
	// ledger's time zone. Its month must be open, when proposed and when
	// booked: an adjustment is never moved to another month.
	Competence   string `json:"competence,omitempty"`
	ChargeID     string `json:"charge_id,omitempty"`
	Partner      string `json:"partner,omitempty"`
	DivergenceID int64  `json:"divergence_id,omitempty"`
}

// checked is a request that passed check: its legs' currency, its debits
// and its competence date.
type checked struct {
	Request
	currency   string
	amount     int64
	competence time.Time
}

// check validates r without writing anything: every field's own rule,
// then what it names (accounts of the chart, the linked charge, partner
// and divergence). Each refusal wraps ErrInvalid (or money.ErrAboveMax)
// and names the field.
func check(ctx context.Context, q sqlx.QueryerContext, r Request, limit money.Limit, cal periods.Calendar, now time.Time) (checked, error) {
	c := checked{Request: r}
	if err := checkKey(r.IdempotencyKey); err != nil {
		return c, err
	}
	reason, err := checkReason(r.Reason)
	if err != nil {
		return c, err
	}
	c.Reason = reason
	if err := checkLegs(r.Legs, limit); err != nil {
		return c, err
	}
	if c.competence, err = checkCompetence(r.Competence, cal, now); err != nil {
		return c, err
	}
	if err := checkRef("charge_id", r.ChargeID); err != nil {
		return c, err
	}
	if err := checkRef("partner", r.Partner); err != nil {
		return c, err
	}
	if r.DivergenceID < 0 {
		return c, fmt.Errorf("%w: divergence_id %d is not a divergence's id", ErrInvalid, r.DivergenceID)
	}
	// What the request names, now that every field is well formed.
	var debits, credits int64
	for i, l := range r.Legs {
		a, err := accounts.Get(ctx, q, l.Account)
		if errors.Is(err, accounts.ErrUnknownAccount) {
			return c, fmt.Errorf("%w: legs[%d].account: %s is not an account of the chart", ErrInvalid, i, l.Account)
		}
		if err != nil {
			return c, err
		}
		if c.currency == "" {
			c.currency = a.Currency
		} else if a.Currency != c.currency {
			return c, fmt.Errorf("%w: legs[%d].account: %s is in %s, the legs before it in %s: an adjustment moves one currency",
				ErrInvalid, i, l.Account, a.Currency, c.currency)
		}
		if l.Amount > 0 {
			debits += l.Amount // bounded: at most MaxLegs legs of at most money.Ceiling
		} else {
			credits -= l.Amount
		}
	}
	if debits != credits {
		return c, fmt.Errorf("%w: legs: debits %d and credits %d do not balance (debits are positive, credits negative)", ErrInvalid, debits, credits)
	}
	if err := limit.Check("legs (their debits)", debits); err != nil {
		return c, err
	}
	c.amount = debits
	if err := checkLinks(ctx, q, r); err != nil {
		return c, err
	}
	return c, nil
}

// checkLinks refuses a link to a charge, a partner or a divergence that
// does not exist.
func checkLinks(ctx context.Context, q sqlx.QueryerContext, r Request) error {
	if r.ChargeID != "" {
		if _, err := charges.Get(ctx, q, r.ChargeID); errors.Is(err, charges.ErrNotFound) {
			return fmt.Errorf("%w: charge_id: no charge %q", ErrInvalid, r.ChargeID)
		} else if err != nil {
			return err
		}
	}
	if r.Partner != "" {
		code, err := accounts.PartnerPayable(r.Partner)
		if err != nil {
			return fmt.Errorf("%w: partner: %q is not a partner id", ErrInvalid, r.Partner)
		}
		if _, err := accounts.Get(ctx, q, code); errors.Is(err, accounts.ErrUnknownAccount) {
			return fmt.Errorf("%w: partner: no partner %q (nothing was ever owed to it)", ErrInvalid, r.Partner)
		} else if err != nil {
			return err
		}
	}
	if r.DivergenceID != 0 {
		if _, err := divergences.Get(ctx, q, r.DivergenceID); errors.Is(err, divergences.ErrNotFound) {
			return fmt.Errorf("%w: divergence_id: no divergence %d", ErrInvalid, r.DivergenceID)
		} else if err != nil {
			return err
		}
	}
	return nil
}

// checkKey is the rule of an idempotency key: 1 to MaxKeyLength printable
// ASCII characters without spaces, as a payout's.
func checkKey(key string) error {
	if n := len(key); n == 0 || n > MaxKeyLength {
		return fmt.Errorf("%w: Idempotency-Key must have 1 to %d characters, has %d", ErrInvalid, MaxKeyLength, n)
	}
	for i := 0; i < len(key); i++ {
		if c := key[i]; c < 0x21 || c > 0x7e {
			return fmt.Errorf("%w: Idempotency-Key must be printable ASCII without spaces", ErrInvalid)
		}
	}
	return nil
}

// checkReason is the rule of a reason (and of a decision's note, with
// field "note"): 1 to MaxReasonLength characters of valid UTF-8 once
// surrounding space is trimmed, no control character but line breaks and
// tabs. It returns the text as stored.
func checkReason(reason string) (string, error) {
	return checkText("reason", reason, true)
}

func checkText(field, s string, required bool) (string, error) {
	s = strings.TrimSpace(s)
	if s == "" && !required {
		return "", nil
	}
	if s == "" || !utf8.ValidString(s) || utf8.RuneCountInString(s) > MaxReasonLength {
		return "", fmt.Errorf("%w: %s must have 1 to %d characters of text", ErrInvalid, field, MaxReasonLength)
	}
	for _, r := range s {
		if unicode.IsControl(r) && r != '\n' && r != '\t' && r != '\r' {
			return "", fmt.Errorf("%w: %s holds a control character (U+%04X)", ErrInvalid, field, r)
		}
	}
	return s, nil
}

// checkLegs checks each leg's own rules: MinLegs to MaxLegs of them, each
// on a well-formed account code, not zero, within the limit.
func checkLegs(legs []Leg, limit money.Limit) error {
	if n := len(legs); n < MinLegs || n > MaxLegs {
		return fmt.Errorf("%w: legs: %d given; an adjustment has %d to %d", ErrInvalid, n, MinLegs, MaxLegs)
	}
	for i, l := range legs {
		if err := accounts.ValidateCode(l.Account); err != nil {
			return fmt.Errorf("%w: legs[%d].account: %.64q is not an account code", ErrInvalid, i, l.Account)
		}
		if l.Amount == 0 {
			return fmt.Errorf("%w: legs[%d].amount: zero (debits are positive, credits negative)", ErrInvalid, i)
		}
		if err := limit.Check(fmt.Sprintf("legs[%d].amount", i), l.Amount); err != nil {
			return err
		}
	}
	return nil
}

// checkCompetence parses the competence date ("" is today in cal's zone)
// and refuses one outside the calendar's window.
func checkCompetence(s string, cal periods.Calendar, now time.Time) (time.Time, error) {
	if s == "" {
		return cal.Date(now), nil
	}
	d, err := time.Parse(time.DateOnly, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%w: competence %.32q is not a date YYYY-MM-DD", ErrInvalid, s)
	}
	if err := cal.CheckCompetence(d, now); err != nil {
		return time.Time{}, fmt.Errorf("%w: competence: %w", ErrInvalid, err)
	}
	return d, nil
}

// checkRef is the rule of a linked charge's or partner's id: at most
// maxRefLength bytes of valid UTF-8 without control characters (the
// database's text holds no NUL).
func checkRef(field, s string) error {
	if s == "" {
		return nil
	}
	if len(s) > maxRefLength || !utf8.ValidString(s) {
		return fmt.Errorf("%w: %s must have 1 to %d bytes of text", ErrInvalid, field, maxRefLength)
	}
	for _, r := range s {
		if unicode.IsControl(r) {
			return fmt.Errorf("%w: %s holds a control character (U+%04X)", ErrInvalid, field, r)
		}
	}
	return nil
}
