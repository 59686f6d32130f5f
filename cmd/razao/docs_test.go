package main

// The documentation's tests: every shell block of README.md and docs/*.md
// runs as a person would paste it, and every relative link and #anchor
// between them resolves.
//
// How the shell blocks run (TestDocsShellBlocksRun):
//
//   - A fenced block tagged sh, bash, shell or console runs, unless the
//     line right before its fence is
//     <!-- not run by the docs test: REASON -->
//     (make run, which never returns; make test itself; steps for a real
//     server). The reason is required.
//   - The blocks are pasted where README says: at the project's root with
//     `make run` going. The test builds that place in a temporary
//     directory: bin/razao (this test binary, which acts as razao when it
//     is called by that name, so nothing is compiled again), scripts/
//     dev.yaml and scripts/dev-secrets.sh copied from the project, the
//     development secrets that script writes, an admin token in
//     .dev/api-token and .dev/env as scripts/run.sh writes them, and
//     `bin/razao serve` running on a database of its own, as run.sh ends.
//   - Each document's blocks run in order in one bash session of their
//     own, so a block may use what an earlier block of the same document
//     set (a variable, a file); every document starts from a clean
//     environment and sources .dev/env itself, as a reader in a new
//     terminal would. README runs first, then docs/ in name order, all on
//     one service.
//   - The service listens on a free port rather than 8080, which
//     something else on the machine may hold: 127.0.0.1:8080 and
//     localhost:8080 in a block are replaced by its address (RAZAO_URL in
//     .dev/env says the same to razao psp send, as run.sh writes it when
//     RAZAO_LISTEN moves the service).
//   - A session runs under `set -eo pipefail`, and curl reads a .curlrc
//     with --fail-with-body: a command that fails, or an HTTP error,
//     fails the block, which a person would see on the screen.

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode"

	"github.com/razao/razao/internal/pgtest"
)

// docBlock is one fenced block of a document.
type docBlock struct {
	file   string // relative to the project's root
	line   int    // of its opening fence
	lang   string
	text   string // dedented to its fence
	notRun string // the marker's reason; "" for a block that runs
	marked bool   // a marker precedes the fence
}

var (
	fenceLine  = regexp.MustCompile("^(\\s*)(```+)\\s*([A-Za-z0-9_-]*)\\s*$")
	notRunLine = regexp.MustCompile(`^\s*<!--\s*not run by the docs test:(.*?)-->\s*$`)
	shellLangs = []string{"sh", "bash", "shell", "console"}
)

// docFiles lists README.md and docs/*.md, README first.
func docFiles(t *testing.T, root string) []string {
	t.Helper()
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	files := []string{"README.md"}
	for _, d := range docs {
		rel, _ := filepath.Rel(root, d)
		files = append(files, rel)
	}
	slices.Sort(files[1:])
	return files
}

// parseBlocks returns the fenced blocks of a Markdown document, and its
// lines outside them.
func parseBlocks(file, text string) (blocks []docBlock, prose map[int]string) {
	prose = map[int]string{}
	lines := strings.Split(text, "\n")
	var open *docBlock
	var indent, ticks string
	var body []string
	for i, l := range lines {
		n := i + 1
		if open != nil {
			if m := fenceLine.FindStringSubmatch(l); m != nil && m[2] == ticks && m[3] == "" {
				open.text = strings.Join(body, "\n") + "\n"
				blocks = append(blocks, *open)
				open = nil
				continue
			}
			body = append(body, strings.TrimPrefix(l, indent))
			continue
		}
		m := fenceLine.FindStringSubmatch(l)
		if m == nil {
			prose[n] = l
			continue
		}
		open = &docBlock{file: file, line: n, lang: m[3]}
		indent, ticks, body = m[1], m[2], nil
		for j := i - 1; j >= 0; j-- {
			if strings.TrimSpace(lines[j]) == "" {
				continue
			}
			if mm := notRunLine.FindStringSubmatch(lines[j]); mm != nil {
				open.marked = true
				open.notRun = strings.TrimSpace(mm[1])
			}
			break
		}
	}
	return blocks, prose
}

