package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/razao/razao/internal/pgtest"
)

// razao reconcile -file fails with a non-zero exit on what the run
// refuses (an unknown endpoint, a file its header refuses), as the API
// answers them 404 and 400, never an empty run and exit 0.
func TestReconcileCommandFailsOnWhatTheRunRefuses(t *testing.T) {
	_, url := pgtest.NewWithURL(t)
	t.Setenv("RAZAO_TEST_RECONCILE_SECRET", strings.Repeat("s", 40))
	cfg := writeConfig(t, `endpoints:
  - name: hodle
    scheme: hodle
    merchant: loja
    secrets_env: [RAZAO_TEST_RECONCILE_SECRET]
reconciliation:
  - endpoint: hodle
    source: csv
    csv:
      dialect: rfc4180
      psp_id: trackId
      charge_ref: externalId
      kind: type
      paid_values: [DEPOSIT]
      refund_values: [REFUND]
      amount: amount
      amount_unit: reais
      time: date
      refund_id: refundId
`)
	dir := t.TempDir()
	good, bad := filepath.Join(dir, "good.csv"), filepath.Join(dir, "bad.csv")
	if err := os.WriteFile(good, []byte("trackId,externalId,type,amount,date,refundId\nt1,o1,DEPOSIT,10.00,2026-11-30T12:00:00Z,\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, []byte("a,b\n1,2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, endpoint, file, want string
	}{
		{"an endpoint not reconciled", "nope", good, `"nope" (the config's reconciliation section does not name it)`},
		{"a header without the configured columns", "hodle", bad, `"trackId"`},
		{"a csv endpoint without its file", "hodle", "", "give the file with -file"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			args := []string{"reconcile", "-config", cfg, "-database-url", url, "-endpoint", c.endpoint}
			if c.file != "" {
				args = append(args, "-file", c.file)
			}
			code := run(context.Background(), args, &out, &errOut)
			if code == 0 || !strings.Contains(errOut.String(), c.want) {
				t.Fatalf("exit %d, stderr %q, stdout %q; want a non-zero exit naming %s", code, errOut.String(), out.String(), c.want)
			}
		})
	}
	var out, errOut bytes.Buffer
	if code := run(context.Background(), []string{"reconcile", "-config", cfg, "-database-url", url, "-endpoint", "hodle", "-file", good}, &out, &errOut); code != 0 ||
		!strings.Contains(out.String(), "1 lines") {
		t.Fatalf("a good file: exit %d, stdout %q, stderr %q", code, out.String(), errOut.String())
	}
}

// razao reconcile -h lists its own flags, not serve's (-listen, -migrate,
// -behind-proxy did nothing there).
func TestReconcileHelpListsNoServeFlags(t *testing.T) {
	t.Parallel()
	var out, errOut bytes.Buffer
	run(context.Background(), []string{"reconcile", "-h"}, &out, &errOut)
	help := out.String() + errOut.String()
	for _, f := range []string{"-listen", "-migrate", "-behind-proxy"} {
		if strings.Contains(help, f) {
			t.Errorf("reconcile -h lists %s:\n%s", f, help)
		}
	}
	if !strings.Contains(help, "-endpoint") {
		t.Errorf("reconcile -h does not list -endpoint:\n%s", help)
	}
}
