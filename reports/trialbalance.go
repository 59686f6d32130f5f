package reports

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"slices"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/razao/razao/accounts"
	"github.com/razao/razao/internal/exact"
	"github.com/razao/razao/monthsums"
	"github.com/razao/razao/postings"
)

// TrialBalanceLine is one account in a month, its descendants of the same
// currency rolled up into it. Amounts are centavos; Opening and Closing are
// signed (debit positive), Debits and Credits are both positive, and
// Closing = Opening + Debits − Credits.
type TrialBalanceLine struct {
	Account    string `json:"account"`
	Type       string `json:"type"`
	NormalSide string `json:"normal_side"`
	Currency   string `json:"currency"`
	Opening    int64  `json:"opening"`
	Debits     int64  `json:"debits"`
	Credits    int64  `json:"credits"`
	Closing    int64  `json:"closing"`
}

// TrialBalanceTotal sums every posting of one currency, each counted once
// (not once per ancestor). Balanced is true when opening and closing are
// zero and debits equal credits, as double entry requires.
type TrialBalanceTotal struct {
	Currency string `json:"currency"`
	Opening  int64  `json:"opening"`
	Debits   int64  `json:"debits"`
	Credits  int64  `json:"credits"`
	Closing  int64  `json:"closing"`
	Balanced bool   `json:"balanced"`
}

// TrialBalanceReport is a month's trial balance.
type TrialBalanceReport struct {
	Month string `json:"month"`
	// Closed is true when the month is closed: its figures are final.
	Closed bool `json:"closed"`
	// Snapshot is true when the figures were read from the snapshot taken
	// at close rather than computed from postings.
	Snapshot bool `json:"snapshot"`
	// Lines lists the accounts with an opening balance or activity in the
	// month, and their ancestors, ordered by code (bytewise).
	Lines  []TrialBalanceLine  `json:"lines"`
	Totals []TrialBalanceTotal `json:"totals"`
}

// TrialBalance returns the trial balance of month m: per account, the
// opening balance (every posting of an earlier month), the month's debits
// and credits, and the closing balance, parents rolled up by code prefix.
// A snapshotted (closed) month is read from its snapshot; any other month is
// computed from the latest snapshot before it plus the postings since.
func TrialBalance(ctx context.Context, q sqlx.QueryerContext, m postings.Month) (TrialBalanceReport, error) {
	if err := m.Check(); err != nil {
		return TrialBalanceReport{}, err
	}
	var tb TrialBalanceReport
	err := read(ctx, q, func(q sqlx.QueryerContext) error {
		var err error
		tb, err = trialBalance(ctx, q, m)
		return err
	})
	return tb, err
}

func trialBalance(ctx context.Context, q sqlx.QueryerContext, m postings.Month) (TrialBalanceReport, error) {
	st, err := readMonthState(ctx, q, m)
	if err != nil {
		return TrialBalanceReport{}, err
	}
	var own []ownLine
	if st.Snapshot {
		own, err = snapshotOwnLines(ctx, q, m)
	} else if own, err = liveOwnLines(ctx, q, m, st.Base, false); err == nil {
		own = keepShown(own)
	}
	if err != nil {
		return TrialBalanceReport{}, err
	}
	lines, totals, err := rollUp(own)
	if err != nil {
		return TrialBalanceReport{}, fmt.Errorf("trial balance %s: %w", m, err)
	}
	return TrialBalanceReport{Month: m.String(), Closed: st.Closed, Snapshot: st.Snapshot, Lines: lines, Totals: totals}, nil
}

// monthState is what a report needs to know about a month before reading it.
type monthState struct {
	Closed   bool `db:"closed"`
	Snapshot bool `db:"snapshot"`
	// Base is the latest snapshotted month before the month, if any.
	Base sql.NullTime `db:"base"`
}

// readMonthState reads month m's state (closed: postings.MonthClosedSQL).
func readMonthState(ctx context.Context, q sqlx.QueryerContext, m postings.Month) (monthState, error) {
	var st monthState
	err := sqlx.GetContext(ctx, q, &st, `SELECT
		`+postings.MonthClosedSQL("$1::date")+` AS closed,
		EXISTS (SELECT 1 FROM month_snapshots WHERE month = $1) AS snapshot,
		(SELECT max(month) FROM month_snapshots WHERE month < $1) AS base`, m.First())
	if err != nil {
		return monthState{}, fmt.Errorf("month %s: read state: %w", m, err)
	}
	return st, nil
}

