package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"github.com/razao/razao/exports"
	"github.com/razao/razao/monthsums"
	"github.com/razao/razao/periods"
	"github.com/razao/razao/reports"
)

// cmdExport writes one CSV export to a file, atomically and with its
// .sha256, or with -out - to standard output (its summary then goes to
// stderr), showing progress when stderr is a terminal. A file is only
// ever created or replaced if it is a regular one: never a device, a
// named pipe or a symbolic link such as /dev/stdout.
func cmdExport(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var db dbFlags
	fs := newFlagSet("export", stderr)
	db.register(fs)
	kindName := fs.String("kind", "journal", "journal, trial-balance or income-statement")
	monthName := fs.String("month", "", "competence month, YYYY-MM (required)")
	dialectName := fs.String("dialect", "rfc4180", "rfc4180, or br for Brazilian spreadsheets (; and decimal comma)")
	formatName := fs.String("format", "csv", "csv, or the journal as a ledger tool's file: hledger or beancount")
	out := fs.String("out", "", "output file, a new or regular one, or - for standard output (default: the conventional name in the current directory)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	kind, err := reports.ParseExportKind(*kindName)
	if err != nil {
		return err
	}
	m, err := periods.ParseMonth(*monthName)
	if err != nil {
		return err
	}
	d, err := reports.ParseDialect(*dialectName)
	if err != nil {
		return err
	}
	path := *out
	if path == "" {
		path = reports.FileName(kind, m, d)
	}
	var ledgerFormat reports.LedgerFormat // 0: CSV
	if *formatName != "csv" {
		if ledgerFormat, err = reports.ParseLedgerFormat(*formatName); err != nil {
			return err
		}
		if kind != reports.ExportJournal {
			return fmt.Errorf("-format %s writes the journal, not the %s", ledgerFormat, kind)
		}
		if *out == "" {
			path = reports.LedgerFileName(m, ledgerFormat)
		}
	}
	conn, err := db.openLedger(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	var bar *progressbar.ProgressBar
	if f, ok := stderr.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		name := filepath.Base(path)
		if path == "-" {
			name = "to standard output"
		}
		bar = progressbar.DefaultBytes(-1, "exporting "+name)
	}
	fill := func(w io.Writer) (int64, error) {
		if bar != nil {
			w = io.MultiWriter(w, bar)
		}
		if ledgerFormat != 0 {
			return reports.WriteLedger(ctx, conn, monthsums.Books{}, w, ledgerFormat, m)
		}
		return reports.WriteCSV(ctx, conn, monthsums.Books{}, w, kind, m, d)
	}
	var w exports.Written
	summary := stdout
	if path == "-" {
		w, err = exports.WriteStream(stdout, fill)
		summary = stderr // standard output is the CSV's
	} else {
		w, err = exports.WriteAtomic(filepath.Dir(path), filepath.Base(path), fill)
	}
	if bar != nil {
		bar.Finish()
		fmt.Fprintln(stderr)
	}
	if errors.Is(err, exports.ErrNotRegularFile) {
		return fmt.Errorf("%w; for standard output use -out -", err)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(summary, "%s: %d rows, %d bytes, sha256 %s\n", w.Path, w.Rows, w.Bytes, w.SHA256)
	return nil
}
