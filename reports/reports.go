// Package reports reads the ledger for finance, by competence month: trial
// balances with parents rolled up, an account's monthly series, the income
// statement, the journal, the figures of a closing month's
// snapshot, and streamed CSV exports. Every amount is int64 centavos, signed debit
// positive unless a field says otherwise.
//
// A closed month never changes (the database refuses postings into it), so
// closing one stores its trial balance and income statement
// (month_snapshots, trial_balance_snapshots): its reports are lookups, and an
// open month's opening balances start from the latest snapshot rather than
// from the beginning of the ledger. Months are closed by package periods,
// which has WriteSnapshot store the figures in the closing transaction; a
// closed month without a snapshot (closed before snapshots existed) is
// still reported right, only computed from its postings.
//
// The read functions take a sqlx.QueryerContext. Given a *sqlx.DB, each
// runs its statements in a read-only REPEATABLE READ transaction of its
// own, so they agree with each other, with JIT compilation off (these are
// index range scans sized by a month, where compiling costs more than it
// saves). Given a *sqlx.Tx, they run in the caller's transaction.
package reports

import (
	"context"

	"github.com/jmoiron/sqlx"

	"github.com/razao/razao/accounts"
	"github.com/razao/razao/internal/cursor"
	"github.com/razao/razao/internal/kind"
	"github.com/razao/razao/internal/snapshot"
	"github.com/razao/razao/postings"
)

// Errors a caller (the HTTP layer) maps to responses with errors.Is.
var (
	// ErrInvalidMonth: a month that is not a valid YYYY-MM.
	ErrInvalidMonth = postings.ErrInvalidMonth
	// ErrInvalidRange: a series whose from is after to, or longer than
	// MaxSeriesMonths.
	ErrInvalidRange = kind.New(kind.Invalid, "invalid-parameter", "Invalid parameter", "invalid month range")
	// ErrUnknownAccount: no account has the code.
	ErrUnknownAccount = accounts.ErrUnknownAccount
	// ErrInvalidCursor: a cursor this package did not issue for the same
	// listing (another month, another status).
	ErrInvalidCursor = cursor.ErrInvalid
	// ErrUnknownKind: a CSV export kind other than journal,
	// trial-balance and income-statement.
	ErrUnknownKind = kind.New(kind.NotFound, "unknown-export", "No such export", "unknown export kind")
	// ErrUnknownDialect: a CSV dialect other than rfc4180 and br.
	ErrUnknownDialect = kind.New(kind.NotFound, "unknown-export", "No such export", "unknown CSV dialect")
	// ErrSumOverflow: a report figure does not fit int64 centavos. Every
	// sum a report makes is checked (in SQL, each is cast to bigint, which
	// raises rather than wraps; in Go, by exact.Sums), so a figure is
	// refused, naming it, rather than answered wrong. Each amount is
	// bounded by the configured maximum and the database's ceiling
	// (money.Ceiling), so this takes at least 9,223 postings of R$ 10
	// trillion: a ledger that has been attacked or corrupted, never one
	// that has only traded.
	ErrSumOverflow = postings.ErrSumOverflow
)

// Page sizes of the paginated listings.
const (
	DefaultLimit = cursor.DefaultLimit
	MaxLimit     = cursor.MaxLimit
)

// MaxSeriesMonths bounds AccountSeries.
const MaxSeriesMonths = 240

// read runs fn in one read-only snapshot of its own when q can begin
// transactions, else directly on q (the caller's transaction).
func read(ctx context.Context, q sqlx.QueryerContext, fn func(q sqlx.QueryerContext) error) error {
	err := snapshot.Read(ctx, q, fn, `SET LOCAL jit = off`)
	// Every sum of a report is cast to bigint in SQL: one that does not
	// fit is refused there (22003), and named an overflow here.
	return postings.SumError(err, "")
}
