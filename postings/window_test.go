package postings_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/razao/razao/internal/ledgertest"
	"github.com/razao/razao/monthsums"
	"github.com/razao/razao/periods"
	"github.com/razao/razao/postings"
)

// TestLedgerRefusesSetsOutsideTheEventWindow: whoever calls the ledger, a
// set whose event time or competence lies before go-live, far ahead of the
// clock or at an offset no zone has is refused with ErrOutsideWindow and
// writes nothing, so no caller can date a month nobody will close.
func TestLedgerRefusesSetsOutsideTheEventWindow(t *testing.T) {
	t.Parallel()
	l, db := ledgertest.New(t)
	now := time.Now()
	outside := []struct {
		name string
		at   time.Time
	}{
		{"0001-01-01", time.Date(1, 1, 1, 12, 0, 0, 0, time.UTC)},
		{"1899-12-31", time.Date(1899, 12, 31, 12, 0, 0, 0, time.UTC)},
		{"9999-12-31", time.Date(9999, 12, 31, 12, 0, 0, 0, time.UTC)},
		{"year 0000", time.Date(0, 6, 1, 0, 0, 0, 0, time.UTC)},
		{"offset -20:00", now.In(time.FixedZone("", -20*3600))},
		{"go-live minus a day", ledgertest.SaoPaulo(2020, 10, 31, 12, 0)},
		{"a second before go-live in São Paulo", ledgertest.SaoPaulo(2020, 10, 31, 23, 59).Add(59 * time.Second)},
		{"now + 1 hour", now.Add(time.Hour)},
	}
	for _, tc := range outside {
		sale, err := postings.Sale("ch-"+tc.name, "BRL", 4990, 0, tc.at)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.Post(context.Background(), sale); !errors.Is(err, periods.ErrOutsideWindow) || !errors.Is(err, postings.ErrInvalid) {
			t.Errorf("sale at %s: %v, want ErrOutsideWindow", tc.name, err)
		}
		payout, err := postings.Payout("partner-1", "po-"+tc.name, "BRL", 100, tc.at)
		if err != nil {
			t.Fatal(err)
		}
		if err := l.CheckWindow(payout); !errors.Is(err, periods.ErrOutsideWindow) {
			t.Errorf("payout at %s: CheckWindow %v, want ErrOutsideWindow", tc.name, err)
		}
	}
	// A competence given explicitly is held to the same window.
	for _, competence := range []time.Time{
		time.Date(2020, 10, 31, 0, 0, 0, 0, time.UTC),
		time.Date(9999, 12, 1, 0, 0, 0, 0, time.UTC),
		time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC).AddDate(0, 0, 1),
	} {
		adj := postings.Set{Kind: postings.KindAdjustment, IdempotencyKey: "adj-" + competence.Format(time.DateOnly),
			Amount: 100, Currency: "BRL", EventAt: now, Competence: competence,
			Legs: []postings.Leg{{Account: "assets:cash", Amount: 100}, {Account: "income:revenue", Amount: -100}}}
		if _, err := l.Post(context.Background(), adj); !errors.Is(err, periods.ErrOutsideWindow) {
			t.Errorf("adjustment on %s: %v, want ErrOutsideWindow", competence.Format(time.DateOnly), err)
		}
	}
	if n := ledgertest.Count(t, db, `SELECT count(*) FROM posting_sets`); n != 0 {
		t.Fatalf("%d sets written outside the window", n)
	}

	// The edges inside: go-live at midnight in São Paulo, and now.
	for _, at := range []time.Time{ledgertest.SaoPaulo(2020, 11, 1, 0, 0), now, now.Add(periods.MaxAhead - time.Minute)} {
		s, err := postings.Sale("ch-in-"+at.Format(time.RFC3339Nano), "BRL", 4990, 0, at)
		ledgertest.Post(t, l, s, err)
	}

	// A configured go-live moves the lower bound.
	cal, _ := periods.NewCalendar(periods.DefaultTimeZone)
	late := postings.New(db, cal.WithGoLive(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)))
	s, _ := postings.Sale("ch-2025", "BRL", 4990, 0, ledgertest.SaoPaulo(2025, 12, 31, 23, 0))
	if _, err := late.Post(context.Background(), s); !errors.Is(err, periods.ErrOutsideWindow) {
		t.Errorf("sale before a configured go-live: %v", err)
	}
	// And the ledger's clock the upper one.
	behind := postings.New(db, cal).WithClock(func() time.Time { return now.AddDate(0, -1, 0) })
	s, _ = postings.Sale("ch-ahead", "BRL", 4990, 0, now)
	if _, err := behind.Post(context.Background(), s); !errors.Is(err, periods.ErrOutsideWindow) {
		t.Errorf("sale a month past the ledger's clock: %v", err)
	}
}

// TestMonthClosesDespiteSetsWrittenBeforeTheWindow: a ledger that already
// holds sets dated 0001-01 and 9999-12 (written before the ledger refused
// them) can still close its months from go-live on; a month before
// go-live cannot be closed.
func TestMonthClosesDespiteSetsWrittenBeforeTheWindow(t *testing.T) {
	t.Parallel()
	l, db := ledgertest.New(t)
	ctx := context.Background()
	insertLegacySet(t, db, "legacy-0001", "0001-01-01")
	insertLegacySet(t, db, "legacy-9999", "9999-12-31")
	s, err := postings.Sale("ch-1", "BRL", 4990, 0, ledgertest.SaoPaulo(2026, 8, 10, 12, 0))
	ledgertest.Post(t, l, s, err)
	after := ledgertest.SaoPaulo(2026, 10, 2, 12, 0)
	if err := periods.Close(ctx, db, l.Calendar(), periods.Month{Year: 2026, Month: time.August}, after, "", monthsums.Closing); err != nil {
		t.Fatalf("close 2026-08 beside a set of 0001-01: %v", err)
	}
	if err := periods.Close(ctx, db, l.Calendar(), periods.Month{Year: 2026, Month: time.September}, after, "", monthsums.Closing); err != nil {
		t.Fatalf("close 2026-09: %v", err)
	}
	if err := periods.Close(context.Background(), db, l.Calendar(), periods.Month{Year: 2020, Month: time.October}, after, "", monthsums.Closing); !errors.Is(err, periods.ErrInvalidMonth) {
		t.Fatalf("close a month before go-live: %v, want ErrInvalidMonth", err)
	}
}

// insertLegacySet writes a balanced adjustment on date d straight in SQL,
// as code without the window could.
func insertLegacySet(t *testing.T, db *sqlx.DB, key, d string) {
	t.Helper()
	db.MustExec(`WITH s AS (
		INSERT INTO posting_sets (kind, idempotency_key, amount, currency, competence, event_at, content_hash)
		VALUES ('adjustment', $1, 100, 'BRL', $2::date, $2::date, 'legacy') RETURNING id, competence_month)
	INSERT INTO postings (posting_set_id, account_id, currency, amount, competence_month)
	SELECT s.id, a.id, 'BRL', v.amount, s.competence_month
	FROM s, (VALUES ('assets:cash', 100), ('income:revenue', -100)) v (code, amount) JOIN accounts a ON a.code = v.code`, key, d)
}
