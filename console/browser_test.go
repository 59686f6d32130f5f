package console

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/razao/razao/divergences"
	"github.com/razao/razao/events"
	"github.com/razao/razao/internal/browsertest"
	"github.com/razao/razao/monthsums"
	"github.com/razao/razao/reports"
)

// The browser tests drive Debian's chromium, headless (internal/browsertest),
// and save a screenshot of each page in console/testoutput/.

func TestBrowser(t *testing.T) {
	t.Parallel()
	f := withHub(t)
	first := divergence(t, f.db, "ev-browser-1", `<b>c-html</b>`, "cobrança desconhecida")
	second := divergence(t, f.db, "ev-browser-2", "c-forged", "outra")
	// Closed in a cleanup, not a defer: the browsers (cleaned up first)
	// close their event streams, which Close would otherwise wait for.
	srv := serve(t, f.router)
	ctx := context.Background()

	b := browsertest.New(t, srv.URL, "testoutput")
	b.Do("sign-in page", chromedp.Navigate(srv.URL+"/console/login"), chromedp.WaitVisible(chromedp.ID("token")))
	shot(t, b, "01-login")
	b.SignIn(f.admin)

	// The month: pick August with the month and year fields, read the figures.
	b.Do("pick a month", chromedp.SetValue(chromedp.ID("pick-month"), "08"), chromedp.SetValue(chromedp.ID("pick-year"), "2026"),
		chromedp.Submit(chromedp.ID("pick-month")),
		chromedp.WaitVisible(chromedp.CSS(`tr[data-account="income:revenue"]`)))
	if loc := b.Location(); loc != "/console/month/2026-08" {
		t.Fatalf("picked August, at %s", loc)
	}
	tb, err := reports.TrialBalance(ctx, f.db, monthsums.Books{}, aug2026)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range tb.Lines {
		if !strings.HasPrefix(l.Account, "liabilities:commission-payable:") { // inside a closed group: not visible yet
			if got := b.Text(fmt.Sprintf(`tr[data-account=%q] td[data-field="closing"]`, l.Account)); got != dc(l.Closing) {
				t.Errorf("browser shows %s closing %q, the report %s", l.Account, got, dc(l.Closing))
			}
		}
	}
	// The balancete is one table: every column of every row lines up
	// with its header's.
	if v := b.Eval(balanceteMisaligned); v != nil && len(v.([]any)) > 0 {
		t.Errorf("balancete cells out of line with their column: %v", v)
	}
	inc, _ := reports.IncomeStatement(ctx, f.db, monthsums.Books{}, aug2026)
	if got := b.Text(`#income td[data-field="net_income"]`); got != brl(inc.NetIncome) {
		t.Errorf("net income %q, want %s", got, brl(inc.NetIncome))
	}
	// The partners' group starts closed; its button opens it from the
	// keyboard (Tab reaches it: it is a button), and says so.
	p1 := `tr[data-account="liabilities:commission-payable:p1"]`
	toggle := `tr[data-account="liabilities:commission-payable"] button.toggle`
	if b.Eval(`document.querySelector('`+p1+`').hidden`) != true || b.Eval(`document.querySelector('`+toggle+`').getAttribute("aria-expanded")`) != "false" {
		t.Error("the partners' payables are not shown closed at first")
	}
	b.Do("expand with the keyboard", chromedp.Focus(chromedp.CSS(toggle)), chromedp.KeyEvent(" "), chromedp.WaitVisible(chromedp.CSS(p1)))
	if got := b.Eval(`document.querySelector('` + toggle + `').getAttribute("aria-expanded")`); got != "true" {
		t.Errorf("after opening, the toggle's aria-expanded is %v", got)
	}
	if got := b.Text(p1 + ` td[data-field="closing"]`); !strings.HasSuffix(got, " C") || strings.Contains(got, "−") {
		t.Errorf("p1's payable closing %q, want a credit balance written R$ … C", got)
	}
	if got := b.Text(p1 + ` th a`); got != "Comissões a pagar — p1" {
		t.Errorf("p1's payable is named %q", got)
	}
	b.Do("close with the keyboard", chromedp.Focus(chromedp.CSS(toggle)), chromedp.KeyEvent("\r"), chromedp.WaitNotVisible(chromedp.CSS(p1)))
	b.Do("reopen", chromedp.Focus(chromedp.CSS(toggle)), chromedp.KeyEvent("\r"), chromedp.WaitVisible(chromedp.CSS(p1)))
	shot(t, b, "02-month")
	b.Do("phone", chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile), chromedp.Reload(), chromedp.WaitVisible(chromedp.ID("income")))
	shot(t, b, "03-month-phone")
	b.Do("laptop", chromedp.EmulateViewport(1280, 900), chromedp.Reload(), chromedp.WaitVisible(chromedp.ID("income")))

	// The chart: an SVG image the browser decoded.
	b.Do("chart", chromedp.Navigate(srv.URL+"/console/chart?to=2026-09"), chromedp.WaitVisible(chromedp.ID("trend-chart")),
		browsertest.Poll(`document.getElementById("trend-chart").complete`))
	if w := b.Eval(`document.getElementById("trend-chart").naturalWidth`); w == nil || w.(float64) < 100 {
		t.Errorf("the chart image did not load: naturalWidth %v", w)
	}
	shot(t, b, "04-chart")
	b.Do("account", chromedp.Click(chromedp.CSS(`a[href="/console/month/2026-09"]`)), chromedp.WaitVisible(chromedp.ID("income")),
		chromedp.Navigate(srv.URL+"/console/accounts/income:revenue?to=2026-09"), chromedp.WaitVisible(chromedp.ID("account-chart")),
		browsertest.Poll(`document.getElementById("account-chart").complete && document.getElementById("account-chart").naturalWidth > 0`))
	shot(t, b, "05-account")

	// Resolve a divergence as admin; its charge id's HTML is text.
	b.Do("divergences", chromedp.Navigate(srv.URL+"/console/divergences"), chromedp.WaitVisible(chromedp.ID(fmt.Sprintf("note-%d", first))))
	if got := b.Text(fmt.Sprintf("#divergence-%d code.charge", first)); got != "<b>c-html</b>" {
		t.Errorf("charge id shown as %q, want the text <b>c-html</b>", got)
	}
	shot(t, b, "06-divergences")
	b.Do("resolve", chromedp.SendKeys(chromedp.ID(fmt.Sprintf("note-%d", first)), "cobrança registrada depois"),
		chromedp.Click(chromedp.CSS(fmt.Sprintf("#divergence-%d button", first))),
		chromedp.WaitVisible(chromedp.CSS(fmt.Sprintf(`#divergence-%d[data-status="resolved"]`, first))))
	if d, _ := divergences.Get(ctx, f.db, first); d.Status != divergences.StatusResolved || d.ResolutionNote != "cobrança registrada depois" {
		t.Fatalf("after the browser resolved it: %+v", d)
	}
	b.NoConsoleErrors(nil)

	// A forged CSRF value is refused, and nothing changes.
	b.Do("forge", chromedp.SetAttributeValue(chromedp.CSS(fmt.Sprintf(`#divergence-%d input[name="csrf"]`, second)), "value", "forged"),
		chromedp.SendKeys(chromedp.ID(fmt.Sprintf("note-%d", second)), "forjada"),
		chromedp.Click(chromedp.CSS(fmt.Sprintf("#divergence-%d button", second))), chromedp.WaitVisible(chromedp.CSS(".problem")))
	if got := b.Text(".problem"); !strings.Contains(got, "CSRF") {
		t.Errorf("forged form answered %q", got)
	}
	if d, _ := divergences.Get(ctx, f.db, second); d.Status != divergences.StatusOpen {
		t.Fatal("a forged form resolved a divergence")
	}
	shot(t, b, "07-csrf-refused")
	b.NoConsoleErrors(func(m chromedp.ConsoleMessage) bool { return m.Source == "network" && strings.Contains(m.Text, "403") })

	// Close August, through the confirmation.
	b.Do("periods", chromedp.Navigate(srv.URL+"/console/periods"), chromedp.WaitVisible(chromedp.ID("periods")))
	shot(t, b, "08-periods")
	b.Do("confirm", chromedp.Click(chromedp.CSS(`a[href="/console/periods/2026-08/close"]`)), chromedp.WaitVisible(chromedp.ID("confirm-close")))
	if got := b.Text(`#frozen-income td[data-field="net_income"]`); got != brl(inc.NetIncome) {
		t.Errorf("confirmation shows net income %q, want %s", got, brl(inc.NetIncome))
	}
	shot(t, b, "09-close-confirm")
	b.Do("close", chromedp.Click(chromedp.ID("confirm-close")), chromedp.WaitVisible(chromedp.CSS(`[role="status"].ok`)))
	if got := b.Text(`tr[data-month="2026-08"] td[data-field="status"]`); got != "fechado" {
		t.Errorf("August is %q after closing", got)
	}
	if tb, _ := reports.TrialBalance(ctx, f.db, monthsums.Books{}, aug2026); !tb.Closed || !tb.Snapshot {
		t.Fatal("the browser did not close August")
	}

	// Partners.
	b.Do("partners", chromedp.Navigate(srv.URL+"/console/partners"), chromedp.WaitVisible(chromedp.ID("partners")))
	shot(t, b, "10-partners")
	b.Do("partner", chromedp.Click(chromedp.CSS(`a[href="/console/partners/p1"]`)), chromedp.WaitVisible(chromedp.ID("payouts")))
	shot(t, b, "11-partner")

	// The live strip: an event committed now appears without a reload;
	// on the next page the strip resumes after it, not from the start.
	b.Do("live", chromedp.Navigate(srv.URL+"/console/month/2026-09"), chromedp.WaitVisible(chromedp.ID("income")),
		browsertest.Poll(`document.getElementById("live-status").textContent === "Conectado."`))
	appendEvent(t, f, events.TopicChargePaid, "order-<live>")
	b.Do("event arrives", chromedp.WaitVisible(chromedp.CSS(`#live-events li[data-topic="charge.paid"]`)))
	if got := b.Text(`#live-events li[data-topic="charge.paid"]`); !strings.HasSuffix(got, "Cobrança paga · order-<live>") {
		t.Errorf("live strip shows %q", got)
	}
	// Its time is São Paulo's, as every page's, whatever the browser's zone.
	if ok := b.Eval(`(() => {
  const shown = document.querySelector('#live-events li[data-topic="charge.paid"]').textContent.slice(0, 5);
  const at = ms => new Date(ms).toLocaleTimeString("pt-BR", {timeZone: "America/Sao_Paulo"}).slice(0, 5);
  return [0, 60000, 120000].some(back => at(Date.now() - back) === shown);
})()`); ok != true {
		t.Errorf("the live strip's time is not São Paulo's: %q", b.Text(`#live-events li[data-topic="charge.paid"]`))
	}
	shot(t, b, "12-live")
	b.Do("next page", chromedp.Navigate(srv.URL+"/console/divergences"), chromedp.WaitVisible(chromedp.ID("open-title")),
		browsertest.Poll(`document.getElementById("live-status").textContent === "Conectado."`))
	appendEvent(t, f, events.TopicDivergenceOpened, "order-next")
	b.Do("resumed", chromedp.WaitVisible(chromedp.CSS(`#live-events li[data-topic="divergence.opened"]`)))
	if n := b.Eval(`document.querySelectorAll("#live-events li").length`); n != 1.0 {
		t.Errorf("after navigating, the strip holds %v events, want only the new one (resumed after the last seen)", n)
	}
	b.NoConsoleErrors(nil)

	// The tab's cursor falls behind what retention purged (the event after
	// it deleted, as retention does once it is archived): the stream
	// answers 410 to it, at every reconnection. The strip starts again
	// without it and goes on showing what comes.
	seen := b.Eval(`sessionStorage.getItem("razao.console.lastEventId")`)
	appendEvent(t, f, events.TopicChargePaid, "order-purged")
	b.Do("event to purge", chromedp.WaitVisible(chromedp.CSS(`#live-events li[data-topic="charge.paid"]`)))
	f.db.MustExec(`DELETE FROM outbox WHERE id = (SELECT max(id) FROM outbox)`)
	b.Eval(fmt.Sprintf(`sessionStorage.setItem("razao.console.lastEventId", %q)`, seen))
	b.Do("behind the purge", chromedp.Navigate(srv.URL+"/console/partners"), chromedp.WaitVisible(chromedp.ID("partners")),
		browsertest.Poll(`document.getElementById("live-status").textContent === "Conectado."`))
	appendEvent(t, f, events.TopicChargeRefunded, "order-after-purge")
	b.Do("goes on", chromedp.WaitVisible(chromedp.CSS(`#live-events li[data-topic="charge.refunded"]`)))
	if got := b.Text(`#live-events li[data-topic="charge.refunded"]`); !strings.HasSuffix(got, "Cobrança estornada · order-after-purge") {
		t.Errorf("after the purge the strip shows %q", got)
	}
	b.NoConsoleErrors(func(m chromedp.ConsoleMessage) bool { return strings.Contains(m.Text, "410") })

	// Sign out: the console asks for a token again.
	b.Do("sign out", chromedp.Click(chromedp.CSS("form.who button")), chromedp.WaitVisible(chromedp.ID("token")),
		chromedp.Navigate(srv.URL+"/console/month/2026-08"), chromedp.WaitVisible(chromedp.ID("token")))
	if loc := b.Location(); loc != "/console/login" {
		t.Errorf("after sign-out the month page is at %s", loc)
	}

	// A read token sees no admin buttons.
	r := browsertest.New(t, srv.URL, "testoutput")
	r.SignIn(f.read)
	r.Do("divergences as reader", chromedp.Navigate(srv.URL+"/console/divergences"), chromedp.WaitVisible(chromedp.ID("open-title")))
	if n := r.Eval(`document.querySelectorAll("form.resolve, textarea, button[type=submit]:not(form.who button)").length`); n != 0.0 {
		t.Errorf("a read token is offered %v admin controls on divergences", n)
	}
	shot(t, r, "13-divergences-read-token")
	r.Do("periods as reader", chromedp.Navigate(srv.URL+"/console/periods"), chromedp.WaitVisible(chromedp.ID("periods")))
	if n := r.Eval(`document.querySelectorAll('a[href$="/close"]').length`); n != 0.0 {
		t.Errorf("a read token is offered %v close buttons", n)
	}
	r.NoConsoleErrors(nil)
	b.NoConsoleErrors(nil)
}

