package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"github.com/razao/razao/exports"
	"github.com/razao/razao/postings"
	"github.com/razao/razao/reports"
)

// cmdExport writes one CSV export to a file, atomically and with its
// .sha256, showing progress when stderr is a terminal.
func cmdExport(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var db dbFlags
	fs := newFlagSet("export", stderr)
	db.register(fs)
	kindName := fs.String("kind", "journal", "journal, trial-balance or income-statement")
	monthName := fs.String("month", "", "competence month, YYYY-MM (required)")
	dialectName := fs.String("dialect", "rfc4180", "rfc4180, or br for Brazilian spreadsheets (; and decimal comma)")
	out := fs.String("out", "", "output file (default: the conventional name in the current directory)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	kind, err := reports.ParseExportKind(*kindName)
	if err != nil {
		return err
	}
	m, err := postings.ParseMonth(*monthName)
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
	conn, err := db.openLedger(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	var bar *progressbar.ProgressBar
	if f, ok := stderr.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		bar = progressbar.DefaultBytes(-1, "exporting "+filepath.Base(path))
	}
	w, err := exports.WriteAtomic(filepath.Dir(path), filepath.Base(path), func(w io.Writer) (int64, error) {
		if bar != nil {
			w = io.MultiWriter(w, bar)
		}
		return reports.WriteCSV(ctx, conn, w, kind, m, d)
	})
	if bar != nil {
		bar.Finish()
		fmt.Fprintln(stderr)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s: %d rows, %d bytes, sha256 %s\n", w.Path, w.Rows, w.Bytes, w.SHA256)
	return nil
}