// ownLine is one account's own figures in a month: its postings only, not
// its descendants'.
type ownLine struct {
	AccountID  int64  `db:"account_id"`
	Code       string `db:"code"`
	Type       string `db:"type"`
	NormalSide string `db:"normal_side"`
	Currency   string `db:"currency"`
	Opening    int64  `db:"opening"`
	Debits     int64  `db:"debits"`
	Credits    int64  `db:"credits"`
}

func (l ownLine) zero() bool { return l.Opening == 0 && l.Debits == 0 && l.Credits == 0 }

// liveOwnLines computes every account's own figures for month m from the
// snapshot of month base (the latest before m, NULL if none) and the month
// sums (monthsums) of the months since, m included: the cost grows with
// the sets since the month sums were refreshed, not with the ledger.
func liveOwnLines(ctx context.Context, q sqlx.QueryerContext, m postings.Month, base sql.NullTime, fromPostings bool) ([]ownLine, error) {
	var accts []ownLine
	err := sqlx.SelectContext(ctx, q, &accts, `SELECT a.id AS account_id, a.code, a.type, a.normal_side, a.currency,
		coalesce(s.closing, 0) AS opening, 0 AS debits, 0 AS credits
		FROM accounts a LEFT JOIN trial_balance_snapshots s ON s.month = $1::date AND s.account_id = a.id`, base)
	if err != nil {
		return nil, fmt.Errorf("trial balance %s: accounts: %w", m, err)
	}
	months, err := monthsums.MonthsBetween(ctx, q, base, m)
	if err != nil {
		return nil, fmt.Errorf("trial balance %s: %w", m, err)
	}
	flows, err := reader(fromPostings).Flows(ctx, q, monthsums.Query{Months: append(months, m)})
	if err != nil {
		return nil, fmt.Errorf("trial balance %s: %w", m, err)
	}
	type figures struct{ opening, debits, credits exact.Wide }
	byID := make(map[int64]*figures, len(accts))
	for i := range accts {
		f := &figures{}
		f.opening.Add(accts[i].Opening)
		byID[accts[i].AccountID] = f
	}
	for k, fl := range flows {
		f := byID[k.Account]
		if f == nil {
			return nil, fmt.Errorf("trial balance %s: postings on account %d, which does not exist", m, k.Account)
		}
		if k.Month == m {
			f.debits.AddWide(fl.Debits)
			f.credits.AddWide(fl.Credits)
		} else {
			f.opening.AddWide(fl.Net())
		}
	}
	var sum exact.Sums
	for i := range accts {
		f := byID[accts[i].AccountID]
		accts[i].Opening = sum.Fit(f.opening, "opening of", accts[i].Code)
		accts[i].Debits = sum.Fit(f.debits, "debits of", accts[i].Code)
		accts[i].Credits = sum.Fit(f.credits, "credits of", accts[i].Code)
	}
	if sum.Err() != nil {
		return nil, fmt.Errorf("trial balance %s: %w", m, sum.Err())
	}
	return accts, nil
}

// ownSums is an ownLine as the database sums it, before its figures are
// known to fit int64.
type ownSums struct {
	AccountID  int64        `db:"account_id"`
	Code       string       `db:"code"`
	Type       string       `db:"type"`
	NormalSide string       `db:"normal_side"`
	Currency   string       `db:"currency"`
	Opening    postings.Sum `db:"opening"`
	Debits     postings.Sum `db:"debits"`
	Credits    postings.Sum `db:"credits"`
}

// fitOwn checks every figure of rows fits int64: the first that does not
// is ErrSumOverflow naming it and its account.
func fitOwn(rows []ownSums) ([]ownLine, error) {
	own := make([]ownLine, len(rows))
	for i, r := range rows {
		l := ownLine{AccountID: r.AccountID, Code: r.Code, Type: r.Type, NormalSide: r.NormalSide, Currency: r.Currency}
		var err error
		if l.Opening, err = r.Opening.Int64("opening of", r.Code); err != nil {
			return nil, err
		}
		if l.Debits, err = r.Debits.Int64("debits of", r.Code); err != nil {
			return nil, err
		}
		if l.Credits, err = r.Credits.Int64("credits of", r.Code); err != nil {
			return nil, err
		}
		own[i] = l
	}
	return own, nil
}

func snapshotOwnLines(ctx context.Context, q sqlx.QueryerContext, m postings.Month) ([]ownLine, error) {
	var own []ownLine
	err := sqlx.SelectContext(ctx, q, &own, `
		SELECT a.id AS account_id, a.code, a.type, a.normal_side, a.currency, s.opening, s.debits, s.credits
		FROM trial_balance_snapshots s JOIN accounts a ON a.id = s.account_id
		WHERE s.month = $1`, m.First())
	if err != nil {
		return nil, fmt.Errorf("trial balance %s: read snapshot: %w", m, err)
	}
	return own, nil
}

