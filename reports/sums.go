package reports

import (
	"fmt"
	"math/bits"

	"github.com/razao/razao/money"
	"github.com/razao/razao/postings"
)

// ErrSumOverflow: a report figure does not fit int64 centavos. Every sum a
// report makes is checked (in SQL, each is cast to bigint, which raises
// rather than wraps; in Go, by sums), so a figure is refused, naming it,
// rather than answered wrong. Each amount is bounded by the configured
// maximum and the database's ceiling (money.Ceiling), so this takes at
// least 9,223 postings of R$ 10 trillion: a ledger that has been attacked
// or corrupted, never one that has only traded.
var ErrSumOverflow = postings.ErrSumOverflow

// sums does a report's int64 arithmetic with every step checked. The first
// step that overflows is kept in err; later results are meaningless until
// err is checked, which the report does before returning anything.
type sums struct{ err error }

// add returns a+b. The figure is named by what and of (the figure and the
// account or currency it is of), joined only on overflow, so the sums of
// a report allocate nothing.
func (s *sums) add(a, b int64, what, of string) int64 {
	c, ok := money.Add(a, b)
	if !ok {
		s.overflow(what, of)
	}
	return c
}

// sub returns a−b, named as add.
func (s *sums) sub(a, b int64, what, of string) int64 {
	c, ok := money.Sub(a, b)
	if !ok {
		s.overflow(what, of)
	}
	return c
}

func (s *sums) overflow(what, of string) {
	if s.err == nil {
		if of != "" {
			what += " " + of
		}
		s.err = fmt.Errorf("%w: %s", ErrSumOverflow, what)
	}
}

// wide is a 128-bit signed sum of int64s: no sum of fewer than 2^63 of
// them overflows it, so a report adds every figure exactly and checks
// only the result (fit), never refusing a figure whose partial sums
// strayed beyond int64 on the way.
type wide struct {
	hi int64
	lo uint64
}

func (w *wide) add(v int64) {
	var carry uint64
	w.lo, carry = bits.Add64(w.lo, uint64(v), 0)
	w.hi += v>>63 + int64(carry)
}

func (w *wide) addWide(v wide) {
	var carry uint64
	w.lo, carry = bits.Add64(w.lo, v.lo, 0)
	w.hi += v.hi + int64(carry)
}

func (w *wide) subWide(v wide) {
	var borrow uint64
	w.lo, borrow = bits.Sub64(w.lo, v.lo, 0)
	w.hi -= v.hi + int64(borrow)
}

// fit returns w as an int64, recording an overflow of the figure named by
// what and of when it does not fit.
func (s *sums) fit(w wide, what, of string) int64 {
	v := int64(w.lo)
	if w.hi != v>>63 {
		s.overflow(what, of)
	}
	return v
}
