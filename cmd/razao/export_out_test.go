package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/razao/razao/internal/pgtest"
	"github.com/razao/razao/periods"
	"github.com/razao/razao/postings"
)

// razao export -out /dev/stdout, run as root, renamed its temporary file
// over /dev/stdout. A path that is not a regular file (here a link to
// /dev/null and a named pipe, in a temporary directory: never the real
// /dev/stdout) is refused with an error that says why and names -out -,
// and nothing is written or renamed.
func TestExportRefusesAnOutputThatIsNotARegularFile(t *testing.T) {
	t.Parallel()
	_, url := pgtest.NewWithURL(t)
	dir := t.TempDir()
	link := filepath.Join(dir, "stdout")
	if err := os.Symlink(os.DevNull, link); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "pipe")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, out := range []string{link, fifo} {
		code, msg := runCmd(t, "export", "-database-url", url, "-kind", "journal", "-month", "2026-08", "-out", out)
		if code == 0 {
			t.Fatalf("-out %s: exit 0, want a refusal\n%s", out, msg)
		}
		for _, want := range []string{out, "not a regular file", "-out -"} {
			if !strings.Contains(msg, want) {
				t.Errorf("-out %s: the error lacks %q:\n%s", out, want, msg)
			}
		}
	}
	if to, err := os.Readlink(link); err != nil || to != os.DevNull {
		t.Fatalf("the link to /dev/null became %q, %v", to, err)
	}
	if fi, err := os.Lstat(fifo); err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
		t.Fatalf("the named pipe became %v, %v", fi.Mode(), err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 2 {
		t.Fatalf("the directory holds %d entries, want the link and the pipe alone", len(entries))
	}
}

// -out - writes to standard output the very bytes -out writes to a file,
// and its summary (with the same sha256) to stderr.
func TestExportToStandardOutputWritesTheFileBytes(t *testing.T) {
	t.Parallel()
	db, url := pgtest.NewWithURL(t)
	cal, _ := periods.NewCalendar(periods.DefaultTimeZone)
	seedLedger(t, db, postings.New(db, cal))
	file := filepath.Join(t.TempDir(), "aug.csv")
	args := []string{"export", "-database-url", url, "-kind", "journal", "-month", "2026-08", "-dialect", "br", "-out"}
	if code, msg := runCmd(t, append(args, file)...); code != 0 {
		t.Fatalf("export to a file: exit %d\n%s", code, msg)
	}
	want, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	sum, err := os.ReadFile(file + ".sha256")
	if err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), append(args, "-"), &stdout, &stderr); code != 0 {
		t.Fatalf("export to standard output: exit %d\n%s", code, stderr.String())
	}
	if !bytes.Equal(stdout.Bytes(), want) {
		t.Fatalf("standard output holds %d bytes, not the file's %d:\n%q", stdout.Len(), len(want), stdout.String())
	}
	digest, _, _ := strings.Cut(string(sum), " ")
	if !strings.Contains(stderr.String(), "sha256 "+digest) {
		t.Fatalf("stderr lacks the file's sha256 %s:\n%s", digest, stderr.String())
	}
}

// razao export -format hledger|beancount writes the month's journal as the
// ledger tool's file under its conventional name, byte for byte what the
// API serves (reports.WriteLedger), and hledger reads it; a format for
// another kind than the journal, or an unknown one, is refused before the
// database is asked.
func TestExportWritesTheJournalAsLedgerFiles(t *testing.T) {
	t.Parallel()
	db, url := pgtest.NewWithURL(t)
	cal, _ := periods.NewCalendar(periods.DefaultTimeZone)
	seedLedger(t, db, postings.New(db, cal))
	dir := t.TempDir()
	for _, f := range []string{"hledger", "beancount"} {
		var stdout, stderr bytes.Buffer
		cmd := []string{"export", "-database-url", url, "-month", "2026-08", "-format", f, "-out", "-"}
		if code := run(context.Background(), cmd, &stdout, &stderr); code != 0 {
			t.Fatalf("%s: exit %d\n%s", f, code, stderr.String())
		}
		name := filepath.Join(dir, "razao-journal-2026-08."+f)
		if err := os.WriteFile(name, stdout.Bytes(), 0o600); err != nil {
			t.Fatal(err)
		}
		check := exec.Command("hledger", "-f", name, "check")
		if f == "beancount" {
			check = exec.Command("bean-check", name)
		}
		check.Env = append(os.Environ(), "LANG=C.UTF-8")
		if out, err := check.CombinedOutput(); err != nil || !strings.Contains(strings.ToLower(stdout.String()), "assets:cash") {
			t.Fatalf("%s file does not check, or has no cash: %v\n%s", f, err, out)
		}
	}
	for _, bad := range [][]string{{"-format", "ledger"}, {"-format", "hledger", "-kind", "trial-balance"}} {
		code, msg := runCmd(t, append([]string{"export", "-database-url", "postgres://127.0.0.1:1/none", "-month", "2026-08"}, bad...)...)
		if code == 0 || strings.Contains(msg, "connect") {
			t.Errorf("%v: exit %d %s; want a refusal before the database", bad, code, msg)
		}
	}
}
