package reports_test

import (
	"context"
	"strings"
	"testing"

	"github.com/razao/razao/internal/ledgertest"
	"github.com/razao/razao/money"
	"github.com/razao/razao/monthsums"
	"github.com/razao/razao/periods"
	"github.com/razao/razao/postings"
	"github.com/razao/razao/reports"
	"github.com/razao/razao/verify"
)

// postPixParts books August 2026's Pix with parts, as the webhook front
// books them (postings.SaleOf):
//
//	t1  Pix Troco: sale 80.00, change 20.00
//	s1  Pix com Saque: sale 180.00, saque 20.00
//	v1  cobv paid late: sale 100.00, multa 3.00, juros 2.00
//	v2  cobv paid early: sale 100.00, abatimento 5.00, desconto 1.50, PSP fee 0.50
func postPixParts(t *testing.T, l *postings.Ledger) {
	t.Helper()
	at := ledgertest.SaoPaulo(2026, 8, 12, 10, 0)
	for _, c := range []struct {
		id    string
		parts money.Parts
		fee   int64
	}{
		{"t1", money.Parts{Original: 8000, Change: 2000}, 0},
		{"s1", money.Parts{Original: 18000, Withdrawal: 2000}, 0},
		{"v1", money.Parts{Original: 10000, Fine: 300, Interest: 200}, 0},
		{"v2", money.Parts{Original: 10000, Rebate: 500, Discount: 150}, 50},
	} {
		s, err := postings.SaleOf(c.id, "BRL", c.parts, c.fee, at)
		ledgertest.Post(t, l, s, err)
	}
}

// The income statement shows a Pix's interest, fines, rebates and
// discounts as lines of their own, not in "other", the
// sales as the originals only (cash handed over the counter is never
// revenue), and the trial balance the till; the same once the month is
// closed and read from its snapshot, which verify finds equal to the
// postings.
func TestIncomeStatementShowsPixPartsAsLinesOfTheirOwn(t *testing.T) {
	t.Parallel()
	l, db := ledgertest.New(t)
	ctx := context.Background()
	postPixParts(t, l)
	want := reports.Income{Month: "2026-08", Currency: "BRL", Sales: 46000, SalesCount: 4, NetRevenue: 46000,
		PSPFees: 50, Interest: 200, Fines: 300, Rebates: 500, Discounts: 150, NetIncome: 46000 - 50 + 200 + 300 - 500 - 150}
	check := func(closed bool) {
		t.Helper()
		inc, err := reports.IncomeStatement(ctx, db, monthsums.Books{}, aug2026)
		if err != nil {
			t.Fatal(err)
		}
		w := want
		w.Closed, w.Snapshot = closed, closed
		if inc != w {
			t.Fatalf("income statement (closed %v) =\n%+v\nwant\n%+v", closed, inc, w)
		}
		csv := exportCSV(t, db, reports.ExportIncomeStatement, aug2026, reports.RFC4180)
		for _, line := range []string{"2026-08,BRL,interest,,2.00,200", "2026-08,BRL,fines,,3.00,300",
			"2026-08,BRL,rebates,,5.00,500", "2026-08,BRL,discounts,,1.50,150", "2026-08,BRL,other,,0.00,0"} {
			if !strings.Contains(csv, line+"\r\n") && !strings.Contains(csv, line+"\n") {
				t.Fatalf("income statement CSV lacks %q:\n%s", line, csv)
			}
		}
		tb, err := reports.TrialBalance(ctx, db, monthsums.Books{}, aug2026)
		if err != nil {
			t.Fatal(err)
		}
		closing := map[string]int64{}
		for _, line := range tb.Lines {
			closing[line.Account] = line.Closing
		}
		for code, c := range map[string]int64{
			"assets:till": -4000, "assets:till:pix-change": -2000, "assets:till:pix-withdrawals": -2000,
			"assets:cash": 10000 + 20000 + 10500 + 9350 - 50, "income:revenue": -46000,
			"income:interest": -200, "income:fines": -300, "expenses:rebates": 500, "expenses:discounts": 150,
		} {
			if closing[code] != c {
				t.Fatalf("trial balance (closed %v): %s closes at %d, want %d (%+v)", closed, code, closing[code], c, tb.Lines)
			}
		}
		if len(tb.Totals) != 1 || !tb.Totals[0].Balanced {
			t.Fatalf("trial balance totals %+v, want balanced", tb.Totals)
		}
	}
	check(false)
	if err := periods.Close(ctx, db, l.Calendar(), aug2026, ledgertest.SaoPaulo(2026, 9, 1, 0, 5), "", monthsums.Closing); err != nil {
		t.Fatal(err)
	}
	check(true)
	if mm, err := verify.CheckSnapshots(ctx, db); err != nil || len(mm) != 0 {
		t.Fatalf("CheckSnapshots = %+v, %v; want none", mm, err)
	}
}

// A month without them exports the income statement as before: its
// closed months' files do not change.
func TestIncomeStatementCSVWithoutPixPartsIsUnchanged(t *testing.T) {
	t.Parallel()
	l, db := ledgertest.New(t)
	ledgertest.PostAugust(t, l)
	csv := exportCSV(t, db, reports.ExportIncomeStatement, aug2026, reports.RFC4180)
	for _, name := range []string{"interest", "fines", "rebates", "discounts"} {
		if strings.Contains(csv, ","+name+",") {
			t.Fatalf("income statement CSV of a month without %s has a line for it:\n%s", name, csv)
		}
	}
}
