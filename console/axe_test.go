package console

import (
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/razao/razao/internal/browsertest"
)

// consolePage is one page of the console the accessibility test visits:
// its path, an element that says it has rendered, whether it needs a
// signed-in session, and a script to run before the check (to open what
// starts closed).
type consolePage struct {
	name, path, ready string
	signedOut         bool
	then              string
}

// consolePages are every page of the console, as an admin sees it (the
// forms included). A page added to the console is one line here; the
// reconciliation page, when mounted (razao serve), is checked where it is
// mounted (cmd/razao), and /console/events is a stream, not a page.
func consolePages(div int64) []consolePage {
	return []consolePage{
		{name: "login", path: "/console/login", ready: "#token", signedOut: true},
		{name: "login-refused", path: "/console/accounts/assets:cash", ready: "#token", signedOut: true},
		{name: "month", path: "/console/month/2026-08", ready: "#income"},
		{name: "month-open-groups", path: "/console/month/2026-09", ready: "#balancete",
			then: `document.querySelectorAll("#balancete button.toggle[aria-expanded=false]").forEach(b => b.click())`},
		{name: "month-before-the-books", path: "/console/month/2025-01", ready: "#income"},
		{name: "chart", path: "/console/chart?to=2026-09", ready: "#trend-chart"},
		{name: "chart-before-go-live", path: "/console/chart?to=2026-01", ready: "h1"},
		{name: "account", path: "/console/accounts/income:revenue?to=2026-09", ready: "#account-chart"},
		{name: "account-partner", path: "/console/accounts/liabilities:commission-payable:p1?to=2026-09", ready: "#account-chart"},
		{name: "divergences", path: "/console/divergences", ready: fmt.Sprintf("#note-%d", div)},
		{name: "periods", path: "/console/periods", ready: "#periods"},
		{name: "close-confirm", path: "/console/periods/2026-08/close", ready: "#confirm-close"},
		{name: "partners", path: "/console/partners", ready: "#partners"},
		{name: "partner", path: "/console/partners/p1", ready: "#payouts"},
		{name: "error-400", path: "/console/month/nope", ready: ".problem"},
		{name: "error-404", path: "/console/accounts/nope:nope", ready: ".problem"},
	}
}

// Every page of the console passes axe-core with no serious or critical
// violation: labelled forms, named links and images, contrast, landmarks,
// table headers, the language.
func TestEveryPagePassesAxe(t *testing.T) {
	t.Parallel()
	f := withHub(t)
	div := divergence(t, f.db, "ev-axe", "c-axe", "cobrança desconhecida")
	srv := serve(t, f.router)
	b := browsertest.New(t, srv.URL, "testoutput")
	pages := consolePages(div)
	visit := func(p consolePage) {
		t.Run(p.name, func(t *testing.T) {
			b.Do(p.name, chromedp.Navigate(srv.URL+p.path), chromedp.WaitVisible(chromedp.CSS(p.ready)))
			if p.then != "" {
				b.Eval(p.then)
			}
			b.Axe(t, p.name)
		})
	}
	for _, p := range pages {
		if p.signedOut {
			visit(p)
		}
	}
	b.SignIn(f.admin)
	for _, p := range pages {
		if !p.signedOut {
			visit(p)
		}
	}
	// The error pages answer 400 and 404, which the browser reports.
	b.NoConsoleErrors(func(m chromedp.ConsoleMessage) bool {
		return m.Source == "network" && (strings.Contains(m.Text, "400") || strings.Contains(m.Text, "404"))
	})
}

// markFocusable numbers every control the page shows (links, buttons,
// fields), and returns how many there are.
const markFocusable = `(() => {
  const all = [...document.querySelectorAll("a[href], button, select, input:not([type=hidden]), textarea, summary")]
    .filter(e => !e.disabled && e.getClientRects().length > 0 && getComputedStyle(e).visibility !== "hidden");
  all.forEach((e, i) => e.setAttribute("data-kb", String(i)));
  return all.length;
})()`

// Tab alone reaches every link, button and field of each page that has a
// form or a toggle, in order, the skip link first; and the skip link takes
// the focus to the page's content.
func TestTabReachesEveryControl(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	div := divergence(t, f.db, "ev-tab", "c-tab", "cobrança desconhecida")
	srv := serve(t, f.router)
	b := browsertest.New(t, srv.URL, "testoutput")
	b.Do("sign-in page", chromedp.Navigate(srv.URL+"/console/login"), chromedp.WaitVisible(chromedp.ID("token")))
	tabThrough(t, b, "login")
	b.SignIn(f.admin)
	for _, p := range []consolePage{
		{name: "month", path: "/console/month/2026-08", ready: "#balancete button.toggle:not([hidden])"},
		{name: "divergences", path: "/console/divergences", ready: fmt.Sprintf("#note-%d", div)},
		{name: "close-confirm", path: "/console/periods/2026-08/close", ready: "#confirm-close"},
	} {
		b.Do(p.name, chromedp.Navigate(srv.URL+p.path), chromedp.WaitVisible(chromedp.CSS(p.ready)))
		tabThrough(t, b, p.name)
	}
	// The skip link moves the focus to the content.
	b.Do("skip", chromedp.Navigate(srv.URL+"/console/month/2026-08"), chromedp.WaitVisible(chromedp.ID("income")),
		chromedp.KeyEvent("\t"), chromedp.KeyEvent("\r"))
	if id := b.Eval(`document.activeElement.id`); id != "main" {
		t.Errorf("after the skip link the focus is on %q, want main", id)
	}
}

