package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/razao/razao/adjustments"
	"github.com/razao/razao/internal/pgtest"
	"github.com/razao/razao/periods"
	"github.com/razao/razao/postings"
)

// razao adjust proposes as the operator at the command line, who cannot
// approve its own proposal; another person approves it, and show and
// list print it booked with both names. Bad legs write nothing.
func TestAdjustCommandProposesAndCannotApproveItsOwn(t *testing.T) {
	t.Parallel()
	db, url := pgtest.NewWithURL(t)
	code, out := runCmd(t, "adjust", "propose", "-database-url", url, "-key", "k1", "-reason", "caixa contado a mais",
		"-competence", "2026-09-01", "assets:cash=1500", "equity:adjustments=-1500")
	var a adjustments.Adjustment
	if code != 0 || json.Unmarshal([]byte(out), &a) != nil || a.Status != adjustments.StatusProposed || !strings.HasPrefix(a.ProposedBy, "cli:") {
		t.Fatalf("propose: exit %d\n%s", code, out)
	}
	id := strconv.FormatInt(a.ID, 10)
	if code, out := runCmd(t, "adjust", "approve", "-database-url", url, id); code == 0 || !strings.Contains(out, "another admin") {
		t.Fatalf("approve one's own: exit %d\n%s", code, out)
	}
	cal, _ := periods.NewCalendar(periods.DefaultTimeZone)
	c := adjustments.Corrections{DB: db, Ledger: postings.New(db, cal)}
	if _, err := c.Approve(context.Background(), a.ID, adjustments.Actor{Name: "bob"}, time.Now()); err != nil {
		t.Fatal(err)
	}
	code, out = runCmd(t, "adjust", "show", "-database-url", url, id)
	if code != 0 || json.Unmarshal([]byte(out), &a) != nil || a.Status != adjustments.StatusBooked || a.DecidedBy != "bob" {
		t.Fatalf("show: exit %d\n%s", code, out)
	}
	if code, out := runCmd(t, "adjust", "list", "-database-url", url, "-status", "booked"); code != 0 || strings.Count(out, "\n") != 1 {
		t.Fatalf("list: exit %d\n%s", code, out)
	}
	for _, legs := range [][]string{{"assets:cash=1500"}, {"assets:cash=1500", "equity:adjustments=-1400"}, {"assets:cash", "x=1"}} {
		args := append([]string{"adjust", "propose", "-database-url", url, "-key", "k2", "-reason", "r"}, legs...)
		if code, out := runCmd(t, args...); code == 0 {
			t.Errorf("propose %v: exit 0\n%s", legs, out)
		}
	}
	var n int
	if err := db.Get(&n, `SELECT count(*) FROM adjustments`); err != nil || n != 1 {
		t.Fatalf("%d proposals (%v), want 1", n, err)
	}
}

// The adjustments section of the config file: approval on or off, a ttl
// within bounds; anything else is refused naming the key.
func TestConfigAdjustmentsSection(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, tc := range []struct {
		yaml string
		want string // "" : valid
	}{
		{"adjustments:\n  approval: off\n", ""},
		{"adjustments:\n  approval: on\n  ttl: 48h\n", ""},
		{"adjustments:\n  approval: maybe\n", "approval"},
		{"adjustments:\n  ttl: 1m\n", "ttl"},
		{"adjustments:\n  aproval: off\n", `unknown key "aproval" in adjustments`},
	} {
		path := filepath.Join(dir, "c.yaml")
		if err := os.WriteFile(path, []byte(tc.yaml), 0o600); err != nil {
			t.Fatal(err)
		}
		file, err := loadFileConfig(path)
		if err == nil {
			_, err = file.Adjustments.build()
		}
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%q: %v", tc.yaml, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%q: %v, want an error naming %s", tc.yaml, err, tc.want)
		}
	}
	if cfg, err := (adjustmentsConfig{Approval: "off"}).build(); err != nil || !cfg.ApprovalOff {
		t.Fatalf("approval off: %+v %v", cfg, err)
	}
}
