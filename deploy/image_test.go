package deploy_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/razao/razao/internal/pgtest"
)

// The image as an operator runs it, on the test PostgreSQL (host
// network): built by scripts/image.sh, it holds no shell and runs as
// 65532; it migrates an empty database, creates a token, serves, passes
// its own health check, books one delivery signed by its own razao psp
// send, drains on SIGTERM, and razao verify finds the ledger clean. Run
// as root (--user 0), serve refuses.
func TestImageMigratesServesAndBooks(t *testing.T) {
	root := pgtest.ProjectRoot()
	conf := filepath.Join(root, "deploy", "containers.conf")
	if _, err := exec.LookPath("podman"); err != nil {
		t.Fatalf("podman not found (Debian packages podman and runc; .ci/run installs them): %v", err)
	}
	suffix := randomHex(t, 4)
	tag := "localhost/razao:test-" + suffix
	podman := func(args ...string) (string, error) {
		t.Helper()
		cmd := exec.Command("podman", args...)
		cmd.Env = append(os.Environ(), "CONTAINERS_CONF="+conf)
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		if args[0] == "logs" { // the service logs to stderr
			cmd.Stderr = &out
		}
		if err := cmd.Run(); err != nil {
			return out.String() + errOut.String(), fmt.Errorf("podman %s: %w", args[0], err)
		}
		return out.String(), nil
	}
	build := exec.Command("bash", "scripts/image.sh", tag)
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("scripts/image.sh: %v\n%s", err, out)
	}
	t.Cleanup(func() { podman("rmi", "--force", tag) })

	// What the image is: a non-root user, a health check, no shell.
	out, err := podman("image", "inspect", tag, "--format", "{{.Config.User}}|{{json .Config.Entrypoint}}|{{json .Config.Healthcheck.Test}}")
	if err != nil || strings.TrimSpace(out) != `65532:65532|["/usr/local/bin/razao"]|["CMD","/usr/local/bin/razao","health"]` {
		t.Fatalf("image config: %v %q", err, out)
	}
	if out, err := podman("run", "--rm", "--network=host", "--entrypoint", "/bin/sh", tag, "-c", "true"); err == nil {
		t.Fatalf("the image has a shell: %s", out)
	}
	// Run as root anyway (--user 0), serve refuses at start, before it
	// looks for a database: the image never sets RAZAO_ALLOW_ROOT.
	if out, err := podman("image", "inspect", tag, "--format", "{{json .Config.Env}}"); err != nil || strings.Contains(out, "RAZAO_ALLOW_ROOT") {
		t.Fatalf("the image's environment: %v %s; want no RAZAO_ALLOW_ROOT", err, out)
	}
	if out, err := podman("run", "--rm", "--network=host", "--user", "0", tag, "serve", "-admin-listen", "off"); err == nil ||
		!strings.Contains(out, "refusing to serve as root (effective uid 0)") {
		t.Fatalf("serve as --user 0: %v\n%s\nwant the refusal", err, out)
	}

	dbURL := emptyDatabase(t, "razao_image_"+suffix)
	port, adminPort := freePort(t), freePort(t)
	dir := t.TempDir()
	secret := "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	config := fmt.Sprintf("listen: 127.0.0.1:%d\nendpoints:\n  - name: psp\n    scheme: standard\n    merchant: loja\n    secrets_env: [RAZAO_IMAGE_SECRET]\n", port)
	if err := os.WriteFile(filepath.Join(dir, "razao.yaml"), []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	env := []string{"-e", "DATABASE_URL=" + dbURL, "-e", "RAZAO_CONFIG=/etc/razao/razao.yaml", "-e", "RAZAO_IMAGE_SECRET=" + secret,
		"-e", "RAZAO_HEALTH_URL=" + base + "/readyz", "-e", "RAZAO_URL=" + base, "-v", dir + ":/etc/razao:ro",
		"-e", fmt.Sprintf("RAZAO_ADMIN_LISTEN=127.0.0.1:%d", adminPort)}
	razao := func(args ...string) (string, error) {
		return podman(append(append([]string{"run", "--rm", "--network=host"}, env...), append([]string{tag}, args...)...)...)
	}
	if out, err := razao("migrate"); err != nil {
		t.Fatalf("migrate: %v\n%s", err, out)
	}
	out, err = razao("token", "create", "-name", "image-test", "-scope", "read,write")
	token := lastWord(out)
	if err != nil || !strings.HasPrefix(token, "rz_") {
		t.Fatalf("token create: %v\n%s", err, out)
	}

	name := "razao-test-" + suffix
	if out, err := podman(append(append([]string{"run", "-d", "--name", name, "--network=host"}, env...), tag, "serve", "-migrate=false")...); err != nil {
		t.Fatalf("serve: %v\n%s", err, out)
	}
	t.Cleanup(func() { podman("rm", "--force", name) })
	waitHealthy(t, podman, name)

	if code, body := post(t, base+"/v1/charges", token, `{"id":"img-1","amount":4990}`); code != http.StatusCreated {
		t.Fatalf("register the charge: %d %s", code, body)
	}
	if out, err := razao("psp", "send", "-endpoint", "psp", "paid", "img-1", "-amount", "4990"); err != nil {
		t.Fatalf("psp send: %v\n%s", err, out)
	}
	waitPaid(t, base, token, "img-1")
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", adminPort))
	if err != nil {
		t.Fatalf("admin /metrics: %v", err)
	}
	scrape, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	if want := `razao_webhook_deliveries_total{endpoint="psp",outcome="accepted"} 1`; !strings.Contains(string(scrape), want) {
		t.Errorf("admin /metrics lacks %s", want)
	}

	if out, err := podman("stop", "--time", "30", name); err != nil {
		t.Fatalf("stop: %v\n%s", err, out)
	}
	logs, _ := podman("logs", name)
	if st, _ := podman("inspect", name, "--format", "{{.State.ExitCode}}"); strings.TrimSpace(st) != "0" {
		t.Fatalf("serve exited %s on SIGTERM\n%s", st, logs)
	}
	if !strings.Contains(logs, `"msg":"razao stopped cleanly"`) {
		t.Errorf("no clean stop in the log:\n%s", logs)
	}
	if strings.Contains(logs, secret) || strings.Contains(logs, token) {
		t.Fatal("a secret is in the container's log")
	}
	if out, err := razao("verify"); err != nil {
		t.Fatalf("verify: %v\n%s", err, out)
	}
}

