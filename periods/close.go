// Package periods owns competence months as finance closes them: the
// rules of a close (months close in order, once they have ended in the
// ledger's time zone, never before go-live), the close lock that waits for
// the postings in flight, and the month's snapshot, all in one
// transaction. Close and CloseTx are the only code that writes
// closed_periods; List says which months are open and closed.
package periods

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/razao/razao/internal/kind"
	"github.com/razao/razao/postings"
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
func Close(ctx context.Context, db *sqlx.DB, cal postings.Calendar, m postings.Month, now time.Time, by string, figures Figures) error {
	tx, err := db.BeginTxx(ctx, postings.WriteTx())
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
// at now (the caller's clock). by is recorded as closed_by (the API
// token's name, or "cli:<user>"); empty leaves the column's default, the
// database role. The refusals are ErrMonthNotOver, ErrEarlierMonthOpen,
// ErrAlreadyClosed, ErrCloseBusy and postings.ErrInvalidMonth.
//
// tx must be READ COMMITTED (postings.WriteTx), as the snapshot must see
// every set committed before the close's lock was granted.
func CloseTx(ctx context.Context, tx *sqlx.Tx, cal postings.Calendar, m postings.Month, now time.Time, by string, figures Figures) error {
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
		return err
	}
	if err := writeSnapshot(ctx, tx, m, figures); err != nil {
		// A month whose figures do not fit int64 cannot be snapshotted,
		// so it is not closed: said so, not a bare 500.
		return postings.SumError(err, "the month's snapshot")
	}
	return nil
}

// closeMonth applies the rules and records the close. It takes the close
// lock (the month_close_lock table, sql/0012) exclusively: every posting
// set insert holds it in a shared mode until its commit
// (trg_posting_sets_open_month), so the close waits for postings in flight
// and holds new ones until tx ends, and no set slips into the month between
// check and close. Taking it needs rights on that table, which only the
// owner and the service role have: no other role can freeze the ledger.
func closeMonth(ctx context.Context, tx *sqlx.Tx, cal postings.Calendar, m postings.Month, now time.Time, by string) error {
	if now.Before(m.End(cal.Location())) {
		return fmt.Errorf("close %s: %w", m, ErrMonthNotOver)
	}
	if m.Before(cal.GoLiveMonth()) {
		return fmt.Errorf("close %s: %w: before the go-live month %s", m, postings.ErrInvalidMonth, cal.GoLiveMonth())
	}
	if err := lockForClose(ctx, tx); err != nil {
		return fmt.Errorf("close %s: %w", m, err)
	}
	var last, first sql.NullTime
	// Sets dated before go-live (written before the ledger refused them)
	// do not hold the first close back: their months can never be closed.
	err := tx.QueryRowxContext(ctx, `SELECT (SELECT max(month) FROM closed_periods),
		(SELECT min(competence_month) FROM posting_sets WHERE competence_month >= $1)`, cal.GoLiveMonth().First()).Scan(&last, &first)
	if err != nil {
		return fmt.Errorf("close %s: read periods: %w", m, err)
	}
	switch {
	case last.Valid && !postings.MonthOf(last.Time).Before(m):
		return fmt.Errorf("close %s: %w", m, ErrAlreadyClosed)
	case last.Valid && postings.MonthOf(last.Time).Next() != m:
		return fmt.Errorf("close %s: %w: %s", m, ErrEarlierMonthOpen, postings.MonthOf(last.Time).Next())
	case !last.Valid && first.Valid && postings.MonthOf(first.Time).Before(m):
		return fmt.Errorf("close %s: %w: %s", m, ErrEarlierMonthOpen, postings.MonthOf(first.Time))
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO closed_periods (month, closed_by) VALUES ($1, coalesce(NULLIF($2, ''), current_user))`,
		m.First(), by); err != nil {
		return fmt.Errorf("close %s: %w", m, err)
	}
	return nil
}

// lockForClose takes the close lock exclusively, waiting at most
// CloseLockTimeout, then gives the rest of the close (the snapshot) the
// session's own lock_timeout back.
func lockForClose(ctx context.Context, tx *sqlx.Tx) error {
	var before string
	if err := tx.GetContext(ctx, &before, `SELECT current_setting('lock_timeout')`); err != nil {
		return fmt.Errorf("take the close lock: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `SELECT set_config('lock_timeout', $1, true)`, fmt.Sprintf("%dms", CloseLockTimeout.Milliseconds())); err != nil {
		return fmt.Errorf("take the close lock: %w", err)
	}
	_, err := tx.ExecContext(ctx, `LOCK TABLE month_close_lock IN EXCLUSIVE MODE`)
	var pqErr *pq.Error
	if errors.As(err, &pqErr) && pqErr.Code == "55P03" { // lock_not_available
		return fmt.Errorf("%w (waited %s)", ErrCloseBusy, CloseLockTimeout)
	}
	if err != nil {
		return fmt.Errorf("take the close lock: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `SELECT set_config('lock_timeout', $1, true)`, before); err != nil {
		return fmt.Errorf("take the close lock: %w", err)
	}
	return nil
}
