package reports_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/razao/razao/internal/ledgertest"
	"github.com/razao/razao/monthsums"
	"github.com/razao/razao/periods"
	"github.com/razao/razao/postings"
	"github.com/razao/razao/reports"
)

func line(account, typ, side string, opening, debits, credits, closing int64) reports.TrialBalanceLine {
	return reports.TrialBalanceLine{Account: account, Type: typ, NormalSide: side, Currency: "BRL",
		Opening: opening, Debits: debits, Credits: credits, Closing: closing}
}

func diffLines(t *testing.T, got, want []reports.TrialBalanceLine) {
	t.Helper()
	for i := 0; i < max(len(got), len(want)); i++ {
		var g, w reports.TrialBalanceLine
		if i < len(got) {
			g = got[i]
		}
		if i < len(want) {
			w = want[i]
		}
		if g != w {
			t.Errorf("line %d:\n got %+v\nwant %+v", i, g, w)
		}
	}
}

// TestTrialBalanceAndIncomeOfScriptedMonths books August (sales,
// commissions, a payout) and September (partial refunds of August sales,
// reversals, a sale, a payout), then checks every figure of every month:
// August is what it was although its sales were refunded in September.
func TestTrialBalanceAndIncomeOfScriptedMonths(t *testing.T) {
	t.Parallel()
	l, db := ledgertest.New(t)
	ledgertest.PostAugust(t, l)
	ledgertest.PostSeptember(t, l)

	tests := []struct {
		month  periods.Month
		lines  []reports.TrialBalanceLine
		totals []reports.TrialBalanceTotal
		income reports.Income
	}{{
		month:  jul2026,
		lines:  []reports.TrialBalanceLine{},
		totals: []reports.TrialBalanceTotal{},
		income: reports.Income{Month: "2026-07", Currency: "BRL"},
	}, {
		month: aug2026,
		lines: []reports.TrialBalanceLine{
			line("assets", "asset", "debit", 0, 17265, 500, 16765),
			line("assets:cash", "asset", "debit", 0, 17265, 500, 16765),
			line("expenses", "expense", "debit", 0, 1474, 0, 1474),
			line("expenses:commission", "expense", "debit", 0, 1249, 0, 1249),
			line("expenses:psp-fees", "expense", "debit", 0, 225, 0, 225),
			line("income", "income", "credit", 0, 0, 17490, -17490),
			line("income:revenue", "income", "credit", 0, 0, 17490, -17490),
			line("liabilities", "liability", "credit", 0, 500, 1249, -749),
			line("liabilities:commission-payable", "liability", "credit", 0, 500, 1249, -749),
			line("liabilities:commission-payable:p1", "liability", "credit", 0, 500, 1000, -500),
			line("liabilities:commission-payable:p2", "liability", "credit", 0, 0, 249, -249),
		},
		totals: []reports.TrialBalanceTotal{{Currency: "BRL", Debits: 19239, Credits: 19239, Balanced: true}},
		income: reports.Income{Month: "2026-08", Currency: "BRL", Sales: 17490, SalesCount: 3, NetRevenue: 17490,
			Commission: 1249, PSPFees: 225, NetIncome: 16016},
	}, {
		month: sep2026,
		lines: []reports.TrialBalanceLine{
			line("assets", "asset", "debit", 16765, 2955, 11200, 8520),
			line("assets:cash", "asset", "debit", 16765, 2955, 11200, 8520),
			line("expenses", "expense", "debit", 1474, 345, 1049, 770),
			line("expenses:commission", "expense", "debit", 1249, 300, 1049, 500),
			line("expenses:psp-fees", "expense", "debit", 225, 45, 0, 270),
			line("income", "income", "credit", -17490, 11000, 3000, -9490),
			line("income:revenue", "income", "credit", -17490, 11000, 3000, -9490),
			line("liabilities", "liability", "credit", -749, 1249, 300, 200),
			line("liabilities:commission-payable", "liability", "credit", -749, 1249, 300, 200),
			line("liabilities:commission-payable:p1", "liability", "credit", -500, 1000, 300, 200),
			line("liabilities:commission-payable:p2", "liability", "credit", -249, 249, 0, 0),
		},
		totals: []reports.TrialBalanceTotal{{Currency: "BRL", Debits: 15549, Credits: 15549, Balanced: true}},
		income: reports.Income{Month: "2026-09", Currency: "BRL", Sales: 3000, SalesCount: 1, Refunds: 11000, RefundsCount: 3,
			NetRevenue: -8000, Commission: -749, PSPFees: 45, NetIncome: -7296},
	}, {
		// Nothing happens in October: balances carry over, and p2, at zero
		// with no activity, drops out.
		month: oct2026,
		lines: []reports.TrialBalanceLine{
			line("assets", "asset", "debit", 8520, 0, 0, 8520),
			line("assets:cash", "asset", "debit", 8520, 0, 0, 8520),
			line("expenses", "expense", "debit", 770, 0, 0, 770),
			line("expenses:commission", "expense", "debit", 500, 0, 0, 500),
			line("expenses:psp-fees", "expense", "debit", 270, 0, 0, 270),
			line("income", "income", "credit", -9490, 0, 0, -9490),
			line("income:revenue", "income", "credit", -9490, 0, 0, -9490),
			line("liabilities", "liability", "credit", 200, 0, 0, 200),
			line("liabilities:commission-payable", "liability", "credit", 200, 0, 0, 200),
			line("liabilities:commission-payable:p1", "liability", "credit", 200, 0, 0, 200),
		},
		totals: []reports.TrialBalanceTotal{{Currency: "BRL", Balanced: true}},
		income: reports.Income{Month: "2026-10", Currency: "BRL"},
	}}
	for _, tt := range tests {
		t.Run(tt.month.String(), func(t *testing.T) {
			t.Parallel()
			tb, err := reports.TrialBalance(context.Background(), db, monthsums.Books{}, tt.month)
			if err != nil {
				t.Fatal(err)
			}
			if tb.Month != tt.month.String() || tb.Closed || tb.Snapshot {
				t.Errorf("header %q closed=%v snapshot=%v", tb.Month, tb.Closed, tb.Snapshot)
			}
			diffLines(t, tb.Lines, tt.lines)
			if !reflect.DeepEqual(tb.Totals, tt.totals) {
				t.Errorf("totals %+v, want %+v", tb.Totals, tt.totals)
			}
			inc, err := reports.IncomeStatement(context.Background(), db, monthsums.Books{}, tt.month)
			if err != nil {
				t.Fatal(err)
			}
			if inc != tt.income {
				t.Errorf("income\n got %+v\nwant %+v", inc, tt.income)
			}
			// The month's result is what its income and expense accounts
			// moved, credits positive.
			var moved int64
			for _, l := range tb.Lines {
				if l.Account == "income" || l.Account == "expenses" {
					moved += l.Debits - l.Credits
				}
			}
			if inc.NetIncome != -moved {
				t.Errorf("net income %d, income and expense accounts moved %d", inc.NetIncome, moved)
			}
		})
	}
}

