package reports_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/jmoiron/sqlx"

	"github.com/razao/razao/accounts"
	"github.com/razao/razao/internal/ledgertest"
	"github.com/razao/razao/money"
	"github.com/razao/razao/monthsums"
	"github.com/razao/razao/partners"
	"github.com/razao/razao/periods"
	"github.com/razao/razao/reports"
)

// bookHuge writes n adjustment sets of money.Ceiling centavos each (the
// largest amount the database takes), debit on debit and credit on
// credit, in August 2026: a ledger no bounded input builds, but one an
// attacker with many requests, or a corrupted database, could hold.
// Every trigger runs; the sets are balanced.
func bookHuge(t *testing.T, db *sqlx.DB, tag string, n int, debit, credit string) {
	t.Helper()
	_, err := db.Exec(`
		WITH s AS (
			INSERT INTO posting_sets (kind, idempotency_key, amount, currency, competence, event_at, description, content_hash)
			SELECT 'adjustment', 'huge:' || $1 || ':' || g, $3, 'BRL', '2026-08-10', '2026-08-10T12:00:00Z', 'huge', 'test'
			FROM generate_series(1, $2) g RETURNING id
		)
		INSERT INTO postings (posting_set_id, account_id, currency, amount, competence_month)
		SELECT s.id, a.id, 'BRL', v.amount, '2026-08-01'
		FROM s CROSS JOIN (VALUES ($4::text, $3::bigint), ($5::text, -$3::bigint)) AS v (code, amount)
		JOIN accounts a ON a.code = v.code`, tag, n, money.Ceiling, debit, credit)
	if err != nil {
		t.Fatalf("book %d huge sets: %v", n, err)
	}
}

// The int64 overflow of sums, in both places it can happen, against every
// report: a figure that does not fit is an ErrSumOverflow naming it, never
// a wrong number, a panic or an unexplained failure; figures that fit are
// still right.
func TestReportsRefuseFiguresBeyondInt64(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("each account fits, their sum does not", func(t *testing.T) {
		t.Parallel()
		_, db := ledgertest.New(t)
		// 5,000 × 10^15 = 5·10^18 per account, under 2^63−1 ≈ 9.22·10^18;
		// the total debits, and the expenses parent, are 10^19.
		bookHuge(t, db, "a", 5000, "expenses:commission", "income:revenue")
		bookHuge(t, db, "b", 5000, "expenses:psp-fees", "assets:cash")
		_, err := reports.TrialBalance(ctx, db, monthsums.Books{}, aug2026)
		wantOverflow(t, "trial balance", err, "expenses")
		_, err = reports.Balances(ctx, db, monthsums.Books{})
		wantOverflow(t, "balances", err, "expenses")
		_, err = reports.AccountSeries(ctx, db, monthsums.Books{}, "expenses", aug2026, aug2026)
		wantOverflow(t, "series of expenses", err, "")
		_, err = reports.WriteCSV(ctx, db, monthsums.Books{}, io.Discard, reports.ExportTrialBalance, aug2026, reports.RFC4180)
		wantOverflow(t, "trial balance csv", err, "expenses")

		// What fits is answered, exactly.
		s, err := reports.AccountSeries(ctx, db, monthsums.Books{}, "expenses:commission", aug2026, aug2026)
		if err != nil || s.Points[0].Debits != 5000*money.Ceiling || s.Points[0].Historical != 5000*money.Ceiling {
			t.Fatalf("series of expenses:commission: %+v, %v", s.Points, err)
		}
		inc, err := reports.IncomeStatement(ctx, db, monthsums.Books{}, aug2026)
		if err != nil || inc.Commission != 5000*money.Ceiling || inc.PSPFees != 5000*money.Ceiling ||
			inc.Other != 5000*money.Ceiling || inc.NetIncome != -5000*money.Ceiling {
			t.Fatalf("income statement: %+v, %v", inc, err)
		}
	})

	t.Run("one account's sum does not fit", func(t *testing.T) {
		t.Parallel()
		l, db := ledgertest.New(t)
		if _, err := accounts.Ensure(ctx, db, "liabilities:commission-payable:p1"); err != nil {
			t.Fatal(err)
		}
		// 9,300 × 10^15 > 2^63−1: the database's own sum is refused.
		bookHuge(t, db, "c", 9300, "expenses:commission", "liabilities:commission-payable:p1")
		_, err := reports.TrialBalance(ctx, db, monthsums.Books{}, aug2026)
		wantOverflow(t, "trial balance", err, "")
		_, err = reports.Balances(ctx, db, monthsums.Books{})
		wantOverflow(t, "balances", err, "")
		_, err = reports.IncomeStatement(ctx, db, monthsums.Books{}, aug2026)
		wantOverflow(t, "income statement", err, "")
		_, err = reports.AccountSeries(ctx, db, monthsums.Books{}, "expenses:commission", aug2026, aug2026)
		wantOverflow(t, "series", err, "")
		_, err = partners.Get(ctx, db, "p1")
		wantOverflow(t, "partner", err, "")
		for _, k := range []reports.ExportKind{reports.ExportTrialBalance, reports.ExportIncomeStatement} {
			for _, d := range []reports.Dialect{reports.RFC4180, reports.Brazil} {
				var b strings.Builder
				_, err := reports.WriteCSV(ctx, db, monthsums.Books{}, &b, k, aug2026, d)
				wantOverflow(t, string(k)+" csv", err, "")
				if b.Len() != 0 {
					t.Errorf("%s %s csv wrote %d bytes before refusing", k, d, b.Len())
				}
			}
		}
		// The journal has no sums: it lists every posting, exactly.
		if n, err := reports.WriteCSV(ctx, db, monthsums.Books{}, io.Discard, reports.ExportJournal, aug2026, reports.RFC4180); err != nil || n != 18600 {
			t.Fatalf("journal csv: %d lines, %v", n, err)
		}
		// A month whose figures cannot be snapshotted is not closed.
		err = periods.Close(ctx, db, l.Calendar(), aug2026, afterSeptember, "", monthsums.Closing)
		wantOverflow(t, "close", err, "")
		var closed int
		if err := db.Get(&closed, `SELECT count(*) FROM closed_periods`); err != nil || closed != 0 {
			t.Fatalf("%d months closed after a refused close (%v)", closed, err)
		}
	})
}

func wantOverflow(t *testing.T, what string, err error, names string) {
	t.Helper()
	if !errors.Is(err, reports.ErrSumOverflow) {
		t.Errorf("%s: %v, want ErrSumOverflow", what, err)
		return
	}
	if names != "" && !strings.Contains(err.Error(), names) {
		t.Errorf("%s: %q does not name %s", what, err, names)
	}
}
