package console

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/razao/razao/adjustments"
	"github.com/razao/razao/auth"
	"github.com/razao/razao/divergences"
	"github.com/razao/razao/internal/browsertest"
)

// countXHR counts, in the tab's sessionStorage (kept across the page
// change the upload ends with), the uploads sent by XHR and their
// progress events.
const countXHR = `(() => {
  sessionStorage.setItem("xhr-sends", "0");
  sessionStorage.setItem("xhr-progress", "0");
  const send = XMLHttpRequest.prototype.send;
  XMLHttpRequest.prototype.send = function (body) {
    sessionStorage.setItem("xhr-sends", String(1 + Number(sessionStorage.getItem("xhr-sends"))));
    this.upload.addEventListener("progress", () =>
      sessionStorage.setItem("xhr-progress", String(1 + Number(sessionStorage.getItem("xhr-progress")))));
    return send.call(this, body);
  };
  return true;
})()`

// The console acts, end to end in a browser: a payout booked once on a
// double submit; an adjustment proposed and approved by two sessions and
// refused when the proposer approves; a statement uploaded with its
// progress and reconciled; the divergence it found resolved by booking,
// after which a reconciliation of the same window finds nothing new.
func TestBrowserActs(t *testing.T) {
	t.Parallel()
	f := withHub(t)
	f.withReconciler(t)
	registerCharge(t, f, "ab-1", 10000)
	srv := serve(t, f.router)
	ctx := context.Background()
	second := newToken(t, f.db, "second-admin", auth.Admin)

	a := browsertest.New(t, srv.URL, "testoutput")
	a.SignIn(f.admin)

	// A payout, sent twice by script with the form's key, then by the
	// button: one payout.
	a.Do("partner", chromedp.Navigate(srv.URL+"/console/partners/p1"), chromedp.WaitVisible(chromedp.ID("payout-form")))
	shot(t, a, "act-01-partner-payout-form")
	a.Do("fill the payout", chromedp.SendKeys(chromedp.ID("payout-amount"), "1,00"),
		chromedp.Click(chromedp.CSS(`#payout-form input[name="adiantamento"]`)))
	a.Eval(`(() => {
	  const f = document.getElementById("payout-form");
	  const body = new URLSearchParams(new FormData(f));
	  window.posts = 0;
	  for (let i = 0; i < 2; i++) {
	    fetch(f.action, {method: "POST", body: body, redirect: "manual"}).then(() => window.posts++);
	  }
	  return true;
	})()`)
	a.Do("two posts", browsertest.Poll(`window.posts === 2`),
		chromedp.Click(chromedp.CSS(`#payout-form button[type="submit"]`)), chromedp.WaitVisible(chromedp.ID("payout-done")))
	if got := a.Text("#payout-done"); !strings.Contains(got, "já tinha sido lançado") {
		t.Errorf("after the third send of one payout form: %q", got)
	}
	if n := f.countOf(t, `SELECT count(*) FROM posting_sets WHERE kind = 'payout' AND partner = 'p1' AND amount = 100`); n != 1 {
		t.Fatalf("%d payouts of R$ 1,00 after three sends of one form, want 1", n)
	}
	shot(t, a, "act-02-partner-payout-done")

	// An adjustment: proposed by finance-admin, refused to it, approved
	// by second-admin.
	a.Do("adjustments", chromedp.Navigate(srv.URL+"/console/adjustments"), chromedp.WaitVisible(chromedp.ID("propose-form")))
	shot(t, a, "act-03-adjustments-empty")
	a.Do("propose", chromedp.SendKeys(chromedp.ID("leg-account-0"), "assets:cash"), chromedp.SetValue(chromedp.ID("leg-side-0"), "debito"),
		chromedp.SendKeys(chromedp.ID("leg-value-0"), "49,90"),
		chromedp.SendKeys(chromedp.ID("leg-account-1"), "equity:adjustments"), chromedp.SetValue(chromedp.ID("leg-side-1"), "credito"),
		chromedp.SendKeys(chromedp.ID("leg-value-1"), "49,90"),
		chromedp.SendKeys(chromedp.ID("propose-note"), "acerto de caixa <b>conferido</b>"),
		chromedp.Click(chromedp.CSS(`#propose-form button[type="submit"]`)), chromedp.WaitVisible(chromedp.ID("adjustment-done")))
	list, _, err := adjustments.List(ctx, f.db, adjustments.Filter{}, 0, 10)
	if err != nil || len(list) != 1 {
		t.Fatalf("proposals %+v %v", list, err)
	}
	id := list[0].ID
	if got := a.Text(fmt.Sprintf("#adjustment-%d .reason", id)); got != "acerto de caixa <b>conferido</b>" {
		t.Errorf("the note shows as %q", got)
	}
	shot(t, a, "act-04-adjustment-proposed")
	a.Do("approve own", chromedp.Click(chromedp.ID(fmt.Sprintf("approve-%d", id))), chromedp.WaitVisible(chromedp.CSS(".problem")))
	if got := a.Text(".problem"); !strings.Contains(got, "Você propôs este ajuste") {
		t.Errorf("the proposer's approval answered %q", got)
	}
	shot(t, a, "act-05-adjustment-own-approval-refused")
	a.NoConsoleErrors(func(m chromedp.ConsoleMessage) bool { return m.Source == "network" && strings.Contains(m.Text, "403") })

	b := browsertest.New(t, srv.URL, "testoutput")
	b.SignIn(second)
	b.Do("approve", chromedp.Navigate(srv.URL+"/console/adjustments"), chromedp.WaitVisible(chromedp.ID(fmt.Sprintf("approve-%d", id))),
		chromedp.Click(chromedp.ID(fmt.Sprintf("approve-%d", id))), chromedp.WaitVisible(chromedp.ID("adjustment-done")))
	if got := b.Text(fmt.Sprintf(`#adjustment-%d [data-field="decided_by"]`, id)); !strings.Contains(got, "second-admin") {
		t.Errorf("approved by %q", got)
	}
	if got := b.Text(fmt.Sprintf(`#adjustment-%d [data-field="proposed_by"]`, id)); !strings.Contains(got, "finance-admin") {
		t.Errorf("proposed by %q", got)
	}
	if adj, _ := adjustments.Get(ctx, f.db, id); adj.Status != adjustments.StatusBooked || adj.PostingSetID == 0 {
		t.Fatalf("after the second person approved: %+v", adj)
	}
	shot(t, b, "act-06-adjustment-approved")
	b.NoConsoleErrors(nil)

	// A statement uploaded by the form's script, with its progress.
	file := filepath.Join(t.TempDir(), "extrato <img src=x onerror=alert(1)>.csv")
	if err := os.WriteFile(file, []byte(statement), 0o644); err != nil {
		t.Fatal(err)
	}
	upload := func(step, shotName string) string {
		t.Helper()
		a.Do(step, chromedp.Navigate(srv.URL+"/console/reconciliation"), chromedp.WaitVisible(chromedp.ID("upload-form")))
		if shotName != "" {
			shot(t, a, shotName)
		}
		a.Eval(countXHR)
		a.Do(step+": send", chromedp.SetUploadFiles(chromedp.ID("upload-file"), []string{file}),
			chromedp.Click(chromedp.ID("upload-send")), chromedp.WaitVisible(chromedp.ID("upload-done")))
		if sends := a.Eval(`sessionStorage.getItem("xhr-sends")`); sends != "1" {
			t.Errorf("%s: %v uploads by XHR, want the script's one", step, sends)
		}
		// The XHR specification fires progress at the upload once its body
		// is sent, whatever its size: the bar was told.
		if n := a.Eval(`Number(sessionStorage.getItem("xhr-progress"))`); n == nil || n.(float64) < 1 {
			t.Errorf("%s: %v upload progress events, want at least one", step, n)
		}
		return a.Location()
	}
	first := upload("upload", "act-07-reconciliation-runs-upload-form")
	if got := a.Text("#upload-done"); !strings.Contains(got, "Extrato recebido e conciliado") {
		t.Errorf("the run page after the upload says %q", got)
	}
	shot(t, a, "act-08-reconciliation-run")
	a.Do("filter", chromedp.SetValue(chromedp.ID("filter-outcome"), "divergence"), chromedp.Submit(chromedp.ID("filter-outcome")),
		chromedp.WaitVisible(chromedp.CSS(`tr[data-outcome="divergence"]`)))
	if n := a.Eval(`document.querySelectorAll("#lines tbody tr[data-line]").length`); n != 1.0 {
		t.Errorf("%v lines with outcome divergence, want 1", n)
	}
	shot(t, a, "act-09-reconciliation-run-filtered")
	drainInbox(t, f)

	// The divergence it found (a payment for an unknown charge), resolved
	// by booking it as revenue.
	var open []divergences.Divergence
	if p, err := divergences.List(ctx, f.db, divergences.StatusOpen, "", 10); err != nil || len(p.Divergences) != 1 {
		t.Fatalf("open divergences after the upload: %+v %v", p, err)
	} else {
		open = p.Divergences
	}
	d := open[0]
	a.Do("divergences", chromedp.Navigate(srv.URL+"/console/divergences"),
		chromedp.WaitVisible(chromedp.CSS(fmt.Sprintf(`#divergence-%d [data-resolution="revenue"] button`, d.ID))))
	shot(t, a, "act-10-divergence-offers")
	a.Do("book", chromedp.Click(chromedp.CSS(fmt.Sprintf(`#divergence-%d [data-resolution="revenue"] button`, d.ID))),
		chromedp.WaitVisible(chromedp.CSS(fmt.Sprintf(`#divergence-%d[data-status="resolved"]`, d.ID))))
	if got, _ := divergences.Get(ctx, f.db, d.ID); got.Resolution != divergences.BookRevenue || got.ResolutionSetID == nil {
		t.Fatalf("after booking in the browser: %+v", got)
	}
	shot(t, a, "act-11-divergence-booked")

	// The same statement again: nothing new is found.
	total := f.countOf(t, `SELECT count(*) FROM divergences`)
	again := upload("upload again", "")
	if again == first {
		t.Fatalf("the second upload shows the first run, %s", again)
	}
	if n := f.countOf(t, `SELECT count(*) FROM divergences WHERE status = 'open'`); n != 0 {
		t.Errorf("%d open divergences after reconciling the window again, want 0", n)
	}
	if n := f.countOf(t, `SELECT count(*) FROM divergences`); n != total {
		t.Errorf("%d divergences after reconciling the window again, want the %d there were", n, total)
	}
	if got := a.Text(`tr[data-outcome="divergence"]`); !strings.Contains(got, fmt.Sprintf("divergência #%d, resolvida", d.ID)) {
		t.Errorf("the run again shows its divergent line as %q, want it pointing at the resolved divergence", got)
	}
	shot(t, a, "act-12-reconciliation-run-again")
	// On a phone: the run, the queue and the partner's form fit or scroll.
	a.Do("phone", chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile), chromedp.Reload(), chromedp.WaitVisible(chromedp.ID("lines")))
	shot(t, a, "act-12b-reconciliation-run-phone")
	a.Do("phone queue", chromedp.Navigate(srv.URL+"/console/adjustments"), chromedp.WaitVisible(chromedp.ID("propose-form")))
	shot(t, a, "act-12c-adjustments-phone")
	a.Do("laptop", chromedp.EmulateViewport(1280, 900))

	// A file above the endpoint's limit is refused before it is sent.
	big := filepath.Join(t.TempDir(), "grande.csv")
	if err := os.WriteFile(big, []byte(strings.Repeat(statement, 100)), 0o644); err != nil {
		t.Fatal(err)
	}
	a.Do("too big", chromedp.Navigate(srv.URL+"/console/reconciliation"), chromedp.WaitVisible(chromedp.ID("upload-form")))
	a.Eval(countXHR)
	a.Do("too big: send", chromedp.SetUploadFiles(chromedp.ID("upload-file"), []string{big}), chromedp.Click(chromedp.ID("upload-send")),
		chromedp.WaitVisible(chromedp.CSS("#upload-status.problem")))
	if got := a.Text("#upload-status"); !strings.Contains(got, "grande demais") {
		t.Errorf("a file above the limit: %q", got)
	}
	if sends := a.Eval(`sessionStorage.getItem("xhr-sends")`); sends != "0" {
		t.Errorf("a file above the limit was sent (%v)", sends)
	}
	shot(t, a, "act-13-reconciliation-upload-too-big")
	a.Do("unknown run", chromedp.Navigate(srv.URL+"/console/reconciliation/999"), chromedp.WaitVisible(chromedp.CSS(".problem")))
	if got := a.Text(".problem"); got != "Execução de conciliação desconhecida." {
		t.Errorf("an unknown run answers %q", got)
	}
	shot(t, a, "act-14-reconciliation-unknown-run")
	a.NoConsoleErrors(func(m chromedp.ConsoleMessage) bool { return m.Source == "network" && strings.Contains(m.Text, "404") })

	// A read session sees the pages and no form that acts.
	r := browsertest.New(t, srv.URL, "testoutput")
	r.SignIn(f.read)
	for i, p := range []string{"/console/adjustments", "/console/reconciliation", "/console/partners/p1", "/console/divergences"} {
		r.Do("read "+p, chromedp.Navigate(srv.URL+p), chromedp.WaitVisible(chromedp.ID("main")))
		if n := r.Eval(`document.querySelectorAll('form[method="post"]:not(.who)').length`); n != 0.0 {
			t.Errorf("%s offers a read session %v forms that post", p, n)
		}
		if i == 0 {
			shot(t, r, "act-15-adjustments-read-token")
		}
	}
	r.NoConsoleErrors(nil)
}
