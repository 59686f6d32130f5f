package reports_test

import (
	"context"
	"testing"
	"time"

	"github.com/razao/razao/internal/pgtest"
	"github.com/razao/razao/monthsums"
	"github.com/razao/razao/periods"
	"github.com/razao/razao/postings"
	"github.com/razao/razao/reports"
)

func TestBalancesRollParentsUp(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	cal, _ := periods.NewCalendar(periods.DefaultTimeZone)
	l := postings.New(db, cal)
	at := time.Date(2026, 8, 10, 12, 0, 0, 0, time.UTC)
	for _, build := range []func() (postings.Set, error){
		func() (postings.Set, error) { return postings.Sale("c1", "BRL", 4990, 75, at) },
		func() (postings.Set, error) {
			s, _, err := postings.CommissionSet("c1", "p1", "BRL", 4990, 1000, at)
			return s, err
		},
		func() (postings.Set, error) {
			s, _, err := postings.CommissionSet("c2", "p2", "BRL", 1000, 1000, at)
			return s, err
		},
	} {
		s, err := build()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.Post(context.Background(), s); err != nil {
			t.Fatal(err)
		}
	}
	got := map[string]reports.AccountBalance{}
	bs, err := reports.Balances(context.Background(), db, monthsums.Books{})
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range bs {
		got[b.Code] = b
	}
	for code, want := range map[string]int64{
		"assets:cash": 4915, "assets": 4915, "expenses:psp-fees": 75, "expenses:commission": 599, "expenses": 674,
		"liabilities:commission-payable:p1": -499, "liabilities:commission-payable": -599, "income:revenue": -4990,
	} {
		if got[code].Balance != want {
			t.Errorf("%s = %d, want %d", code, got[code].Balance, want)
		}
	}
	if b := got["expenses"]; b.Debits != 674 || b.Credits != 0 {
		t.Errorf("expenses debits/credits = %d/%d", b.Debits, b.Credits)
	}
}
