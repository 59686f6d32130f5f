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

func newFlagSet(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("razao "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	return fs
}

func cmdMigrate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var db dbFlags
	fs := newFlagSet("migrate", stderr)
	db.register(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	conn, err := db.open(ctx)
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
	var db dbFlags
	fs := newFlagSet("verify", stderr)
	db.register(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	conn, err := db.open(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	report, err := postings.Verify(ctx, conn)
	if err != nil {
		return err
	}
	report.WriteTo(stdout)
	if !report.OK() {
		return exitError(exitBreach)
	}
	return nil
}
