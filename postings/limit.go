package postings

import (
	"fmt"

	"github.com/razao/razao/internal/exact"
	"github.com/razao/razao/money"
)

// ErrSumOverflow is wrapped when a sum of amounts (a balance, a report
// figure) does not fit int64 centavos: the figure is refused rather than
// answered wrong.
var ErrSumOverflow = exact.ErrSumOverflow

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