// TestIncomeOtherCountsAdjustments pins down where a posting that is not a
// sale, refund, commission or fee goes: Other, with its effect on the
// result, so NetIncome still equals the income and expense movement.
func TestIncomeOtherCountsAdjustments(t *testing.T) {
	t.Parallel()
	l, db := ledgertest.New(t)
	ledgertest.PostAugust(t, l)
	ledgertest.Post(t, l, postings.Set{
		Kind: postings.KindAdjustment, IdempotencyKey: "adj:revenue-fix", Amount: 300, Currency: "BRL",
		EventAt: ledgertest.SaoPaulo(2026, 8, 30, 12, 0),
		Legs:    []postings.Leg{{Account: "equity:adjustments", Amount: 300}, {Account: "income:revenue", Amount: -300}},
	}, nil)
	inc, err := reports.IncomeStatement(context.Background(), db, monthsums.Books{}, aug2026)
	if err != nil {
		t.Fatal(err)
	}
	want := reports.Income{Month: "2026-08", Currency: "BRL", Sales: 17490, SalesCount: 3, NetRevenue: 17490,
		Commission: 1249, PSPFees: 225, Other: 300, NetIncome: 16316}
	if inc != want {
		t.Errorf("income\n got %+v\nwant %+v", inc, want)
	}
}

