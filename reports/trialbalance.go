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
	if err := checkMonth(m); err != nil {
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
	} else if own, err = liveOwnLines(ctx, q, m, st.Base); err == nil {
		own = keepShown(own)
	}
	if err != nil {
		return TrialBalanceReport{}, err
	}
	lines, totals := rollUp(own)
	return TrialBalanceReport{Month: m.String(), Closed: st.Closed, Snapshot: st.Snapshot, Lines: lines, Totals: totals}, nil
}

// monthState is what a report needs to know about a month before reading it.
type monthState struct {
	Closed   bool `db:"closed"`
	Snapshot bool `db:"snapshot"`
	// Base is the latest snapshotted month before the month, if any.
	Base sql.NullTime `db:"base"`
}

func readMonthState(ctx context.Context, q sqlx.QueryerContext, m postings.Month) (monthState, error) {
	var st monthState
	err := sqlx.GetContext(ctx, q, &st, `SELECT
		EXISTS (SELECT 1 FROM closed_periods WHERE month = $1) AS closed,
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

// liveOwnLinesSQL computes every account's own figures for month $1 from
// the snapshot of month $2 (the latest before $1, NULL if none) and the
// postings since. Each account is read by range scans of
// ix_postings_account_month (index-only: amount is included), so the cost
// grows with the postings of the months after the snapshot, not with the
// ledger.
const liveOwnLinesSQL = `
SELECT a.id AS account_id, a.code, a.type, a.normal_side, a.currency,
	(coalesce(s.closing, 0) + coalesce(g.total, 0))::bigint AS opening,
	coalesce(x.debits, 0)::bigint AS debits,
	coalesce(x.credits, 0)::bigint AS credits
FROM accounts a
LEFT JOIN trial_balance_snapshots s ON s.month = $2::date AND s.account_id = a.id
CROSS JOIN LATERAL (
	SELECT sum(p.amount) AS total FROM postings p
	WHERE p.account_id = a.id AND p.competence_month > coalesce($2::date, '-infinity') AND p.competence_month < $1::date
) g
CROSS JOIN LATERAL (
	SELECT sum(p.amount) FILTER (WHERE p.amount > 0) AS debits,
		-sum(p.amount) FILTER (WHERE p.amount < 0) AS credits
	FROM postings p WHERE p.account_id = a.id AND p.competence_month = $1::date
) x`

func liveOwnLines(ctx context.Context, q sqlx.QueryerContext, m postings.Month, base sql.NullTime) ([]ownLine, error) {
	var own []ownLine
	if err := sqlx.SelectContext(ctx, q, &own, liveOwnLinesSQL, m.First(), base); err != nil {
		return nil, fmt.Errorf("trial balance %s: %w", m, err)
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
// same way whatever accounts were created after it.
func rollUp(own []ownLine) ([]TrialBalanceLine, []TrialBalanceTotal) {
	sorted := slices.Clone(own)
	slices.SortFunc(sorted, func(a, b ownLine) int { return cmp.Compare(a.Code, b.Code) })
	lines := make([]TrialBalanceLine, len(sorted))
	index := make(map[string]int, len(sorted))
	for i, l := range sorted {
		lines[i] = TrialBalanceLine{Account: l.Code, Type: l.Type, NormalSide: l.NormalSide, Currency: l.Currency}
		index[l.Code] = i
	}
	totals := map[string]*TrialBalanceTotal{}
	add := func(i int, l ownLine) {
		lines[i].Opening += l.Opening
		lines[i].Debits += l.Debits
		lines[i].Credits += l.Credits
	}
	for i, l := range sorted {
		add(i, l)
		ancestors(l.Code, func(p string) {
			if j, ok := index[p]; ok && lines[j].Currency == l.Currency {
				add(j, l)
			}
		})
		t := totals[l.Currency]
		if t == nil {
			t = &TrialBalanceTotal{Currency: l.Currency}
			totals[l.Currency] = t
		}
		t.Opening += l.Opening
		t.Debits += l.Debits
		t.Credits += l.Credits
	}
	for i := range lines {
		lines[i].Closing = lines[i].Opening + lines[i].Debits - lines[i].Credits
	}
	out := make([]TrialBalanceTotal, 0, len(totals))
	for _, t := range totals {
		t.Closing = t.Opening + t.Debits - t.Credits
		t.Balanced = t.Opening == 0 && t.Closing == 0 && t.Debits == t.Credits
		out = append(out, *t)
	}
	slices.SortFunc(out, func(a, b TrialBalanceTotal) int { return cmp.Compare(a.Currency, b.Currency) })
	return lines, out
}

// monthOf converts a date column to a Month.
func monthOf(t time.Time) postings.Month { return postings.MonthOf(t.UTC()) }
