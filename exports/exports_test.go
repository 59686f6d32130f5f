package exports_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/razao/razao/exports"
	"github.com/razao/razao/internal/pgtest"
	"github.com/razao/razao/monthsums"
	"github.com/razao/razao/periods"
	"github.com/razao/razao/postings"
	"github.com/razao/razao/reports"
)

var saoPaulo, _ = time.LoadLocation("America/Sao_Paulo")

// seeded returns a database with a little August activity, August closed.
func seeded(t *testing.T) *sqlx.DB {
	t.Helper()
	db := seededOpen(t)
	cal, _ := periods.NewCalendar(periods.DefaultTimeZone)
	if err := periods.Close(context.Background(), db, cal, periods.Month{Year: 2026, Month: 8}, afterSlot, "", monthsums.Closing); err != nil {
		t.Fatal(err)
	}
	return db
}

// seededOpen is seeded with August still open.
func seededOpen(t *testing.T) *sqlx.DB {
	t.Helper()
	db := pgtest.New(t)
	cal, _ := periods.NewCalendar(periods.DefaultTimeZone)
	l := postings.New(db, cal)
	at := time.Date(2026, 8, 10, 12, 0, 0, 0, time.UTC)
	sale, _ := postings.Sale("c1", "BRL", 4990, 75, at)
	comm, _, _ := postings.CommissionSet("c1", "p1", "BRL", 4990, 1000, at)
	for _, s := range []postings.Set{sale, comm} {
		if _, err := l.Post(context.Background(), s); err != nil {
			t.Fatal(err)
		}
	}
	return db
}

