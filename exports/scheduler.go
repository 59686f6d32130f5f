package exports

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/robfig/cron/v3"

	"github.com/razao/razao/metrics"
	"github.com/razao/razao/monthsums"
	"github.com/razao/razao/periods"
	"github.com/razao/razao/reports"
)

// Config is what the scheduler exports, where and when.
type Config struct {
	// Schedule is a standard 5-field cron expression (or a descriptor such
	// as @monthly), read in Location.
	Schedule string
	Dir      string
	// Kinds are written in each of Dialects.
	Kinds    []reports.ExportKind
	Dialects []reports.Dialect
	// LedgerFormats: the month's journal is also written in each (an
	// hledger journal, a beancount file).
	LedgerFormats []reports.LedgerFormat
	Location      *time.Location
	// MaxAttempts bounds the retries of a failing run (default 5).
	MaxAttempts int
	// Lease is how long a running claim is honoured before another replica
	// may take the run over (default 10 minutes).
	Lease time.Duration
}

// Scheduler writes the previous month's files at each slot of the
// schedule. Replicas share the work through export_runs: whoever inserts a
// slot's row runs it, and the others leave it alone unless it failed or
// its claimant's lease ran out.
type Scheduler struct {
	db       *sqlx.DB
	cfg      Config
	schedule cron.Schedule
	now      func() time.Time
	log      *slog.Logger
	metrics  *metrics.Metrics
	replica  string
	next     time.Time // the first slot not yet run by this process
}

// NewScheduler checks cfg and returns a scheduler; now is the clock.
func NewScheduler(db *sqlx.DB, cfg Config, now func() time.Time, log *slog.Logger, m *metrics.Metrics) (*Scheduler, error) {
	sched, err := cron.ParseStandard(cfg.Schedule)
	if err != nil {
		return nil, fmt.Errorf("export schedule %q: %w", cfg.Schedule, err)
	}
	if cfg.Dir == "" || (len(cfg.Kinds) == 0 || len(cfg.Dialects) == 0) && len(cfg.LedgerFormats) == 0 || cfg.Location == nil {
		return nil, errors.New("export config needs a directory, kinds and dialects or ledger formats, and a time zone")
	}
	if st, err := os.Stat(cfg.Dir); err != nil || !st.IsDir() {
		return nil, fmt.Errorf("export directory %s: not a directory (%v)", cfg.Dir, err)
	}
	if cfg.MaxAttempts == 0 {
		cfg.MaxAttempts = 5
	}
	if cfg.Lease == 0 {
		cfg.Lease = 10 * time.Minute
	}
	host, _ := os.Hostname()
	return &Scheduler{db: db, cfg: cfg, schedule: sched, now: now, log: log, metrics: m,
		replica: fmt.Sprintf("%s/%d", host, os.Getpid())}, nil
}

