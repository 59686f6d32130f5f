package reports_test

import (
	"context"
	"encoding/json"
	"maps"
	"strings"
	"testing"

	"github.com/jmoiron/sqlx"

	"github.com/razao/razao/internal/ledgertest"
	"github.com/razao/razao/monthsums"
	"github.com/razao/razao/periods"
	"github.com/razao/razao/postings"
	"github.com/razao/razao/reports"
	"github.com/razao/razao/verify"
)

// postMEDMonth books August 2026 as the bcb-pix front books it: a sale of
// 100.00, the merchant's own refund of 10.00 (natureza ORIGINAL) and a
// return of 20.00 made under the MED (natureza MED_OPERACIONAL), which
// postings.RefundAs books on expenses:med-returns.
func postMEDMonth(t *testing.T, l *postings.Ledger) {
	t.Helper()
	s, err := postings.Sale("c1", "BRL", 10000, 0, ledgertest.SaoPaulo(2026, 8, 5, 10, 0))
	ledgertest.Post(t, l, s, err)
	s, err = postings.RefundAs("c1", "r1", "BRL", 1000, ledgertest.SaoPaulo(2026, 8, 6, 10, 0),
		"D12345678202009091000abcde123456", "ORIGINAL")
	ledgertest.Post(t, l, s, err)
	s, err = postings.RefundAs("c1", "r2", "BRL", 2000, ledgertest.SaoPaulo(2026, 8, 7, 10, 0),
		"D12345678202009091000abcdeMED222", "MED_OPERACIONAL")
	ledgertest.Post(t, l, s, err)
}

func hasCSVLine(csv, line string) bool {
	return strings.Contains(csv, line+"\r\n") || strings.Contains(csv, line+"\n")
}

// A return made under the MED is not the merchant's own refund: the income
// statement shows it as a line of its own, neither in refunds nor in
// other, and the net income is what it was; the
// same once the month is closed and read from its snapshot, which
// CheckSnapshots finds equal to the postings.
func TestIncomeStatementShowsMEDReturnsAsALineOfTheirOwn(t *testing.T) {
	t.Parallel()
	l, db := ledgertest.New(t)
	ctx := context.Background()
	postMEDMonth(t, l)
	// As the API serves it (JSON): the MED return neither in refunds nor
	// in other, the net income the credits less the debits of the month.
	want := map[string]any{"month": "2026-08", "currency": "BRL", "sales": 10000.0, "sales_count": 1.0,
		"refunds": 1000.0, "refunds_count": 1.0, "net_revenue": 9000.0, "commission": 0.0, "psp_fees": 0.0,
		"interest": 0.0, "fines": 0.0, "rebates": 0.0, "discounts": 0.0, "med_returns": 2000.0, "other": 0.0,
		"net_income": 10000.0 - 1000 - 2000}
	check := func(closed bool) {
		t.Helper()
		inc, err := reports.IncomeStatement(ctx, db, monthsums.Books{}, aug2026)
		if err != nil {
			t.Fatal(err)
		}
		raw, err := json.Marshal(inc)
		if err != nil {
			t.Fatal(err)
		}
		var got map[string]any
		if err := json.Unmarshal(raw, &got); err != nil {
			t.Fatal(err)
		}
		w := maps.Clone(want)
		w["closed"], w["snapshot"] = closed, closed
		if !maps.Equal(got, w) {
			t.Fatalf("income statement (closed %v) =\n%s\nwant\n%v", closed, raw, w)
		}
		csv := exportCSV(t, db, reports.ExportIncomeStatement, aug2026, reports.RFC4180)
		for _, line := range []string{"2026-08,BRL,refunds,1,10.00,1000", "2026-08,BRL,med_returns,,20.00,2000",
			"2026-08,BRL,other,,0.00,0", "2026-08,BRL,net_income,,70.00,7000"} {
			if !hasCSVLine(csv, line) {
				t.Fatalf("income statement CSV (closed %v) lacks %q:\n%s", closed, line, csv)
			}
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

// A month without MED returns exports the income statement as before.
func TestIncomeStatementCSVWithoutMEDReturnsIsUnchanged(t *testing.T) {
	t.Parallel()
	l, db := ledgertest.New(t)
	ledgertest.PostAugust(t, l)
	if csv := exportCSV(t, db, reports.ExportIncomeStatement, aug2026, reports.RFC4180); strings.Contains(csv, ",med_returns,") {
		t.Fatalf("income statement CSV of a month without MED returns has a line for them:\n%s", csv)
	}
}

// A month closed before sql/0042 sealed its MED returns inside "other"
// (med_returns NULL): it reads and exports as it did, and CheckSnapshots
// finds it equal to the postings. The test makes such a snapshot from a
// new one, as only the database owner could.
func TestMonthClosedBeforeMEDLineKeepsThemInOther(t *testing.T) {
	t.Parallel()
	l, db := ledgertest.New(t)
	ctx := context.Background()
	postMEDMonth(t, l)
	if err := periods.Close(ctx, db, l.Calendar(), aug2026, ledgertest.SaoPaulo(2026, 9, 1, 0, 5), "", monthsums.Closing); err != nil {
		t.Fatal(err)
	}
	asBefore(t, db, `UPDATE month_snapshots SET med_returns = NULL, other = other - 2000 WHERE month = '2026-08-01'`)
	inc, err := reports.IncomeStatement(ctx, db, monthsums.Books{}, aug2026)
	if err != nil {
		t.Fatal(err)
	}
	want := reports.Income{Month: "2026-08", Closed: true, Snapshot: true, Currency: "BRL", Sales: 10000, SalesCount: 1,
		Refunds: 1000, RefundsCount: 1, NetRevenue: 9000, Other: -2000, NetIncome: 7000}
	if inc != want {
		t.Fatalf("income statement =\n%+v\nwant\n%+v", inc, want)
	}
	csv := exportCSV(t, db, reports.ExportIncomeStatement, aug2026, reports.RFC4180)
	if strings.Contains(csv, ",med_returns,") || !hasCSVLine(csv, "2026-08,BRL,other,,-20.00,-2000") {
		t.Fatalf("income statement CSV of a month closed before the MED line:\n%s", csv)
	}
	if mm, err := verify.CheckSnapshots(ctx, db); err != nil || len(mm) != 0 {
		t.Fatalf("CheckSnapshots = %+v, %v; want none", mm, err)
	}
	// And a snapshot that does state the line is held to it.
	asBefore(t, db, `UPDATE month_snapshots SET med_returns = 0 WHERE month = '2026-08-01'`)
	if mm, err := verify.CheckSnapshots(ctx, db); err != nil || len(mm) != 2 {
		t.Fatalf("CheckSnapshots of a snapshot with med_returns 0 and them in other = %+v, %v; want med_returns and other", mm, err)
	}
}

// asBefore runs stmt on month_snapshots past its append-only trigger.
func asBefore(t *testing.T, db *sqlx.DB, stmt string) {
	t.Helper()
	for _, s := range []string{`ALTER TABLE month_snapshots DISABLE TRIGGER trg_month_snapshots_append_only`, stmt,
		`ALTER TABLE month_snapshots ENABLE TRIGGER trg_month_snapshots_append_only`} {
		if _, err := db.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}
