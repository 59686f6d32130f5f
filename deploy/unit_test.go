// Package deploy_test checks the files razao is deployed with.
package deploy_test

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// shippedBinary is where the unit expects razao.
const shippedBinary = "/usr/local/bin/razao"

// verifiable writes the unit into a directory of its own with ExecStart
// pointing at an executable that exists (systemd-analyze verify refuses a
// missing one), every other byte as shipped, and returns its path.
func verifiable(t *testing.T, unit string) string {
	t.Helper()
	dir := t.TempDir()
	bin := filepath.Join(dir, "razao")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "razao.service")
	if err := os.WriteFile(path, []byte(strings.ReplaceAll(unit, shippedBinary, bin)), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func readUnit(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("razao.service")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// analyze runs systemd-analyze; it fails the test, never skips it, when
// the tool is missing (.ci/run installs Debian's systemd for it).
func analyze(t *testing.T, args ...string) (string, error) {
	t.Helper()
	if _, err := exec.LookPath("systemd-analyze"); err != nil {
		t.Fatalf("systemd-analyze not found (Debian package systemd): %v", err)
	}
	out, err := exec.Command("systemd-analyze", args...).CombinedOutput()
	return string(out), err
}

// The unit parses without a single warning. systemd-analyze verify exits
// 0 on a misspelt key or value, and only says so, so any output fails.
func TestUnitVerifiesClean(t *testing.T) {
	unit := readUnit(t)
	if !strings.Contains(unit, "ExecStart="+shippedBinary+" serve") {
		t.Fatalf("the unit does not start %s serve", shippedBinary)
	}
	out, err := analyze(t, "verify", verifiable(t, unit))
	if err != nil || strings.TrimSpace(out) != "" {
		t.Fatalf("systemd-analyze verify: %v\n%s", err, out)
	}
	// The check can fail: a misspelt value is reported.
	out, _ = analyze(t, "verify", verifiable(t, strings.Replace(unit, "ProtectSystem=strict", "ProtectSystem=stric", 1)))
	if !strings.Contains(out, "stric") {
		t.Fatalf("a misspelt ProtectSystem went unreported: %q", out)
	}
}

// The hardening holds: never root, no new privileges, the file system
// read-only but for the state directory, secrets from a file; and
// systemd's own offline assessment rates the unit's exposure 1.1 of 10
// ("OK"), so dropping a protection shows.
func TestUnitIsHardened(t *testing.T) {
	unit := readUnit(t)
	keys := map[string][]string{}
	sc := bufio.NewScanner(strings.NewReader(unit))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if k, v, ok := strings.Cut(line, "="); ok && !strings.HasPrefix(line, "#") {
			keys[k] = append(keys[k], v)
		}
	}
	for k, want := range map[string]string{
		"DynamicUser": "yes", "NoNewPrivileges": "yes", "ProtectSystem": "strict", "ProtectHome": "yes",
		"Restart": "on-failure", "EnvironmentFile": "/etc/razao/razao.env", "CapabilityBoundingSet": "",
		"KillSignal": "SIGTERM",
	} {
		if got := keys[k]; len(got) != 1 || got[0] != want {
			t.Errorf("%s=%v, want %q", k, got, want)
		}
	}
	if u := keys["User"]; len(u) > 0 {
		t.Errorf("User=%v: the unit runs as a dynamic user, never a named one (root least of all)", u)
	}
	if strings.Contains(unit, "RAZAO_ALLOW_ROOT") || strings.Contains(unit, "allow_root") {
		t.Error("the unit opts into serving as root: it never runs as root, and must let serve refuse it")
	}
	path := verifiable(t, unit)
	if out, err := analyze(t, "security", "--offline=yes", "--threshold=11", path); err != nil {
		t.Errorf("exposure above 1.1: %v\n%s", err, tail(out))
	}
	weaker := verifiable(t, strings.Replace(unit, "PrivateDevices=yes", "PrivateDevices=no", 1))
	if _, err := analyze(t, "security", "--offline=yes", "--threshold=11", weaker); err == nil {
		t.Error("the threshold does not notice a protection dropped")
	}
}

func tail(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > 3 {
		lines = lines[len(lines)-3:]
	}
	return strings.Join(lines, "\n")
}
