// Package browsertest drives Debian's chromium, headless, through
// chromedp, for the finance console's browser tests (console/ and
// cmd/razao). Without Chromium a test fails, never skips: CI must prove
// the console works in a browser (.ci/run installs chromium when missing).
package browsertest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// ChromiumPath finds the browser: $RAZAO_CHROMIUM, else chromium on PATH.
func ChromiumPath(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("RAZAO_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatal("Chromium is not installed, and the console's browser tests need it: apt-get install -y chromium " +
		"(.ci/run installs it when missing), or set RAZAO_CHROMIUM to a Chromium binary")
	return ""
}

// ScreenshotDir is where a test saves its screenshots: dir (relative to
// the test's package), or $RAZAO_TEST_OUTPUT/dir when that is set.
func ScreenshotDir(t *testing.T, dir string) string {
	t.Helper()
	if base := os.Getenv("RAZAO_TEST_OUTPUT"); base != "" {
		dir = filepath.Join(base, dir)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// Browser is one headless Chromium with its own profile (cookies), and the
// console messages its pages wrote.
type Browser struct {
	t    *testing.T
	ctx  context.Context
	base string
	dir  string

	mu       sync.Mutex
	messages []chromedp.ConsoleMessage
}

// New starts a headless Chromium for pages under base (the test server's
// URL), saving screenshots in ScreenshotDir(t, dir). It is stopped when
// the test ends, before the test's earlier cleanups (a server's Close).
func New(t *testing.T, base, dir string) *Browser {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(ChromiumPath(t)),
		chromedp.NoSandbox, // CI runs as root
		chromedp.WindowSize(1280, 900),
		chromedp.Flag("lang", "pt-BR"),
	)
	// Bounds the whole test if the browser hangs; no step is timed.
	bound, cancelBound := context.WithTimeout(context.Background(), 4*time.Minute)
	alloc, cancelAlloc := chromedp.NewExecAllocator(bound, opts...)
	ctx, cancel := chromedp.NewContext(alloc)
	t.Cleanup(func() { cancel(); cancelAlloc(); cancelBound() })
	b := &Browser{t: t, ctx: ctx, base: base, dir: ScreenshotDir(t, dir)}
	if err := chromedp.Do(ctx); err != nil { // starts the browser
		t.Fatalf("start chromium: %v", err)
	}
	messages := chromedp.Console(ctx)
	go func() {
		for m, err := range messages {
			if err != nil {
				return
			}
			b.mu.Lock()
			b.messages = append(b.messages, m)
			b.mu.Unlock()
		}
	}()
	return b
}

// Do runs steps, failing the test with what on an error.
func (b *Browser) Do(what string, steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	start := time.Now()
	if err := chromedp.Do(b.ctx, steps...); err != nil {
		b.t.Fatalf("%s: %v", what, err)
	}
	b.t.Logf("%s: %s", what, time.Since(start).Round(time.Millisecond))
}

// Text is the text of the element sel (CSS) selects.
func (b *Browser) Text(sel string) string {
	b.t.Helper()
	s, err := chromedp.Run(b.ctx, chromedp.Text(chromedp.CSS(sel)))
	if err != nil {
		b.t.Fatalf("text of %s: %v", sel, err)
	}
	return strings.TrimSpace(s)
}

// Eval evaluates a JavaScript expression in the page.
func (b *Browser) Eval(expr string) any {
	b.t.Helper()
	v, err := chromedp.Run(b.ctx, chromedp.Evaluate[any](expr))
	if err != nil {
		b.t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

// Location is the page's URL without the server's base.
func (b *Browser) Location() string {
	b.t.Helper()
	loc, err := chromedp.Run(b.ctx, chromedp.Location())
	if err != nil {
		b.t.Fatal(err)
	}
	return strings.TrimPrefix(loc, b.base)
}

// Screenshot saves the whole page as NAME.png.
func (b *Browser) Screenshot(name string) {
	b.t.Helper()
	png, err := chromedp.Run(b.ctx, chromedp.FullScreenshot(100))
	if err != nil {
		b.t.Fatalf("screenshot %s: %v", name, err)
	}
	if err := os.WriteFile(filepath.Join(b.dir, name+".png"), png, 0o644); err != nil {
		b.t.Fatal(err)
	}
}

// NoConsoleErrors fails the test for any error or exception the pages
// wrote (a CSP violation is one), except those allowed by accept.
func (b *Browser) NoConsoleErrors(accept func(chromedp.ConsoleMessage) bool) {
	b.t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, m := range b.messages {
		if (m.Type == chromedp.ConsoleError || m.IsException()) && (accept == nil || !accept(m)) {
			b.t.Errorf("console: %s (%s)", m, m.URL)
		}
	}
	b.messages = nil
}

// SignIn signs in to the finance console with an API token.
func (b *Browser) SignIn(token string) {
	b.t.Helper()
	b.Do("open the console", chromedp.Navigate(b.base+"/console/"), chromedp.WaitVisible(chromedp.ID("token")))
	if loc := b.Location(); loc != "/console/login" {
		b.t.Fatalf("without a session the console is at %s, want the sign-in page", loc)
	}
	b.Do("sign in", chromedp.SendKeys(chromedp.ID("token"), token), chromedp.Submit(chromedp.ID("token")),
		chromedp.WaitVisible(chromedp.CSS("form.who")))
}

// Poll waits until the expression is true in the page.
func Poll(expr string) chromedp.Action[chromedp.Void] {
	return func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
		_, err := chromedp.Poll[bool](expr)(ctx, t)
		return chromedp.Void{}, err
	}
}

// axeScript is axe-core's browser build, which `npm ci` installs under
// testdata (package.json pins its version); $RAZAO_AXE overrides it.
func axeScript() string {
	if p := os.Getenv("RAZAO_AXE"); p != "" {
		return p
	}
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "testdata", "node_modules", "axe-core", "axe.min.js")
}

// axeRun runs axe-core on the whole document for the WCAG 2.x A and AA
// rules and best practices, and returns its violations, one per element.
const axeRun = `axe.run(document, {
  runOnly: {type: "tag", values: ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "wcag22aa", "best-practice"]},
  resultTypes: ["violations"]
}).then(r => {
  const out = [];
  for (const v of r.violations) {
    for (const n of v.nodes) {
      out.push({id: v.id, impact: n.impact || v.impact || "", help: v.help, target: n.target.join(" "), summary: n.failureSummary || ""});
    }
  }
  return JSON.stringify({violations: out, passes: r.passes.length, version: axe.version});
})`

// AxeViolation is one element that breaks one axe-core rule.
type AxeViolation struct {
	ID      string `json:"id"`
	Impact  string `json:"impact"` // minor, moderate, serious or critical
	Help    string `json:"help"`
	Target  string `json:"target"`
	Summary string `json:"summary"`
}

// Blocking is true for the violations a test fails on: serious and
// critical ones.
func (v AxeViolation) Blocking() bool { return v.Impact == "serious" || v.Impact == "critical" }

func (v AxeViolation) String() string {
	return fmt.Sprintf("axe %s (%s): %s — %s\n\t%s", v.ID, v.Impact, v.Help, v.Target, strings.ReplaceAll(v.Summary, "\n", "\n\t"))
}

// AxeViolations runs axe-core (https://github.com/dequelabs/axe-core) on
// the page the browser shows and returns every violation it finds. The
// script is injected through the DevTools protocol (Runtime.evaluate),
// which the page's Content-Security-Policy does not govern, so the
// console's policy stays as strict as it is. Without axe-core installed it
// is an error that says how to install it.
func (b *Browser) AxeViolations() ([]AxeViolation, error) {
	path := axeScript()
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("axe-core is not installed (%w): run `npm ci` in internal/browsertest/testdata "+
			"(.ci/run does), or set RAZAO_AXE to axe.min.js", err)
	}
	if _, err := chromedp.Run(b.ctx, chromedp.Evaluate[any](string(src)+";undefined")); err != nil {
		return nil, fmt.Errorf("inject axe-core: %w", err)
	}
	out, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](axeRun, chromedp.EvalAwaitPromise))
	if err != nil {
		return nil, fmt.Errorf("run axe-core: %w", err)
	}
	var r struct {
		Violations []AxeViolation `json:"violations"`
		Passes     int            `json:"passes"`
		Version    string         `json:"version"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		return nil, fmt.Errorf("axe-core's answer: %w", err)
	}
	if r.Passes == 0 {
		return nil, fmt.Errorf("axe-core %s checked no rule at all", r.Version)
	}
	return r.Violations, nil
}

// Axe fails t with every serious or critical axe-core violation of the
// page the browser shows (AxeViolations), each with its rule, what the
// rule asks and the element; lesser ones are logged. Without axe-core the
// test fails: an accessibility check that skips itself proves nothing.
func (b *Browser) Axe(t testing.TB, page string) {
	t.Helper()
	vs, err := b.AxeViolations()
	if err != nil {
		t.Fatalf("%s: %v", page, err)
	}
	blocking := 0
	for _, v := range vs {
		if v.Blocking() {
			blocking++
			t.Errorf("%s: %s", page, v)
		} else {
			t.Logf("%s (not failing the test): %s", page, v)
		}
	}
	t.Logf("%s: axe-core: %d serious or critical violation(s), %d lesser", page, blocking, len(vs)-blocking)
}
