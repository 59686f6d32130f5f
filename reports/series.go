package reports

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/razao/razao/accounts"
	"github.com/razao/razao/internal/exact"
	"github.com/razao/razao/monthsums"
	"github.com/razao/razao/postings"
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

// seriesSnapshotSQL returns a row with a NULL month holding the closing
// balance of the snapshot before the range in debits, then (month,
// debits, credits) for the snapshotted months of the range with activity.
// $1 account ids, $2 the latest snapshot before the range (or NULL), $3
// the snapshotted months of the range. The other months are read from
// the month sums (monthsums). The sums are exact numerics, checked
// against int64 in Go.
const seriesSnapshotSQL = `
SELECT NULL::date AS month, coalesce((SELECT sum(s.closing) FROM trial_balance_snapshots s
		WHERE s.month = $2::date AND s.account_id = ANY($1::bigint[])), 0) AS debits, 0 AS credits
UNION ALL
SELECT s.month, sum(s.debits), sum(s.credits)
FROM trial_balance_snapshots s
WHERE s.month = ANY($3::date[]) AND s.account_id = ANY($1::bigint[])
GROUP BY s.month`

// AccountSeries returns the monthly series of the account with code (its
// descendants rolled up) for every month from from to to, inclusive, with
// the three views finance asks for: the month's change, the change
// cumulated within the range, and the historical balance. Closed months
// are read from their snapshots, so a long series costs the open months'
// postings only.
func AccountSeries(ctx context.Context, q sqlx.QueryerContext, code string, from, to postings.Month) (Series, error) {
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
	var s Series
	err := read(ctx, q, func(q sqlx.QueryerContext) error {
		var err error
		s, err = accountSeries(ctx, q, code, from, to, n)
		return err
	})
	return s, err
}

func accountSeries(ctx context.Context, q sqlx.QueryerContext, code string, from, to postings.Month, n int) (Series, error) {
	acct, err := accounts.Get(ctx, q, code)
	if err != nil {
		return Series{}, err
	}
	var st struct {
		Base    sql.NullTime   `db:"base"`
		Snapped pq.StringArray `db:"snapped"`
		Closed  pq.StringArray `db:"closed"`
	}
	err = sqlx.GetContext(ctx, q, &st, `SELECT
		(SELECT max(month) FROM month_snapshots WHERE month < $1) AS base,
		ARRAY(SELECT to_char(month, 'YYYY-MM') FROM month_snapshots WHERE month BETWEEN $1 AND $2) AS snapped,
		ARRAY(SELECT to_char(d, 'YYYY-MM') FROM generate_series($1::date::timestamp, $2::date::timestamp, interval '1 month') d
			WHERE `+postings.MonthClosedSQL("d::date")+`) AS closed`,
		from.First(), to.First())
	if err != nil {
		return Series{}, fmt.Errorf("series %s: read periods: %w", code, err)
	}
	snapped, closed := set(st.Snapped), set(st.Closed)
	var snapMonths []string
	var live []postings.Month
	for m := from; !to.Before(m); m = m.Next() {
		if snapped[m.String()] {
			snapMonths = append(snapMonths, m.First().Format(time.DateOnly))
		} else {
			live = append(live, m)
		}
	}
	ids := []int64{}
	err = sqlx.SelectContext(ctx, q, &ids, `SELECT id FROM accounts WHERE (code = $1 OR starts_with(code, $1 || ':')) AND currency = $2`,
		acct.Code, acct.Currency)
	if err != nil {
		return Series{}, fmt.Errorf("series %s: accounts: %w", code, err)
	}
	var rows []struct {
		Month   sql.NullTime `db:"month"`
		Debits  postings.Sum `db:"debits"`
		Credits postings.Sum `db:"credits"`
	}
	err = sqlx.SelectContext(ctx, q, &rows, seriesSnapshotSQL, pq.Array(ids), st.Base, pq.StringArray(snapMonths))
	if err != nil {
		return Series{}, fmt.Errorf("series %s: %w", code, err)
	}
	// The months between the snapshot and the range make the opening; the
	// range's months without a snapshot are read as they are.
	before, err := monthsums.MonthsBetween(ctx, q, st.Base, from)
	if err != nil {
		return Series{}, fmt.Errorf("series %s: %w", code, err)
	}
	flows, err := monthsums.Cached.Flows(ctx, q, monthsums.Query{Months: append(before, live...), Accounts: ids})
	if err != nil {
		return Series{}, fmt.Errorf("series %s: %w", code, err)
	}
	var openingSum exact.Wide
	type dc struct{ debits, credits exact.Wide }
	liveMoves := map[postings.Month]*dc{}
	for k, f := range flows {
		if k.Month.Before(from) {
			openingSum.AddWide(f.Net())
			continue
		}
		mv := liveMoves[k.Month]
		if mv == nil {
			mv = &dc{}
			liveMoves[k.Month] = mv
		}
		mv.debits.AddWide(f.Debits)
		mv.credits.AddWide(f.Credits)
	}
	var opening int64
	moves := map[postings.Month][2]int64{}
	var fits exact.Sums
	for m, mv := range liveMoves {
		moves[m] = [2]int64{fits.Fit(mv.debits, "debits of", acct.Code), fits.Fit(mv.credits, "credits of", acct.Code)}
	}
	if fits.Err() != nil {
		return Series{}, fmt.Errorf("series %s: %w", code, fits.Err())
	}
	for _, r := range rows {
		if !r.Month.Valid {
			base, err := r.Debits.Int64("opening balance of", acct.Code)
			if err != nil {
				return Series{}, fmt.Errorf("series %s from %s: %w", code, from, err)
			}
			openingSum.Add(base)
			if opening = fits.Fit(openingSum, "opening balance of", acct.Code); fits.Err() != nil {
				return Series{}, fmt.Errorf("series %s from %s: %w", code, from, fits.Err())
			}
			continue
		}
		m := monthOf(r.Month.Time)
		debits, err := r.Debits.Int64("debits of", acct.Code)
		if err != nil {
			return Series{}, fmt.Errorf("series %s in %s: %w", code, m, err)
		}
		credits, err := r.Credits.Int64("credits of", acct.Code)
		if err != nil {
			return Series{}, fmt.Errorf("series %s in %s: %w", code, m, err)
		}
		moves[m] = [2]int64{debits, credits}
	}
	s := Series{Account: acct.Code, Type: string(acct.Type), NormalSide: acct.NormalSide, Currency: acct.Currency,
		From: from.String(), To: to.String(), Points: make([]SeriesPoint, 0, n)}
	var cumulative int64
	var sum exact.Sums
	for m := from; !to.Before(m); m = m.Next() {
		mv := moves[m]
		change := sum.Sub(mv[0], mv[1], "change of", acct.Code)
		cumulative = sum.Add(cumulative, change, "cumulative change of", acct.Code)
		historical := sum.Add(opening, change, "historical balance of", acct.Code)
		s.Points = append(s.Points, SeriesPoint{
			Month: m.String(), Closed: closed[m.String()], Opening: opening, Debits: mv[0], Credits: mv[1],
			Change: change, Cumulative: cumulative, Historical: historical,
		})
		opening = historical
	}
	if sum.Err() != nil {
		return Series{}, fmt.Errorf("series %s: %w", code, sum.Err())
	}
	return s, nil
}

func set(ss []string) map[string]bool {
	out := make(map[string]bool, len(ss))
	for _, s := range ss {
		out[s] = true
	}
	return out
}