// TestDocsShellBlocksRun runs every shell block of README.md and docs/*.md
// (see the top of this file for how).
func TestDocsShellBlocksRun(t *testing.T) {
	t.Parallel()
	project := pgtest.ProjectRoot()
	var sessions [][]docBlock
	ran, skipped := 0, 0
	for _, f := range docFiles(t, project) {
		raw, err := os.ReadFile(filepath.Join(project, f))
		if err != nil {
			t.Fatal(err)
		}
		blocks, prose := parseBlocks(f, string(raw))
		var session []docBlock
		for _, b := range blocks {
			shell := slices.Contains(shellLangs, b.lang)
			switch {
			case b.marked && !shell:
				t.Errorf("%s:%d: a not-run marker before a %q block, which never runs anyway", b.file, b.line, b.lang)
			case b.marked && b.notRun == "":
				t.Errorf("%s:%d: a not-run marker without its reason", b.file, b.line)
			case b.marked:
				skipped++
			case shell:
				session = append(session, b)
				ran++
			}
		}
		// A marker must sit right before a fence: one anywhere else
		// marks nothing.
		for n, l := range prose {
			if notRunLine.MatchString(l) && !slices.ContainsFunc(blocks, func(b docBlock) bool { return b.marked && b.line > n && b.line-n <= 2 }) {
				t.Errorf("%s:%d: a not-run marker that no fence follows", f, n)
			}
		}
		if len(session) > 0 {
			sessions = append(sessions, session)
		}
	}
	if t.Failed() {
		return
	}
	t.Logf("%d shell blocks run, %d marked not run", ran, skipped)

	root, base := startDocsService(t, project)
	addr := strings.TrimPrefix(base, "http://")
	for _, session := range sessions {
		file := session[0].file
		var script strings.Builder
		script.WriteString("set -eo pipefail\n")
		for _, b := range session {
			text := strings.NewReplacer("127.0.0.1:8080", addr, "localhost:8080", addr).Replace(b.text)
			fmt.Fprintf(&script, "printf '\\n### %s:%d\\n'\n%s", b.file, b.line, text)
		}
		out, err := runSession(t, root, script.String())
		if err != nil {
			t.Errorf("%s: the shell blocks failed (%v); the last ### line names the block:\n%s", file, err, out)
			continue
		}
		t.Logf("%s: %d blocks ran", file, len(session))
		if testing.Verbose() {
			t.Logf("%s printed:\n%s", file, out)
		}
		if file == "README.md" {
			// The first payment shows its refund applied.
			for _, want := range []string{`"state":"partially_refunded"`, `"refunded_amount":1000`} {
				if !strings.Contains(out, want) {
					t.Errorf("README's first payment does not show %s:\n%s", want, out)
				}
			}
		}
	}
	// What the blocks did left the ledger whole.
	if out, err := runSession(t, root, "source .dev/env\nbin/razao verify\n"); err != nil {
		t.Errorf("razao verify after the docs' blocks: %v\n%s", err, out)
	}
}

// noRaceExitSleep spares each bin/razao the second a binary built with
// -race sleeps before it exits (GORACE's atexit_sleep_ms), which the
// blocks' few dozen commands would add up; it changes nothing else.
const noRaceExitSleep = "GORACE=atexit_sleep_ms=0"

// runSession runs script with bash at root, in a clean environment, and
// returns what it printed.
func runSession(t *testing.T, root, script string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "--noprofile", "--norc", "-s")
	cmd.Dir = root
	cmd.WaitDelay = 10 * time.Second // a command a killed bash left behind cannot hold its output open
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + root, "LANG=C.UTF-8", "TERM=dumb", "TZ=UTC", noRaceExitSleep}
	cmd.Stdin = strings.NewReader(script)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// startDocsService prepares, in a temporary directory, what `make run`
