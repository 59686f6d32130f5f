// Package exact adds int64 centavos without ever answering a wrong figure:
// a report's sums are kept in 128 bits (Wide) and checked once whole
// (Sums.Fit), a sum the database computes is read as the exact numeric it
// is (Sum), and a figure that does not fit int64 is ErrSumOverflow naming
// it. It depends on no other razao package, so that every package that
// reads or stores figures (periods' snapshots among them) can use it.
package exact

import (
	"errors"
	"fmt"
	"math/bits"
	"strconv"

	"github.com/lib/pq"

	"github.com/razao/razao/internal/kind"
	"github.com/razao/razao/money"
)

// ErrSumOverflow is wrapped when a sum of amounts (a balance, a report
// figure) does not fit int64 centavos: the figure is refused rather than
// answered wrong. postings.ErrSumOverflow is this error.
var ErrSumOverflow = kind.New(kind.Refused, "sum-overflow", "A figure does not fit int64 centavos", "sum does not fit int64 centavos").Precisely()

// Sums does a report's int64 arithmetic with every step checked. The
// first step that overflows is kept (Err); later results are meaningless
// until Err is checked, which the report does before returning anything.
type Sums struct{ err error }

// Err is the first overflow, nil when every step fitted.
func (s *Sums) Err() error { return s.err }

// Add returns a+b. The figure is named by what and of (the figure and the
// account or currency it is of), joined only on overflow, so the sums of
// a report allocate nothing.
func (s *Sums) Add(a, b int64, what, of string) int64 {
	c, ok := money.Add(a, b)
	if !ok {
		s.Overflow(what, of)
	}
	return c
}

// Sub returns a−b, named as Add.
func (s *Sums) Sub(a, b int64, what, of string) int64 {
	c, ok := money.Sub(a, b)
	if !ok {
		s.Overflow(what, of)
	}
	return c
}

// Overflow records that the figure named by what and of does not fit,
// unless an earlier one was recorded.
func (s *Sums) Overflow(what, of string) {
	if s.err == nil {
		if of != "" {
			what += " " + of
		}
		s.err = fmt.Errorf("%w: %s", ErrSumOverflow, what)
	}
}

// Fit returns w as an int64, recording an overflow of the figure named by
// what and of when it does not fit.
func (s *Sums) Fit(w Wide, what, of string) int64 {
	v := int64(w.lo)
	if w.hi != v>>63 {
		s.Overflow(what, of)
	}
	return v
}

// Wide is a 128-bit signed sum of int64s: no sum of fewer than 2^63 of
// them overflows it, so a report adds every figure exactly and checks
// only the result (Sums.Fit), never refusing a figure whose partial sums
// strayed beyond int64 on the way.
type Wide struct {
	hi int64
	lo uint64
}

// Add adds v to w.
func (w *Wide) Add(v int64) {
	var carry uint64
	w.lo, carry = bits.Add64(w.lo, uint64(v), 0)
	w.hi += v>>63 + int64(carry)
}

// AddWide adds v to w.
func (w *Wide) AddWide(v Wide) {
	var carry uint64
	w.lo, carry = bits.Add64(w.lo, v.lo, 0)
	w.hi += v.hi + int64(carry)
}

// SubWide subtracts v from w.
func (w *Wide) SubWide(v Wide) {
	var borrow uint64
	w.lo, borrow = bits.Sub64(w.lo, v.lo, 0)
	w.hi -= v.hi + int64(borrow)
}

// Sum is a sum column as the database computes it: sum(bigint) is an
// exact numeric, read here without a cast to bigint, so that one that does
// not fit int64 is known as such (and named by the caller) instead of
// failing the statement or the scan. NULL, a sum of no rows, is 0.
type Sum struct {
	Value    int64
	Overflow bool
}

// Scan implements sql.Scanner for integer and numeric columns.
func (s *Sum) Scan(src any) error {
	var text string
	switch v := src.(type) {
	case nil:
		*s = Sum{}
		return nil
	case int64:
		*s = Sum{Value: v}
		return nil
	case []byte:
		text = string(v)
	case string:
		text = v
	default:
		return fmt.Errorf("sum: cannot scan %T", src)
	}
	n, err := strconv.ParseInt(text, 10, 64)
	switch {
	case err == nil:
		*s = Sum{Value: n}
	case errors.Is(err, strconv.ErrRange):
		*s = Sum{Overflow: true}
	default:
		return fmt.Errorf("sum: %q is not an integer", text)
	}
	return nil
}

// Int64 returns the sum, or ErrSumOverflow naming the figure: what, then
// of when not empty ("debits of", "assets:cash"), joined only then.
func (s Sum) Int64(what, of string) (int64, error) {
	if s.Overflow {
		if of != "" {
			what += " " + of
		}
		return 0, fmt.Errorf("%w: %s", ErrSumOverflow, what)
	}
	return s.Value, nil
}

// SumError wraps err with ErrSumOverflow, naming figure, when the database
// refused a sum because it does not fit a bigint (SQLSTATE 22003,
// numeric_value_out_of_range); other errors are returned unchanged. An
// empty figure leaves the naming to err's own context.
func SumError(err error, figure string) error {
	var pqErr *pq.Error
	if errors.As(err, &pqErr) && pqErr.Code == "22003" {
		if figure == "" {
			return fmt.Errorf("%w: %w", ErrSumOverflow, err)
		}
		return fmt.Errorf("%w: %s: %w", ErrSumOverflow, figure, err)
	}
	return err
}
