package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/razao/razao"
	"github.com/razao/razao/internal/pgtest"
)

// On a schema a newer release migrated: razao migrate with this (older)
// binary refuses, having nothing of its own to give it; serve starts
// (a rolling upgrade) and warns with both versions; once a contract
// migration's floor is past this binary, serve refuses at start, as do
// the commands that read the ledger.
func TestAnOlderBinaryOnANewerSchema(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, url := pgtest.NewWithURL(t)
	ms, err := razao.Migrations()
	if err != nil {
		t.Fatal(err)
	}
	last := ms[len(ms)-1]
	newer := fmt.Sprintf("%04d_from_a_newer_release.sql", last.Version+1)
	db.MustExec(`INSERT INTO schema_migrations (version, name) VALUES ($1, $2)`, last.Version+1, newer)

	var out, errOut bytes.Buffer
	if code := run(ctx, []string{"migrate", "-database-url", url}, &out, &errOut); code == 0 ||
		!strings.Contains(errOut.String(), newer) || !strings.Contains(errOut.String(), last.Name) || !strings.Contains(errOut.String(), "nothing applied") {
		t.Errorf("razao migrate by an older binary: exit %d\n%s%s\nwant the refusal naming %s and %s", code, out.String(), errOut.String(), newer, last.Name)
	}

	cfg, err := parseServeConfig([]string{"-database-url", url}, newFlagSet("serve", io.Discard), func(string) string { return "" }, true)
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	srv, err := newServer(ctx, cfg, slog.New(slog.NewJSONHandler(&logs, nil)), time.Now)
	if err != nil {
		t.Fatalf("serve beside an expanded schema: %v", err)
	}
	srv.Close()
	if want := fmt.Sprintf(`"database_migration":%q,"binary_migration":%q`, newer, last.Name); !strings.Contains(logs.String(), want) {
		t.Errorf("serve's log lacks the warning with %s:\n%s", want, logs.String())
	}

	contract := fmt.Sprintf("%04d_contract.sql", last.Version+2)
	db.MustExec(`INSERT INTO schema_migrations (version, name, oldest_binary) VALUES ($1, $2, $3)`, last.Version+2, contract, last.Version+1)
	for _, migrate := range []bool{true, false} {
		c := cfg
		c.migrate = migrate
		srv, err := newServer(ctx, c, slog.New(slog.DiscardHandler), time.Now)
		if err == nil {
			srv.Close()
		}
		if err == nil || !strings.Contains(err.Error(), contract) || !strings.Contains(err.Error(), last.Name) {
			t.Errorf("serve (migrate %v) past the floor: %v, want the refusal naming %s and %s", migrate, err, contract, last.Name)
		}
	}
	errOut.Reset()
	if code := run(ctx, []string{"verify", "-database-url", url}, &out, &errOut); code != 1 || !strings.Contains(errOut.String(), "run a newer release") {
		t.Errorf("razao verify past the floor: exit %d\n%s", code, errOut.String())
	}
}
