package reports

import (
	"context"
	"fmt"

	"github.com/jmoiron/sqlx"

	"github.com/razao/razao/accounts"
	"github.com/razao/razao/internal/exact"
	"github.com/razao/razao/periods"
)

// SeriesPoint is one month of an account's series, the account's
// descendants of the same currency included. Signed amounts are debit
// positive.
type SeriesPoint struct {
	Month  string `json:"month"`
	Closed bool   `json:"closed"`
	// Opening is the balance before the month, from the beginning.
	Opening int64 `json:"opening"`
	Debits  int64 `json:"debits"`
	Credits int64 `json:"credits"`
	// Change is the month's movement: Debits − Credits.
	Change int64 `json:"change"`
	// Cumulative is the sum of Change from the range's first month
	// through this one.
	Cumulative int64 `json:"cumulative"`
	// Historical is the balance at the month's end, from the beginning:
	// Opening + Change.
	Historical int64 `json:"historical"`
}

// Series is one account's monthly series.
type Series struct {
	Account    string        `json:"account"`
	Type       string        `json:"type"`
	NormalSide string        `json:"normal_side"`
	Currency   string        `json:"currency"`
	From       string        `json:"from"`
	To         string        `json:"to"`
	Points     []SeriesPoint `json:"points"`
}

// AccountSeries returns the monthly series of the account with code (its
// descendants rolled up) for every month from from to to, inclusive, with
// the three views finance asks for: the month's change, the change
// cumulated within the range, and the historical balance, from s's moves.
func AccountSeries(ctx context.Context, q sqlx.QueryerContext, s Sums, code string, from, to periods.Month) (Series, error) {
	// Before any query: a NUL or invalid UTF-8 is refused by PostgreSQL
	// itself, which would read as a failure of the database.
	if err := accounts.ValidateCode(code); err != nil {
		return Series{}, err
	}
	if err := from.Check(); err != nil {
		return Series{}, err
	}
	if err := to.Check(); err != nil {
		return Series{}, err
	}
	n := (to.Year-from.Year)*12 + int(to.Month) - int(from.Month) + 1
	if n < 1 || n > MaxSeriesMonths {
		return Series{}, fmt.Errorf("%w: %s to %s (at most %d months, from not after to)", ErrInvalidRange, from, to, MaxSeriesMonths)
	}
	var out Series
	err := read(ctx, q, func(q sqlx.QueryerContext) error {
		var err error
		out, err = accountSeries(ctx, q, s, code, from, to, n)
		return err
	})
	return out, err
}

func accountSeries(ctx context.Context, q sqlx.QueryerContext, sums Sums, code string, from, to periods.Month, n int) (Series, error) {
	acct, err := accounts.Get(ctx, q, code)
	if err != nil {
		return Series{}, err
	}
	ids := []int64{}
	err = sqlx.SelectContext(ctx, q, &ids, `SELECT id FROM accounts WHERE (code = $1 OR starts_with(code, $1 || ':')) AND currency = $2`,
		acct.Code, acct.Currency)
	if err != nil {
		return Series{}, fmt.Errorf("series %s: accounts: %w", code, err)
	}
	moves, err := sums.Moves(ctx, q, acct.Code, ids, from, to)
	if err != nil {
		return Series{}, err
	}
	s := Series{Account: acct.Code, Type: string(acct.Type), NormalSide: acct.NormalSide, Currency: acct.Currency,
		From: from.String(), To: to.String(), Points: make([]SeriesPoint, 0, n)}
	opening := moves.Opening
	var cumulative int64
	var sum exact.Sums
	for i, m := 0, from; !to.Before(m); i, m = i+1, m.Next() {
		mv := moves.Months[i]
		change := sum.Sub(mv.Debits, mv.Credits, "change of", acct.Code)
		cumulative = sum.Add(cumulative, change, "cumulative change of", acct.Code)
		historical := sum.Add(opening, change, "historical balance of", acct.Code)
		s.Points = append(s.Points, SeriesPoint{
			Month: m.String(), Closed: mv.Closed, Opening: opening, Debits: mv.Debits, Credits: mv.Credits,
			Change: change, Cumulative: cumulative, Historical: historical,
		})
		opening = historical
	}
	if sum.Err() != nil {
		return Series{}, fmt.Errorf("series %s: %w", code, sum.Err())
	}
	return s, nil
}
