// Package reports assembles the ledger's figures for finance, by
// competence month: trial balances with parents rolled up, an account's
// monthly series, the income statement, every account's balance, the
// journal, and streamed CSV exports. Every amount is int64 centavos,
// signed debit positive unless a field says otherwise.
//
// The figures come from one source, a Sums, and the reports know nothing
// of where it reads them (monthsums.Books reads a closed month from the
// snapshot periods kept when closing it, any other month from its month
// sums). The journal lists posting sets, not figures, and reads them
// itself.
//
// The read functions take a sqlx.QueryerContext. Given a *sqlx.DB, each
// runs its statements, and its Sums', in a read-only REPEATABLE READ
// transaction of its own, so they agree with each other, with JIT
// compilation off (these are index range scans sized by a month, where
// compiling costs more than it saves). Given a *sqlx.Tx, they run in the
// caller's transaction.
package reports

import (
	"context"

	"github.com/jmoiron/sqlx"

	"github.com/razao/razao/accounts"
	"github.com/razao/razao/internal/cursor"
	"github.com/razao/razao/internal/exact"
	"github.com/razao/razao/internal/kind"
	"github.com/razao/razao/internal/snapshot"
	"github.com/razao/razao/periods"
	"github.com/razao/razao/postings"
)

// Errors a caller (the HTTP layer) maps to responses with errors.Is.
var (
	// ErrInvalidMonth: a month that is not a valid YYYY-MM.
	ErrInvalidMonth = periods.ErrInvalidMonth
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

// Sums is the one source of the figures the reports assemble. Each method
// runs its statements on q, the report's read, and its errors name the
// figure and the report it reads for.
type Sums interface {
	// Lines returns month m's trial balance lines: the own figures (its
	// postings, not its descendants') of every account with an opening
	// balance or activity in m, and of its ancestors of the same
	// currency.
	Lines(ctx context.Context, q sqlx.QueryerContext, m periods.Month) (MonthLines, error)
	// Income returns month m's income statement figures.
	Income(ctx context.Context, q sqlx.QueryerContext, m periods.Month) (MonthIncome, error)
	// Moves returns the balance of the accounts ids together before month
	// from, and their debits and credits in each month from from to to.
	// name, their root's code, names them in errors.
	Moves(ctx context.Context, q sqlx.QueryerContext, name string, ids []int64, from, to periods.Month) (Moves, error)
	// Totals returns every account's own debits and credits over the
	// whole ledger.
	Totals(ctx context.Context, q sqlx.QueryerContext) ([]periods.Line, error)
}

// State says what a month's figures are.
type State struct {
	// Closed: the month is closed, its figures final.
	Closed bool
	// Snapshot: the figures are those the month's snapshot kept when it
	// closed.
	Snapshot bool
}

// MonthLines are a month's trial balance lines.
type MonthLines struct {
	State
	Lines []periods.Line
}

// MonthIncome are a month's income statement figures.
type MonthIncome struct {
	State
	Figures periods.Income
}

// Moves are some accounts' debits and credits, together, over a range of
// months.
type Moves struct {
	// Opening is their balance before the range, from the ledger's
	// beginning.
	Opening int64
	// Months are the range's, first to last.
	Months []Move
}

// Move is one month of Moves.
type Move struct {
	Closed          bool
	Debits, Credits int64
}

// read runs fn in one read-only snapshot of its own when q can begin
// transactions, else directly on q (the caller's transaction).
func read(ctx context.Context, q sqlx.QueryerContext, fn func(q sqlx.QueryerContext) error) error {
	err := snapshot.Read(ctx, q, fn, `SET LOCAL jit = off`)
	// Every sum of a report is cast to bigint in SQL: one that does not
	// fit is refused there (22003), and named an overflow here.
	return exact.SumError(err, "")
}
