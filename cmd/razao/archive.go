package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/razao/razao/archive"
)

// retentionConfig is the config file's retention section: how long what
// is not the ledger is kept before it is archived (package archive) and
// purged. Without archive_dir nothing is archived nor purged.
type retentionConfig struct {
	// ArchiveDir is where archive files are written: one directory per
	// database, shared by every replica that runs the archive.
	ArchiveDir string `yaml:"archive_dir"`
	// BatchRows bounds one archive file's rows (default 10000).
	BatchRows int `yaml:"batch_rows"`
	// Every is how often razao serve runs the archive (default 1h; the
	// replicas take turns under a lock).
	Every time.Duration `yaml:"every"`
	// ServeRuns: razao serve runs the archive every Every (default true
	// with an archive_dir); false leaves it to razao archive run, from a
	// timer.
	ServeRuns *bool `yaml:"serve_runs"`
	// Budget bounds one run of serve's (default 5m).
	Budget time.Duration `yaml:"budget"`
	// Each kind's age; unset: archive.DefaultAges; 0: kept forever.
	InboxBodies         *time.Duration `yaml:"inbox_bodies"`
	Outbox              *time.Duration `yaml:"outbox"`
	Statements          *time.Duration `yaml:"statements"`
	ReconciliationLines *time.Duration `yaml:"reconciliation_lines"`
	WebhookAttempts     *time.Duration `yaml:"webhook_attempts"`
}

// retention is what serve and razao archive run with.
type retention struct {
	archive.Config
	every, budget time.Duration // every 0: serve runs none
}

// build checks the section; nil without an archive_dir. attempts is
// webhooks.attempts_retention, the attempts' age when the section does not
// give one (it was their age before retention archived them).
func (c retentionConfig) build(loc *time.Location, attempts time.Duration) (*retention, error) {
	if c.ArchiveDir == "" {
		if c != (retentionConfig{}) {
			return nil, errors.New("retention: archive_dir is required with any other retention key")
		}
		return nil, nil
	}
	r := &retention{Config: archive.Config{Dir: c.ArchiveDir, BatchRows: c.BatchRows, Location: loc, Ages: map[archive.Kind]time.Duration{}},
		every: time.Hour, budget: 5 * time.Minute}
	if attempts > 0 {
		r.Ages[archive.WebhookAttempts] = attempts
	}
	for k, age := range map[archive.Kind]*time.Duration{archive.InboxBodies: c.InboxBodies, archive.Outbox: c.Outbox,
		archive.Statements: c.Statements, archive.ReconciliationLines: c.ReconciliationLines, archive.WebhookAttempts: c.WebhookAttempts} {
		if age != nil {
			r.Ages[k] = *age
		}
	}
	if c.Every < 0 || (c.Every > 0 && c.Every < time.Minute) || c.Budget < 0 || (c.Budget > 0 && c.Budget < time.Second) {
		return nil, errors.New("retention: every must be at least 1m and budget at least 1s (or unset)")
	}
	if c.Every > 0 {
		r.every = c.Every
	}
	if c.Budget > 0 {
		r.budget = c.Budget
	}
	if c.ServeRuns != nil && !*c.ServeRuns {
		r.every = 0
	}
	return r, r.Validate()
}

// archiveLoop is serve's retention: the archive run every every.
type archiveLoop struct {
	archiver      *archive.Archiver
	every, budget time.Duration
}

// newArchiveLoop is serve's retention, nil when serve runs none.
func newArchiveLoop(r *retention, db *sqlx.DB, now func() time.Time, log *slog.Logger) *archiveLoop {
	if r == nil || r.every == 0 {
		return nil
	}
	return &archiveLoop{archiver: &archive.Archiver{DB: db, Config: r.Config, Now: now, Log: log}, every: r.every, budget: r.budget}
}

func (l *archiveLoop) run(ctx context.Context) { l.archiver.RunEvery(ctx, l.every, l.budget) }

// archiveUsage is razao archive's synopsis.
const archiveUsage = `usage: razao archive VERB [flags] [args]
  run [-budget 10m]     archive and purge what retention lets go, now (the config's retention section)
  verify FILE...        re-read archive files and prove each whole (exit 3 if one is not)
  list                  the archive files recorded, one JSON object a line
flags of run and list: -database-url URL, -config F`

// cmdArchive is `razao archive`.
func cmdArchive(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || (args[0] != "run" && args[0] != "verify" && args[0] != "list") {
		fmt.Fprintln(stderr, archiveUsage)
		if len(args) > 0 && isHelp(args[0]) {
			return nil
		}
		return exitError(2)
	}
	switch args[0] {
	case "verify":
		return archiveVerify(args[1:], stdout, stderr)
	case "list":
		return archiveList(ctx, args[1:], stdout, stderr)
	}
	return archiveRun(ctx, args[1:], stdout, stderr)
}

// archiveRun runs the archive once, within its budget.
func archiveRun(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("archive run", stderr)
	budget := fs.Duration("budget", 10*time.Minute, "stop starting batches after this long")
	cfg, err := parseServeConfig(args, fs, os.Getenv, false)
	if err != nil {
		return err
	}
	if cfg.retention == nil {
		return errors.New("no retention.archive_dir in the config: nothing is archived nor purged")
	}
	if *budget <= 0 {
		return errors.New("-budget must be positive")
	}
	db, err := cfg.db.openLedger(ctx)
	if err != nil {
		return err
	}
	defer db.Close()
	a := &archive.Archiver{DB: db, Config: cfg.retention.Config, Now: time.Now, Log: slog.New(slog.NewTextHandler(stderr, nil))}
	s, err := a.Run(ctx, *budget)
	if errors.Is(err, archive.ErrBusy) {
		fmt.Fprintln(stderr, "razao archive run: another run is under way; nothing done")
		return nil
	}
	enc := json.NewEncoder(stdout)
	for _, f := range s.Files {
		enc.Encode(f)
	}
	for _, n := range s.Unrecorded {
		fmt.Fprintf(stderr, "razao archive run: %s is recorded nowhere (a run crashed before its purge; its rows are still in the database): it may be deleted\n", n)
	}
	if err == nil && !s.Done {
		fmt.Fprintln(stderr, "razao archive run: the budget ran out; run it again for the rest")
	}
	return err
}

// archiveVerify proves each file whole, reading no database.
func archiveVerify(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("archive verify", stderr)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return errors.New("usage: razao archive verify FILE...")
	}
	failed := false
	for _, path := range fs.Args() {
		m, err := archive.Verify(path)
		if err != nil {
			failed = true
			fmt.Fprintf(stdout, "FAIL  %s: %v\n", path, err)
			continue
		}
		fmt.Fprintf(stdout, "ok    %s: %s %s, %d rows, %d bytes, sha256 %s\n", path, m.Header.Kind, m.Header.Month, m.Rows, m.Bytes, m.SHA256)
	}
	if failed {
		return exitError(exitBreach)
	}
	return nil
}

// archiveList prints the archives table.
func archiveList(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	db, _, err := openWithFlags(ctx, "archive list", args, stderr, func(fs *flag.FlagSet) {})
	if err != nil {
		return err
	}
	defer db.Close()
	rs, err := archive.List(ctx, db)
	if err != nil {
		return err
	}
	enc := json.NewEncoder(stdout)
	for _, r := range rs {
		enc.Encode(r)
	}
	return nil
}