func newScheduler(t *testing.T, db *sqlx.DB, dir string, now time.Time) *exports.Scheduler {
	t.Helper()
	s, err := exports.NewScheduler(db, exports.Config{
		Schedule: "0 6 1 * *", Dir: dir, Location: saoPaulo,
		Kinds:    []reports.ExportKind{reports.ExportJournal, reports.ExportTrialBalance},
		Dialects: []reports.Dialect{reports.RFC4180, reports.Brazil},
	}, func() time.Time { return now }, slog.New(slog.NewTextHandler(io.Discard, nil)), nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// September 1st, 07:00 in São Paulo: the 06:00 slot has come; it exports
// August.
var afterSlot = time.Date(2026, 9, 1, 7, 0, 0, 0, saoPaulo)

func TestScheduledSlotWritesPreviousMonthWithChecksums(t *testing.T) {
	t.Parallel()
	db := seeded(t)
	dir := t.TempDir()
	if err := newScheduler(t, db, dir, afterSlot).RunDue(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"razao-journal-2026-08.csv", "razao-journal-2026-08-br.csv",
		"razao-trial-balance-2026-08.csv", "razao-trial-balance-2026-08-br.csv"} {
		body, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil || !bytes.Contains(body, []byte("\r\n")) {
			t.Fatalf("%s: %v, %d bytes: want a CSV with at least a header line", name, err, len(body))
		}
		sum, err := os.ReadFile(filepath.Join(dir, name+".sha256"))
		if err != nil || !strings.HasSuffix(string(sum), "  "+name+"\n") {
			t.Fatalf("%s.sha256: %q %v", name, sum, err)
		}
		check := exec.Command("sha256sum", "-c", name+".sha256")
		check.Dir = dir
		out, err := check.CombinedOutput()
		if _, lookErr := exec.LookPath("sha256sum"); lookErr == nil && err != nil {
			t.Fatalf("sha256sum -c: %v %s", err, out)
		}
	}
	var runs []struct {
		Status   string `db:"status"`
		Attempts int    `db:"attempts"`
		Rows     int64  `db:"rows"`
	}
	db.Select(&runs, `SELECT status, attempts, rows FROM export_runs ORDER BY id`)
	if len(runs) != 4 {
		t.Fatalf("%d runs recorded, want 4", len(runs))
	}
	for _, r := range runs {
		if r.Status != "succeeded" || r.Attempts != 1 || r.Rows == 0 {
			t.Fatalf("run %+v", r)
		}
	}
}

func TestSameDataExportsIdenticalBytes(t *testing.T) {
	t.Parallel()
	db := seeded(t)
	a, b := t.TempDir(), t.TempDir()
	for i, dir := range []string{a, b} {
		// Two slots of the same month (say, a re-run an hour later).
		slot := time.Date(2026, 9, 1, 6+i, 0, 0, 0, saoPaulo)
		if err := newScheduler(t, db, dir, afterSlot).RunSlot(context.Background(), slot); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"razao-journal-2026-08.csv", "razao-journal-2026-08.csv.sha256", "razao-trial-balance-2026-08-br.csv"} {
		x, _ := os.ReadFile(filepath.Join(a, name))
		y, _ := os.ReadFile(filepath.Join(b, name))
		if len(x) == 0 || !bytes.Equal(x, y) {
			t.Fatalf("%s differs between two exports of the same data", name)
		}
	}
}

// Two schedulers, as on two replicas, reach the same slot together: the
// gate holds the slot's key until both are waiting on it.
func TestRacingSchedulersRunASlotOnce(t *testing.T) {
	t.Parallel()
	db := seeded(t)
	dir := t.TempDir()
	slot := time.Date(2026, 9, 1, 6, 0, 0, 0, saoPaulo)
	gate := db.MustBegin()
	gate.MustExec(`INSERT INTO export_runs (slot, kind, dialect, month, claimed_by, lease_until)
		VALUES ($1, 'journal', 'rfc4180', '2026-08-01', 'gate', now())`, slot)
	var wg sync.WaitGroup
	for i := 0; i < 2; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			newScheduler(t, db, dir, afterSlot).RunSlot(context.Background(), slot)
		}()
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		var waiting int
		db.Get(&waiting, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`)
		if waiting >= 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d schedulers waiting on the slot", waiting)
		}
		time.Sleep(5 * time.Millisecond)
	}
	gate.Rollback()
	wg.Wait()
	var runs []struct {
		Kind     string `db:"kind"`
		Dialect  string `db:"dialect"`
		Attempts int    `db:"attempts"`
		Status   string `db:"status"`
	}
	db.Select(&runs, `SELECT kind, dialect, attempts, status FROM export_runs ORDER BY kind, dialect`)
	if len(runs) != 4 {
		t.Fatalf("runs %+v, want one per kind and dialect", runs)
	}
	for _, r := range runs {
		if r.Attempts != 1 || r.Status != "succeeded" {
			t.Fatalf("run %+v ran more than once or failed", r)
		}
	}
}

func TestFailedRunIsRetriedAndReported(t *testing.T) {
	t.Parallel()
	db := seeded(t)
	dir := filepath.Join(t.TempDir(), "out")
	os.Mkdir(dir, 0o755)
	s := newScheduler(t, db, dir, afterSlot)
	os.Remove(dir) // the export volume is gone
	if err := s.RunDue(context.Background()); err == nil {
		t.Fatal("RunDue succeeded without its directory")
	}
	var failed int
	var lastErr string
	db.Get(&failed, `SELECT count(*) FROM export_runs WHERE status = 'failed' AND last_error <> ''`)
	if failed != 4 {
		t.Fatalf("%d failed runs recorded, want 4", failed)
	}
	db.Get(&lastErr, `SELECT last_error FROM export_runs LIMIT 1`)
	os.Mkdir(dir, 0o755) // it is back, and time has passed
	if err := newScheduler(t, db, dir, afterSlot.Add(5*time.Minute)).RunDue(context.Background()); err != nil {
		t.Fatal(err)
	}
	var ok int
	db.Get(&ok, `SELECT count(*) FROM export_runs WHERE status = 'succeeded' AND attempts = 2`)
	if ok != 4 {
		t.Fatalf("%d runs succeeded on their second attempt, want 4 (first error: %s)", ok, lastErr)
	}
}

func TestFailedWriteLeavesNoFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	_, err := exports.WriteAtomic(dir, "f.csv", func(w io.Writer) (int64, error) {
		io.WriteString(w, "half a file")
		return 0, errors.New("database went away")
	})
	if err == nil {
		t.Fatal("WriteAtomic succeeded")
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 0 {
		t.Fatalf("left behind: %v", entries)
	}
	for _, bad := range []string{"../f.csv", "a/b.csv", ".hidden", ""} {
		if _, err := exports.WriteAtomic(dir, bad, func(io.Writer) (int64, error) { return 0, nil }); err == nil {
			t.Errorf("name %q accepted", bad)
		}
	}
}

// A process killed with SIGKILL in the middle of writing leaves at most a
// temporary file, never a partial file under the final name.
func TestCrashMidWriteLeavesNoPartialFile(t *testing.T) {
	t.Parallel()
	if dir := os.Getenv("RAZAO_EXPORT_CRASH_DIR"); dir != "" {
		exports.WriteAtomic(dir, "f.csv", func(w io.Writer) (int64, error) {
			io.WriteString(w, strings.Repeat("row\n", 1000))
			os.WriteFile(filepath.Join(dir, "ready"), nil, 0o644)
			time.Sleep(time.Minute) // killed here
			return 1000, nil
		})
		return
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run", "^TestCrashMidWriteLeavesNoPartialFile$")
	cmd.Env = append(os.Environ(), "RAZAO_EXPORT_CRASH_DIR="+dir)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := os.Stat(filepath.Join(dir, "ready")); err == nil {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatal("child never started writing")
		}
		time.Sleep(10 * time.Millisecond)
	}
	cmd.Process.Kill()
	cmd.Wait()
	if _, err := os.Stat(filepath.Join(dir, "f.csv")); !os.IsNotExist(err) {
		t.Fatalf("final name exists after a crash: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "f.csv.sha256")); !os.IsNotExist(err) {
		t.Fatalf("checksum exists after a crash: %v", err)
	}
}

// An open month's file would be stale the day after: the run waits, and
// the file appears once the month is closed.
func TestExportWaitsForTheMonthToClose(t *testing.T) {
	t.Parallel()
	db := seededOpen(t)
	dir := t.TempDir()
	if err := newScheduler(t, db, dir, afterSlot).RunDue(context.Background()); err != nil {
		t.Fatal(err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("files of an open month written: %v", entries)
	}
	var waiting int
	db.Get(&waiting, `SELECT count(*) FROM export_runs WHERE status = 'waiting'`)
	if waiting != 4 {
		t.Fatalf("%d runs waiting, want 4", waiting)
	}
	cal, _ := periods.NewCalendar(periods.DefaultTimeZone)
	if err := periods.Close(context.Background(), db, cal, periods.Month{Year: 2026, Month: 8}, afterSlot, "", monthsums.Closing); err != nil {
		t.Fatal(err)
	}
	if err := newScheduler(t, db, dir, afterSlot.Add(time.Minute)).RunDue(context.Background()); err != nil {
		t.Fatal(err)
	}
	var done int
	db.Get(&done, `SELECT count(*) FROM export_runs WHERE status = 'succeeded' AND attempts = 1`)
	if done != 4 {
		t.Fatalf("%d runs succeeded after the close, want 4", done)
	}
}
