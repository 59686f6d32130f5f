package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"github.com/razao/razao/charges"
	"github.com/razao/razao/inbox"
	"github.com/razao/razao/metrics"
	"github.com/razao/razao/periods"
	"github.com/razao/razao/postings"
	"github.com/razao/razao/reconcile"
	"github.com/razao/razao/webhook"
)

// newReconciler builds the service's reconciler from the config's
// reconciliation section (nil without one).
func newReconciler(cfg serveConfig, db *sqlx.DB, in *inbox.Inbox, ledger *postings.Ledger, now func() time.Time,
	log *slog.Logger, m *metrics.Metrics) (*reconcile.Reconciler, error) {
	if len(cfg.reconciliation) == 0 {
		return nil, nil
	}
	rm, err := reconcile.NewMetrics(m, db)
	if err != nil {
		return nil, err
	}
	return reconcile.New(reconcile.Options{DB: db, DatabaseURL: cfg.db.url, Inbox: in, Ledger: ledger, Hooks: webhook.InboxEndpoints(cfg.endpoints),
		Endpoints: cfg.reconciliation, Getenv: cfg.getenv, Now: now, Log: log, Metrics: rm})
}

// cmdReconcile reconciles one endpoint's statement now: a CSV file
// (-file) or a window of its Pix API (-from, -to), with the config file
// razao serve runs with. What the ledger lacks is stored into the inbox
// before the command returns; the workers of a running razao serve book it
// (this command runs none), at their next poll (worker_interval) at the
// latest.
func cmdReconcile(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("reconcile", stderr)
	endpoint := fs.String("endpoint", "", "the webhook endpoint whose statement it is (required)")
	file := fs.String("file", "", "a CSV statement file of an endpoint whose source is csv")
	fromS := fs.String("from", "", "start of the window, RFC 3339 (bcb-pix: required; csv: default the file's first line)")
	toS := fs.String("to", "", "end of the window, excluded, RFC 3339")
	e2eid := fs.String("e2eid", "", "bcb-pix: print one Pix by its endToEndId (GET /pix/{e2eid}) and its lines, booking nothing")
	cfg, err := parseServeConfig(args, fs, os.Getenv, false)
	if err != nil {
		return err
	}
	if *endpoint == "" {
		return fmt.Errorf("usage: razao reconcile -config FILE -endpoint NAME (-file STATEMENT.csv | -from T -to T | -e2eid ID)")
	}
	from, to, err := parseWindow(*fromS, *toS)
	if err != nil {
		return err
	}
	for _, e := range cfg.reconciliation {
		if e.Endpoint == *endpoint && e.Source == "csv" && *file == "" {
			return fmt.Errorf("endpoint %s reconciles a csv statement: give the file with -file", *endpoint)
		}
	}
	db, err := cfg.db.openLedger(ctx)
	if err != nil {
		return err
	}
	defer db.Close()
	rec, err := cliReconciler(cfg, db, stderr)
	if err != nil {
		return err
	}
	if *e2eid != "" {
		raw, lines, err := rec.Pix(ctx, *endpoint, *e2eid)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%s\n", raw)
		for _, l := range lines {
			fmt.Fprintf(stdout, "  %s %s:%s charge_ref=%q refund_id=%q amount=%d %s\n", l.Kind, l.EventType, l.EventID, l.ChargeRef, l.RefundID, l.Amount, l.Detail)
		}
		return nil
	}
	bar := newBar(stderr, *file)
	var run reconcile.Run
	if *file != "" {
		run, err = reconcileFile(ctx, rec, *endpoint, *file, bar, from, to)
	} else {
		if bar != nil {
			rec.Progress = func(_ string, n int64) { bar.Set64(n) }
		}
		run, err = rec.ReconcileWindow(ctx, *endpoint, from, to)
	}
	if bar != nil {
		bar.Finish()
		fmt.Fprintln(stderr)
	}
	if err != nil {
		return err
	}
	return printRun(ctx, db, stdout, run)
}

// reconcileFile reconciles the statement file at path, its bytes read
// through bar when there is one.
func reconcileFile(ctx context.Context, rec *reconcile.Reconciler, endpoint, path string, bar *progressbar.ProgressBar,
	from, to time.Time) (reconcile.Run, error) {
	f, err := os.Open(path)
	if err != nil {
		return reconcile.Run{}, err
	}
	defer f.Close()
	var r io.Reader = f
	if bar != nil {
		if st, err := f.Stat(); err == nil {
			bar.ChangeMax64(st.Size())
		}
		r = io.TeeReader(f, bar)
	}
	return rec.ReconcileFile(ctx, endpoint, r, from, to)
}

func parseWindow(fromS, toS string) (from, to time.Time, err error) {
	for _, p := range []struct {
		s string
		t *time.Time
	}{{fromS, &from}, {toS, &to}} {
		if p.s == "" {
			continue
		}
		if *p.t, err = time.Parse(time.RFC3339, p.s); err != nil {
			return from, to, fmt.Errorf("window: %q is not an RFC 3339 time", p.s)
		}
	}
	return from, to, nil
}

// cliReconciler is the service's reconciler without the service: no
// group commit runs, so each delivery it stores is applied before the
// store returns.
func cliReconciler(cfg serveConfig, db *sqlx.DB, stderr io.Writer) (*reconcile.Reconciler, error) {
	if len(cfg.reconciliation) == 0 {
		return nil, fmt.Errorf("the config file has no reconciliation section")
	}
	cal, err := periods.NewCalendar(cfg.timeZone)
	if err != nil {
		return nil, err
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	ledger := postings.New(db, cal.WithGoLive(cfg.goLive)).WithLimit(cfg.maxAmount)
	proc := inbox.NewProcessor(db, charges.NewApplier(db, ledger), log)
	return newReconciler(cfg, db, inbox.NewInbox(db, proc), ledger, time.Now, log, nil)
}

func newBar(stderr io.Writer, file string) *progressbar.ProgressBar {
	f, ok := stderr.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return nil
	}
	if file != "" {
		return progressbar.DefaultBytes(-1, "reconciling "+file)
	}
	return progressbar.Default(-1, "pages")
}

// printRun prints the run and its first unmatched lines.
func printRun(ctx context.Context, db *sqlx.DB, w io.Writer, run reconcile.Run) error {
	final := "not final: payments missing from the statement are not phantoms yet"
	if run.Final {
		final = "final"
	}
	fmt.Fprintf(w, "run %d: %s %s [%s, %s) %s\n", run.ID, run.Endpoint, run.Source,
		run.From.UTC().Format(time.RFC3339Nano), run.To.UTC().Format(time.RFC3339Nano), final)
	fmt.Fprintf(w, "  %d lines, %d matched, %d booked, %d divergences\n", run.Lines, run.Matched, run.Booked, run.Divergences)
	lines, err := reconcile.Lines(ctx, db, run.ID, true, 0, 20)
	if err != nil {
		return err
	}
	for _, l := range lines {
		reason := ""
		if l.Reason != nil {
			reason = " " + *l.Reason
		}
		fmt.Fprintf(w, "  line %d %s %s%s psp_id=%q charge_ref=%q amount=%d\n", l.Line, l.Kind, l.Outcome, reason, l.PSPID, l.ChargeRef, l.Amount)
	}
	if int64(len(lines)) < run.Booked+run.Divergences {
		fmt.Fprintf(w, "  … GET /v1/reconciliations/%d lists them all\n", run.ID)
	}
	return nil
}
