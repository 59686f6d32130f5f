package main

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/razao/razao/internal/pgtest"
)

// With TLS, the admin listener serves TLS too, with the same certificate:
// metrics, health and the profiles there, never on the public listener;
// and no /debug/pprof/cmdline, which would show a -database-url's
// password.
func TestAdminListenerServesMetricsAndProfilesOverTLS(t *testing.T) {
	t.Parallel()
	ca := newTestCA(t, "server CA")
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	writePair(t, certFile, keyFile, ca.serverPair(t, 7))
	addr, log := serveCommand(t, tlsYAML(certFile, keyFile, "1h"))
	_, line := log.waitFor(t, 0, `"msg":"razao listening"`)
	admin := regexp.MustCompile(`"admin_url":"(https://[^"]+)"`).FindStringSubmatch(line)
	if admin == nil {
		t.Fatalf("the listening line names no https admin URL: %s", line)
	}
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.pool()}}}
	get := func(url string) (int, string) {
		t.Helper()
		resp, err := client.Get(url)
		if err != nil {
			t.Fatalf("GET %s: %v", url, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		return resp.StatusCode, string(b)
	}
	for path, want := range map[string]string{
		"/metrics": "razao_inbox_pending", "/readyz": "ready", "/healthz": "ok",
		"/debug/pprof/": "goroutine", "/debug/pprof/heap?debug=1": "heap profile",
	} {
		if code, body := get(admin[1] + path); code != 200 || !strings.Contains(body, want) {
			t.Errorf("admin %s: %d, want 200 with %q", path, code, want)
		}
	}
	if code, _ := get(admin[1] + "/debug/pprof/cmdline"); code != http.StatusNotFound {
		t.Errorf("admin /debug/pprof/cmdline: %d, want 404", code)
	}
	for _, path := range []string{"/metrics", "/debug/pprof/"} {
		if code, _ := get("https://" + addr + path); code != http.StatusNotFound {
			t.Errorf("public %s: %d, want 404", path, code)
		}
	}
	// Plain HTTP to the TLS listener gets Go's 400, never the metrics.
	if resp, err := http.Get(strings.Replace(admin[1], "https://", "http://", 1) + "/metrics"); err == nil {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		resp.Body.Close()
		if strings.Contains(string(b), "razao_") {
			t.Error("the admin listener served metrics in clear text")
		}
	}
}

// SIGTERM's last line says the process stopped cleanly and what it
// leaves: drain time, requests served, the inbox's backlog. With
// admin_listen off there is no admin listener.
func TestServeEndsWithAStoppedCleanlyLine(t *testing.T) {
	t.Parallel()
	_, dbURL := pgtest.NewWithURL(t)
	path := writeConfig(t, "listen: 127.0.0.1:0\nadmin_listen: 'off'\n")
	stdout, stderr := newLogWatch(), newLogWatch()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() { done <- run(ctx, []string{"serve", "-config", path, "-database-url", dbURL}, stdout, stderr) }()
	_, line := stderr.waitFor(t, 0, `"msg":"razao listening"`)
	if !strings.Contains(line, `"admin_url":"off"`) {
		t.Errorf("admin_listen off, but: %s", line)
	}
	base := regexp.MustCompile(`"url":"(http://[^"]+)"`).FindStringSubmatch(line)[1]
	for range 3 {
		if resp, err := http.Get(base + "/healthz"); err == nil {
			resp.Body.Close()
		}
	}
	cancel()
	if code := <-done; code != 0 {
		t.Fatalf("serve exited %d:\n%s", code, stderr)
	}
	lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
	var last map[string]any
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &last); err != nil {
		t.Fatalf("last line %q: %v", lines[len(lines)-1], err)
	}
	if last["msg"] != "razao stopped cleanly" || last["requests_served"] != 3.0 || last["inbox_pending"] != 0.0 || last["drain_ms"] == nil {
		t.Errorf("last line %v, want razao stopped cleanly with 3 requests served and nothing pending", last)
	}
}

// At log_level warn the info lines (listening, requests) are not written.
func TestLogLevelWarnDropsInfoLines(t *testing.T) {
	t.Parallel()
	_, dbURL := pgtest.NewWithURL(t)
	path := writeConfig(t, "listen: 127.0.0.1:0\nadmin_listen: 'off'\nlog_level: warn\nendpoints: [{name: a, scheme: hodle, merchant: m, secrets_env: [RAZAO_TEST_UNSET_SECRET]}]\n")
	stdout, stderr := newLogWatch(), newLogWatch()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() { done <- run(ctx, []string{"serve", "-config", path, "-database-url", dbURL}, stdout, stderr) }()
	// The endpoint without a secret is a warning: written.
	stderr.waitFor(t, 0, `"level":"WARN"`, "has no secret yet")
	cancel()
	if code := <-done; code != 0 {
		t.Fatalf("serve exited %d:\n%s", code, stderr)
	}
	if out := stderr.String(); strings.Contains(out, `"level":"INFO"`) {
		t.Errorf("info lines at log_level warn:\n%s", out)
	}
}
