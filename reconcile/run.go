package reconcile

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jmoiron/sqlx"

	"github.com/razao/razao/inbox"
	"github.com/razao/razao/internal/kind"
	"github.com/razao/razao/postings"
	"github.com/razao/razao/reconcile/bcbpix"
)

// statementAPI is what a run needs of the Pix API.
type statementAPI interface {
	Page(ctx context.Context, q bcbpix.Query, number int) (bcbpix.Page, error)
	Pix(ctx context.Context, e2eid string) (json.RawMessage, error)
}

// Pix asks endpoint's Pix API for one Pix by its endToEndId (GET
// /pix/{e2eid}): the way to settle one doubt about a line, read as
// the statement's lines are.
func (r *Reconciler) Pix(ctx context.Context, endpoint, e2eid string) (json.RawMessage, []Line, error) {
	ep, ok := r.eps[endpoint]
	if !ok || ep.api == nil {
		return nil, nil, fmt.Errorf("%w: %q has no bcb-pix statement", ErrUnknownEndpoint, endpoint)
	}
	raw, err := ep.api.Pix(ctx, e2eid)
	if err != nil {
		return nil, nil, err
	}
	return raw, pixLines(ep.hook.Scheme, raw), nil
}

// Options is what a Reconciler is built from.
type Options struct {
	DB     *sqlx.DB
	Inbox  *inbox.Inbox
	Ledger *postings.Ledger
	// Hooks are the configured webhook endpoints as the inbox knows them
	// (webhook.InboxEndpoints); Endpoints name theirs.
	Hooks     []*inbox.Endpoint
	Endpoints []EndpointConfig
	Getenv    func(string) string
	Now       func() time.Time
	Log       *slog.Logger
	Metrics   *Metrics
	// Lease is how long a running run is honoured before another replica
	// may take it over (default 10 minutes); renewed at every page.
	Lease time.Duration
	// DatabaseURL is DB's, for the connection a statement file is
	// loaded on (binary COPY, see copyConfig); required to load files.
	DatabaseURL string
	// Wait is how the Pix API clients wait before a retry (nil: a timer);
	// tests record the waits instead of spending them.
	Wait func(ctx context.Context, d time.Duration) error
}

// Reconciler runs reconciliations for the configured endpoints.
type Reconciler struct {
	db      *sqlx.DB
	inbox   *inbox.Inbox
	ledger  *postings.Ledger
	eps     map[string]*endpoint
	order   []string
	now     func() time.Time
	log     *slog.Logger
	metrics *Metrics
	lease   time.Duration
	replica string
	copyCfg *pgx.ConnConfig
	// stopAfterPage, in tests, ends a run right after that page is kept,
	// as a crash would: nothing more is written.
	stopAfterPage func(page int) bool
	// stopAfterFileKept, in tests, ends a file run right after its file
	// is kept, before any line is loaded.
	stopAfterFileKept bool
	// maxRunBytes, when set (tests), replaces maxRunBytes: what a run may
	// receive over all its pages.
	maxRunBytes int64
	// Progress, when set, is told each page fetched or 10,000 lines read.
	Progress func(stage string, n int64)
	// OnCommit, when set, runs after a commit that appended outbox events
	// (the divergence.opened of a run's divergences): the service kicks
	// its events.Notifier there, as the delivery path does.
	OnCommit func()
}

