package archive

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A crash between the archive file and the purge (the purge step fails)
// purges nothing and records nothing; a run after it archives each row
// once, and names the file the crash left behind as recorded nowhere.
func TestCrashBetweenArchiveAndPurgeLosesAndDoublesNothing(t *testing.T) {
	t.Parallel()
	a, db := setup(t)
	closeThrough(t, db, "2027-01")
	ids := []int64{inboxRow(t, db, "c1", "processed", at("2027-01-10")), inboxRow(t, db, "c2", "processed", at("2027-01-11"))}
	crash := errors.New("killed between the archive and the purge")
	var left map[string][]byte // what a kill -9 would have left on disk
	a.beforePurge = func(Kind) error {
		left = map[string][]byte{}
		for _, p := range filesIn(t, a.Config.Dir) {
			b, _ := os.ReadFile(p)
			left[p] = b
		}
		return crash
	}
	if _, err := a.Run(context.Background(), time.Hour); !errors.Is(err, crash) {
		t.Fatalf("run: %v, want the crash", err)
	}
	for _, id := range ids {
		if !bodyKept(t, db, id) {
			t.Fatalf("row %d lost its body in a crashed batch", id)
		}
	}
	if n := count(t, db, `SELECT count(*) FROM archives`); n != 0 {
		t.Fatalf("%d archives recorded by a crashed batch", n)
	}
	if len(left) != 1 {
		t.Fatalf("%d files written before the crash, want 1", len(left))
	}
	for p, b := range left {
		writeFile(t, p, b) // the process died before removing it
	}
	a.beforePurge = nil
	s := run(t, a)
	if len(s.Files) != 1 || s.Files[0].Rows != 2 || len(s.Unrecorded) != 1 {
		t.Fatalf("re-run: %+v, want one file of 2 rows and the crashed one named unrecorded", s)
	}
	if n := count(t, db, `SELECT coalesce(sum(rows), 0) FROM archives`); n != 2 {
		t.Fatalf("archives record %d rows, want 2", n)
	}
	for _, id := range ids {
		if bodyKept(t, db, id) {
			t.Fatalf("row %d kept its body after the re-run", id)
		}
	}
}

// Two runs never archive at once: the second is told another is under way.
func TestASecondRunWaitsForNoneAndArchivesNothing(t *testing.T) {
	t.Parallel()
	a, db := setup(t)
	conn, err := db.Connx(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(context.Background(), `SELECT pg_advisory_lock($1)`, LockID); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Run(context.Background(), time.Hour); !errors.Is(err, ErrBusy) {
		t.Fatalf("run beside another: %v, want ErrBusy", err)
	}
}

// An archive file changed in any way fails verify: a flipped byte, a cut,
// bytes appended, a row dropped with the trailer kept.
func TestTamperedArchiveFailsVerify(t *testing.T) {
	t.Parallel()
	a, db := setup(t)
	closeThrough(t, db, "2027-01")
	for _, id := range []string{"t1", "t2", "t3"} {
		inboxRow(t, db, id, "processed", at("2027-01-10"))
	}
	s := run(t, a)
	path := filepath.Join(a.Config.Dir, s.Files[0].FileName)
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Verify(path); err != nil {
		t.Fatalf("the file as written: %v", err)
	}
	flip := func(i int) []byte { b := append([]byte(nil), good...); b[i] ^= 0x01; return b }
	cases := map[string][]byte{
		"a flipped byte in the middle":             flip(len(good) / 2),
		"a flipped byte in the gzip trailer (CRC)": flip(len(good) - 6),
		"cut short":                   good[:len(good)-10],
		"cut in half":                 good[:len(good)/2],
		"empty":                       {},
		"bytes appended":              append(append([]byte(nil), good...), "more"...),
		"a row dropped, trailer kept": rewritten(t, path, func(lines []string) []string { return append(lines[:1], lines[2:]...) }),
		"a row changed, trailer kept": rewritten(t, path, func(lines []string) []string {
			lines[1] = strings.Replace(lines[1], "t1", "t9", 1)
			return lines
		}),
		"no trailer": rewritten(t, path, func(lines []string) []string { return lines[:len(lines)-1] }),
	}
	for name, b := range cases {
		p := filepath.Join(t.TempDir(), "x.jsonl.gz")
		writeFile(t, p, b)
		if _, err := Verify(p); err == nil {
			t.Errorf("%s: verify passed", name)
		}
	}
}

// rewritten is the archive file at path re-compressed whole (gzip valid)
// after edit changed its lines.
func rewritten(t *testing.T, path string, edit func([]string) []string) []byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := io.ReadAll(gz)
	if err != nil {
		t.Fatal(err)
	}
	lines := edit(strings.Split(strings.TrimSuffix(string(raw), "\n"), "\n"))
	var out bytes.Buffer
	w := gzip.NewWriter(&out)
	w.Write([]byte(strings.Join(lines, "\n") + "\n"))
	w.Close()
	return out.Bytes()
}
