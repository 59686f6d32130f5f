package verify_test

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/lib/pq"

	"github.com/razao/razao/internal/ledgertest"
	"github.com/razao/razao/monthsums"
	"github.com/razao/razao/periods"
	"github.com/razao/razao/verify"
)

// TestSnapshotsAreFinal: the database refuses to change a snapshot, to
// add lines to a committed one, or to snapshot an open month; and
// CheckSnapshots notices a snapshot that disagrees with the ledger.
func TestSnapshotsAreFinal(t *testing.T) {
	t.Parallel()
	l, db := ledgertest.New(t)
	ctx := context.Background()
	ledgertest.PostAugust(t, l)
	aug2026, afterSeptember := periods.Month{Year: 2026, Month: time.August}, time.Date(2026, 10, 2, 12, 0, 0, 0, time.UTC)
	if err := periods.Close(ctx, db, l.Calendar(), aug2026, afterSeptember, "", monthsums.Closing); err != nil {
		t.Fatal(err)
	}
	tests := []struct{ name, sql, refusedBy string }{
		{"update a line", `UPDATE trial_balance_snapshots SET debits = debits + 1, closing = closing + 1`, "trg_trial_balance_snapshots_append_only"},
		{"delete a line", `DELETE FROM trial_balance_snapshots`, "trg_trial_balance_snapshots_append_only"},
		{"truncate lines", `TRUNCATE trial_balance_snapshots`, "trg_trial_balance_snapshots_no_truncate"},
		{"update the month", `UPDATE month_snapshots SET sales = 1`, "trg_month_snapshots_append_only"},
		{"delete the month", `DELETE FROM month_snapshots`, "trg_month_snapshots_append_only"},
		{"add a line later", `INSERT INTO trial_balance_snapshots (month, account_id, opening, debits, credits, closing)
			SELECT '2026-08-01', id, 0, 1, 0, 1 FROM accounts WHERE code = 'equity'`, "trg_trial_balance_snapshots_sealed"},
		{"snapshot an open month", `INSERT INTO month_snapshots (month, currency, sales, sales_count, refunds, refunds_count,
			commission, psp_fees, other, lines) VALUES ('2026-09-01', 'BRL', 0, 0, 0, 0, 0, 0, 0, 0)`, "fk_month_snapshots_closed"},
		{"a closing that does not add up", `INSERT INTO trial_balance_snapshots (month, account_id, opening, debits, credits, closing)
			SELECT '2026-08-01', id, 0, 1, 0, 2 FROM accounts WHERE code = 'equity'`, "ck_trial_balance_snapshots_closing"},
	}
	for _, tt := range tests {
		_, err := db.ExecContext(ctx, tt.sql)
		var pqErr *pq.Error
		if !errors.As(err, &pqErr) || pqErr.Constraint != tt.refusedBy {
			t.Errorf("%s: %v, want refused by %s", tt.name, err, tt.refusedBy)
		}
	}
	// A tampered snapshot (triggers off, as a superuser could) is caught.
	db.MustExec(`ALTER TABLE trial_balance_snapshots DISABLE TRIGGER trg_trial_balance_snapshots_append_only`)
	db.MustExec(`UPDATE trial_balance_snapshots SET debits = debits + 1, closing = closing + 1
		WHERE account_id = (SELECT id FROM accounts WHERE code = 'assets:cash')`)
	db.MustExec(`ALTER TABLE trial_balance_snapshots ENABLE ALWAYS TRIGGER trg_trial_balance_snapshots_append_only`)
	bad, err := verify.CheckSnapshots(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	want := []verify.Mismatch{{Month: "2026-08", What: "assets:cash debits", Snapshot: 17266, Ledger: 17265}}
	if !reflect.DeepEqual(bad, want) {
		t.Errorf("CheckSnapshots %+v, want %+v", bad, want)
	}
}
