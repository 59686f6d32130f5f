package console

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/razao/razao/internal/browsertest"
	"github.com/razao/razao/postings"
)

// The journal, the search and a charge's page in Chromium, with a read
// token: the search box of the header finds a charge by the endToEndId
// that paid it and opens its page; the journal pages back and filters.
// Screenshots in console/testoutput/find-*.png.
func TestBrowserFind(t *testing.T) {
	t.Parallel()
	f, _ := withCharges(t)
	// More sets than a page of the journal holds.
	for i := range journalLimit + 10 {
		s, err := postings.Sale("bulk-"+strconv.Itoa(i), "BRL", 1990, 40, sp(2026, 9, 3+i%20, 11, i%60))
		post(t, f.ledger, s, err)
	}
	srv := serve(t, f.router)
	b := browsertest.New(t, srv.URL, "testoutput")
	b.SignIn(f.read)

	// Search by endToEndId from the header, on any page.
	b.Do("search from the header", chromedp.Navigate(srv.URL+"/console/month/2026-09"), chromedp.WaitVisible(chromedp.ID("top-q")),
		chromedp.SendKeys(chromedp.ID("top-q"), pixE2E), chromedp.Submit(chromedp.ID("top-q")),
		chromedp.WaitVisible(chromedp.ID("charges")))
	if got := b.Text(`#charges tr[data-charge="pix1"] td[data-field="state"]`); got != "paga" {
		t.Errorf("the charge found by its endToEndId is %q, want paga", got)
	}
	if n := b.Eval(`document.querySelectorAll("#charges tbody tr").length`); n != 1.0 {
		t.Errorf("the endToEndId finds %v charges, want 1", n)
	}
	shot(t, b, "find-01-search-end-to-end-id")
	b.Do("open the charge", chromedp.Click(chromedp.CSS(`#charges a[href="/console/charges/pix1"]`)), chromedp.WaitVisible(chromedp.ID("timeline")))
	if loc := b.Location(); loc != "/console/charges/pix1" {
		t.Fatalf("the search's link opened %s", loc)
	}
	if got := b.Text("#charge-state"); got != "paga" {
		t.Errorf("pix1's page says %q", got)
	}
	types := b.Eval(`Array.from(document.querySelectorAll("#timeline > li")).map(li => li.dataset.type).join(",")`)
	for _, want := range []string{"delivery", "posting_set", "divergence", "event"} {
		if !strings.Contains(fmt.Sprint(types), want) {
			t.Errorf("pix1's timeline %v has no %s", types, want)
		}
	}
	shot(t, b, "find-02-charge-pix1")

	// A charge paid and partly refunded: its timeline in order, with legs.
	b.Do("charge order-1", chromedp.Navigate(srv.URL+"/console/charges/order-1"), chromedp.WaitVisible(chromedp.ID("timeline")))
	if got := b.Text(`#charge-summary dd[data-field="refunded"]`); got != "R$ 10,00" {
		t.Errorf("order-1 refunded %q", got)
	}
	if n := b.Eval(`document.querySelectorAll("#timeline li[data-type=posting_set] table.legs tbody tr").length`); n == nil || n.(float64) < 7 {
		t.Errorf("order-1's sets show %v legs, want the sale's 3, the commission's 2, the refund's 2 and more", n)
	}
	shot(t, b, "find-03-charge-order-1")

	// The journal: newest first, a page at a time.
	b.Do("journal", chromedp.Click(chromedp.CSS(`nav a[href="/console/journal"]`)), chromedp.WaitVisible(chromedp.ID("older")))
	first := b.Eval(`Array.from(document.querySelectorAll("tbody.set")).map(s => +s.dataset.set)`).([]any)
	if len(first) != journalLimit {
		t.Fatalf("the journal's first page shows %d sets, want %d", len(first), journalLimit)
	}
	shot(t, b, "find-04-journal")
	b.Do("older", chromedp.Click(chromedp.ID("older")), chromedp.WaitVisible(chromedp.CSS(`a[rel="first"]`)))
	second := b.Eval(`Array.from(document.querySelectorAll("tbody.set")).map(s => +s.dataset.set)`).([]any)
	if len(second) == 0 || second[0].(float64) >= first[len(first)-1].(float64) {
		t.Errorf("the second page begins at set %v, after the first page's last %v", second, first[len(first)-1])
	}
	shot(t, b, "find-05-journal-older")

	// Filter: September's refunds.
	b.Do("filter", chromedp.Navigate(srv.URL+"/console/journal"), chromedp.WaitVisible(chromedp.ID("journal-filters")),
		chromedp.SendKeys(chromedp.ID("f-de"), "01/09/2026"), chromedp.SendKeys(chromedp.ID("f-ate"), "30/09/2026"),
		chromedp.SetValue(chromedp.ID("f-tipo"), "refund"), chromedp.Submit(chromedp.ID("f-de")),
		chromedp.WaitVisible(chromedp.ID("clear-filters")), chromedp.WaitVisible(chromedp.CSS(`tbody.set`)))
	kinds := b.Eval(`Array.from(document.querySelectorAll('tbody.set td[data-field="kind"]')).map(td => td.textContent)`).([]any)
	if len(kinds) == 0 {
		t.Fatal("no refund in September")
	}
	for _, k := range kinds {
		if k != "estorno" {
			t.Errorf("filtered on refunds, the journal shows a %v", k)
		}
	}
	shot(t, b, "find-06-journal-refunds-september")
	b.Do("phone", chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile), chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS(`tbody.set`)))
	shot(t, b, "find-07-journal-phone")
	b.Do("laptop", chromedp.EmulateViewport(1280, 900), chromedp.Navigate(srv.URL+"/console/journal?min=abc"),
		chromedp.WaitVisible(chromedp.ID("journal-problem")))
	if got := b.Text("#journal-problem"); !strings.Contains(got, "em reais") {
		t.Errorf("a bad amount says %q", got)
	}
	shot(t, b, "find-08-journal-bad-amount")

	b.Do("search nothing", chromedp.Navigate(srv.URL+"/console/search?q=E99999999999999999999999999999ZZ"), chromedp.WaitVisible(chromedp.ID("search-nothing")))
	shot(t, b, "find-09-search-nothing")
	b.Do("search an amount", chromedp.Navigate(srv.URL+"/console/search?q=49%2C90"), chromedp.WaitVisible(chromedp.ID("found-sets")))
	shot(t, b, "find-10-search-amount")
	b.Do("unknown charge", chromedp.Navigate(srv.URL+"/console/charges/nao-existe"), chromedp.WaitVisible(chromedp.CSS(".problem")))
	if got := b.Text(".problem"); !strings.Contains(got, "Cobrança desconhecida") {
		t.Errorf("an unknown charge's page says %q", got)
	}
	shot(t, b, "find-11-charge-unknown")
	// The 400 of the bad amount and the 404 of the unknown charge are the
	// only errors the pages caused.
	b.NoConsoleErrors(func(m chromedp.ConsoleMessage) bool {
		return m.Source == "network" && (strings.Contains(m.Text, "400") || strings.Contains(m.Text, "404"))
	})
}