// ancestors calls fn with each proper ancestor code of code, nearest first:
// "a:b:c" gives "a:b" then "a". Ancestors are found by code prefix whether
// or not each intermediate account exists.
func ancestors(code string, fn func(string)) {
	for p := accounts.Parent(code); p != ""; p = accounts.Parent(p) {
		fn(p)
	}
}

// keepShown returns, ordered by code, the lines a trial balance shows: an
// account with an opening balance or activity, and every existing ancestor
// of one in the same currency.
func keepShown(all []ownLine) []ownLine {
	slices.SortFunc(all, func(a, b ownLine) int { return cmp.Compare(a.Code, b.Code) })
	index := make(map[string]int, len(all))
	for i, l := range all {
		index[l.Code] = i
	}
	keep := make([]bool, len(all))
	for i, l := range all {
		if l.zero() {
			continue
		}
		keep[i] = true
		ancestors(l.Code, func(p string) {
			if j, ok := index[p]; ok && all[j].Currency == l.Currency {
				keep[j] = true
			}
		})
	}
	var out []ownLine
	for i, l := range all {
		if keep[i] {
			out = append(out, l)
		}
	}
	return out
}

// rollUp turns own figures into report lines, each account carrying its
// descendants of the same currency among own, ordered by code, and the
// totals per currency. It reads nothing but own: a snapshot rolls up the
// same way whatever accounts were created after it. Every sum is checked:
// a figure that does not fit int64 is ErrSumOverflow, naming it.
func rollUp(own []ownLine) ([]TrialBalanceLine, []TrialBalanceTotal, error) {
	sorted := slices.Clone(own)
	slices.SortFunc(sorted, func(a, b ownLine) int { return cmp.Compare(a.Code, b.Code) })
	lines := make([]TrialBalanceLine, len(sorted))
	index := make(map[string]int, len(sorted))
	for i, l := range sorted {
		lines[i] = TrialBalanceLine{Account: l.Code, Type: l.Type, NormalSide: l.NormalSide, Currency: l.Currency}
		index[l.Code] = i
	}
	// Each figure is summed in 128 bits and checked once, when it is
	// known whole.
	type figures struct{ opening, debits, credits exact.Wide }
	wl := make([]figures, len(sorted))
	totals := map[string]*figures{}
	add := func(f *figures, l ownLine) {
		f.opening.Add(l.Opening)
		f.debits.Add(l.Debits)
		f.credits.Add(l.Credits)
	}
	var currencies []string
	for i, l := range sorted {
		add(&wl[i], l)
		ancestors(l.Code, func(p string) {
			if j, ok := index[p]; ok && lines[j].Currency == l.Currency {
				add(&wl[j], l)
			}
		})
		t := totals[l.Currency]
		if t == nil {
			t = &figures{}
			totals[l.Currency] = t
			currencies = append(currencies, l.Currency)
		}
		add(t, l)
	}
	var sum exact.Sums
	fit := func(f figures, what string) (opening, debits, credits, closing int64) {
		c := f.opening
		c.AddWide(f.debits)
		c.SubWide(f.credits)
		return sum.Fit(f.opening, "opening of", what), sum.Fit(f.debits, "debits of", what),
			sum.Fit(f.credits, "credits of", what), sum.Fit(c, "closing of", what)
	}
	for i := range lines {
		lines[i].Opening, lines[i].Debits, lines[i].Credits, lines[i].Closing = fit(wl[i], lines[i].Account)
	}
	slices.Sort(currencies)
	out := make([]TrialBalanceTotal, 0, len(totals))
	for _, cur := range currencies {
		t := TrialBalanceTotal{Currency: cur}
		t.Opening, t.Debits, t.Credits, t.Closing = fit(*totals[cur], "the total in "+cur)
		t.Balanced = t.Opening == 0 && t.Closing == 0 && t.Debits == t.Credits
		out = append(out, t)
	}
	if sum.Err() != nil {
		return nil, nil, sum.Err()
	}
	return lines, out, nil
}

// reader is where a report reads month sums from: the postings alone for
// a snapshot (fromPostings), else the cache and the sets since.
func reader(fromPostings bool) monthsums.Reader {
	if fromPostings {
		return monthsums.Postings
	}
	return monthsums.Cached
}

// monthOf converts a date column to a Month.
func monthOf(t time.Time) postings.Month { return postings.MonthOf(t.UTC()) }