// leaves at the project's root, and serves; it returns that directory and
// the service's base URL.
func startDocsService(t *testing.T, project string) (root, base string) {
	t.Helper()
	root = t.TempDir()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{"bin", "scripts", ".dev"} {
		if err := os.MkdirAll(filepath.Join(root, dir), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(self, filepath.Join(root, "bin", "razao")); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"dev.yaml", "dev-secrets.sh"} {
		b, err := os.ReadFile(filepath.Join(project, "scripts", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, "scripts", f), b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// curl fails on an HTTP error, printing the problem it got.
	if err := os.WriteFile(filepath.Join(root, ".curlrc"), []byte("--fail-with-body\n--max-time 60\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	secretsFile, err := exec.Command("bash", filepath.Join(root, "scripts", "dev-secrets.sh")).Output()
	if err != nil {
		t.Fatalf("dev-secrets.sh: %v", err)
	}
	secrets := readEnvFile(t, strings.TrimSpace(string(secretsFile)))

	_, dbURL := pgtest.NewWithURL(t)
	port, err := pgtest.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	listen := fmt.Sprintf("127.0.0.1:%d", port)
	base = "http://" + listen
	config := filepath.Join(root, "scripts", "dev.yaml")
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + root, "DATABASE_URL=" + dbURL, "RAZAO_CONFIG=" + config,
		"RAZAO_LISTEN=" + listen, "RAZAO_ADMIN_LISTEN=127.0.0.1:0", noRaceExitSleep,
		"RAZAO_ALLOW_ROOT=1"} // as run.sh serves: tests and CI run as root
	for k, v := range secrets {
		env = append(env, k+"="+v)
	}
	razao := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(filepath.Join(root, "bin", "razao"), args...)
		cmd.Dir, cmd.Env = root, env
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("razao %v: %v\n%s", args, err, stderr.String())
		}
		return strings.TrimSpace(string(out))
	}
	razao("migrate")
	token := razao("token", "create", "-name", "make run (docs test)", "-scope", "admin")
	if err := os.WriteFile(filepath.Join(root, ".dev", "api-token"), []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// .dev/env as scripts/run.sh writes it.
	var dotEnv strings.Builder
	dotEnv.WriteString("# Written by make run: in another terminal, source .dev/env\n")
	fmt.Fprintf(&dotEnv, "export RAZAO_CONFIG=%s\nexport RAZAO_API_TOKEN=%s\n", config, token)
	for k, v := range secrets {
		fmt.Fprintf(&dotEnv, "export %s=%s\n", k, v)
	}
	fmt.Fprintf(&dotEnv, "export DATABASE_URL=%s\nexport RAZAO_URL=%s\n", dbURL, base)
	if err := os.WriteFile(filepath.Join(root, ".dev", "env"), []byte(dotEnv.String()), 0o600); err != nil {
		t.Fatal(err)
	}

	serve := exec.Command(filepath.Join(root, "bin", "razao"), "serve")
	serve.Dir, serve.Env = root, env
	var log syncBuffer
	serve.Stdout, serve.Stderr = &log, &log
	if err := serve.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- serve.Wait() }()
	t.Cleanup(func() {
		serve.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-exited:
			if err != nil {
				t.Errorf("razao serve: %v\n%s", err, log.String())
			}
		case <-time.After(60 * time.Second):
			serve.Process.Kill()
			t.Errorf("razao serve did not stop on SIGTERM\n%s", log.String())
		}
		if t.Failed() {
			t.Logf("razao serve's log:\n%s", log.String())
		}
	})
	deadline := time.Now().Add(2 * time.Minute)
	for {
		resp, err := http.Get(base + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return root, base
			}
		}
		select {
		case err := <-exited:
			t.Fatalf("razao serve exited: %v\n%s", err, log.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("razao serve not ready at %s after 2 minutes\n%s", base, log.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// readEnvFile reads NAME=value lines.
func readEnvFile(t *testing.T, path string) map[string]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	vars := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), "="); ok {
			vars[k] = v
		}
	}
	return vars
}

// headingSlugs returns the anchors GitHub gives a document's headings.
func headingSlugs(prose map[int]string) (slugs map[string]bool, h2 []string) {
	slugs = map[string]bool{}
	seen := map[string]int{}
	lines := make([]int, 0, len(prose))
	for n := range prose {
		lines = append(lines, n)
	}
	slices.Sort(lines)
	heading := regexp.MustCompile(`^(#{1,6})\s+(.*?)\s*#*\s*$`)
	for _, n := range lines {
		m := heading.FindStringSubmatch(prose[n])
		if m == nil {
			continue
		}
		s := githubSlug(m[2])
		if k := seen[s]; k > 0 {
			seen[s]++
			s = fmt.Sprintf("%s-%d", s, k)
		} else {
			seen[s] = 1
		}
		slugs[s] = true
		if m[1] == "##" {
			h2 = append(h2, s)
		}
	}
	return slugs, h2
}

// githubSlug is GitHub's anchor for a heading (github-slugger): lower
// case, every character but letters, marks, digits, connector
// punctuation (_), spaces and hyphens removed, each space a hyphen.
func githubSlug(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case unicode.IsLetter(r), unicode.IsMark(r), unicode.IsNumber(r), unicode.In(r, unicode.Pc), r == '-':
			b.WriteRune(r)
		case r == ' ':
			b.WriteRune('-')
		}
	}
	return b.String()
}

