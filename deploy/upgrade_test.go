package deploy_test

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/razao/razao/internal/pgtest"
)

// previousRelease is the release this one replaces: the last commit CI
// landed before it. A release moves it to the commit it replaces, so the
// test below always tries the upgrade an operator makes.
const previousRelease = "c0bde22ba626b3ce902a6452e35e8df12174c7e4"

// A rolling upgrade as docs/operations.md's policy ("Upgrades")
// describes it: the previous release serves; this release's migrations
// are applied under it; this release
// starts beside it on the same database; deliveries go to both, a refund
// of a payment one booked goes to the other; every delivery answered 2xx
// is booked once, both stop cleanly, and this release's verify is clean.
// It fails when a migration breaks what the previous release does.
func TestRollingUpgradeFromThePreviousRelease(t *testing.T) {
	t.Parallel()
	root := pgtest.ProjectRoot()
	work := t.TempDir()
	oldBin, newBin := filepath.Join(work, "razao-old"), filepath.Join(work, "razao-new")
	oldTree := filepath.Join(work, "old")
	os.Mkdir(oldTree, 0o755)
	if exec.Command("git", "-C", root, "cat-file", "-e", previousRelease+"^{commit}").Run() != nil {
		// A shallow clone lacks it: fetch that one commit from where the
		// clone came from (the failure below says so if that fails too).
		exec.Command("git", "-C", root, "fetch", "--quiet", "--depth=1", "origin", previousRelease).Run()
	}
	export := exec.Command("bash", "-c", fmt.Sprintf("set -o pipefail; git -C %q archive %s | tar -x -C %q", root, previousRelease, oldTree))
	if out, err := export.CombinedOutput(); err != nil {
		t.Fatalf("the previous release %s is not in this clone's history: %v\n%s", previousRelease, err, out)
	}
	build(t, oldTree, oldBin)
	build(t, root, newBin)

	dbURL := emptyDatabase(t, "razao_upgrade_"+randomHex(t, 4))
	dir := t.TempDir()
	config := filepath.Join(dir, "razao.yaml")
	os.WriteFile(config, []byte("listen: 127.0.0.1:0\nendpoints:\n  - name: psp\n    scheme: standard\n    merchant: loja\n    secrets_env: [RAZAO_UPGRADE_SECRET]\n"), 0o644)
	env := append(os.Environ(), "DATABASE_URL="+dbURL, "RAZAO_CONFIG="+config, "RAZAO_UPGRADE_SECRET=whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
		"RAZAO_ADMIN_LISTEN=127.0.0.1:0",
		// This release refuses to serve as root, as tests run; the
		// previous one ignores the variable.
		"RAZAO_ALLOW_ROOT=1")
	razao := func(bin string, args ...string) string {
		t.Helper()
		cmd := exec.Command(bin, args...)
		cmd.Env = env
		out, err := cmd.Output()
		if err != nil {
			var stderr []byte
			if ee, ok := err.(*exec.ExitError); ok {
				stderr = ee.Stderr
			}
			t.Fatalf("%s %v: %v\n%s%s", filepath.Base(bin), args, err, out, stderr)
		}
		return string(out)
	}

	razao(oldBin, "migrate")
	token := strings.TrimSpace(razao(oldBin, "token", "create", "-name", "upgrade", "-scope", "admin"))
	old := serve(t, oldBin, env)
	pay := func(base, id string, amount int) {
		t.Helper()
		if code, body := post(t, base+"/v1/charges", token, fmt.Sprintf(`{"id":%q,"amount":%d}`, id, amount)); code != 201 {
			t.Fatalf("register %s at %s: %d %s", id, base, code, body)
		}
		razao(newBin, "psp", "send", "-endpoint", "psp", "-url", base, "paid", id, "-amount", fmt.Sprint(amount))
	}
	pay(old.base, "before-0", 1000)

	// This release's migrations, under the previous release serving.
	razao(newBin, "migrate")
	pay(old.base, "during-0", 1100)
	cur := serve(t, newBin, env)
	for i := range 6 {
		pay(old.base, fmt.Sprintf("old-%d", i), 2000+i)
		pay(cur.base, fmt.Sprintf("new-%d", i), 3000+i)
	}
	// A refund of a payment the other release booked, each way.
	razao(newBin, "psp", "send", "-endpoint", "psp", "-url", cur.base, "refunded", "old-0", "-amount", "500", "-refund-id", "rf-old-0")
	razao(newBin, "psp", "send", "-endpoint", "psp", "-url", old.base, "refunded", "new-0", "-amount", "700", "-refund-id", "rf-new-0")

	for _, id := range []string{"before-0", "during-0", "old-1", "old-5", "new-1", "new-5"} {
		waitPaid(t, cur.base, token, id)
	}
	// Every delivery was answered 2xx, so each is booked once, whichever
	// release took it: wait for the last of them (a posting refused while
	// the migrations ran is retried by its worker) before stopping both,
	// then check that none was booked twice.
	counted := func() string {
		return strings.TrimSpace(psql(t, dbURL, `SELECT count(*) FILTER (WHERE kind = 'sale') || ' ' || count(*) FILTER (WHERE kind = 'refund') FROM posting_sets`))
	}
	counts := counted()
	for deadline := time.Now().Add(time.Minute); counts != "14 2" && time.Now().Before(deadline); counts = counted() {
		time.Sleep(200 * time.Millisecond)
	}
	for _, s := range []*served{old, cur} {
		s.stop(t)
	}
	razao(newBin, "verify") // fails the test on a breach (exit 3)
	if counts = counted(); counts != "14 2" {
		t.Fatalf("sales and refunds booked: %s, want 14 2 (every delivery answered, once)", counts)
	}
}

