package money

import (
	"fmt"

	"github.com/razao/razao/internal/kind"
)

// DefaultMaxAmount is the largest amount razao takes in one charge,
// payment, refund, payout or posting set unless configured otherwise:
// R$ 10 billion, far above any single PIX (the Central Bank's limits are
// orders of magnitude lower) and far below what could overflow a sum.
const DefaultMaxAmount int64 = 1_000_000_000_000

// Ceiling is the hard ceiling the database enforces on every posting
// set's and posting's magnitude (migration 0016), whatever is configured:
// R$ 10 trillion. A configured maximum above it is refused. With every
// amount at most Ceiling, 9,223 of them at most reach math.MaxInt64, so
// reports still sum with checked arithmetic; what the bound buys is that
// no single input can poison every sum at once.
const Ceiling int64 = 1_000_000_000_000_000

// ErrAboveMax is wrapped by every refusal of an amount above the limit.
var ErrAboveMax = kind.New(kind.Invalid, "amount-above-max", "Amount above the maximum", "amount above the maximum").Precisely()

// AboveMaxError says which field held what amount, and the limit.
type AboveMaxError struct {
	Field  string
	Amount int64
	Max    int64
}

func (e *AboveMaxError) Error() string {
	return fmt.Sprintf("%s %d centavos is above the maximum of %d centavos (R$ %s)",
		e.Field, e.Amount, e.Max, FormatReais(e.Max, '.'))
}

// Unwrap makes errors.Is(err, ErrAboveMax) true.
func (e *AboveMaxError) Unwrap() error { return ErrAboveMax }

// Limit is the configured maximum amount, in centavos. Its zero value
// means DefaultMaxAmount, so a component built without one is bounded all
// the same.
type Limit int64

// Max returns the limit in centavos.
func (l Limit) Max() int64 {
	if l <= 0 {
		return DefaultMaxAmount
	}
	return int64(l)
}

// Check refuses an amount above the limit with an *AboveMaxError naming
// field. Only the upper bound is checked here: the sign is each caller's
// rule (a posting's leg is negative for a credit), so magnitudes are
// compared, and math.MinInt64, whose magnitude no int64 holds, is refused.
func (l Limit) Check(field string, amount int64) error {
	if !l.Allows(amount) {
		return &AboveMaxError{Field: field, Amount: amount, Max: l.Max()}
	}
	return nil
}

// Allows reports whether amount's magnitude is within the limit: Check
// without building an error, for callers that name the field only when
// it is refused.
func (l Limit) Allows(amount int64) bool {
	max := l.Max()
	return amount <= max && amount >= -max
}

// Validate refuses a configured maximum that is not positive or is above
// the database's Ceiling (the database would refuse what Go accepted).
func (l Limit) Validate() error {
	if l <= 0 || int64(l) > Ceiling {
		return fmt.Errorf("max_amount must be 1 to %d centavos, is %d", Ceiling, int64(l))
	}
	return nil
}

// Add returns a+b, and false when the sum does not fit an int64.
func Add(a, b int64) (int64, bool) {
	c := a + b
	if (c > a) != (b > 0) {
		return c, false
	}
	return c, true
}

// Sub returns a−b, and false when the difference does not fit an int64.
func Sub(a, b int64) (int64, bool) {
	c := a - b
	if (c < a) != (b > 0) {
		return c, false
	}
	return c, true
}