// TestTrialBalanceTotalsPerCurrency: parents roll up children of their own
// currency only, and each currency's totals balance on their own.
func TestTrialBalanceTotalsPerCurrency(t *testing.T) {
	t.Parallel()
	l, db := ledgertest.New(t)
	ledgertest.PostAugust(t, l)
	db.MustExec(`INSERT INTO accounts (code, type, normal_side, currency, parent_id)
		SELECT c.code, c.type, c.side, 'USD', p.id FROM (VALUES
			('assets:usd-wallet', 'asset', 'debit', 'assets'),
			('equity:usd-capital', 'equity', 'credit', 'equity')) AS c (code, type, side, parent)
		JOIN accounts p ON p.code = c.parent`)
	ledgertest.Post(t, l, postings.Set{
		Kind: postings.KindAdjustment, IdempotencyKey: "adj:usd", Amount: 700, Currency: "USD",
		EventAt: ledgertest.SaoPaulo(2026, 8, 15, 12, 0),
		Legs:    []postings.Leg{{Account: "assets:usd-wallet", Amount: 700}, {Account: "equity:usd-capital", Amount: -700}},
	}, nil)
	tb, err := reports.TrialBalance(context.Background(), db, monthsums.Books{}, aug2026)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]reports.TrialBalanceLine{}
	for _, l := range tb.Lines {
		got[l.Account] = l
	}
	if got["assets"].Debits != 17265 || got["assets:usd-wallet"].Debits != 700 || got["assets:usd-wallet"].Currency != "USD" {
		t.Errorf("assets %+v, usd wallet %+v", got["assets"], got["assets:usd-wallet"])
	}
	if _, ok := got["equity"]; ok {
		t.Errorf("equity (BRL) shown though only a USD child moved: %+v", got["equity"])
	}
	want := []reports.TrialBalanceTotal{
		{Currency: "BRL", Debits: 19239, Credits: 19239, Balanced: true},
		{Currency: "USD", Debits: 700, Credits: 700, Balanced: true},
	}
	if !reflect.DeepEqual(tb.Totals, want) {
		t.Errorf("totals %+v, want %+v", tb.Totals, want)
	}
}

func TestReportsRefuseInvalidMonths(t *testing.T) {
	t.Parallel()
	_, db := ledgertest.New(t)
	ctx := context.Background()
	bad := periods.Month{Year: 2026, Month: 13}
	for name, call := range map[string]func() error{
		"trial balance": func() error { _, err := reports.TrialBalance(ctx, db, monthsums.Books{}, bad); return err },
		"income":        func() error { _, err := reports.IncomeStatement(ctx, db, monthsums.Books{}, bad); return err },
		"journal":       func() error { _, err := reports.Journal(ctx, db, periods.Month{}, "", 0); return err },
		"series": func() error {
			_, err := reports.AccountSeries(ctx, db, monthsums.Books{}, "assets", bad, aug2026)
			return err
		},
	} {
		if err := call(); !errors.Is(err, reports.ErrInvalidMonth) {
			t.Errorf("%s: %v, want ErrInvalidMonth", name, err)
		}
	}
}