// build compiles razao from the tree at dir into out, statically, as the
// image does (so the two share a build cache).
func build(t *testing.T, dir, out string) {
	t.Helper()
	cmd := exec.Command("go", "build", "-trimpath", "-buildvcs=false", "-o", out, "./cmd/razao")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build %s: %v\n%s", dir, err, b)
	}
}

// served is a razao serve process.
type served struct {
	cmd  *exec.Cmd
	base string
	done chan error
	log  *strings.Builder
}

// serve starts bin serve -migrate=false and waits for its listening line.
func serve(t *testing.T, bin string, env []string) *served {
	t.Helper()
	cmd := exec.Command(bin, "serve", "-migrate=false")
	cmd.Env = env
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &served{cmd: cmd, done: make(chan error, 1), log: &strings.Builder{}}
	t.Cleanup(func() { cmd.Process.Kill() })
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			s.log.WriteString(line + "\n")
			if m := regexp.MustCompile(`"msg":"razao listening".*?"url":"(http://[^"]+)"`).FindStringSubmatch(line); m != nil {
				found <- m[1]
			}
		}
		io.Copy(io.Discard, stderr)
		s.done <- cmd.Wait()
	}()
	select {
	case s.base = <-found:
	case err := <-s.done:
		t.Fatalf("%s serve exited: %v", filepath.Base(bin), err)
	case <-time.After(time.Minute):
		t.Fatalf("%s serve did not say it listens", filepath.Base(bin))
	}
	return s
}

// stop sends SIGTERM and waits for a clean exit.
func (s *served) stop(t *testing.T) {
	t.Helper()
	s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-s.done:
		if err != nil {
			t.Fatalf("serve at %s: %v on SIGTERM", s.base, err)
		}
	case <-time.After(time.Minute):
		t.Fatalf("serve at %s did not stop on SIGTERM", s.base)
	}
}

func psql(t *testing.T, url, query string) string {
	t.Helper()
	out, err := exec.Command("psql", "-X", "-At", "-v", "ON_ERROR_STOP=1", url, "-c", query).CombinedOutput()
	if err != nil {
		t.Fatalf("psql: %v\n%s", err, out)
	}
	return string(out)
}