var (
	mdLink     = regexp.MustCompile(`\]\(([^()\s]+)\)`)
	inlineCode = regexp.MustCompile("`[^`]*`")
)

// TestDocsLinksResolve holds README.md and docs/*.md to their links: every
// relative link names a file that exists and every #anchor a heading of
// its document; each document of docs/ lists its ## headings (its table
// of contents), and README links every one of them.
func TestDocsLinksResolve(t *testing.T) {
	t.Parallel()
	project := pgtest.ProjectRoot()
	files := docFiles(t, project)
	slugs := map[string]map[string]bool{}
	prose := map[string]map[int]string{}
	h2 := map[string][]string{}
	for _, f := range files {
		raw, err := os.ReadFile(filepath.Join(project, f))
		if err != nil {
			t.Fatal(err)
		}
		_, prose[f] = parseBlocks(f, string(raw))
		slugs[f], h2[f] = headingSlugs(prose[f])
	}
	linked := map[string]map[string]bool{} // file → targets it links, as file#anchor
	for _, f := range files {
		linked[f] = map[string]bool{}
		for n, l := range prose[f] {
			for _, m := range mdLink.FindAllStringSubmatch(inlineCode.ReplaceAllString(l, ""), -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				path, anchor, _ := strings.Cut(target, "#")
				dest := f
				if path != "" {
					dest = filepath.ToSlash(filepath.Clean(filepath.Join(filepath.Dir(f), path)))
					if _, err := os.Stat(filepath.Join(project, dest)); err != nil {
						t.Errorf("%s:%d: link to %s: no such file", f, n, target)
						continue
					}
				}
				linked[f][dest+"#"+anchor] = true
				if anchor == "" {
					continue
				}
				if s, ok := slugs[dest]; !ok {
					t.Errorf("%s:%d: link to %s: an anchor in a file that is not README.md or docs/*.md", f, n, target)
				} else if !s[anchor] {
					t.Errorf("%s:%d: link to %s: %s has no heading with that anchor", f, n, target, dest)
				}
			}
		}
	}
	for _, f := range files[1:] {
		if !linked["README.md"][f+"#"] {
			t.Errorf("README.md does not link %s (its map of the docs)", f)
		}
		for _, s := range h2[f] {
			if !linked[f][f+"#"+s] {
				t.Errorf("%s: its table of contents lacks ## %s (link it as (#%s))", f, s, s)
			}
		}
		if len(h2[f]) == 0 {
			t.Errorf("%s has no ## headings", f)
		}
	}
}
