package reports_test

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/razao/razao/internal/ledgertest"
	"github.com/razao/razao/monthsums"
	"github.com/razao/razao/periods"
	"github.com/razao/razao/postings"
	"github.com/razao/razao/reports"
	"github.com/razao/razao/verify"
)

// TestClosedMonthNeverChanges closes August and then lives through
// September: a posting dated in August is refused, a late August
// confirmation is booked on 1 September, and August's trial balance,
// income statement and CSV exports are the same bytes before and after.
func TestClosedMonthNeverChanges(t *testing.T) {
	t.Parallel()
	l, db := ledgertest.New(t)
	ctx := context.Background()
	ledgertest.PostAugust(t, l)

	type view struct {
		tb     reports.TrialBalanceReport
		income reports.Income
		csv    []string
	}
	read := func() view {
		t.Helper()
		tb, err := reports.TrialBalance(ctx, db, monthsums.Books{}, aug2026)
		if err != nil {
			t.Fatal(err)
		}
		inc, err := reports.IncomeStatement(ctx, db, monthsums.Books{}, aug2026)
		if err != nil {
			t.Fatal(err)
		}
		v := view{tb: tb, income: inc}
		for _, kind := range []reports.ExportKind{reports.ExportTrialBalance, reports.ExportIncomeStatement, reports.ExportJournal} {
			for _, d := range []reports.Dialect{reports.RFC4180, reports.Brazil} {
				v.csv = append(v.csv, exportCSV(t, db, kind, aug2026, d))
			}
		}
		return v
	}
	open := read()
	if open.tb.Closed || open.tb.Snapshot {
		t.Fatalf("August reported closed before closing: %+v", open.tb)
	}

	if err := periods.Close(ctx, db, l.Calendar(), aug2026, ledgertest.SaoPaulo(2026, 9, 1, 0, 5), "", monthsums.Closing); err != nil {
		t.Fatal(err)
	}
	ledgertest.PostSeptember(t, l)
	// A posting set dated in August is refused...
	s, err := postings.Sale("c9", "BRL", 1000, 0, ledgertest.SaoPaulo(2026, 8, 30, 12, 0))
	if err != nil {
		t.Fatal(err)
	}
	s.Competence = time.Date(2026, 8, 30, 0, 0, 0, 0, time.UTC)
	if _, err := l.Post(ctx, s); !errors.Is(err, postings.ErrClosedMonth) {
		t.Fatalf("posting dated in closed August: %v, want ErrClosedMonth", err)
	}
	// ...and a late confirmation of an August payment lands in September.
	late, err := postings.Sale("c5", "BRL", 1990, 30, ledgertest.SaoPaulo(2026, 8, 30, 12, 0))
	p := ledgertest.Post(t, l, late, err)
	if got := p.Competence.Format(time.DateOnly); got != "2026-09-01" {
		t.Errorf("late August confirmation booked on %s, want 2026-09-01", got)
	}

	closed := read()
	if !closed.tb.Closed || !closed.tb.Snapshot || !closed.income.Closed || !closed.income.Snapshot {
		t.Errorf("August not served from its snapshot: tb %v/%v income %v/%v",
			closed.tb.Closed, closed.tb.Snapshot, closed.income.Closed, closed.income.Snapshot)
	}
	open.tb.Closed, open.tb.Snapshot = true, true
	open.income.Closed, open.income.Snapshot = true, true
	if !reflect.DeepEqual(open.tb, closed.tb) {
		t.Errorf("August's trial balance changed:\nbefore %+v\n after %+v", open.tb, closed.tb)
	}
	if open.income != closed.income {
		t.Errorf("August's income statement changed:\nbefore %+v\n after %+v", open.income, closed.income)
	}
	for i := range open.csv {
		if open.csv[i] != closed.csv[i] {
			t.Errorf("August export %d changed:\nbefore %q\n after %q", i, open.csv[i], closed.csv[i])
		}
	}
	if open.csv[0] != tbAugustRFC {
		t.Errorf("August trial balance csv is not the golden one: %q", open.csv[0])
	}

	// September holds the late sale, its opening starts from August's
	// snapshot, and the snapshot agrees with the postings.
	inc, err := reports.IncomeStatement(ctx, db, monthsums.Books{}, sep2026)
	if err != nil {
		t.Fatal(err)
	}
	if inc.Sales != 3000+1990 || inc.SalesCount != 2 || inc.Closed {
		t.Errorf("September income %+v", inc)
	}
	tb, err := reports.TrialBalance(ctx, db, monthsums.Books{}, sep2026)
	if err != nil {
		t.Fatal(err)
	}
	if tb.Lines[1].Account != "assets:cash" || tb.Lines[1].Opening != 16765 || tb.Lines[1].Debits != 2955+1960 {
		t.Errorf("September cash %+v", tb.Lines[1])
	}
	if bad, err := verify.CheckSnapshots(ctx, db); err != nil || len(bad) > 0 {
		t.Errorf("CheckSnapshots: %v %+v", err, bad)
	}
}

