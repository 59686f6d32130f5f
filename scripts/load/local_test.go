package main

import (
	"os/exec"
	"strings"
	"testing"
)

// run.sh and versus.sh take their server from local.sh's local_server:
// a URL whose host, or any host= or hostaddr= of its query (libpq connects
// to hostaddr rather than the host), is not this machine is refused before
// anything connects: one shared check, so that no script can let
// ?hostaddr= through on its own.
func TestLocalServerRefusesEveryRemoteHost(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	for _, c := range []struct {
		url, want string // want: the URL as kept, or "" for refused
	}{
		{"postgres://postgres@127.0.0.1:5432/postgres", "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"},
		{"postgres://u:p@localhost/db?sslmode=require", "postgres://u:p@localhost/db?sslmode=require"},
		{"postgresql://[::1]:5432/db", "postgresql://[::1]:5432/db?sslmode=disable"},
		{"postgres://127.0.0.9/db?host=%2Fvar%2Frun%2Fpostgresql", "postgres://127.0.0.9/db?host=%2Fvar%2Frun%2Fpostgresql&sslmode=disable"},
		{"postgres:///db?host=/var/run/postgresql", "postgres:///db?host=/var/run/postgresql&sslmode=disable"},
		{"postgres://db.example.com/db", ""},
		{"postgres://10.0.0.5:5432/db", ""},
		{"postgres://127.0.0.1:5432/db?hostaddr=10.0.0.5", ""},
		{"postgres://127.0.0.1/db?sslmode=disable&host=evil.example", ""},
		{"postgres://127.0.0.1/db?host=localhost,10.0.0.5", ""},
		{"postgres://[2001:db8::1]/db", ""},
		{"mysql://127.0.0.1/db", ""},
	} {
		cmd := exec.Command("bash", "-c", `set -euo pipefail; source scripts/load/local.sh; local_server "$1"; echo "$ADMIN_URL"; db_url other`, "t", c.url)
		cmd.Dir = "../.."
		out, err := cmd.CombinedOutput()
		if c.want == "" {
			if err == nil {
				t.Errorf("%s: kept (%s), want refused", c.url, strings.TrimSpace(string(out)))
			}
			continue
		}
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		if err != nil || len(lines) != 2 || lines[0] != c.want || !strings.Contains(lines[1], "/other?") {
			t.Errorf("%s: %v %q, want %s and its database other", c.url, err, out, c.want)
		}
	}
}