// Run runs due slots and retries failed runs every interval until ctx ends.
func (s *Scheduler) Run(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if err := s.RunDue(ctx); err != nil && ctx.Err() == nil {
			s.log.Warn("export scheduler", "error", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// RunDue runs the latest slot that has come (once: replicas and restarts
// share export_runs) and retries failed runs that have attempts left.
func (s *Scheduler) RunDue(ctx context.Context) error {
	now := s.now().In(s.cfg.Location)
	if s.next.IsZero() {
		// On start, catch up the last slot before now if it never ran.
		s.next = s.lastSlotBefore(now)
	}
	var errs []error
	for !s.next.IsZero() && !s.next.After(now) {
		if err := s.RunSlot(ctx, s.next); err != nil {
			errs = append(errs, err)
		}
		s.next = s.schedule.Next(s.next)
	}
	if s.next.IsZero() {
		s.next = s.schedule.Next(now)
	}
	errs = append(errs, s.retryFailed(ctx))
	return errors.Join(errs...)
}

// lastSlotBefore finds the most recent slot at or before now within the
// last 40 days (a monthly schedule's slot is always in that window).
func (s *Scheduler) lastSlotBefore(now time.Time) time.Time {
	var last time.Time
	for t := s.schedule.Next(now.AddDate(0, 0, -40)); !t.IsZero() && !t.After(now); t = s.schedule.Next(t) {
		last = t
	}
	return last
}

// RunSlot exports every kind in every dialect, and the journal in every
// ledger format, for slot: the month before the slot's month, in the
// scheduler's time zone.
func (s *Scheduler) RunSlot(ctx context.Context, slot time.Time) error {
	var errs []error
	for _, kind := range s.cfg.Kinds {
		for _, d := range s.cfg.Dialects {
			errs = append(errs, s.runOne(ctx, slot, csvFile(kind, d)))
		}
	}
	for _, f := range s.cfg.LedgerFormats {
		errs = append(errs, s.runOne(ctx, slot, ledgerFile(f)))
	}
	return errors.Join(errs...)
}

// file is one file a slot writes. kind and dialect are its key in
// export_runs: a CSV export's kind and dialect, or for the journal as a
// ledger file "journal" and the file's format (hledger, beancount).
type file struct {
	kind, dialect string
	name          func(periods.Month) string
	write         func(ctx context.Context, q sqlx.QueryerContext, w io.Writer, m periods.Month) (int64, error)
}

// csvFile is the CSV export of kind in dialect d. WriteCSV reads the month
// in a read-only snapshot of its own, so the file is consistent with
// itself; so does WriteLedger.
func csvFile(kind reports.ExportKind, d reports.Dialect) file {
	return file{kind: string(kind), dialect: d.String(),
		name: func(m periods.Month) string { return reports.FileName(kind, m, d) },
		write: func(ctx context.Context, q sqlx.QueryerContext, w io.Writer, m periods.Month) (int64, error) {
			return reports.WriteCSV(ctx, q, monthsums.Books{}, w, kind, m, d)
		}}
}

// ledgerFile is the journal as a file of format f.
func ledgerFile(f reports.LedgerFormat) file {
	return file{kind: string(reports.ExportJournal), dialect: f.String(),
		name: func(m periods.Month) string { return reports.LedgerFileName(m, f) },
		write: func(ctx context.Context, q sqlx.QueryerContext, w io.Writer, m periods.Month) (int64, error) {
			return reports.WriteLedger(ctx, q, monthsums.Books{}, w, f, m)
		}}
}

// fileOf is the file export_runs keys (kind, dialect), and false for a
// key this version does not write.
func fileOf(kind, dialect string) (file, bool) {
	if f, err := reports.ParseLedgerFormat(dialect); err == nil && kind == string(reports.ExportJournal) {
		return ledgerFile(f), true
	}
	k, err1 := reports.ParseExportKind(kind)
	d, err2 := reports.ParseDialect(dialect)
	if err1 != nil || err2 != nil {
		return file{}, false
	}
	return csvFile(k, d), true
}

func (s *Scheduler) retryFailed(ctx context.Context) error {
	var due []struct {
		Slot    time.Time `db:"slot"`
		Kind    string    `db:"kind"`
		Dialect string    `db:"dialect"`
	}
	// A failed run waits a minute per attempt made before it is retried.
	err := s.db.SelectContext(ctx, &due, `SELECT slot, kind, dialect FROM export_runs
		WHERE (status = 'failed' AND attempts < $1 AND finished_at <= $2::timestamptz - attempts * interval '1 minute')
		   OR status = 'waiting'
		   OR (status = 'running' AND lease_until < now())
		ORDER BY slot LIMIT 20`, s.cfg.MaxAttempts, s.now())
	if err != nil {
		return fmt.Errorf("list failed exports: %w", err)
	}
	var errs []error
	for _, r := range due {
		f, ok := fileOf(r.Kind, r.Dialect)
		if !ok {
			continue
		}
		errs = append(errs, s.runOne(ctx, r.Slot.In(s.cfg.Location), f))
	}
	return errors.Join(errs...)
}

// runOne claims and runs one export of a slot.
func (s *Scheduler) runOne(ctx context.Context, slot time.Time, f file) error {
	month := periods.MonthOf(slot.In(s.cfg.Location)).Prev()
	kind := f.kind
	id, ok, err := s.claim(ctx, slot, f, month)
	if err != nil || !ok {
		return err
	}
	// A month's file is written once, so only for a closed month
	// (periods.Closed): an open one can still change. The run waits (and
	// is retried every tick).
	last, err := periods.LastClosed(ctx, s.db)
	if err != nil {
		return fmt.Errorf("export %s: %w", month, err)
	}
	if !periods.Closed(month, last) {
		_, err := s.db.ExecContext(ctx, `UPDATE export_runs SET status = 'waiting', attempts = attempts - 1,
			last_error = $2, finished_at = now() WHERE id = $1`, id, "month "+month.String()+" is not closed yet")
		s.metrics.ExportRun(kind, "waiting")
		return err
	}
	w, err := WriteAtomic(s.cfg.Dir, f.name(month), func(w io.Writer) (int64, error) {
		return f.write(ctx, s.db, w, month)
	})
	if err != nil {
		s.metrics.ExportRun(kind, "failed")
		s.log.Error("export failed", "kind", kind, "month", month.String(), "dialect", f.dialect, "error", err)
		_, uerr := s.db.ExecContext(context.WithoutCancel(ctx), `UPDATE export_runs SET status = 'failed', last_error = left($2, 2000),
			finished_at = now() WHERE id = $1`, id, err.Error())
		return errors.Join(err, uerr)
	}
	s.metrics.ExportRun(kind, "succeeded")
	_, err = s.db.ExecContext(ctx, `UPDATE export_runs SET status = 'succeeded', file_name = $2, sha256 = $3,
		rows = $4, bytes = $5, last_error = NULL, finished_at = now() WHERE id = $1`,
		id, w.Path, w.SHA256, w.Rows, w.Bytes)
	if err != nil {
		return fmt.Errorf("record export run %d: %w", id, err)
	}
	s.log.Info("export written", "file", w.Path, "rows", w.Rows, "sha256", w.SHA256)
	return nil
}

// claim makes this replica the runner of (slot, kind, dialect): by
// inserting its row first, or by taking over a failed run with attempts
// left or a running one whose lease expired.
func (s *Scheduler) claim(ctx context.Context, slot time.Time, f file, m periods.Month) (int64, bool, error) {
	kind, d := f.kind, f.dialect
	lease := s.cfg.Lease.Milliseconds()
	var id int64
	err := s.db.GetContext(ctx, &id, `INSERT INTO export_runs (slot, kind, dialect, month, claimed_by, lease_until)
		VALUES ($1, $2, $3, $4, $5, now() + $6 * interval '1 millisecond')
		ON CONFLICT (slot, kind, dialect) DO NOTHING RETURNING id`,
		slot, kind, d, m.First(), s.replica, lease)
	if err == nil {
		return id, true, nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return 0, false, fmt.Errorf("claim export %s %s %s: %w", slot, kind, d, err)
	}
	err = s.db.GetContext(ctx, &id, `UPDATE export_runs SET status = 'running', attempts = attempts + 1,
		claimed_by = $4, lease_until = now() + $5 * interval '1 millisecond', started_at = now(), finished_at = NULL
		WHERE slot = $1 AND kind = $2 AND dialect = $3
		  AND ((status = 'failed' AND attempts < $6) OR status = 'waiting' OR (status = 'running' AND lease_until < now()))
		RETURNING id`, slot, kind, d, s.replica, lease, s.cfg.MaxAttempts)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, false, nil // done, or another replica holds it
	}
	if err != nil {
		return 0, false, fmt.Errorf("take over export %s %s %s: %w", slot, kind, d, err)
	}
	return id, true, nil
}
