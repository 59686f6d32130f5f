package main

import (
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/razao/razao/internal/pgtest"
	"github.com/razao/razao/outgoing"
)

// razao webhooks creates an endpoint and prints its secret once; list and
// show never do; rotate prints the new one; disable, enable, replay,
// attempts and delete act on it. A private target is refused unless the
// config allows it, so is plain http, and with secrets_key_env the secret is sealed.
func TestWebhooksCommand(t *testing.T) {
	t.Parallel()
	db, url := pgtest.NewWithURL(t)
	code, out := runCmd(t, "webhooks", "create", "-database-url", url, "-url", "https://127.0.0.1:9/hook")
	if code == 0 || !strings.Contains(out, "not allowed") {
		t.Fatalf("a loopback target: exit %d\n%s", code, out)
	}
	code, out = runCmd(t, "webhooks", "create", "-database-url", url, "-url", "http://app.example/hook")
	if code == 0 || !strings.Contains(out, "must be https") {
		t.Fatalf("a plain http target: exit %d\n%s", code, out)
	}
	dir := t.TempDir()
	cfg := filepath.Join(dir, "razao.yaml")
	os.WriteFile(cfg, []byte("webhooks:\n  allow_private_targets: true\n  allow_http_targets: true\n  secrets_key_env: RAZAO_TEST_WEBHOOKS_KEY_UNSET\n"), 0o600)
	if code, out := runCmd(t, "webhooks", "create", "-database-url", url, "-config", cfg, "-url", "http://127.0.0.1:9/hook"); code == 0 ||
		!strings.Contains(out, "RAZAO_TEST_WEBHOOKS_KEY_UNSET") {
		t.Fatalf("an unset key variable: exit %d\n%s", code, out)
	}
	os.WriteFile(cfg, []byte("webhooks:\n  allow_private_targets: true\n  allow_http_targets: true\n"), 0o600)
	code, out = runCmd(t, "webhooks", "create", "-database-url", url, "-config", cfg, "-url", "http://127.0.0.1:9/hook",
		"-topic", "charge.paid", "-topic", "charge.refunded", "-description", "loja")
	var e outgoing.Endpoint
	if code != 0 || json.Unmarshal([]byte(out), &e) != nil || !strings.HasPrefix(e.Secret, "whsec_") || len(e.Topics) != 2 {
		t.Fatalf("create: exit %d\n%s", code, out)
	}
	id := strconv.FormatInt(e.ID, 10)
	for _, args := range [][]string{{"list"}, {"show", id}} {
		code, out := runCmd(t, append([]string{"webhooks", args[0], "-database-url", url}, args[1:]...)...)
		if code != 0 || strings.Contains(out, "whsec_") || !strings.Contains(out, "127.0.0.1:9") {
			t.Errorf("%v: exit %d\n%s", args, code, out)
		}
	}
	var rotated outgoing.Endpoint
	code, out = runCmd(t, "webhooks", "rotate", "-database-url", url, "-overlap", "2h", id)
	if code != 0 || json.Unmarshal([]byte(out), &rotated) != nil || rotated.Secret == e.Secret || rotated.PreviousSecretUntil == nil {
		t.Fatalf("rotate: exit %d\n%s", code, out)
	}
	for verb, enabled := range map[string]string{"disable": `"enabled":false`, "enable": `"enabled":true`} {
		if code, out := runCmd(t, "webhooks", verb, "-database-url", url, id); code != 0 || !strings.Contains(out, enabled) {
			t.Errorf("%s: exit %d\n%s", verb, code, out)
		}
	}
	if code, out := runCmd(t, "webhooks", "replay", "-database-url", url, "-event", "99999", id); code == 0 || !strings.Contains(out, "event not found") {
		t.Errorf("replay of no event: exit %d\n%s", code, out)
	}
	if code, out := runCmd(t, "webhooks", "replay", "-database-url", url, "-since", "2026-01-01T00:00:00Z", "-until", "2030-01-01T00:00:00Z", id); code != 0 || !strings.Contains(out, `"queued":0`) {
		t.Errorf("replay of a range: exit %d\n%s", code, out)
	}
	if code, out := runCmd(t, "webhooks", "attempts", "-database-url", url, id); code != 0 || strings.TrimSpace(out) != "[]" {
		t.Errorf("attempts: exit %d\n%s", code, out)
	}
	if code, out := runCmd(t, "webhooks", "delete", "-database-url", url, id); code != 0 {
		t.Errorf("delete: exit %d\n%s", code, out)
	}
	if code, _ := runCmd(t, "webhooks", "show", "-database-url", url, id); code == 0 {
		t.Error("show after delete: exit 0")
	}

	// Sealed under a key from the environment: the column holds no secret.
	key := base64.StdEncoding.EncodeToString(make([]byte, 32))
	// Not t.Setenv, which a parallel test may not call: a name of its own.
	os.Setenv("RAZAO_TEST_WEBHOOKS_KEY", key)
	t.Cleanup(func() { os.Unsetenv("RAZAO_TEST_WEBHOOKS_KEY") })
	os.WriteFile(cfg, []byte("webhooks:\n  allow_private_targets: true\n  allow_http_targets: true\n  secrets_key_env: RAZAO_TEST_WEBHOOKS_KEY\n"), 0o600)
	code, out = runCmd(t, "webhooks", "create", "-database-url", url, "-config", cfg, "-url", "http://127.0.0.1:9/hook")
	if code != 0 || json.Unmarshal([]byte(out), &e) != nil {
		t.Fatalf("create sealed: exit %d\n%s", code, out)
	}
	var stored []byte
	if err := db.Get(&stored, `SELECT secret FROM webhook_endpoints WHERE id = $1`, e.ID); err != nil || len(stored) == 0 || stored[0] != 1 ||
		strings.Contains(string(stored), strings.TrimPrefix(e.Secret, "whsec_")) {
		t.Errorf("stored secret not sealed (%v)", err)
	}
}
