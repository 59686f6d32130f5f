package console

import (
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/razao/razao/internal/browsertest"
)

// consolePage is one page of the console the accessibility test visits:
// its path, an element that says it has rendered, and whether it needs a
// signed-in session.
type consolePage struct {
	name, path, ready string
	signedOut         bool
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
		{name: "month-empty", path: "/console/month/2025-01", ready: "#income"},
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
