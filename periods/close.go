// Package periods owns competence months as finance closes them: the
// rules of a close (months close in order, once they have ended in the
// ledger's time zone, never before go-live), the close lock that waits for
// the postings in flight, and the month's snapshot, all in one
// transaction. Close and CloseTx are the only code that writes
// closed_periods; List says which months are open and closed.
package periods

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/razao/razao/internal/exact"
	"github.com/razao/razao/internal/kind"
)

// Refusals of a close. Nothing changed when one is returned.
var (
	ErrMonthNotOver     = kind.New(kind.Conflict, "month-not-over", "Month has not ended", "month has not ended yet")
	ErrEarlierMonthOpen = kind.New(kind.Conflict, "earlier-month-open", "An earlier month is still open", "an earlier month is still open")
	ErrAlreadyClosed    = kind.New(kind.Conflict, "already-closed", "Month already closed", "month is already closed")
	// ErrCloseBusy: posting transactions held the close lock for longer
	// than CloseLockTimeout. The close gave up rather than queue every new
	// posting behind it; it can be tried again.
	ErrCloseBusy = kind.New(kind.Unavailable, "close-busy", "Postings in flight held the close lock",
		"postings in flight held the close lock; nothing was closed, try again").After(5 * time.Second)
)

// CloseLockTimeout bounds how long a close waits for the posting
// transactions in flight. While it waits, new postings wait behind it, so
// a posting transaction that hangs (or a session that holds a lock on
// purpose) costs the ledger at most this long, not the whole wait.
const CloseLockTimeout = 2 * time.Second

// Close closes month m in a transaction of its own. See CloseTx.
func Close(ctx context.Context, db *sqlx.DB, cal Calendar, m Month, now time.Time, by string, figures Figures) error {
	if err := m.Check(); err != nil {
		return err
	}
	// The months ahead get their partitions first, when they can: a
	// close does not wait on the readers of a DEFAULT partition, nor on
	// another call making them (ErrPartitionsBusy); serve's keeper makes
	// them a minute later, and a set dated in such a month meanwhile is
	// booked in the DEFAULT partition.
	if _, err := EnsurePartitions(ctx, db, m, now); errors.Is(err, ErrPartitionsBusy) {
		slog.WarnContext(ctx, "periods: the months' partitions were not made before the close; closing without them", "month", m.String(), "error", err)
	} else if err != nil {
		return fmt.Errorf("close %s: %w", m, err)
	}
	tx, err := db.BeginTxx(ctx, WriteTx())
	if err != nil {
		return fmt.Errorf("close %s: begin: %w", m, err)
	}
	defer tx.Rollback()
	if err := CloseTx(ctx, tx, cal, m, now, by, figures); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("close %s: commit: %w", m, err)
	}
	return nil
}

// CloseTx closes competence month m inside tx and stores its trial
// balance and income statement snapshot (computed by figures) in the same
// transaction, so a closed month always has its snapshot. From then on
// the database refuses any posting set dated in m, and late events go to
// the next open month.
//
// Months close in order, and only once they have ended in cal's time zone
// at now (the caller's clock): CheckCloseTime and CheckCloseOrder. by is
// recorded as closed_by (the API token's name, or "cli:<user>"); empty
// leaves the column's default, the database role. The refusals are
// ErrMonthNotOver, ErrEarlierMonthOpen, ErrAlreadyClosed, ErrCloseBusy and
// ErrInvalidMonth.
//
// tx must be READ COMMITTED (WriteTx), as the snapshot must see every set
// committed before the close's lock was granted.
func CloseTx(ctx context.Context, tx *sqlx.Tx, cal Calendar, m Month, now time.Time, by string, figures Figures) error {
	if err := m.Check(); err != nil {
		return err
	}
	var iso string
	if err := tx.GetContext(ctx, &iso, `SELECT current_setting('transaction_isolation')`); err != nil {
		return fmt.Errorf("close %s: %w", m, err)
	}
	if iso != "read committed" {
		return fmt.Errorf("close %s: transaction is %s; the snapshot needs read committed", m, iso)
	}
	if err := closeMonth(ctx, tx, cal, m, now, by); err != nil {
		return fmt.Errorf("close %s: %w", m, err)
	}
	if err := writeSnapshot(ctx, tx, m, figures); err != nil {
		// A month whose figures do not fit int64 cannot be snapshotted,
		// so it is not closed: said so, not a bare 500.
		return exact.SumError(err, "the month's snapshot")
	}
	return nil
}

// closeMonth applies the rules and records the close. It takes the close
// lock (the month_close_lock table, sql/0012) exclusively: every posting
// transaction holds it in a shared mode until its commit (LockForPosting,
// and trg_posting_sets_open_month for any other writer), so the close
// waits for postings in flight and holds new ones until tx ends, and no
// set slips into the month between check and close. Taking it needs
// rights on that table, which only the owner and the service role have: no
// other role can freeze the ledger.
func closeMonth(ctx context.Context, tx *sqlx.Tx, cal Calendar, m Month, now time.Time, by string) error {
	if err := CheckCloseTime(cal, m, now); err != nil {
		return err
	}
	if err := lockForClose(ctx, tx); err != nil {
		return err
	}
	last, first, err := readCloseState(ctx, tx, cal.GoLiveMonth())
	if err != nil {
		return err
	}
	if err := CheckCloseOrder(m, last, first); err != nil {
		return err
	}
	return insertClose(ctx, tx, m, by)
}
