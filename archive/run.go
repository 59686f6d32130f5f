package archive

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/razao/razao"
	"github.com/razao/razao/events"
	"github.com/razao/razao/inbox"
	"github.com/razao/razao/outgoing"
	"github.com/razao/razao/reconcile"
)

// LockID is the advisory lock a run holds for its length: two replicas,
// or a replica and `razao archive run`, never archive at once (two runs
// would pick the same rows one after the other and wait on each other's
// locks for nothing).
// Its id is in razao's list of every advisory lock it takes.
const LockID = razao.ArchiveLockID

// ErrBusy: another run holds the lock.
var ErrBusy = errors.New("archive: another archive run is under way")

// owner is what the package owning a kind's table does for the archive:
// read the picked keys' rows as JSON lines, and purge them once archived,
// returning the rows purged (as many as it read).
type owner struct {
	read  func(ctx context.Context, q sqlx.QueryerContext, ids []int64, emit func([]byte) error) error
	purge func(ctx context.Context, tx *sqlx.Tx, ids []int64, archiveID int64) (int64, error)
}

var owners = map[Kind]owner{
	InboxBodies: {inbox.ArchiveBodies, func(ctx context.Context, tx *sqlx.Tx, ids []int64, archiveID int64) (int64, error) {
		return inbox.StripBodies(ctx, tx, ids, archiveID)
	}},
	Outbox: {events.ArchiveEvents, func(ctx context.Context, tx *sqlx.Tx, ids []int64, _ int64) (int64, error) {
		return events.DeleteArchived(ctx, tx, ids)
	}},
	Statements: {reconcile.ArchiveStatements, func(ctx context.Context, tx *sqlx.Tx, ids []int64, _ int64) (int64, error) {
		return reconcile.DeleteStatements(ctx, tx, ids)
	}},
	ReconciliationLines: {reconcile.ArchiveLines, func(ctx context.Context, tx *sqlx.Tx, ids []int64, _ int64) (int64, error) {
		return reconcile.DeleteLines(ctx, tx, ids)
	}},
	WebhookAttempts: {outgoing.ArchiveAttempts, func(ctx context.Context, tx *sqlx.Tx, ids []int64, _ int64) (int64, error) {
		return outgoing.DeleteAttempts(ctx, tx, ids)
	}},
}

// Archiver archives and purges what Config's ages let go.
type Archiver struct {
	DB     *sqlx.DB
	Config Config
	Now    func() time.Time
	Log    *slog.Logger
	// beforePurge, set by tests, runs once a batch's file is written,
	// verified and recorded, before its rows are purged: an error there
	// stands for a crash between the two.
	beforePurge func(Kind) error
}

// Summary is what a run did.
type Summary struct {
	// Files are the archive files written and recorded, in order.
	Files []Record
	// Done: nothing more may go now; false when the budget ran out first.
	Done bool
	// Unrecorded names the files in the directory that look like
	// archives but that no record names: a run that crashed between
	// writing a file and committing its purge left it, and the database
	// still holds its rows (a later run archives them again, in a file of
	// its own). They may be deleted.
	Unrecorded []string
}

