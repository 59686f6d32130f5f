package postings

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
)

// WriteTx is the isolation every transaction that writes posting sets or
// closes a month states: READ COMMITTED, the one level the ledger's triggers
// accept (sql/0012), whatever the database's default_transaction_isolation
// says. At it each statement sees what committed before it started, so a
// transaction that waited for a lock reads the ledger as it is now.
func WriteTx() *sql.TxOptions { return &sql.TxOptions{Isolation: sql.LevelReadCommitted} }

// Errors of month close.
var (
	ErrMonthNotOver     = errors.New("month has not ended yet")
	ErrEarlierMonthOpen = errors.New("an earlier month is still open")
	ErrAlreadyClosed    = errors.New("month is already closed")
	// ErrCloseBusy: posting transactions held the close lock for longer
	// than CloseLockTimeout. The close gave up rather than queue every new
	// posting behind it; nothing changed, and it can be tried again.
	ErrCloseBusy = errors.New("postings in flight held the close lock; nothing was closed, try again")
)

// CloseLockTimeout bounds how long a close waits for the posting
// transactions in flight. While it waits, new postings wait behind it, so
// a posting transaction that hangs (or a session that holds a lock on
// purpose) costs the ledger at most this long, not the whole wait.
const CloseLockTimeout = 2 * time.Second

// CloseMonthTx closes competence month m inside tx: from then on the
// database refuses any posting set dated in it, and late events go to the
// next open month. Months close in order, and only once they have ended in
// the ledger's time zone (now is the caller's clock). It takes the close
// lock (the month_close_lock table, sql/0012) exclusively: every posting
// set insert holds it in a shared mode until its commit
// (trg_posting_sets_open_month), so the close waits for postings in flight
// and holds new ones until tx ends, and no set slips into the month between
// check and close. Taking it needs rights on that table, which only the
// owner and the service role have: no other role can freeze the ledger.
func (l *Ledger) CloseMonthTx(ctx context.Context, tx *sqlx.Tx, m Month, now time.Time) error {
	return l.CloseMonthByTx(ctx, tx, m, now, "")
}

// CloseMonthByTx is CloseMonthTx recording who closed the month: the API
// token's name, or "cli:<user>". Empty leaves the column's default, the
// database role, which says only which service connected.
func (l *Ledger) CloseMonthByTx(ctx context.Context, tx *sqlx.Tx, m Month, now time.Time, by string) error {
	if now.Before(m.End(l.cal.Location())) {
		return fmt.Errorf("close %s: %w", m, ErrMonthNotOver)
	}
	if m.Before(l.cal.GoLiveMonth()) {
		return fmt.Errorf("close %s: %w: before the go-live month %s", m, ErrInvalidMonth, l.cal.GoLiveMonth())
	}
	if err := lockForClose(ctx, tx); err != nil {
		return fmt.Errorf("close %s: %w", m, err)
	}
	var last, first sql.NullTime
	// Sets dated before go-live (written before the ledger refused them)
	// do not hold the first close back: their months can never be closed.
	err := tx.QueryRowxContext(ctx, `SELECT (SELECT max(month) FROM closed_periods),
		(SELECT min(competence_month) FROM posting_sets WHERE competence_month >= $1)`, l.cal.GoLiveMonth().First()).Scan(&last, &first)
	if err != nil {
		return fmt.Errorf("close %s: read periods: %w", m, err)
	}
	switch {
	case last.Valid && !MonthOf(last.Time).Before(m):
		return fmt.Errorf("close %s: %w", m, ErrAlreadyClosed)
	case last.Valid && MonthOf(last.Time).Next() != m:
		return fmt.Errorf("close %s: %w: %s", m, ErrEarlierMonthOpen, MonthOf(last.Time).Next())
	case !last.Valid && first.Valid && MonthOf(first.Time).Before(m):
		return fmt.Errorf("close %s: %w: %s", m, ErrEarlierMonthOpen, MonthOf(first.Time))
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO closed_periods (month, closed_by) VALUES ($1, coalesce(NULLIF($2, ''), current_user))`,
		m.First(), by); err != nil {
		return fmt.Errorf("close %s: %w", m, err)
	}
	return nil
}

// CloseMonth closes m in a transaction of its own. See CloseMonthTx.
func (l *Ledger) CloseMonth(ctx context.Context, m Month, now time.Time) error {
	tx, err := l.db.BeginTxx(ctx, WriteTx())
	if err != nil {
		return fmt.Errorf("close %s: begin: %w", m, err)
	}
	defer tx.Rollback()
	if err := l.CloseMonthTx(ctx, tx, m, now); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("close %s: commit: %w", m, err)
	}
	return nil
}

// ClosedMonths lists the closed months in order.
func ClosedMonths(ctx context.Context, q sqlx.QueryerContext) ([]Month, error) {
	var ts []time.Time
	if err := sqlx.SelectContext(ctx, q, &ts, `SELECT month FROM closed_periods ORDER BY month`); err != nil {
		return nil, fmt.Errorf("list closed months: %w", err)
	}
	ms := make([]Month, len(ts))
	for i, t := range ts {
		ms[i] = MonthOf(t)
	}
	return ms, nil
}

// lockForClose takes the close lock exclusively, waiting at most
// CloseLockTimeout.
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
	// The rest of the close (the snapshot) waits as the session would.
	if _, err := tx.ExecContext(ctx, `SELECT set_config('lock_timeout', $1, true)`, before); err != nil {
		return fmt.Errorf("take the close lock: %w", err)
	}
	return nil
}