// balanceteMisaligned lists the balancete's cells whose left and right
// edges differ from their column header's: empty when it is one aligned
// table.
const balanceteMisaligned = `(() => {
  const t = document.getElementById("balancete");
  const heads = [...t.tHead.rows[0].cells].map(c => c.getBoundingClientRect());
  const out = [];
  for (const r of [...t.tBodies[0].rows, ...t.tFoot.rows]) {
    if (r.hidden) continue;
    [...r.cells].forEach((c, i) => {
      const b = c.getBoundingClientRect();
      if (Math.abs(b.left - heads[i].left) > 0.5 || Math.abs(b.right - heads[i].right) > 0.5) out.push(r.dataset.account + " column " + i);
    });
  }
  return out;
})()`

// localeMonths lists what on the page the browser would write in its own
// locale's words (English, headless) rather than ours: a month, date or
// week field (its text is the browser's, never ago/2026) and an English
// month name in the text.
const localeMonths = `(() => {
  const out = [];
  document.querySelectorAll("input[type=month], input[type=date], input[type=week], input[type=datetime-local]")
    .forEach(i => out.push("input#" + i.id + " of type " + i.type));
  const re = /\b(January|February|March|April|May|June|July|August|September|October|November|December|Feb|Apr|Aug|Sep|Oct|Dec)\b/g;
  (document.body.innerText.match(re) || []).forEach(w => out.push("the word " + w));
  return out;
})()`

// shot saves a screenshot of the page b shows, named name, and fails the
// test when it shows a month in the browser's locale (portugueseMonths).
func shot(t *testing.T, b *browsertest.Browser, name string) {
	t.Helper()
	b.Screenshot(name)
	portugueseMonths(t, b, name)
}

// portugueseMonths fails the test when page shows a month in the
// browser's locale rather than in Portuguese.
func portugueseMonths(t *testing.T, b *browsertest.Browser, page string) {
	t.Helper()
	if found, _ := b.Eval(localeMonths).([]any); len(found) > 0 {
		t.Errorf("%s shows months in the browser's locale, not as ago/2026: %v", page, found)
	}
}
