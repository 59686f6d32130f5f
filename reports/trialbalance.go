package reports

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/jmoiron/sqlx"

	"github.com/razao/razao/accounts"
	"github.com/razao/razao/internal/exact"
	"github.com/razao/razao/periods"
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
// and credits, and the closing balance, parents rolled up by code prefix,
// from s's lines.
func TrialBalance(ctx context.Context, q sqlx.QueryerContext, s Sums, m periods.Month) (TrialBalanceReport, error) {
	if err := m.Check(); err != nil {
		return TrialBalanceReport{}, err
	}
	var tb TrialBalanceReport
	err := read(ctx, q, func(q sqlx.QueryerContext) error {
		var err error
		tb, err = trialBalance(ctx, q, s, m)
		return err
	})
	return tb, err
}

func trialBalance(ctx context.Context, q sqlx.QueryerContext, s Sums, m periods.Month) (TrialBalanceReport, error) {
	own, err := s.Lines(ctx, q, m)
	if err != nil {
		return TrialBalanceReport{}, err
	}
	lines, totals, err := rollUp(own.Lines)
	if err != nil {
		return TrialBalanceReport{}, fmt.Errorf("trial balance %s: %w", m, err)
	}
	return TrialBalanceReport{Month: m.String(), Closed: own.Closed, Snapshot: own.Snapshot, Lines: lines, Totals: totals}, nil
}

// ancestors calls fn with each proper ancestor code of code, nearest first:
// "a:b:c" gives "a:b" then "a". Ancestors are found by code prefix whether
// or not each intermediate account exists.
func ancestors(code string, fn func(string)) {
	for p := accounts.Parent(code); p != ""; p = accounts.Parent(p) {
		fn(p)
	}
}

// rollUp turns own figures into report lines, each account carrying its
// descendants of the same currency among own, ordered by code, and the
// totals per currency. It reads nothing but own: a snapshot rolls up the
// same way whatever accounts were created after it. Every sum is checked:
// a figure that does not fit int64 is ErrSumOverflow, naming it.
func rollUp(own []periods.Line) ([]TrialBalanceLine, []TrialBalanceTotal, error) {
	sorted := slices.Clone(own)
	slices.SortFunc(sorted, func(a, b periods.Line) int { return cmp.Compare(a.Code, b.Code) })
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
	add := func(f *figures, l periods.Line) {
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