// Run archives and purges, a batch at a time, every kind in turn, until
// nothing more may go or budget is spent (a batch started is finished).
// It returns ErrBusy when another run holds the lock.
func (a *Archiver) Run(ctx context.Context, budget time.Duration) (Summary, error) {
	var s Summary
	if a.Log == nil {
		a.Log = slog.New(slog.DiscardHandler)
	}
	if a.Now == nil {
		a.Now = time.Now
	}
	if err := a.Config.Validate(); err != nil {
		return s, err
	}
	conn, err := a.DB.Connx(ctx)
	if err != nil {
		return s, fmt.Errorf("archive: connect: %w", err)
	}
	defer conn.Close()
	var locked bool
	if err := conn.GetContext(ctx, &locked, `SELECT pg_try_advisory_lock($1)`, LockID); err != nil {
		return s, fmt.Errorf("archive: lock: %w", err)
	}
	if !locked {
		return s, ErrBusy
	}
	defer conn.ExecContext(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1)`, LockID)
	deadline := a.Now().Add(budget)
	s.Done, err = a.runBatches(ctx, conn, deadline, &s)
	if err != nil {
		return s, err
	}
	s.Unrecorded, err = a.unrecorded(ctx, conn)
	return s, err
}

// runBatches takes a batch of each kind in turn, dropping a kind once it
// has nothing more, until none has or the deadline passes.
func (a *Archiver) runBatches(ctx context.Context, conn *sqlx.Conn, deadline time.Time, s *Summary) (bool, error) {
	left := append([]Kind(nil), Kinds...)
	for len(left) > 0 {
		var still []Kind
		for _, k := range left {
			if !a.Now().Before(deadline) {
				return false, nil
			}
			r, err := a.batch(ctx, conn, k)
			if err != nil {
				return false, err
			}
			if r != nil {
				s.Files = append(s.Files, *r)
				still = append(still, k)
			}
		}
		left = still
	}
	return true, nil
}

// batch archives and purges one batch of kind k in one transaction, and
// returns its record, nil when nothing of k may go.
func (a *Archiver) batch(ctx context.Context, conn *sqlx.Conn, k Kind) (*Record, error) {
	tx, err := conn.BeginTxx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("archive: begin: %w", err)
	}
	defer tx.Rollback()
	now := a.Now()
	ids, month, err := a.pickBatch(ctx, tx, k, now)
	if err != nil || len(ids) == 0 {
		return nil, err
	}
	rec := Record{Kind: k, Month: month, ArchivedAt: now}
	if rec.ID, err = nextID(ctx, tx); err != nil {
		return nil, fmt.Errorf("archive: %w", err)
	}
	rec.FileName = fmt.Sprintf("%s-%s-%06d.jsonl.gz", k, month, rec.ID)
	if err := a.writeFile(ctx, tx, &rec, ids); err != nil {
		return nil, err
	}
	path := filepath.Join(a.Config.Dir, rec.FileName)
	if err := a.recordAndPurge(ctx, tx, rec, ids); err != nil {
		os.Remove(path) // recorded nowhere: nothing refers to it
		return nil, err
	}
	if err := tx.Commit(); err != nil {
		// Kept: a commit whose answer was lost may have committed.
		return nil, fmt.Errorf("archive: commit %s: %w", rec.FileName, err)
	}
	a.Log.Info("archive: archived and purged", "kind", k, "month", month, "file", rec.FileName, "rows", rec.Rows, "bytes", rec.Bytes)
	return &rec, nil
}

// pickBatch applies the rule: the keys of kind k that may go, of its
// oldest month, locked.
func (a *Archiver) pickBatch(ctx context.Context, tx *sqlx.Tx, k Kind, now time.Time) ([]int64, string, error) {
	closed, err := lastClosed(ctx, tx)
	if err != nil {
		return nil, "", err
	}
	horizon, ok := Horizon(k, a.Config.Age(k), now, closed, a.Config.Location)
	if !ok {
		return nil, "", nil
	}
	r := rules[k]
	month, err := oldestMonth(ctx, tx, r, horizon, a.Config.Location.String())
	if err != nil || month == "" {
		return nil, "", err
	}
	from, err := time.ParseInLocation("2006-01", month, a.Config.Location)
	if err != nil {
		return nil, "", fmt.Errorf("archive: month %q: %w", month, err)
	}
	ids, err := pick(ctx, tx, r, horizon, from, from.AddDate(0, 1, 0), a.Config.batchRows())
	return ids, month, err
}

// writeFile writes the rows of ids to rec's file, durable and read back
// whole, and fills rec's figures.
func (a *Archiver) writeFile(ctx context.Context, tx *sqlx.Tx, rec *Record, ids []int64) error {
	var db string
	if err := tx.GetContext(ctx, &db, `SELECT current_database()`); err != nil {
		return fmt.Errorf("archive: %w", err)
	}
	w, err := createFile(a.Config.Dir, rec.FileName, Header{Kind: rec.Kind, Month: rec.Month, ArchiveID: rec.ID, Database: db, CreatedAt: rec.ArchivedAt})
	if err != nil {
		return err
	}
	if err := owners[rec.Kind].read(ctx, tx, ids, w.record); err != nil {
		w.abort()
		return fmt.Errorf("archive: %s: %w", rec.FileName, err)
	}
	sum, err := w.commit()
	if err != nil {
		return err
	}
	path := filepath.Join(a.Config.Dir, rec.FileName)
	m, err := Verify(path)
	if err == nil && (m.SHA256 != sum || m.Rows != w.rows) {
		err = fmt.Errorf("archive: %s reads back %d rows, SHA-256 %s; written %d, %s", rec.FileName, m.Rows, m.SHA256, w.rows, sum)
	}
	if err != nil {
		os.Remove(path)
		return err
	}
	rec.SHA256, rec.Rows, rec.Bytes = sum, m.Rows, m.Bytes
	return nil
}

// recordAndPurge records the file and purges its rows, which must be
// exactly the rows it holds.
func (a *Archiver) recordAndPurge(ctx context.Context, tx *sqlx.Tx, rec Record, ids []int64) error {
	if err := insertRecord(ctx, tx, rec); err != nil {
		return err
	}
	if a.beforePurge != nil {
		if err := a.beforePurge(rec.Kind); err != nil {
			return err
		}
	}
	n, err := owners[rec.Kind].purge(ctx, tx, ids, rec.ID)
	if err != nil {
		return err
	}
	if n != rec.Rows {
		return fmt.Errorf("archive: %s holds %d rows, the purge took %d: nothing purged", rec.FileName, rec.Rows, n)
	}
	return nil
}

// fileNameRE matches the names archive files are given.
var fileNameRE = regexp.MustCompile(`^(inbox_bodies|outbox|statements|reconciliation_lines|webhook_attempts)-\d{4}-\d{2}-\d+\.jsonl\.gz$`)

// unrecorded lists the archive files in the directory no record names.
func (a *Archiver) unrecorded(ctx context.Context, conn *sqlx.Conn) ([]string, error) {
	entries, err := os.ReadDir(a.Config.Dir)
	if err != nil {
		return nil, fmt.Errorf("archive: %w", err)
	}
	var names []string
	for _, e := range entries {
		if fileNameRE.MatchString(e.Name()) {
			names = append(names, e.Name())
		}
	}
	known, err := recorded(ctx, conn, names)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, n := range names {
		if !known[n] {
			out = append(out, n)
		}
	}
	return out, nil
}

// RunEvery runs the archive at once and then every every, each run
// within budget, until ctx ends: razao serve's loop. A replica that finds
// another's run under way leaves it that turn (ErrBusy).
func (a *Archiver) RunEvery(ctx context.Context, every, budget time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		s, err := a.Run(ctx, budget)
		switch {
		case errors.Is(err, ErrBusy):
			a.Log.Debug("archive: another replica's run is under way")
		case err != nil && ctx.Err() == nil:
			a.Log.Warn("archive: run failed; nothing of the failed batch was purged", "error", err)
		case len(s.Unrecorded) > 0:
			a.Log.Warn("archive: files recorded nowhere (a run crashed before its purge): they may be deleted", "files", s.Unrecorded)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
