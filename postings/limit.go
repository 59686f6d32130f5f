package postings

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/lib/pq"

	"github.com/razao/razao/internal/kind"
	"github.com/razao/razao/money"
)

// ErrSumOverflow is wrapped when a sum of amounts (a balance, a report
// figure) does not fit int64 centavos: the figure is refused rather than
// answered wrong.
var ErrSumOverflow = kind.New(kind.Refused, "sum-overflow", "A figure does not fit int64 centavos", "sum does not fit int64 centavos").Precisely()

// WithLimit sets the largest amount the ledger posts, in one set or one
// leg (the configured max_amount; zero means money.DefaultMaxAmount), and
// returns l. Call it before l is shared.
func (l *Ledger) WithLimit(limit money.Limit) *Ledger {
	l.limit = limit
	return l
}

// Limit is the largest amount the ledger posts: what every caller that
// takes an amount in (a charge, a payout, a PSP's payment) checks it
// against first, so the refusal names its own field.
func (l *Ledger) Limit() money.Limit { return l.limit }

// checkLimit refuses a set whose amount or any leg is above limit. A leg
// in the set's currency is never larger than the amount (the sum of the
// debits, which the credits balance); a leg in another currency can be.
func (s *Set) checkLimit(limit money.Limit) error {
	if err := limit.Check("amount", s.Amount); err != nil {
		return fmt.Errorf("%w: %s %q: %w", ErrInvalid, s.Kind, s.IdempotencyKey, err)
	}
	for i, leg := range s.Legs {
		if !limit.Allows(leg.Amount) { // the field is named only when refused: this runs for every leg
			err := limit.Check(fmt.Sprintf("leg %d on %s", i, leg.Account), leg.Amount)
			return fmt.Errorf("%w: %s %q: %w", ErrInvalid, s.Kind, s.IdempotencyKey, err)
		}
	}
	return nil
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
