// Package money converts between the decimal reais that payment providers
// send and the int64 centavos that razao stores everywhere.
//
// Parsing is exact (shopspring/decimal, never a float) and deliberately
// strict: an amount that is ambiguous, negative, zero, finer than a centavo
// or too large is refused rather than rounded, because a wrong amount in a
// ledger is worse than a delivery set aside for finance.
package money

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/shopspring/decimal"
)

// ErrInvalidAmount is wrapped by every error this package returns, so callers
// can test any refusal with errors.Is(err, money.ErrInvalidAmount).
var ErrInvalidAmount = errors.New("invalid amount")

// The finer reasons, each also wrapping ErrInvalidAmount.
var (
	// ErrSyntax: not a plain decimal of the form 123 or 123.4 or 123.45.
	ErrSyntax = errors.New("not a plain decimal number of reais")
	// ErrTooManyDecimals: a fraction of a centavo.
	ErrTooManyDecimals = errors.New("more than 2 decimal places")
	// ErrNotPositive: zero (a negative never gets past ErrSyntax).
	ErrNotPositive = errors.New("not greater than zero")
	// ErrOverflow: more centavos than an int64 holds.
	ErrOverflow = errors.New("too large for int64 centavos")
)

// maxInputLen bounds the work done on hostile input. The largest valid
// amount, 92233720368547758.07, has 20 characters; the slack allows leading
// zeros such as a zero-padded "0000049.90".
const maxInputLen = 64

// maxCentavos is math.MaxInt64 as a decimal, compared against before any
// conversion to int64 so an overflow can never wrap.
var maxCentavos = decimal.NewFromInt(math.MaxInt64)

// ParseReais converts an exact decimal amount of reais to centavos:
// "49.90" and "49.9" are 4990, "0.01" is 1, "1234" is 123400.
//
// Accepted: ASCII digits, optionally followed by "." and one or two digits.
// Leading zeros are accepted ("049.90"): they are unambiguous and some
// providers zero-pad. Refused, each wrapping ErrInvalidAmount: the empty
// string, surrounding or inner spaces, a sign ("+1", "-1"), an exponent
// ("1e2"), a leading or trailing dot (".5", "5."), a comma, hex, underscores,
// NaN or infinities, more than two decimal places ("1.234", even "1.230"),
// zero ("0.00"), and more than math.MaxInt64 centavos.
func ParseReais(s string) (int64, error) {
	if err := checkSyntax(s); err != nil {
		return 0, amountError(s, err)
	}
	d, err := decimal.NewFromString(s)
	if err != nil {
		// Unreachable after checkSyntax; kept so a library change fails closed.
		return 0, amountError(s, fmt.Errorf("%w: %w", ErrSyntax, err))
	}
	centavos := d.Shift(2)
	if !centavos.IsInteger() {
		return 0, amountError(s, ErrTooManyDecimals)
	}
	if centavos.Cmp(maxCentavos) > 0 {
		return 0, amountError(s, ErrOverflow)
	}
	if centavos.Sign() <= 0 {
		return 0, amountError(s, ErrNotPositive)
	}
	return centavos.IntPart(), nil
}

// checkSyntax accepts only digits[.digit[digit]]. decimal.NewFromString alone
// would accept signs, exponents and a leading or trailing dot; those are
// refused here so that a provider's formatting bug is noticed, not guessed at.
func checkSyntax(s string) error {
	if s == "" {
		return fmt.Errorf("%w: empty", ErrSyntax)
	}
	if len(s) > maxInputLen {
		return fmt.Errorf("%w: longer than %d characters", ErrSyntax, maxInputLen)
	}
	whole, frac, hasDot := strings.Cut(s, ".")
	if !allDigits(whole) || (hasDot && !allDigits(frac)) {
		return ErrSyntax
	}
	if len(frac) > 2 {
		return ErrTooManyDecimals
	}
	return nil
}

// allDigits reports whether s is non-empty and only ASCII digits.
func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// amountError wraps reason and ErrInvalidAmount; the input is quoted and
// truncated because it may come from an attacker.
func amountError(s string, reason error) error {
	return fmt.Errorf("%w %.24q: %w", ErrInvalidAmount, s, reason)
}

// FormatReais renders centavos as reais with exactly two decimals and the
// given separator: FormatReais(4990, '.') is "49.90", FormatReais(4990, ',')
// is "49,90", FormatReais(-5, '.') is "-0.05". Every int64, math.MinInt64
// included, is rendered exactly.
func FormatReais(centavos int64, decimalSep rune) string {
	// Work on the magnitude as uint64: -math.MinInt64 does not fit an int64.
	mag := uint64(centavos)
	if centavos < 0 {
		mag = ^mag + 1
	}
	var b strings.Builder
	if centavos < 0 {
		b.WriteByte('-')
	}
	b.WriteString(strconv.FormatUint(mag/100, 10))
	b.WriteRune(decimalSep)
	frac := mag % 100
	b.WriteByte(byte('0' + frac/10))
	b.WriteByte(byte('0' + frac%10))
	return b.String()
}
