package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/razao/razao/internal/pgtest"
)

// The retention section is refused with a clear error for hostile values:
// a negative, tiny or huge age, a missing or unwritable directory, a key
// without archive_dir, a batch out of bounds; a good one is read with its
// defaults, and webhooks.attempts_retention is the attempts' age.
func TestRetentionConfigRefusesHostileValues(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cases := map[string]struct{ yaml, want string }{
		"negative age":      {"retention:\n  archive_dir: " + dir + "\n  outbox: -1h\n", "must not be negative"},
		"a tiny age":        {"retention:\n  archive_dir: " + dir + "\n  inbox_bodies: 90s\n", "surely a mistake"},
		"a huge age":        {"retention:\n  archive_dir: " + dir + "\n  statements: 2562047h\n", "over 100 years"},
		"not a duration":    {"retention:\n  archive_dir: " + dir + "\n  statements: 90\n", "want a duration"},
		"missing dir":       {"retention:\n  archive_dir: " + filepath.Join(dir, "nope") + "\n", "no such file"},
		"unwritable dir":    {"retention:\n  archive_dir: /proc\n", "not writable"},
		"no archive_dir":    {"retention:\n  outbox: 2160h\n", "archive_dir is required"},
		"a batch too large": {"retention:\n  archive_dir: " + dir + "\n  batch_rows: 9223372036854775807\n", "batch_rows"},
		"every too often":   {"retention:\n  archive_dir: " + dir + "\n  every: 1s\n", "every must be at least 1m"},
		"an unknown key":    {"retention:\n  archive_dir: " + dir + "\n  inbox: 1h\n", `unknown key "inbox" in retention`},
		"a NUL in the dir":  {"retention:\n  archive_dir: \"/tmp/a\\0b\"\n", "archive_dir"},
	}
	for name, c := range cases {
		path := writeConfig(t, c.yaml)
		_, err := parseServeConfig([]string{"-config", path}, newFlagSet("test", &bytes.Buffer{}), func(string) string { return "" }, false)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error saying %q", name, err, c.want)
		}
	}
	path := writeConfig(t, "webhooks:\n  attempts_retention: 240h\nretention:\n  archive_dir: "+dir+"\n  outbox: 0s\n")
	cfg, err := parseServeConfig([]string{"-config", path}, newFlagSet("test", &bytes.Buffer{}), func(string) string { return "" }, false)
	if err != nil {
		t.Fatal(err)
	}
	r := cfg.retention
	if r == nil || r.Age("outbox") != 0 || r.Age("webhook_attempts").Hours() != 240 || r.Age("inbox_bodies").Hours() != 2160 || r.every.Hours() != 1 {
		t.Fatalf("retention %+v", r)
	}
}

// razao archive run archives and purges, list shows the file, and verify
// proves it whole, and fails (exit 3) on a file with a flipped byte.
func TestArchiveCommandRunListVerify(t *testing.T) {
	t.Parallel()
	db, url := pgtest.NewWithURL(t)
	dir := t.TempDir()
	cfg := writeConfig(t, "retention:\n  archive_dir: "+dir+"\n  webhook_attempts: 720h\n")
	var ep int64
	if err := db.Get(&ep, `INSERT INTO webhook_endpoints (url, topics, secret, after_xid, after_id) VALUES ('https://app.example/h', '{}', '\x00', '0', 0) RETURNING id`); err != nil {
		t.Fatal(err)
	}
	db.MustExec(`INSERT INTO webhook_attempts (endpoint_id, event_id, topic, attempt, replay, status, latency_ms, at)
		VALUES ($1, 1, 'charge.paid', 1, false, 200, 5, now() - interval '40 days')`, ep)
	ctx := context.Background()
	var out, errOut bytes.Buffer
	if code := run(ctx, []string{"archive", "run", "-config", cfg, "-database-url", url}, &out, &errOut); code != 0 {
		t.Fatalf("archive run: exit %d: %s", code, errOut.String())
	}
	var rec struct {
		FileName string `json:"file_name"`
		Rows     int64  `json:"rows"`
	}
	if err := json.Unmarshal(out.Bytes(), &rec); err != nil || rec.Rows != 1 {
		t.Fatalf("archive run printed %q (%v)", out.String(), err)
	}
	out.Reset()
	if code := run(ctx, []string{"archive", "list", "-database-url", url}, &out, &errOut); code != 0 || !strings.Contains(out.String(), rec.FileName) {
		t.Fatalf("archive list: exit %d: %s", code, out.String())
	}
	path := filepath.Join(dir, rec.FileName)
	out.Reset()
	if code := run(ctx, []string{"archive", "verify", path}, &out, &errOut); code != 0 || !strings.HasPrefix(out.String(), "ok ") {
		t.Fatalf("archive verify: exit %d: %s", code, out.String())
	}
	b, _ := os.ReadFile(path)
	b[len(b)/2] ^= 1
	bad := filepath.Join(t.TempDir(), "bad.jsonl.gz")
	os.WriteFile(bad, b, 0o600)
	out.Reset()
	if code := run(ctx, []string{"archive", "verify", path, bad}, &out, &errOut); code != exitBreach || !strings.Contains(out.String(), "FAIL  "+bad) {
		t.Fatalf("archive verify of a flipped byte: exit %d: %s", code, out.String())
	}
}

// razao config check says what retention will do, and warns when there
// is none.
func TestConfigCheckSaysWhatRetentionDoes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	code, out := runCmd(t, "config", "check", "-config", writeConfig(t, "retention:\n  archive_dir: "+dir+"\n  outbox: 0s\n  serve_runs: false\n"))
	want := "ok    retention: archives into " + dir + " (inbox_bodies 2160h0m0s, outbox kept forever, statements 9600h0m0s, " +
		"reconciliation_lines 9600h0m0s, webhook_attempts 720h0m0s); razao archive run only (serve runs none)"
	if code != 0 || !strings.Contains(out, want) {
		t.Fatalf("exit %d, output lacks %q:\n%s", code, want, out)
	}
	if _, out := runCmd(t, "config", "check", "-config", writeConfig(t, "time_zone: UTC\n")); !strings.Contains(out, "warn  retention: no archive_dir: nothing is archived nor purged") {
		t.Fatalf("no retention: output lacks the warning:\n%s", out)
	}
}
