package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/jmoiron/sqlx"

	"github.com/razao/razao"
	"github.com/razao/razao/verify"
)

// dbFlags are the flags every command that talks to the database shares.
type dbFlags struct {
	url string
}

func (f *dbFlags) register(fs *flag.FlagSet) {
	f.url = os.Getenv("DATABASE_URL")
	fs.Var(unshownURL{&f.url}, "database-url", "PostgreSQL `URL` (default $DATABASE_URL)")
}

// unshownURL is a flag holding a database URL that -h never prints: its
// default, $DATABASE_URL, may carry a password.
type unshownURL struct{ url *string }

func (u unshownURL) String() string { return "" }

func (u unshownURL) Set(v string) error {
	*u.url = v
	return nil
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
	// An older binary asked to migrate a newer schema has nothing of its
	// own to give it: the operator ran the wrong release.
	if c, err := razao.SchemaCompatibility(ctx, conn); err != nil {
		return err
	} else if c.Ahead() {
		return fmt.Errorf("%w: the database is at %s, newer than this binary's last migration, %s: run razao migrate with the newer release (nothing applied)",
			razao.ErrSchemaNewer, c.DatabaseName, c.BinaryName)
	}
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
	var asJSON, incremental *bool
	conn, _, err := openWithFlags(ctx, "verify", args, stderr, func(fs *flag.FlagSet) {
		asJSON = fs.Bool("json", false, "print the report as one JSON document, for machines")
		incremental = fs.Bool("incremental", false, "check set by set only the months open at the last clean run, the closed months against their seals (the daily run; without it, every check over the whole ledger)")
	})
	if err != nil {
		return err
	}
	defer conn.Close()
	// Full unless asked: an operator who runs razao verify after a restore
	// or an incident wants every check, and the cheaper daily run is named.
	run := verify.Run
	if *incremental {
		run = verify.RunIncremental
	}
	report, err := run(ctx, conn)
	if err != nil {
		return err
	}
	if *asJSON {
		err = json.NewEncoder(stdout).Encode(report)
	} else {
		_, err = report.WriteTo(stdout)
	}
	if err != nil {
		return fmt.Errorf("verify: print the report: %w", err)
	}
	if !report.OK() {
		return exitError(exitBreach)
	}
	return nil
}