// emptyDatabase creates a database with nothing in it, dropped at the end.
func emptyDatabase(t *testing.T, name string) string {
	t.Helper()
	server := pgtest.ServerURL(t)
	admin, err := sqlx.Open("postgres", server)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	if _, err := admin.Exec(`CREATE DATABASE ` + pq.QuoteIdentifier(name)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if drop, err := sqlx.Open("postgres", server); err == nil {
			drop.Exec(`DROP DATABASE IF EXISTS ` + pq.QuoteIdentifier(name) + ` WITH (FORCE)`)
			drop.Close()
		}
	})
	return pgtest.WithDatabase(server, name)
}

// waitHealthy runs the image's own health check until it passes: its
// command is razao health, which podman runs inside the container.
// Bounded, not timed: what is checked is that it passes.
func waitHealthy(t *testing.T, podman func(...string) (string, error), name string) {
	t.Helper()
	var out string
	for range 120 {
		var err error
		if out, err = podman("healthcheck", "run", name); err == nil {
			return
		}
		time.Sleep(500 * time.Millisecond)
	}
	logs, _ := podman("logs", name)
	t.Fatalf("never healthy: %s\n%s", out, logs)
}

func waitPaid(t *testing.T, base, token, id string) {
	t.Helper()
	var state string
	for range 200 {
		req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, base+"/v1/charges/"+id, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			var c struct {
				State string `json:"state"`
			}
			json.NewDecoder(resp.Body).Decode(&c)
			resp.Body.Close()
			if state = c.State; state == "paid" {
				return
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("charge %s is %q, never paid", id, state)
}

func post(t *testing.T, url, token, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequestWithContext(context.Background(), http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	b.ReadFrom(resp.Body)
	return resp.StatusCode, b.String()
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func lastWord(s string) string {
	f := strings.Fields(s)
	if len(f) == 0 {
		return ""
	}
	return f[len(f)-1]
}

func randomHex(t *testing.T, n int) string {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}