func TestAccountSeriesViews(t *testing.T) {
	t.Parallel()
	l, db := ledgertest.New(t)
	ledgertest.PostAugust(t, l)
	ledgertest.PostSeptember(t, l)
	type point = reports.SeriesPoint
	tests := []struct {
		name     string
		code     string
		from, to periods.Month
		want     []point
		err      error
	}{{
		name: "cash from before the first sale", code: "assets:cash", from: jul2026, to: oct2026,
		want: []point{
			{Month: "2026-07"},
			{Month: "2026-08", Debits: 17265, Credits: 500, Change: 16765, Cumulative: 16765, Historical: 16765},
			{Month: "2026-09", Opening: 16765, Debits: 2955, Credits: 11200, Change: -8245, Cumulative: 8520, Historical: 8520},
			{Month: "2026-10", Opening: 8520, Cumulative: 8520, Historical: 8520},
		},
	}, {
		// Starting in September, the cumulative view starts at zero while
		// the historical one carries August.
		name: "revenue from September", code: "income:revenue", from: sep2026, to: oct2026,
		want: []point{
			{Month: "2026-09", Opening: -17490, Debits: 11000, Credits: 3000, Change: 8000, Cumulative: 8000, Historical: -9490},
			{Month: "2026-10", Opening: -9490, Cumulative: 8000, Historical: -9490},
		},
	}, {
		name: "a parent rolls its partners up", code: "liabilities:commission-payable", from: aug2026, to: sep2026,
		want: []point{
			{Month: "2026-08", Debits: 500, Credits: 1249, Change: -749, Cumulative: -749, Historical: -749},
			{Month: "2026-09", Opening: -749, Debits: 1249, Credits: 300, Change: 949, Cumulative: 200, Historical: 200},
		},
	}, {
		name: "from after to", code: "assets", from: sep2026, to: aug2026, err: reports.ErrInvalidRange,
	}, {
		name: "too long", code: "assets", from: periods.Month{Year: 2000, Month: 1}, to: aug2026, err: reports.ErrInvalidRange,
	}, {
		name: "unknown account", code: "assets:nope", from: aug2026, to: aug2026, err: reports.ErrUnknownAccount,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, err := reports.AccountSeries(context.Background(), db, monthsums.Books{}, tt.code, tt.from, tt.to)
			if tt.err != nil {
				if !errors.Is(err, tt.err) {
					t.Fatalf("err %v, want %v", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if s.Account != tt.code || s.Currency != "BRL" || s.From != tt.from.String() || s.To != tt.to.String() {
				t.Errorf("header %+v", s)
			}
			if !reflect.DeepEqual(s.Points, tt.want) {
				t.Errorf("points\n got %+v\nwant %+v", s.Points, tt.want)
			}
		})
	}
}

// TestAccountSeriesSameAcrossClose: a series read from snapshots once its
// months are closed is the series computed from postings before.
func TestAccountSeriesSameAcrossClose(t *testing.T) {
	t.Parallel()
	l, db := ledgertest.New(t)
	ctx := context.Background()
	ledgertest.PostAugust(t, l)
	ledgertest.PostSeptember(t, l)
	codes := []string{"assets", "assets:cash", "income:revenue", "expenses", "liabilities:commission-payable:p2"}
	read := func() map[string][]reports.SeriesPoint {
		out := map[string][]reports.SeriesPoint{}
		for _, c := range codes {
			s, err := reports.AccountSeries(ctx, db, monthsums.Books{}, c, jul2026, oct2026)
			if err != nil {
				t.Fatal(err)
			}
			for i := range s.Points {
				s.Points[i].Closed = false
			}
			out[c] = s.Points
		}
		return out
	}
	before := read()
	for _, m := range []periods.Month{aug2026, sep2026} {
		if err := periods.Close(ctx, db, l.Calendar(), m, afterSeptember, "", monthsums.Closing); err != nil {
			t.Fatal(err)
		}
	}
	if after := read(); !reflect.DeepEqual(before, after) {
		t.Errorf("series changed by closing:\nbefore %+v\n after %+v", before, after)
	}
	s, err := reports.AccountSeries(ctx, db, monthsums.Books{}, "assets", jul2026, oct2026)
	if err != nil {
		t.Fatal(err)
	}
	var closed []string
	for _, p := range s.Points {
		closed = append(closed, fmt.Sprint(p.Month, "=", p.Closed))
	}
	// July, before the first close, is closed with it: no set can enter it
	// any more (sql/0035).
	if got := strings.Join(closed, " "); got != "2026-07=true 2026-08=true 2026-09=true 2026-10=false" {
		t.Errorf("closed flags: %s", got)
	}
}

func TestBalancesSameAcrossClose(t *testing.T) {
	t.Parallel()
	l, db := ledgertest.New(t)
	ctx := context.Background()
	ledgertest.PostAugust(t, l)
	before, err := reports.Balances(ctx, db, monthsums.Books{})
	if err != nil {
		t.Fatal(err)
	}
	if err := periods.Close(ctx, db, l.Calendar(), aug2026, afterSeptember, "", monthsums.Closing); err != nil {
		t.Fatal(err)
	}
	after, err := reports.Balances(ctx, db, monthsums.Books{})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(before, after) {
		t.Errorf("balances changed by closing:\nbefore %+v\n after %+v", before, after)
	}
	ledgertest.PostSeptember(t, l)
	now, err := reports.Balances(ctx, db, monthsums.Books{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]reports.AccountBalance{}
	for _, b := range now {
		got[b.Code] = b
	}
	// All-time: debits and credits add August (from its snapshot) and
	// September (from postings).
	if c := got["assets:cash"]; c.Debits != 17265+2955 || c.Credits != 500+11200 || c.Balance != 8520 {
		t.Errorf("cash %+v", c)
	}
	if c := got["equity"]; c.Balance != 0 || c.Type != "equity" {
		t.Errorf("an account without postings is listed at zero: %+v", c)
	}
}