// tabThrough presses Tab from the top of the page until every control
// markFocusable numbered has had the focus, failing the test with those
// that never do.
func tabThrough(t *testing.T, b *browsertest.Browser, page string) {
	t.Helper()
	n := int(b.Eval(markFocusable).(float64))
	if n == 0 {
		t.Fatalf("%s: no control found", page)
	}
	// From the top: the body takes the focus for a moment, so the next Tab
	// starts there whatever has the focus now (the sign-in's autofocus).
	b.Eval(`document.body.tabIndex = -1; document.body.focus(); document.body.removeAttribute("tabindex")`)
	seen := map[string]bool{}
	var order []string
	for i := 0; i < n+5 && len(seen) < n; i++ {
		b.Do(page+": Tab", chromedp.KeyEvent("\t"))
		k, _ := b.Eval(`document.activeElement.getAttribute("data-kb")`).(string)
		if k != "" && !seen[k] {
			seen[k] = true
			order = append(order, k)
		}
	}
	if len(order) == 0 || order[0] != "0" {
		t.Errorf("%s: the first Tab reaches control %v, want the skip link (0)", page, order)
	}
	if len(seen) != n {
		missed := b.Eval(fmt.Sprintf(`[...document.querySelectorAll("[data-kb]")].filter(e => !%q.split(" ").includes(e.getAttribute("data-kb"))).map(e => e.outerHTML.slice(0, 120))`,
			strings.Join(order, " ")))
		t.Errorf("%s: Tab reached %d of %d controls; never: %v", page, len(seen), n, missed)
	}
}

// The pages that find and act (the journal, the search, a charge's page,
// the adjustments' queue, the reconciliation runs and their upload form)
// pass axe-core too, on books with charges paid through the webhook front
// and a reconciler mounted.
func TestFindAndActPagesPassAxe(t *testing.T) {
	t.Parallel()
	f, _ := withCharges(t)
	f.withReconciler(t)
	srv := serve(t, f.router)
	b := browsertest.New(t, srv.URL, "testoutput")
	b.SignIn(f.admin)
	for _, p := range []consolePage{
		{name: "journal", path: "/console/journal", ready: "#journal-filters"},
		{name: "journal-filtered", path: "/console/journal?tipo=sale&min=10,00", ready: "#journal-filters"},
		{name: "search", path: "/console/search?q=" + pixE2E, ready: "#search-page-form"},
		{name: "search-nothing", path: "/console/search?q=nada-aqui", ready: "#search-nothing"},
		{name: "charge", path: "/console/charges/order-1", ready: "#timeline"},
		{name: "adjustments", path: "/console/adjustments", ready: "#queue-title"},
		{name: "reconciliations", path: "/console/reconciliation", ready: "#upload-form"},
	} {
		t.Run(p.name, func(t *testing.T) {
			b.Do(p.name, chromedp.Navigate(srv.URL+p.path), chromedp.WaitVisible(chromedp.CSS(p.ready)))
			b.Axe(t, p.name)
		})
	}
}

// The webhooks' pages pass axe-core too, as an admin sees them (the
// forms included): the list with an endpoint disabled after failing, that
// endpoint's attempts log, and an enabled endpoint's page.
func TestWebhookPagesPassAxe(t *testing.T) {
	t.Parallel()
	f := newBareFixture(t)
	f.runHub(t)
	h := withWebhooks(t, f)
	srv := serve(t, f.router)
	b := browsertest.New(t, srv.URL, "testoutput")
	b.SignIn(f.admin)
	for _, p := range []consolePage{
		{name: "webhooks", path: "/console/webhooks", ready: "#endpoints"},
		{name: "webhook-failing", path: fmt.Sprintf("/console/webhooks/%d", h.failing.ID), ready: "#attempts-log"},
		{name: "webhook-healthy", path: fmt.Sprintf("/console/webhooks/%d", h.healthy.ID), ready: "#replay-form"},
	} {
		t.Run(p.name, func(t *testing.T) {
			b.Do(p.name, chromedp.Navigate(srv.URL+p.path), chromedp.WaitVisible(chromedp.CSS(p.ready)))
			b.Axe(t, p.name)
			b.Screenshot(p.name)
		})
	}
	// The live strip says the endpoint was disabled (read from the
	// stream's start: each page resumes after the last event shown).
	b.Eval(`sessionStorage.clear()`)
	b.Do("disabled, live", chromedp.Navigate(srv.URL+"/console/webhooks"),
		chromedp.WaitVisible(chromedp.CSS(`#live-events li[data-topic="webhook_endpoint.disabled"]`)))
	if got, want := b.Text(`#live-events li[data-topic="webhook_endpoint.disabled"]`), fmt.Sprintf("Webhook desativado por falhas · endpoint #%d", h.failing.ID); !strings.HasSuffix(got, want) {
		t.Errorf("the live strip says %q, want … %q", got, want)
	}
	b.Screenshot("webhooks-live")
	// On a phone the tables scroll inside their own box, which axe
	// checks too.
	b.Do("phone", chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile))
	for _, p := range []consolePage{
		{name: "webhooks-phone", path: "/console/webhooks", ready: "#endpoints"},
		{name: "webhook-failing-phone", path: fmt.Sprintf("/console/webhooks/%d", h.failing.ID), ready: "#attempts-log"},
	} {
		t.Run(p.name, func(t *testing.T) {
			b.Do(p.name, chromedp.Navigate(srv.URL+p.path), chromedp.WaitVisible(chromedp.CSS(p.ready)))
			b.Axe(t, p.name)
			b.Screenshot(p.name)
		})
	}
	b.NoConsoleErrors(nil)
}
