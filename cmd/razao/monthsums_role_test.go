package main

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/razao/razao/internal/pgtest"
	"github.com/razao/razao/monthsums"
	"github.com/razao/razao/partners"
	"github.com/razao/razao/periods"
	"github.com/razao/razao/postings"
	"github.com/razao/razao/verify"
)

// The service role of docs/razao-role.sql may not write the month sums,
// though they are its cache (sql/0041;
// TestServiceRoleWritesMonthSumsOnlyThroughTheRefresh), and the forgery
// below is the owner's, which the readers withstand. A month's
// stored snapshot moved past every transaction id yet assigned would make
// every later set of the month read as "already summed": payouts never
// lowering what is owed, the same commission paid out again and again. A
// payout reads the postings, not the month sums, and a stored snapshot
// ahead of the cluster's is ignored by every report and rewritten by the
// next refresh. (Found by a review: three payouts of the 1,000 owed went
// through.)
func TestForgedMonthSumsCannotRepeatAPayout(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	owner, ownerURL := pgtest.NewWithURL(t)
	r := pgtest.NewRoles(t, owner, ownerURL)
	svc := r.Connect(r.Service())
	cal, _ := periods.NewCalendar(periods.DefaultTimeZone)
	l := postings.New(svc, cal)
	at := time.Date(2026, 8, 10, 12, 0, 0, 0, time.UTC)
	sale, _ := postings.Sale("c1", "BRL", 10000, 0, at)
	if _, err := l.Post(ctx, sale); err != nil {
		t.Fatal(err)
	}
	comm, _, _ := postings.CommissionSet("c1", "p1", "BRL", 10000, 1000, at)
	if _, err := l.Post(ctx, comm); err != nil {
		t.Fatal(err)
	}
	if _, err := monthsums.Refresh(ctx, svc); err != nil {
		t.Fatal(err)
	}
	// A snapshot from "the future".
	if _, err := owner.Exec(`UPDATE month_sums SET snapshot = (x || ':' || x || ':')::pg_snapshot
		FROM (SELECT (pg_snapshot_xmax(pg_current_snapshot())::text::bigint + 1000000)::text AS x) f`); err != nil {
		t.Fatalf("forge the month sums: %v", err)
	}
	paid := 0
	for i := 0; i < 3; i++ {
		_, err := partners.Payout(ctx, svc, l, partners.PayoutRequest{Partner: "p1", IdempotencyKey: fmt.Sprintf("po-%d", i),
			Amount: 1000, At: at.Add(time.Duration(i+1) * time.Hour)})
		if errors.Is(err, partners.ErrOverOwed) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		paid++
		if _, err := monthsums.Refresh(ctx, svc); err != nil {
			t.Fatal(err)
		}
	}
	// The forged snapshot is ignored by the reports and replaced by the
	// refresh: the month sums agree with the postings again.
	if bad, err := verify.CheckMonthSums(ctx, owner); err != nil || len(bad) != 0 {
		t.Fatalf("month sums against the postings after a refresh: %v, %+v", err, bad)
	}
	var ledgerOwed int64
	if err := owner.Get(&ledgerOwed, `SELECT -sum(p.amount) FROM postings p JOIN accounts a ON a.id = p.account_id
		WHERE a.code = 'liabilities:commission-payable:p1'`); err != nil {
		t.Fatal(err)
	}
	if paid > 1 {
		t.Fatalf("1000 was owed and %d payouts of 1000 went through; the postings now say %d owed", paid, ledgerOwed)
	}
}
