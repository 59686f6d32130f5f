package console

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/razao/razao/events"
	"github.com/razao/razao/reports"
)

// The browser tests drive Debian's chromium, headless, through chromedp.
// Without it they fail, never skip: CI must prove the console works in a
// browser (.ci/run installs chromium when it is missing).

// chromiumPath finds the browser: $RAZAO_CHROMIUM, else chromium on PATH.
func chromiumPath(t *testing.T) string {
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

// screenshotDir is where the tests save a screenshot of each page:
// $RAZAO_TEST_OUTPUT/console, else console/testoutput/ (ignored by git).
func screenshotDir(t *testing.T) string {
	t.Helper()
	dir := "testoutput"
	if base := os.Getenv("RAZAO_TEST_OUTPUT"); base != "" {
		dir = filepath.Join(base, "console")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// browser is one headless Chromium with its own profile (cookies), and the
// console messages its pages wrote.
type browser struct {
	t    *testing.T
	ctx  context.Context
	base string
	dir  string

	mu       sync.Mutex
	messages []chromedp.ConsoleMessage
}

func newBrowser(t *testing.T, base string) *browser {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromiumPath(t)),
		chromedp.NoSandbox, // CI runs as root
		chromedp.WindowSize(1280, 900),
		chromedp.Flag("lang", "pt-BR"),
	)
	// Bounds the whole test if the browser hangs; no step is timed.
	bound, cancelBound := context.WithTimeout(context.Background(), 4*time.Minute)
	alloc, cancelAlloc := chromedp.NewExecAllocator(bound, opts...)
	ctx, cancel := chromedp.NewContext(alloc)
	t.Cleanup(func() { cancel(); cancelAlloc(); cancelBound() })
	b := &browser{t: t, ctx: ctx, base: base, dir: screenshotDir(t)}
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

func (b *browser) do(what string, steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	start := time.Now()
	if err := chromedp.Do(b.ctx, steps...); err != nil {
		b.t.Fatalf("%s: %v", what, err)
	}
	b.t.Logf("%s: %s", what, time.Since(start).Round(time.Millisecond))
}

func (b *browser) text(sel string) string {
	b.t.Helper()
	s, err := chromedp.Run(b.ctx, chromedp.Text(chromedp.CSS(sel)))
	if err != nil {
		b.t.Fatalf("text of %s: %v", sel, err)
	}
	return strings.TrimSpace(s)
}

func (b *browser) eval(expr string) any {
	b.t.Helper()
	v, err := chromedp.Run(b.ctx, chromedp.Evaluate[any](expr))
	if err != nil {
		b.t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

func (b *browser) location() string {
	b.t.Helper()
	loc, err := chromedp.Run(b.ctx, chromedp.Location())
	if err != nil {
		b.t.Fatal(err)
	}
	return strings.TrimPrefix(loc, b.base)
}

// screenshot saves the whole page as NAME.png.
func (b *browser) screenshot(name string) {
	b.t.Helper()
	png, err := chromedp.Run(b.ctx, chromedp.FullScreenshot(100))
	if err != nil {
		b.t.Fatalf("screenshot %s: %v", name, err)
	}
	if err := os.WriteFile(filepath.Join(b.dir, name+".png"), png, 0o644); err != nil {
		b.t.Fatal(err)
	}
}

// noConsoleErrors fails the test for any error or exception the pages
// wrote (a CSP violation is one), except those allowed by accept.
func (b *browser) noConsoleErrors(accept func(chromedp.ConsoleMessage) bool) {
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

func (b *browser) signIn(token string) {
	b.t.Helper()
	b.do("open the console", chromedp.Navigate(b.base+"/console/"), chromedp.WaitVisible(chromedp.ID("token")))
	if loc := b.location(); loc != "/console/login" {
		b.t.Fatalf("without a session the console is at %s, want the sign-in page", loc)
	}
	b.do("sign in", chromedp.SendKeys(chromedp.ID("token"), token), chromedp.Submit(chromedp.ID("token")),
		chromedp.WaitVisible(chromedp.CSS("form.who")))
}

func TestBrowser(t *testing.T) {
	t.Parallel()
	f := withHub(t)
	first := divergence(t, f.db, "ev-browser-1", `<b>c-html</b>`, "cobrança desconhecida")
	second := divergence(t, f.db, "ev-browser-2", "c-forged", "outra")
	srv := httptest.NewServer(f.router)
	// A cleanup, not a defer: the browsers (cleaned up first) close their
	// event streams, which Close would otherwise wait for.
	t.Cleanup(srv.Close)
	ctx := context.Background()

	b := newBrowser(t, srv.URL)
	b.do("sign-in page", chromedp.Navigate(srv.URL+"/console/login"), chromedp.WaitVisible(chromedp.ID("token")))
	b.screenshot("01-login")
	b.signIn(f.admin)

	// The month: pick August with the month field, read the figures.
	b.do("pick a month", chromedp.SetValue(chromedp.ID("pick-month"), "2026-08"), chromedp.Submit(chromedp.ID("pick-month")),
		chromedp.WaitVisible(chromedp.CSS(`tr[data-account="income:revenue"]`)))
	if loc := b.location(); loc != "/console/month/2026-08" {
		t.Fatalf("picked August, at %s", loc)
	}
	tb, err := reports.TrialBalance(ctx, f.db, aug2026)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range tb.Lines {
		if !strings.HasPrefix(l.Account, "liabilities:commission-payable") { // inside a closed group: not visible yet
			if got := b.text(fmt.Sprintf(`tr[data-account=%q] td[data-field="closing"]`, l.Account)); got != brl(l.Closing) {
				t.Errorf("browser shows %s closing %q, the report %s", l.Account, got, brl(l.Closing))
			}
		}
	}
	inc, _ := reports.IncomeStatement(ctx, f.db, aug2026)
	if got := b.text(`#income td[data-field="net_income"]`); got != brl(inc.NetIncome) {
		t.Errorf("net income %q, want %s", got, brl(inc.NetIncome))
	}
	// Expand the partners' group with the keyboard.
	group := `details.group:not([open]) > summary`
	b.do("expand with the keyboard", chromedp.Focus(chromedp.CSS(group)), chromedp.KeyEvent(" "),
		chromedp.WaitVisible(chromedp.CSS(`tr[data-account="liabilities:commission-payable:p1"]`)))
	if got := b.text(`tr[data-account="liabilities:commission-payable:p1"] td[data-field="closing"]`); !strings.HasPrefix(got, "−R$ ") {
		t.Errorf("p1's payable closing %q, want a credit balance", got)
	}
	b.screenshot("02-month")
	b.do("phone", chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile), chromedp.Reload(), chromedp.WaitVisible(chromedp.ID("income")))
	b.screenshot("03-month-phone")
	b.do("laptop", chromedp.EmulateViewport(1280, 900), chromedp.Reload(), chromedp.WaitVisible(chromedp.ID("income")))

	// The chart: an SVG image the browser decoded.
	b.do("chart", chromedp.Navigate(srv.URL+"/console/chart?to=2026-09"), chromedp.WaitVisible(chromedp.ID("trend-chart")),
		poll(`document.getElementById("trend-chart").complete`))
	if w := b.eval(`document.getElementById("trend-chart").naturalWidth`); w == nil || w.(float64) < 100 {
		t.Errorf("the chart image did not load: naturalWidth %v", w)
	}
	b.screenshot("04-chart")
	b.do("account", chromedp.Click(chromedp.CSS(`a[href="/console/month/2026-09"]`)), chromedp.WaitVisible(chromedp.ID("income")),
		chromedp.Navigate(srv.URL+"/console/accounts/income:revenue?to=2026-09"), chromedp.WaitVisible(chromedp.ID("account-chart")),
		poll(`document.getElementById("account-chart").complete && document.getElementById("account-chart").naturalWidth > 0`))
	b.screenshot("05-account")

	// Resolve a divergence as admin; its charge id's HTML is text.
	b.do("divergences", chromedp.Navigate(srv.URL+"/console/divergences"), chromedp.WaitVisible(chromedp.ID(fmt.Sprintf("note-%d", first))))
	if got := b.text(fmt.Sprintf("#divergence-%d code.charge", first)); got != "<b>c-html</b>" {
		t.Errorf("charge id shown as %q, want the text <b>c-html</b>", got)
	}
	b.screenshot("06-divergences")
	b.do("resolve", chromedp.SendKeys(chromedp.ID(fmt.Sprintf("note-%d", first)), "cobrança registrada depois"),
		chromedp.Click(chromedp.CSS(fmt.Sprintf("#divergence-%d button", first))),
		chromedp.WaitVisible(chromedp.CSS(fmt.Sprintf(`#divergence-%d[data-status="resolved"]`, first))))
	if d, _ := reports.GetDivergence(ctx, f.db, first); d.Status != reports.DivergenceResolved || d.ResolutionNote != "cobrança registrada depois" {
		t.Fatalf("after the browser resolved it: %+v", d)
	}
	b.noConsoleErrors(nil)

	// A forged CSRF value is refused, and nothing changes.
	b.do("forge", chromedp.SetAttributeValue(chromedp.CSS(fmt.Sprintf(`#divergence-%d input[name="csrf"]`, second)), "value", "forged"),
		chromedp.SendKeys(chromedp.ID(fmt.Sprintf("note-%d", second)), "forjada"),
		chromedp.Click(chromedp.CSS(fmt.Sprintf("#divergence-%d button", second))), chromedp.WaitVisible(chromedp.CSS(".problem")))
	if got := b.text(".problem"); !strings.Contains(got, "CSRF") {
		t.Errorf("forged form answered %q", got)
	}
	if d, _ := reports.GetDivergence(ctx, f.db, second); d.Status != reports.DivergenceOpen {
		t.Fatal("a forged form resolved a divergence")
	}
	b.screenshot("07-csrf-refused")
	b.noConsoleErrors(func(m chromedp.ConsoleMessage) bool { return m.Source == "network" && strings.Contains(m.Text, "403") })

	// Close August, through the confirmation.
	b.do("periods", chromedp.Navigate(srv.URL+"/console/periods"), chromedp.WaitVisible(chromedp.ID("periods")))
	b.screenshot("08-periods")
	b.do("confirm", chromedp.Click(chromedp.CSS(`a[href="/console/periods/2026-08/close"]`)), chromedp.WaitVisible(chromedp.ID("confirm-close")))
	if got := b.text(`#frozen-income td[data-field="net_income"]`); got != brl(inc.NetIncome) {
		t.Errorf("confirmation shows net income %q, want %s", got, brl(inc.NetIncome))
	}
	b.screenshot("09-close-confirm")
	b.do("close", chromedp.Click(chromedp.ID("confirm-close")), chromedp.WaitVisible(chromedp.CSS(`[role="status"].ok`)))
	if got := b.text(`tr[data-month="2026-08"] td[data-field="status"]`); got != "fechado" {
		t.Errorf("August is %q after closing", got)
	}
	if tb, _ := reports.TrialBalance(ctx, f.db, aug2026); !tb.Closed || !tb.Snapshot {
		t.Fatal("the browser did not close August")
	}

	// Partners.
	b.do("partners", chromedp.Navigate(srv.URL+"/console/partners"), chromedp.WaitVisible(chromedp.ID("partners")))
	b.screenshot("10-partners")
	b.do("partner", chromedp.Click(chromedp.CSS(`a[href="/console/partners/p1"]`)), chromedp.WaitVisible(chromedp.ID("payouts")))
	b.screenshot("11-partner")

	// The live strip: an event committed now appears without a reload;
	// on the next page the strip resumes after it, not from the start.
	b.do("live", chromedp.Navigate(srv.URL+"/console/month/2026-09"), chromedp.WaitVisible(chromedp.ID("income")),
		poll(`document.getElementById("live-status").textContent === "Conectado."`))
	appendEvent(t, f, events.TopicChargePaid, "order-<live>")
	b.do("event arrives", chromedp.WaitVisible(chromedp.CSS(`#live-events li[data-topic="charge.paid"]`)))
	if got := b.text(`#live-events li[data-topic="charge.paid"]`); !strings.HasSuffix(got, "Cobrança paga · order-<live>") {
		t.Errorf("live strip shows %q", got)
	}
	b.screenshot("12-live")
	b.do("next page", chromedp.Navigate(srv.URL+"/console/divergences"), chromedp.WaitVisible(chromedp.ID("open-title")),
		poll(`document.getElementById("live-status").textContent === "Conectado."`))
	appendEvent(t, f, events.TopicDivergenceOpened, "order-next")
	b.do("resumed", chromedp.WaitVisible(chromedp.CSS(`#live-events li[data-topic="divergence.opened"]`)))
	if n := b.eval(`document.querySelectorAll("#live-events li").length`); n != 1.0 {
		t.Errorf("after navigating, the strip holds %v events, want only the new one (resumed after the last seen)", n)
	}
	b.noConsoleErrors(nil)

	// Sign out: the console asks for a token again.
	b.do("sign out", chromedp.Click(chromedp.CSS("form.who button")), chromedp.WaitVisible(chromedp.ID("token")),
		chromedp.Navigate(srv.URL+"/console/month/2026-08"), chromedp.WaitVisible(chromedp.ID("token")))
	if loc := b.location(); loc != "/console/login" {
		t.Errorf("after sign-out the month page is at %s", loc)
	}

	// A read token sees no admin buttons.
	r := newBrowser(t, srv.URL)
	r.signIn(f.read)
	r.do("divergences as reader", chromedp.Navigate(srv.URL+"/console/divergences"), chromedp.WaitVisible(chromedp.ID("open-title")))
	if n := r.eval(`document.querySelectorAll("form.resolve, textarea, button[type=submit]:not(form.who button)").length`); n != 0.0 {
		t.Errorf("a read token is offered %v admin controls on divergences", n)
	}
	r.screenshot("13-divergences-read-token")
	r.do("periods as reader", chromedp.Navigate(srv.URL+"/console/periods"), chromedp.WaitVisible(chromedp.ID("periods")))
	if n := r.eval(`document.querySelectorAll('a[href$="/close"]').length`); n != 0.0 {
		t.Errorf("a read token is offered %v close buttons", n)
	}
	r.noConsoleErrors(nil)
	b.noConsoleErrors(nil)
}

// poll waits until the expression is true in the page.
func poll(expr string) chromedp.Action[chromedp.Void] {
	return func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
		_, err := chromedp.Poll[bool](expr)(ctx, t)
		return chromedp.Void{}, err
	}
}
