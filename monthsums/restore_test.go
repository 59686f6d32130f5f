package monthsums_test

import (
	"context"
	"errors"
	"testing"

	"github.com/jmoiron/sqlx"

	"github.com/razao/razao/internal/ledgertest"
	"github.com/razao/razao/internal/pgtest"
	"github.com/razao/razao/monthsums"
	"github.com/razao/razao/periods"
	"github.com/razao/razao/postings"
	"github.com/razao/razao/reports"
	"github.com/razao/razao/verify"
)

// After a logical restore (pg_dump into another cluster), month_sums'
// snapshots and posting_sets' created_xid hold the old cluster's
// transaction ids, ahead of the new cluster's counter: a stored snapshot
// ahead of the cluster is ignored, a month holding sets stamped ahead of
// it keeps no sums (its refresh says ErrForeignXids), and its reports and
// its close sum the postings. Found by a review: August read 3 sales of
// 4, and closing it sealed that for good. It restores into a throwaway
// cluster (scripts/localpg.sh, as make run starts one).
func TestMonthSumsAfterALogicalRestore(t *testing.T) {
	ctx := context.Background()
	src, srcURL := pgtest.NewWithURL(t)
	cal, _ := periods.NewCalendar(periods.DefaultTimeZone)
	ledgertest.PostAugust(t, postings.New(src, cal))
	if _, err := monthsums.Refresh(ctx, src); err != nil {
		t.Fatal(err)
	}

	cluster := pgtest.NewCluster(t)
	cluster.RestoreDump(t, srcURL)
	dstURL := cluster.URL
	dst, err := sqlx.Open("postgres", dstURL)
	if err != nil {
		t.Fatal(err)
	}
	defer dst.Close()
	l := postings.New(dst, cal)
	s, err := postings.Sale("after-restore", "BRL", 7777, 0, ledgertest.SaoPaulo(2026, 8, 25, 9, 0))
	ledgertest.Post(t, l, s, err)
	if _, err := monthsums.Refresh(ctx, dst); !errors.Is(err, monthsums.ErrForeignXids) {
		t.Fatalf("refresh after a restore: %v, want ErrForeignXids", err)
	}
	got, err := reports.IncomeStatement(ctx, dst, monthsums.Books{}, aug2026)
	if err != nil {
		t.Fatal(err)
	}
	want := fromPostings(t, dst, aug2026)[0].Income
	// Closing the month seals what the sums say, for good.
	if err := periods.Close(ctx, dst, cal, aug2026, afterSeptember, "probe", monthsums.Closing); err != nil {
		t.Fatal(err)
	}
	sealed, err := verify.CheckSnapshots(ctx, dst)
	if err != nil {
		t.Fatal(err)
	}
	if got.SalesCount != want.SalesCount || got.Sales != want.Sales || len(sealed) != 0 {
		t.Fatalf("after a restore, August reads %d sales (%d), the postings say %d (%d)",
			got.SalesCount, got.Sales, want.SalesCount, want.Sales)
	}
}