func TestCloseMonthRefusals(t *testing.T) {
	t.Parallel()
	l, db := ledgertest.New(t)
	ctx := context.Background()
	ledgertest.PostAugust(t, l)
	ledgertest.PostSeptember(t, l)
	tests := []struct {
		name  string
		month periods.Month
		now   time.Time
		err   error
	}{
		// 31 August 23:00 in São Paulo is already September in UTC.
		{"August not over in São Paulo", aug2026, ledgertest.SaoPaulo(2026, 8, 31, 23, 0), periods.ErrMonthNotOver},
		{"September before August", sep2026, afterSeptember, periods.ErrEarlierMonthOpen},
		{"July, before the first posting, is closable", jul2026, afterSeptember, nil},
		{"August", aug2026, afterSeptember, nil},
		{"August again", aug2026, afterSeptember, periods.ErrAlreadyClosed},
		{"October skipping September", oct2026, time.Date(2026, 11, 2, 0, 0, 0, 0, time.UTC), periods.ErrEarlierMonthOpen},
		{"invalid month", periods.Month{Year: 2026, Month: 0}, afterSeptember, reports.ErrInvalidMonth},
	}
	// In order: each case depends on the ones before.
	for _, tt := range tests {
		err := periods.Close(ctx, db, l.Calendar(), tt.month, tt.now, "", monthsums.Closing)
		if (tt.err == nil && err != nil) || !errors.Is(err, tt.err) {
			t.Errorf("%s: %v, want %v", tt.name, err, tt.err)
		}
	}
	ps, err := periods.List(ctx, db, l.Calendar(), afterSeptember)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range ps {
		s := p.Month + " " + p.Status
		if p.Snapshot {
			s += " snapshot"
		}
		if p.Activity {
			s += " activity"
		}
		if (p.ClosedAt != nil) != (p.Status == "closed") || (p.ClosedBy != "") != (p.Status == "closed") {
			t.Errorf("%s: closed at %v by %q", p.Month, p.ClosedAt, p.ClosedBy)
		}
		got = append(got, s)
	}
	want := []string{"2026-07 closed snapshot", "2026-08 closed snapshot activity", "2026-09 open activity", "2026-10 open"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("periods %q, want %q", got, want)
	}
	if tb, err := reports.TrialBalance(ctx, db, monthsums.Books{}, jul2026); err != nil || len(tb.Lines) != 0 || !tb.Snapshot {
		t.Errorf("July: %+v, %v", tb, err)
	}
}

// TestClosedMonthWithoutSnapshotIsReportedFromPostings: a month closed
// before snapshots existed (a closed_periods row and no month_snapshots
// row; periods.Close always writes both) is still reported right, from its
// postings, and verify has no snapshot of it to compare.
func TestClosedMonthWithoutSnapshotIsReportedFromPostings(t *testing.T) {
	t.Parallel()
	l, db := ledgertest.New(t)
	ctx := context.Background()
	ledgertest.PostAugust(t, l)
	ledgertest.PostSeptember(t, l)
	want, err := reports.TrialBalance(ctx, db, monthsums.Books{}, sep2026)
	if err != nil {
		t.Fatal(err)
	}
	db.MustExec(`INSERT INTO closed_periods (month) VALUES ('2026-08-01'), ('2026-09-01')`)
	unsnapped, err := reports.TrialBalance(ctx, db, monthsums.Books{}, sep2026)
	if err != nil {
		t.Fatal(err)
	}
	if !unsnapped.Closed || unsnapped.Snapshot || !reflect.DeepEqual(unsnapped.Lines, want.Lines) || !reflect.DeepEqual(unsnapped.Totals, want.Totals) {
		t.Errorf("closed without snapshot: %+v, want %+v", unsnapped, want)
	}
	if bad, err := verify.CheckSnapshots(ctx, db); err != nil || len(bad) > 0 {
		t.Errorf("CheckSnapshots: %v %+v", err, bad)
	}
}
