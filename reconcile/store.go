package reconcile

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/razao/razao/internal/cursor"
	"github.com/razao/razao/internal/kind"
)

// pinSearchPath makes the transaction resolve names in the ledger's schema
// before pg_temp: a temporary table named like one of ours, created on a
// pooled connection, cannot answer for it.
func pinSearchPath(ctx context.Context, tx *sqlx.Tx) error {
	_, err := tx.ExecContext(ctx, pinSearchPathSQL)
	if err != nil {
		return fmt.Errorf("pin search_path: %w", err)
	}
	return nil
}

const pinSearchPathSQL = `SELECT set_config('search_path', 'pg_catalog, ' || quote_ident(current_schema()) || ', pg_temp', true)`

// begin starts a transaction with the search path pinned.
func begin(ctx context.Context, db *sqlx.DB) (*sqlx.Tx, error) {
	tx, err := db.BeginTxx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("begin: %w", err)
	}
	if err := pinSearchPath(ctx, tx); err != nil {
		tx.Rollback()
		return nil, err
	}
	return tx, nil
}

// lineColumns are the columns a statement line is copied into.
var lineColumns = []string{"run_id", "line", "kind", "event_type", "event_id", "psp_id", "charge_ref",
	"refund_id", "amount", "fee", "at", "detail", "outcome", "reason", "parts", "return_id", "refund_nature"}

// copier loads lines into reconciliation_lines with COPY inside tx.
type copier struct {
	stmt *sql.Stmt
	run  int64
	next int64 // the next line number
	n    int64 // lines copied
}

func newCopier(ctx context.Context, tx *sqlx.Tx, run, first int64) (*copier, error) {
	stmt, err := tx.PrepareContext(ctx, pq.CopyIn("reconciliation_lines", lineColumns...))
	if err != nil {
		return nil, fmt.Errorf("copy lines: %w", err)
	}
	return &copier{stmt: stmt, run: run, next: first}, nil
}

// lineRow is l as the values of lineColumns, in order, for line number
// n of run: the one place a line becomes a row, for both loaders.
func lineRow(row []any, run, n int64, l Line) []any {
	var fee, at, outcome, reason, parts any
	if p := l.Parts; p.Stated() {
		// In money.Parts' order, as matching reads them (match.go).
		parts = pq.Array([]int64{p.Original, p.Withdrawal, p.Change, p.Interest, p.Fine, p.Rebate, p.Discount})
	}
	if l.HasFee {
		fee = l.Fee
	}
	if !l.At.IsZero() {
		at = l.At
	}
	if l.Kind == KindInvalid {
		outcome, reason = string(Divergence), ReasonInvalidLine
		if l.Reason != "" {
			reason = l.Reason
		}
	}
	var returnID, nature any
	if l.ReturnID != "" {
		returnID = l.ReturnID
	}
	if l.Nature != "" {
		nature = l.Nature
	}
	return append(row[:0], run, n, string(l.Kind), l.EventType, l.EventID, l.PSPID, l.ChargeRef,
		l.RefundID, l.Amount, fee, at, l.Detail, outcome, reason, parts, returnID, nature)
}

func (c *copier) add(ctx context.Context, l Line) error {
	_, err := c.stmt.ExecContext(ctx, lineRow(nil, c.run, c.next, l)...)
	if err != nil {
		return fmt.Errorf("copy line %d: %w", c.next, err)
	}
	c.next++
	c.n++
	return nil
}

// close flushes the COPY.
func (c *copier) close(ctx context.Context) error {
	if _, err := c.stmt.ExecContext(ctx); err != nil {
		c.stmt.Close()
		return fmt.Errorf("copy lines: %w", err)
	}
	if err := c.stmt.Close(); err != nil {
		return fmt.Errorf("copy lines: %w", err)
	}
	return nil
}

