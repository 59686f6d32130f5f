package main

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/razao/razao/internal/pgtest"
	"github.com/razao/razao/periods"
	"github.com/razao/razao/postings"
)

// TestPeriodCommandsListAndClose runs razao period list and close as an
// operator would: the list is bounded (a set dated 0001-01 written before
// the window existed neither stretches it nor holds the close back), and
// close stores the month's snapshot as POST /v1/periods/{month}/close does.
func TestPeriodCommandsListAndClose(t *testing.T) {
	t.Parallel()
	db, url := pgtest.NewWithURL(t)
	cal, _ := periods.NewCalendar(periods.DefaultTimeZone)
	seedLedger(t, db, postings.New(db, cal)) // August and September 2026
	db.MustExec(`WITH s AS (
		INSERT INTO posting_sets (kind, idempotency_key, amount, currency, competence, event_at, content_hash)
		VALUES ('adjustment', 'legacy-0001', 100, 'BRL', '0001-01-01', '0001-01-01', 'legacy') RETURNING id, competence_month)
	INSERT INTO postings (posting_set_id, account_id, currency, amount, competence_month)
	SELECT s.id, a.id, 'BRL', v.amount, s.competence_month
	FROM s, (VALUES ('assets:cash', 100), ('income:revenue', -100)) v (code, amount) JOIN accounts a ON a.code = v.code`)

	var months []string // 2026-08 to the current month
	for m, now := (periods.Month{Year: 2026, Month: time.August}), cal.Month(time.Now()); !now.Before(m); m = m.Next() {
		months = append(months, m.String())
	}
	list := func(args ...string) []string {
		t.Helper()
		code, out := runCmd(t, append([]string{"period", "list", "-database-url", url}, args...)...)
		if code != 0 {
			t.Fatalf("period list: exit %d\n%s", code, out)
		}
		return strings.Split(strings.TrimSpace(out), "\n")
	}
	lines := list()
	if len(lines) != len(months) || !strings.HasPrefix(lines[0], "2026-08\topen\tsnapshot=false\tactivity=true\tclosable=true") ||
		!strings.HasPrefix(lines[len(lines)-1], months[len(months)-1]+"\topen") {
		t.Fatalf("period list: %d lines, want %d (%s to %s):\n%s", len(lines), len(months), months[0], months[len(months)-1], strings.Join(lines[:min(len(lines), 5)], "\n"))
	}

	if code, out := runCmd(t, "period", "close", "-database-url", url, "-month", "2026-08"); code != 0 || !strings.Contains(out, "2026-08 closed") {
		t.Fatalf("period close 2026-08: exit %d\n%s", code, out)
	}
	if n := 0; db.Get(&n, `SELECT count(*) FROM month_snapshots WHERE month = '2026-08-01'`) != nil || n != 1 {
		t.Fatalf("close stored %d snapshots of 2026-08, want 1", n)
	}
	// Who closed it is the operator at the command line, not the
	// database role the command connected as.
	if by := ""; db.Get(&by, `SELECT closed_by FROM closed_periods WHERE month = '2026-08-01'`) != nil || !strings.HasPrefix(by, "cli:") {
		t.Fatalf("closed_by = %q, want cli:<os user>", by)
	}
	if lines := list(); !strings.HasPrefix(lines[0], "2026-08\tclosed\tsnapshot=true\tactivity=true\tclosable=false\t") ||
		!strings.HasPrefix(lines[1], "2026-09\topen\tsnapshot=false\tactivity=true\tclosable=true") {
		t.Fatalf("period list after the close:\n%s", strings.Join(lines, "\n"))
	}
	for _, tc := range []struct{ month, want string }{
		{"2026-08", "already closed"},
		{"2026-10", "earlier month is still open"},
		{"2020-10", "go-live"},
		{"0001-01", "invalid month"},
	} {
		if code, out := runCmd(t, "period", "close", "-database-url", url, "-month", tc.month); code != 1 || !strings.Contains(out, tc.want) {
			t.Errorf("period close %s: exit %d, want 1 and %q\n%s", tc.month, code, tc.want, out)
		}
	}
	// The go-live date comes from the flag or the config file, as for serve.
	if lines := list("-go-live", "2026-09-01"); !strings.HasPrefix(lines[0], "2026-09\topen") {
		t.Fatalf("period list -go-live 2026-09-01:\n%s", strings.Join(lines, "\n"))
	}
	if lines := list("-config", writeConfig(t, "go_live: 2026-09-15\n")); !strings.HasPrefix(lines[0], "2026-09\topen") {
		t.Fatalf("period list with go_live in the config file:\n%s", strings.Join(lines, "\n"))
	}
	if code, out := runCmd(t, "period"); code != 2 || !strings.Contains(out, "usage: razao period") {
		t.Fatalf("period without a verb: exit %d\n%s", code, out)
	}
}

func TestConfigGoLiveFromFileEnvAndFlag(t *testing.T) {
	t.Parallel()
	path := writeConfig(t, "go_live: 2021-01-01\n")
	parse := func(env map[string]string, args ...string) (serveConfig, error) {
		return parseServeConfig(append([]string{"-config", path}, args...), newFlagSet("serve", os.Stderr), func(k string) string { return env[k] }, true)
	}
	day := func(s string) time.Time { d, _ := time.Parse(time.DateOnly, s); return d }
	if cfg, err := parseServeConfig(nil, newFlagSet("serve", os.Stderr), func(string) string { return "" }, true); err != nil || !cfg.goLive.Equal(day(periods.DefaultGoLive)) {
		t.Fatalf("default: %v %v", cfg.goLive, err)
	}
	if cfg, err := parse(nil); err != nil || !cfg.goLive.Equal(day("2021-01-01")) {
		t.Fatalf("file: %v %v", cfg.goLive, err)
	}
	env := map[string]string{"RAZAO_GO_LIVE": "2022-02-02"}
	if cfg, err := parse(env); err != nil || !cfg.goLive.Equal(day("2022-02-02")) {
		t.Fatalf("env over file: %v %v", cfg.goLive, err)
	}
	if cfg, err := parse(env, "-go-live", "2023-03-03"); err != nil || !cfg.goLive.Equal(day("2023-03-03")) {
		t.Fatalf("flag over env: %v %v", cfg.goLive, err)
	}
	if _, err := parse(nil, "-go-live", "2023-13-01"); err == nil || !strings.Contains(err.Error(), "go-live") {
		t.Fatalf("bad go-live accepted: %v", err)
	}
}
