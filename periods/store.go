package periods

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
)

// The statements over closed_periods and the close lock
// (month_close_lock, sql/0012), periods' own tables. Every other package
// asks through these.

// WriteTx is the isolation every transaction that writes posting sets or
// closes a month states: READ COMMITTED, the one level the ledger's
// triggers accept (sql/0012), whatever the database's
// default_transaction_isolation says. At it each statement sees what
// committed before it started, so a transaction that waited for a lock
// reads the ledger as it is now.
func WriteTx() *sql.TxOptions { return &sql.TxOptions{Isolation: sql.LevelReadCommitted} }

// LastClosed returns the last closed month, the zero Month when none is.
// Outside the close lock it may be stale by the time it is used: a
// transaction that writes by it takes LockForPosting instead.
func LastClosed(ctx context.Context, q sqlx.QueryerContext) (Month, error) {
	var last sql.NullTime
	if err := sqlx.GetContext(ctx, q, &last, `SELECT max(month) FROM closed_periods`); err != nil {
		return Month{}, fmt.Errorf("read the last closed month: %w", err)
	}
	return MonthOrZero(last), nil
}

// LockForPosting takes the close lock in the mode every posting
// transaction holds it (so no close commits before tx ends) and returns
// the last closed month as of then, which stays true until tx ends: one
// round trip (sql/functions/ledger_last_closed_month.sql). The months a
// transaction books follow from it (Competence, Closed).
func LockForPosting(ctx context.Context, tx *sqlx.Tx) (Month, error) {
	var last sql.NullTime
	if err := tx.GetContext(ctx, &last, `SELECT ledger_last_closed_month()`); err != nil {
		return Month{}, fmt.Errorf("take the close lock: %w", err)
	}
	return MonthOrZero(last), nil
}

// MonthOrZero is the month of a date read from the database, the zero
// Month (none) for NULL: what max(month) of no rows gives.
func MonthOrZero(t sql.NullTime) Month {
	if !t.Valid {
		return Month{}
	}
	return MonthOf(t.Time.UTC())
}

// readCloseState reads, under the close lock, what CheckCloseOrder needs:
// the last closed month and the first month with posting sets from
// go-live on. Sets dated before go-live (written before the ledger refused
// them) do not hold the first close back: their months can never be
// closed.
func readCloseState(ctx context.Context, tx *sqlx.Tx, goLive Month) (last, first Month, err error) {
	var l, f sql.NullTime
	err = tx.QueryRowxContext(ctx, `SELECT (SELECT max(month) FROM closed_periods),
		(SELECT min(competence_month) FROM posting_sets WHERE competence_month >= $1)`, goLive.First()).Scan(&l, &f)
	if err != nil {
		return Month{}, Month{}, fmt.Errorf("read periods: %w", err)
	}
	return MonthOrZero(l), MonthOrZero(f), nil
}

// insertClose records the close of m; by "" records the database role.
func insertClose(ctx context.Context, tx *sqlx.Tx, m Month, by string) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO closed_periods (month, closed_by) VALUES ($1, coalesce(NULLIF($2, ''), current_user))`,
		m.First(), by)
	return err
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