// Run is one reconciliation run, as its history shows it.
type Run struct {
	ID          int64      `db:"id" json:"id"`
	Endpoint    string     `db:"endpoint" json:"endpoint"`
	Source      string     `db:"source" json:"source"`
	From        time.Time  `db:"window_from" json:"window_from"`
	To          time.Time  `db:"window_to" json:"window_to"`
	Final       bool       `db:"final" json:"final"`
	Scheduled   bool       `db:"scheduled" json:"scheduled"`
	Sweep       bool       `db:"sweep" json:"sweep"` // the day's refund sweep (Reconciler.Sweep), not a window
	Status      string     `db:"status" json:"status"`
	Attempts    int        `db:"attempts" json:"attempts"`
	Pages       int        `db:"pages" json:"pages"`
	Lines       int64      `db:"lines" json:"lines"`
	Matched     int64      `db:"matched" json:"matched"`
	Booked      int64      `db:"booked" json:"booked"`
	Divergences int64      `db:"divergences" json:"divergences"`
	FileSHA256  *string    `db:"file_sha256" json:"file_sha256,omitempty"`
	Error       *string    `db:"last_error" json:"error,omitempty"`
	StartedAt   time.Time  `db:"started_at" json:"started_at"`
	FinishedAt  *time.Time `db:"finished_at" json:"finished_at,omitempty"`
	DurationMS  *int64     `db:"duration_ms" json:"duration_ms,omitempty"`
	Loaded      bool       `db:"loaded" json:"-"`
}

const runColumns = `id, endpoint, source, window_from, window_to, final, scheduled, sweep, status, attempts, pages, lines,
	matched, booked, divergences, file_sha256, last_error, started_at, finished_at, duration_ms, loaded`

// ErrNotFound: no run with that id.
var ErrNotFound = kind.New(kind.NotFound, "not-found", "Not found", "reconciliation run not found")

// GetRun returns one run.
func GetRun(ctx context.Context, db sqlx.QueryerContext, id int64) (Run, error) {
	var r Run
	err := sqlx.GetContext(ctx, db, &r, `SELECT `+runColumns+` FROM reconciliation_runs WHERE id = $1`, id)
	if errors.Is(err, sql.ErrNoRows) {
		return r, ErrNotFound
	}
	if err != nil {
		return r, fmt.Errorf("get reconciliation run %d: %w", id, err)
	}
	return r, nil
}

// MaxPage bounds one page of runs or lines: the API's bound
// (cursor.MaxLimit).
const MaxPage = cursor.MaxLimit

// ListRuns returns runs newest first, of one endpoint when endpoint is
// not empty, with ids below before (0: from the newest), limit of them
// (cursor.Limit: 100 when ≤ 0, at most MaxPage).
func ListRuns(ctx context.Context, db sqlx.QueryerContext, endpoint string, before int64, limit int) ([]Run, error) {
	runs, _, err := RunsPage(ctx, db, endpoint, before, limit)
	return runs, err
}

// RunsPage is ListRuns and the before of the next page: 0 when there
// is none. One run more than the page is read to know: a last page
// exactly full has no next one.
func RunsPage(ctx context.Context, db sqlx.QueryerContext, endpoint string, before int64, limit int) ([]Run, int64, error) {
	limit = cursor.Limit(limit)
	if before <= 0 {
		before = 1<<63 - 1
	}
	runs := []Run{}
	err := sqlx.SelectContext(ctx, db, &runs, `SELECT `+runColumns+` FROM reconciliation_runs
		WHERE ($1 = '' OR endpoint = $1) AND id < $2 ORDER BY id DESC LIMIT $3`, endpoint, before, limit+1)
	if err != nil {
		return nil, 0, fmt.Errorf("list reconciliation runs: %w", err)
	}
	if len(runs) > limit {
		runs = runs[:limit]
		return runs, runs[limit-1].ID, nil
	}
	return runs, 0, nil
}

