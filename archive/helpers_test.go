package archive

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/razao/razao/internal/pgtest"
)

// saoPaulo is the ledger's time zone in these tests.
var saoPaulo = mustLoad("America/Sao_Paulo")

// now is the archiver's clock: June 2027, months to March closed in most
// tests.
var now = time.Date(2027, 6, 15, 12, 0, 0, 0, time.UTC)

func mustLoad(name string) *time.Location {
	loc, err := time.LoadLocation(name)
	if err != nil {
		panic(err)
	}
	return loc
}

// setup returns an archiver over a fresh database with the default ages,
// writing into a directory of its own.
func setup(t *testing.T) (*Archiver, *sqlx.DB) {
	t.Helper()
	db := pgtest.New(t)
	return newArchiver(t, db), db
}

func newArchiver(t *testing.T, db *sqlx.DB) *Archiver {
	t.Helper()
	return &Archiver{DB: db, Config: Config{Dir: t.TempDir(), Location: saoPaulo}, Now: func() time.Time { return now },
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
}

// closeThrough records every month from January 2027 to last as closed,
// by hand (these tests need no snapshot).
func closeThrough(t *testing.T, db *sqlx.DB, last string) {
	t.Helper()
	db.MustExec(`INSERT INTO closed_periods (month, closed_by)
		SELECT m::date, 'test' FROM generate_series('2027-01-01'::date, ($1 || '-01')::date, interval '1 month') m`, last)
}

// inboxRow stores a delivery with an inline body, in status, processed at
// (nil: not processed), and returns its id.
func inboxRow(t *testing.T, db *sqlx.DB, eventID, status string, at *time.Time) int64 {
	t.Helper()
	var id int64
	if err := db.Get(&id, `INSERT INTO inbox (delivery_key, endpoint, scheme, merchant, event_type, event_id, kind, event, body, headers,
		status, received_at, processed_at)
		VALUES ('k-' || $1, 'hodle', 'hodle', 'm1', 'PAID', $1, 'paid', '{"Amount": 4990}', convert_to('{"body":"' || $1 || '"}', 'UTF8'),
			'{"X-Sig": "abc"}', $2, coalesce($3, $4::timestamptz), $3)
		RETURNING id`, eventID, status, at, now); err != nil {
		t.Fatal(err)
	}
	return id
}

func at(s string) *time.Time {
	t, err := time.ParseInLocation("2006-01-02", s, saoPaulo)
	if err != nil {
		panic(err)
	}
	t = t.Add(12 * time.Hour)
	return &t
}

// bodyKept tells whether inbox row id still has a body (inline or shared).
func bodyKept(t *testing.T, db *sqlx.DB, id int64) bool {
	t.Helper()
	var kept bool
	if err := db.Get(&kept, `SELECT body IS NOT NULL OR body_id IS NOT NULL FROM inbox WHERE id = $1`, id); err != nil {
		t.Fatal(err)
	}
	return kept
}

// run runs the archiver with an hour's budget and fails the test on an error.
func run(t *testing.T, a *Archiver) Summary {
	t.Helper()
	s, err := a.Run(context.Background(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if !s.Done {
		t.Fatal("the run stopped before it was done")
	}
	return s
}

// filesIn lists the archive files of dir.
func filesIn(t *testing.T, dir string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, "*.jsonl.gz"))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// verified verifies every file of s and returns the rows they hold.
func verified(t *testing.T, a *Archiver, s Summary) int64 {
	t.Helper()
	var rows int64
	for _, f := range s.Files {
		m, err := Verify(filepath.Join(a.Config.Dir, f.FileName))
		if err != nil {
			t.Fatal(err)
		}
		if m.SHA256 != f.SHA256 || m.Rows != f.Rows || m.Header.Kind != f.Kind || m.Header.Month != f.Month {
			t.Fatalf("file %s reads %+v, recorded %+v", f.FileName, m, f)
		}
		rows += m.Rows
	}
	return rows
}

func writeFile(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}