// New checks the reconciliation config against the webhook endpoints.
func New(o Options) (*Reconciler, error) {
	hooks := map[string]*inbox.Endpoint{}
	for _, h := range o.Hooks {
		hooks[h.Name] = h
	}
	if o.Lease == 0 {
		o.Lease = 10 * time.Minute
	}
	if o.Getenv == nil {
		o.Getenv = os.Getenv
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	host, _ := os.Hostname()
	r := &Reconciler{db: o.DB, inbox: o.Inbox, ledger: o.Ledger, eps: map[string]*endpoint{}, now: o.Now, log: o.Log,
		metrics: o.Metrics, lease: o.Lease, replica: fmt.Sprintf("%s/%d", host, os.Getpid())}
	if o.DatabaseURL != "" {
		cfg, err := copyConfig(o.DatabaseURL)
		if err != nil {
			return nil, err
		}
		r.copyCfg = cfg
	}
	for _, c := range o.Endpoints {
		if _, dup := r.eps[c.Endpoint]; dup {
			return nil, fmt.Errorf("%w: endpoint %s is reconciled twice", ErrConfig, c.Endpoint)
		}
		ep, err := buildEndpoint(c, hooks, o.Ledger.Calendar().Location(), o.Getenv, o.Wait)
		if err != nil {
			return nil, err
		}
		r.eps[c.Endpoint] = ep
		r.order = append(r.order, c.Endpoint)
	}
	return r, nil
}

// Endpoints lists the reconciled endpoints, in config order.
func (r *Reconciler) Endpoints() []string { return r.order }

// MaxFileBytes is how large a statement file of endpoint may be (0: the
// endpoint takes no file).
func (r *Reconciler) MaxFileBytes(endpoint string) int64 {
	if ep, ok := r.eps[endpoint]; ok && ep.csv != nil {
		return ep.cfg.MaxFileBytes
	}
	return 0
}

// ErrUnknownEndpoint: the endpoint has no statement source of that kind.
var ErrUnknownEndpoint = kind.New(kind.NotFound, "not-found", "Not found", "no such reconciled endpoint")

// errStopped is a run ended by the test hook, left as a crash leaves it.
var errStopped = errors.New("run stopped after a page or its file was kept (test hook)")

// ReconcileFile reconciles a CSV statement of endpoint read from file,
// over [from, to) (both zero: the span of the file's lines), and returns
// the finished run. The file is kept as it is read, and its lines loaded
// from what was kept: a run that dies after that resumes (ResumeDue).
func (r *Reconciler) ReconcileFile(ctx context.Context, endpoint string, file io.Reader, from, to time.Time) (Run, error) {
	ep, ok := r.eps[endpoint]
	switch {
	case !ok:
		return Run{}, fmt.Errorf("%w: %q (the config's reconciliation section does not name it)", ErrUnknownEndpoint, endpoint)
	case ep.csv == nil:
		return Run{}, fmt.Errorf("%w: %q reconciles its bcb-pix statement, not a file", ErrUnknownEndpoint, endpoint)
	}
	if err := checkWindow(from, to, true); err != nil {
		return Run{}, err
	}
	if from.IsZero() {
		// Set from the lines once they are read.
		from, to = time.Unix(0, 0), time.Unix(1, 0)
	}
	run, err := r.create(ctx, ep, from, to, false, false)
	if err != nil {
		return Run{}, err
	}
	header := func(first []byte) error {
		_, err := newCSVReader(ep.csv, bytes.NewReader(first))
		return err
	}
	if err := r.keepFile(ctx, run.ID, file, header); err != nil {
		return r.finish(ctx, run, ep, err)
	}
	if r.stopAfterFileKept {
		return run, errStopped
	}
	return r.finish(ctx, run, ep, r.execute(ctx, &run, ep))
}

// ReconcileWindow reconciles the bcb-pix statement of endpoint over
// [from, to), unscheduled (the CLI's run), and returns the finished run.
func (r *Reconciler) ReconcileWindow(ctx context.Context, endpoint string, from, to time.Time) (Run, error) {
	ep, ok := r.eps[endpoint]
	if !ok || ep.api == nil {
		return Run{}, fmt.Errorf("%w: %q has no bcb-pix statement", ErrUnknownEndpoint, endpoint)
	}
	if err := checkWindow(from, to, false); err != nil {
		return Run{}, err
	}
	run, err := r.create(ctx, ep, from, to, r.isFinal(ep, to), false)
	if err != nil {
		return Run{}, err
	}
	return r.finish(ctx, run, ep, r.execute(ctx, &run, ep))
}

// maxWindow bounds a window: a statement of years is a mistake.
const maxWindow = 366 * 24 * time.Hour

func checkWindow(from, to time.Time, optional bool) error {
	switch {
	case optional && from.IsZero() && to.IsZero():
		return nil
	case from.IsZero() || to.IsZero():
		return fmt.Errorf("%w: a window needs both from and to", ErrInput)
	case !from.Before(to):
		return fmt.Errorf("%w: the window's from must be before its to", ErrInput)
	case to.Sub(from) > maxWindow:
		return fmt.Errorf("%w: a window is at most %s", ErrInput, maxWindow)
	case from.Year() < 2000 || to.Year() > 9000:
		return fmt.Errorf("%w: the window is outside the years 2000..9000", ErrInput)
	}
	return nil
}

func (r *Reconciler) isFinal(ep *endpoint, to time.Time) bool {
	return !to.Add(ep.cfg.FinalAfter).After(r.now())
}

func (r *Reconciler) create(ctx context.Context, ep *endpoint, from, to time.Time, final, scheduled bool) (Run, error) {
	var run Run
	err := r.get(ctx, &run, `INSERT INTO reconciliation_runs
			(endpoint, source, window_from, window_to, final, scheduled, claimed_by, lease_until)
		VALUES ($1, $2, $3, $4, $5, $6, $7, now() + $8 * interval '1 second')
		RETURNING `+runColumns, ep.hook.Name, ep.cfg.Source, from, to, final, scheduled, r.replica, r.lease.Seconds())
	if err != nil {
		return run, fmt.Errorf("start reconciliation of %s: %w", ep.hook.Name, err)
	}
	return run, nil
}

// execute loads what the run has not loaded yet, matches, books, and
// opens the divergences.
func (r *Reconciler) execute(ctx context.Context, run *Run, ep *endpoint) error {
	if !run.Loaded {
		var err error
		if ep.csv != nil {
			err = r.loadFile(ctx, run, ep)
		} else {
			err = r.loadPages(ctx, run, ep)
		}
		if err != nil {
			return err
		}
	}
	if err := r.renew(ctx, run.ID); err != nil {
		return err
	}
	if err := match(ctx, r.db, *run, ep.info()); err != nil {
		return err
	}
	if _, err := r.book(ctx, *run, ep); err != nil {
		return err
	}
	_, err := r.openDivergences(ctx, *run, ep)
	return err
}

// finish records the run's end: its tallies and status, or its error.
func (r *Reconciler) finish(ctx context.Context, run Run, ep *endpoint, err error) (Run, error) {
	if errors.Is(err, errStopped) {
		return run, err
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	status, msg := "succeeded", sql.NullString{}
	if err != nil {
		status, msg = "failed", sql.NullString{String: truncate(err.Error(), 2000), Valid: true}
	}
	if terr := r.pinned(ctx, func(tx *sqlx.Tx) error { return tally(ctx, tx, run.ID) }); terr != nil && err == nil {
		err, status, msg = terr, "failed", sql.NullString{String: terr.Error(), Valid: true}
	}
	_, uerr := r.exec(ctx, `UPDATE reconciliation_runs SET status = $2, last_error = $3, finished_at = now(),
		duration_ms = (extract(epoch FROM now() - started_at) * 1000)::bigint WHERE id = $1`, run.ID, status, msg)
	if uerr != nil && err == nil {
		err = fmt.Errorf("finish reconciliation run %d: %w", run.ID, uerr)
	}
	var done Run
	gerr := r.pinned(ctx, func(tx *sqlx.Tx) error { var err error; done, err = GetRun(ctx, tx, run.ID); return err })
	if gerr != nil {
		done = run
	}
	r.metrics.finished(done, ep.hook.Name)
	if err != nil {
		r.log.Warn("reconciliation run failed", "run", run.ID, "endpoint", ep.hook.Name, "error", err)
		return done, err
	}
	r.log.Info("reconciliation run", "run", done.ID, "endpoint", done.Endpoint, "lines", done.Lines,
		"matched", done.Matched, "booked", done.Booked, "divergences", done.Divergences)
	return done, nil
}

// checkLine makes a line the ledger could never take (an amount over its
// limit, a time outside its window) an invalid line saying why, before it
// is matched against anything.
func (r *Reconciler) checkLine(l Line) Line {
	if l.Kind == KindInvalid {
		return l
	}
	if err := r.ledger.Limit().Check("amount", l.Amount); err != nil {
		return invalid(err.Error())
	}
	if l.HasFee {
		if err := r.ledger.Limit().Check("fee", l.Fee); err != nil {
			return invalid(err.Error())
		}
	}
	if !l.At.IsZero() {
		if err := r.ledger.Calendar().CheckEventTime(l.At, r.now()); err != nil {
			return invalid(err.Error())
		}
	}
	return l
}

// renew extends the run's lease, from a transaction of its own, while a
// long load, match or booking holds no page boundary to renew it at: a
// replica takes over only a run whose claimant stopped renewing.
func (r *Reconciler) renew(ctx context.Context, run int64) error {
	if _, err := r.exec(ctx, `UPDATE reconciliation_runs SET lease_until = now() + $2 * interval '1 second'
		WHERE id = $1 AND status = 'running'`, run, r.lease.Seconds()); err != nil {
		return fmt.Errorf("renew the lease of run %d: %w", run, err)
	}
	return nil
}
