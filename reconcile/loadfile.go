package reconcile

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/jackc/pgx/v5"
)

// copyConfig is how a statement file's load connects: with pgx, whose
// binary COPY streams lines in bulk, where lib/pq's CopyIn costs one
// database/sql Exec and a text encoding per line (docs/performance.md,
// "Reconciliation load"). Only the load uses it; everything else goes
// through the pool.
func copyConfig(url string) (*pgx.ConnConfig, error) {
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("%w: database url for statement loads: %w", ErrConfig, err)
	}
	// lib/pq's own knobs (razao.DriverURL adds binary_parameters): pgx
	// would send them to the server as settings, which refuses them.
	delete(cfg.RuntimeParams, "binary_parameters")
	delete(cfg.RuntimeParams, "disable_prepared_binary_result")
	return cfg, nil
}

// stagedName is the staging table of a file's load, in pg_temp.
const (
	stagedName  = "reconcile_staged_lines"
	stagedLines = "pg_temp." + stagedName
)

// loadFile copies every line of the run's kept CSV statement (keepFile)
// into the run, decided (matched, to book, or a divergence), in one
// transaction, with the file's SHA-256 and, when the run has no window of
// its own, the span of its lines as the window. The file is read as it
// is copied: a line at a time, never whole in memory.
func (r *Reconciler) loadFile(ctx context.Context, run *Run, ep *endpoint) error {
	file, err := r.keptFile(ctx, run.ID)
	if err != nil {
		return err
	}
	if file == nil {
		return fmt.Errorf("%w: run %d: the statement file was not kept; upload it again", ErrInput, run.ID)
	}
	sum := sha256.New()
	cr, err := newCSVReader(ep.csv, io.TeeReader(file, sum))
	if err != nil {
		return err
	}
	tx, done, err := r.ownTx(ctx, "load statement file")
	if err != nil {
		return err
	}
	defer done()
	// The lines are copied into a staging table of this transaction and
	// written into reconciliation_lines once, the payments decided as
	// they are (stagedSteps): a temporary table writes no WAL, and
	// deciding the lines in reconciliation_lines would rewrite each one.
	// Its name is no table of the ledger's and is always written with its
	// schema; the pinned search path puts pg_temp last, so it shadows
	// nothing either. The connection is this load's own: temp_buffers
	// can still be set, and the table is gone with the transaction.
	// JIT off: the planner prices the payments' per-line lookups as
	// millions of index scans that one-time filters skip, and would
	// compile them with optimisation on every load, for nothing
	// (docs/performance.md, "Reconciliation load").
	for _, q := range []string{`SET LOCAL temp_buffers = '256MB'`, `SET LOCAL work_mem = '256MB'`, `SET LOCAL jit = off`,
		`CREATE TEMP TABLE ` + stagedLines + ` (LIKE reconciliation_lines INCLUDING DEFAULTS) ON COMMIT DROP`} {
		if _, err := tx.Exec(ctx, q); err != nil {
			return fmt.Errorf("load statement file: staging: %w", err)
		}
	}
	start := time.Now()
	src := &fileLines{ctx: ctx, r: r, run: run.ID, cr: cr}
	n, err := tx.CopyFrom(ctx, pgx.Identifier{"pg_temp", stagedName}, lineColumns, src)
	if src.err != nil {
		return src.err // the file's or the lease's error, not COPY's report of it
	}
	if err != nil {
		return fmt.Errorf("load statement file: copy lines: %w", err)
	}
	if err := r.renew(ctx, run.ID); err != nil {
		return err
	}
	// Fresh statistics, or the planner takes the lines for a handful and
	// joins them by nested loops.
	if _, err := tx.Exec(ctx, `ANALYZE `+stagedLines); err != nil {
		return fmt.Errorf("load statement file: analyze: %w", err)
	}
	r.log.Debug("statement file copied", "run", run.ID, "lines", n, "took", time.Since(start))
	for _, s := range stagedSteps(stagedLines, *run, ep.info()) {
		t0 := time.Now()
		if _, err := tx.Exec(ctx, s.sql, s.args...); err != nil {
			return fmt.Errorf("load statement file: %s: %w", s.name, err)
		}
		r.log.Debug("statement file step", "run", run.ID, "step", s.name, "took", time.Since(t0))
	}
	if run.From.Equal(time.Unix(0, 0)) {
		if src.lo.IsZero() {
			// Invalid lines (a negative amount, say) give no time.
			return fmt.Errorf("%w: the statement file has no valid line to take the window from (%d line(s), none valid): fix the lines, or state the window (from, to)", ErrInput, n)
		}
		run.From, run.To = src.lo, src.hi.Add(time.Microsecond)
		run.Final = r.isFinal(ep, run.To)
	}
	run.Lines, run.Loaded = n, true
	h := hex.EncodeToString(sum.Sum(nil))
	run.FileSHA256 = &h
	_, err = tx.Exec(ctx, `UPDATE reconciliation_runs SET lines = $2, loaded = true, file_sha256 = $3,
		window_from = $4, window_to = $5, final = $6 WHERE id = $1`, run.ID, n, h, run.From, run.To, run.Final)
	if err != nil {
		return fmt.Errorf("load statement file: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("load statement file: commit: %w", err)
	}
	return nil
}

// fileLines feeds COPY the lines of a statement file as they are read
// (pgx.CopyFromSource), noting the span of their times, and renews the
// run's lease as it goes.
type fileLines struct {
	ctx    context.Context
	r      *Reconciler
	run    int64
	cr     *csvReader
	row    []any
	n      int64
	lo, hi time.Time
	err    error
}

func (s *fileLines) Next() bool {
	l, err := s.cr.next()
	if errors.Is(err, io.EOF) {
		return false
	}
	if err != nil {
		s.err = err
		return false
	}
	if !l.At.IsZero() {
		if s.lo.IsZero() || l.At.Before(s.lo) {
			s.lo = l.At
		}
		if l.At.After(s.hi) {
			s.hi = l.At
		}
	}
	s.n++
	s.row = lineRow(s.row, s.run, s.n, s.r.checkLine(l))
	if s.n%100_000 == 0 {
		if err := s.r.renew(s.ctx, s.run); err != nil {
			s.err = err
			return false
		}
	}
	if s.r.Progress != nil && s.n%10000 == 0 {
		s.r.Progress("lines", s.n)
	}
	return true
}

// Values returns the row of the line Next read; COPY encodes it before
// the next call, so the slice is reused.
func (s *fileLines) Values() ([]any, error) { return s.row, nil }

func (s *fileLines) Err() error { return s.err }
