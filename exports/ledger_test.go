package exports_test

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/razao/razao/exports"
	"github.com/razao/razao/monthsums"
	"github.com/razao/razao/periods"
	"github.com/razao/razao/reports"
)

// TestScheduledLedgerFilesWaitForTheCloseThenAreWritten: a schedule with
// ledger formats writes the closed month's journal as an hledger journal
// and a beancount file, each with its .sha256 and its run in export_runs
// (kind journal, the format as the dialect); before the month closes the
// runs wait, and the retry that follows the close writes them.
func TestScheduledLedgerFilesWaitForTheCloseThenAreWritten(t *testing.T) {
	t.Parallel()
	db := seededOpen(t)
	dir := t.TempDir()
	s, err := exports.NewScheduler(db, exports.Config{
		Schedule: "0 6 1 * *", Dir: dir, Location: saoPaulo,
		LedgerFormats: []reports.LedgerFormat{reports.Hledger, reports.Beancount},
	}, func() time.Time { return afterSlot }, slog.New(slog.NewTextHandler(io.Discard, nil)), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.RunDue(context.Background()); err != nil {
		t.Fatal(err)
	}
	var waiting int
	db.Get(&waiting, `SELECT count(*) FROM export_runs WHERE status = 'waiting' AND kind = 'journal' AND dialect IN ('hledger', 'beancount')`)
	if waiting != 2 {
		t.Fatalf("%d ledger runs waiting for August to close, want 2", waiting)
	}
	cal, _ := periods.NewCalendar(periods.DefaultTimeZone)
	if err := periods.Close(context.Background(), db, cal, periods.Month{Year: 2026, Month: 8}, afterSlot, "", monthsums.Closing); err != nil {
		t.Fatal(err)
	}
	if err := s.RunDue(context.Background()); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{
		"razao-journal-2026-08.hledger":   "2026-08-10 * (1) sale c1\n",
		"razao-journal-2026-08.beancount": "2026-08-01 open Liabilities:Commission-payable:P1 BRL\n",
	} {
		body, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil || !strings.Contains(string(body), want) {
			t.Fatalf("%s: %v, lacks %q:\n%s", name, err, want, body)
		}
		if sum, err := os.ReadFile(filepath.Join(dir, name+".sha256")); err != nil || !strings.HasSuffix(string(sum), "  "+name+"\n") {
			t.Fatalf("%s.sha256: %q %v", name, sum, err)
		}
	}
	var runs []struct {
		Dialect string `db:"dialect"`
		Status  string `db:"status"`
		Rows    int64  `db:"rows"`
	}
	db.Select(&runs, `SELECT dialect, status, coalesce(rows, 0) AS rows FROM export_runs ORDER BY dialect`)
	if len(runs) != 2 || runs[0].Dialect != "beancount" || runs[1].Dialect != "hledger" {
		t.Fatalf("runs %+v", runs)
	}
	for _, r := range runs {
		if r.Status != "succeeded" || r.Rows != 2 {
			t.Errorf("run %+v, want succeeded with the 2 posting sets", r)
		}
	}
}
