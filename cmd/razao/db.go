package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/jmoiron/sqlx"

	"github.com/razao/razao"
	"github.com/razao/razao/postings"
	"github.com/razao/razao/reports"
)

// dbFlags are the flags every command that talks to the database shares.
type dbFlags struct {
	url string
}

func (f *dbFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.url, "database-url", os.Getenv("DATABASE_URL"), "PostgreSQL URL (default $DATABASE_URL)")
}

func (f *dbFlags) open(ctx context.Context) (*sqlx.DB, error) {
	if f.url == "" {
		return nil, fmt.Errorf("no database: set DATABASE_URL or -database-url")
	}
	return razao.Open(ctx, f.url)
}

// openLedger opens the database of a command that needs razao's schema,
// and says "run razao migrate" when the schema is missing or behind.
func (f *dbFlags) openLedger(ctx context.Context) (*sqlx.DB, error) {
	db, err := f.open(ctx)
	if err != nil {
		return nil, err
	}
	if err := razao.CheckSchema(ctx, db); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

func newFlagSet(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("razao "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	return fs
}

// openWithFlags parses the flags of a command that works on the ledger
// (the -database-url flag and those more adds) and opens the database,
// checking that its schema is migrated.
func openWithFlags(ctx context.Context, name string, args []string, stderr io.Writer, more func(*flag.FlagSet)) (*sqlx.DB, *flag.FlagSet, error) {
	return openFlags(ctx, name, args, stderr, more, (*dbFlags).openLedger)
}

func openFlags(ctx context.Context, name string, args []string, stderr io.Writer, more func(*flag.FlagSet),
	open func(*dbFlags, context.Context) (*sqlx.DB, error)) (*sqlx.DB, *flag.FlagSet, error) {
	var db dbFlags
	fs := newFlagSet(name, stderr)
	db.register(fs)
	if more != nil {
		more(fs)
	}
	if err := fs.Parse(args); err != nil {
		return nil, nil, err
	}
	conn, err := open(&db, ctx)
	return conn, fs, err
}

func cmdMigrate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	conn, _, err := openFlags(ctx, "migrate", args, stderr, nil, (*dbFlags).open)
	if err != nil {
		return err
	}
	defer conn.Close()
	applied, err := razao.Migrate(ctx, conn)
	if err != nil {
		return err
	}
	if len(applied) == 0 {
		fmt.Fprintln(stdout, "database is up to date")
	}
	for _, name := range applied {
		fmt.Fprintln(stdout, "applied", name)
	}
	return nil
}

func cmdVerify(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	conn, _, err := openWithFlags(ctx, "verify", args, stderr, nil)
	if err != nil {
		return err
	}
	defer conn.Close()
	report, err := postings.Verify(ctx, conn)
	if err != nil {
		return err
	}
	// Closed months' snapshots must still equal what their postings say.
	check := postings.Check{Name: "closed months' snapshots equal their postings"}
	mismatches, err := reports.CheckSnapshots(ctx, conn)
	switch {
	case err != nil && report.OK():
		return err
	case err != nil:
		// A breached ledger (a sum beyond int64, say) can stop the
		// comparison itself: report what was found, and that.
		check.Breaches = 1
		check.Examples = []string{fmt.Sprintf("could not compare: %v", err)}
	}
	for _, m := range mismatches {
		check.Breaches++
		check.Examples = append(check.Examples, fmt.Sprintf("%s %s: snapshot %d, ledger %d", m.Month, m.What, m.Snapshot, m.Ledger))
	}
	report.Checks = append(report.Checks, check)
	report.WriteTo(stdout)
	if !report.OK() {
		return exitError(exitBreach)
	}
	return nil
}