// LineResult is one line of a run as matched, or a ledger fact the
// statement lacks (Side "ledger"), with both sides.
type LineResult struct {
	Line         int64      `db:"line" json:"line"`
	Side         string     `db:"side" json:"side"`
	Kind         string     `db:"kind" json:"kind"`
	PSPID        string     `db:"psp_id" json:"psp_id"`
	ChargeRef    string     `db:"charge_ref" json:"charge_ref"`
	RefundID     string     `db:"refund_id" json:"refund_id"`
	Amount       int64      `db:"amount" json:"amount"`
	Fee          *int64     `db:"fee" json:"fee,omitempty"`
	At           *time.Time `db:"at" json:"at,omitempty"`
	Detail       string     `db:"detail" json:"detail,omitempty"`
	Outcome      string     `db:"outcome" json:"outcome"`
	Reason       *string    `db:"reason" json:"reason,omitempty"`
	ChargeID     *string    `db:"charge_id" json:"charge_id,omitempty"`
	LedgerAmount *int64     `db:"ledger_amount" json:"ledger_amount,omitempty"`
	LedgerFee    *int64     `db:"ledger_fee" json:"ledger_fee,omitempty"`
	InboxID      *int64     `db:"inbox_id" json:"inbox_id,omitempty"`
	// DivergenceID is a divergent line's divergence (package divergences).
	DivergenceID *int64 `db:"divergence_id" json:"divergence_id,omitempty"`
}

const lineResultColumns = `line, side, kind, psp_id, charge_ref, refund_id, amount, fee, at, detail,
	coalesce(outcome, '') AS outcome, reason, charge_id, ledger_amount, ledger_fee, inbox_id, divergence_id`

// Lines returns a run's lines after line, in order, limit of them
// (cursor.Limit: 100 when ≤ 0, at most MaxPage); only the ones not
// matched when unmatched is set.
func Lines(ctx context.Context, db sqlx.QueryerContext, run int64, unmatched bool, after int64, limit int) ([]LineResult, error) {
	lines, _, err := LinesPage(ctx, db, run, unmatched, after, limit)
	return lines, err
}

// LinesPage is Lines and the after of the next page: 0 when there is
// none (see RunsPage).
func LinesPage(ctx context.Context, db sqlx.QueryerContext, run int64, unmatched bool, after int64, limit int) ([]LineResult, int64, error) {
	limit = cursor.Limit(limit)
	out := []LineResult{}
	q := `SELECT ` + lineResultColumns + ` FROM reconciliation_lines WHERE run_id = $1 AND line > $2`
	if unmatched {
		q += ` AND outcome <> 'matched'`
	}
	err := sqlx.SelectContext(ctx, db, &out, q+` ORDER BY line LIMIT $3`, run, after, limit+1)
	if err != nil {
		return nil, 0, fmt.Errorf("lines of reconciliation run %d: %w", run, err)
	}
	if len(out) > limit {
		out = out[:limit]
		return out, out[limit-1].Line, nil
	}
	return out, 0, nil
}

// The reconciler's statements outside a transaction of their own each run
// in a short one with the search path pinned (see pinSearchPath).

func (r *Reconciler) pinned(ctx context.Context, fn func(tx *sqlx.Tx) error) error {
	tx, err := begin(ctx, r.db)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := fn(tx); err != nil {
		return err
	}
	return tx.Commit()
}

func (r *Reconciler) get(ctx context.Context, dest any, q string, args ...any) error {
	return r.pinned(ctx, func(tx *sqlx.Tx) error { return tx.GetContext(ctx, dest, q, args...) })
}

func (r *Reconciler) sel(ctx context.Context, dest any, q string, args ...any) error {
	return r.pinned(ctx, func(tx *sqlx.Tx) error { return tx.SelectContext(ctx, dest, q, args...) })
}

func (r *Reconciler) exec(ctx context.Context, q string, args ...any) (sql.Result, error) {
	var res sql.Result
	err := r.pinned(ctx, func(tx *sqlx.Tx) error {
		var err error
		res, err = tx.ExecContext(ctx, q, args...)
		return err
	})
	return res, err
}
