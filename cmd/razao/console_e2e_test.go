package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/razao/razao/internal/browsertest"
	"github.com/razao/razao/webhook"
)

// The console as razao serve wires it, in a browser: a webhook paid
// through the real front shows in the live strip without a reload, as
// does the divergence an unknown charge opens; the month and the
// divergence (with its delivery) are then on their pages.
func TestConsoleInABrowserSeesWebhooksLive(t *testing.T) {
	t.Parallel()
	base, token, _, stop := startServer(t)
	defer stop()
	if code, m := apiCall(t, token, "POST", base+"/v1/charges", `{"id":"order-live","amount":4990,"partner":"p1","commission_bp":1000,"access":"course:go"}`); code != 201 {
		t.Fatalf("register: %d %v", code, m)
	}
	b := browsertest.New(t, base, "testoutput")
	b.SignIn(token)
	b.Do("live strip", browsertest.Poll(`document.getElementById("live-status").textContent === "Conectado."`))

	deliver := func(msgID, charge string) {
		t.Helper()
		body := []byte(`{"type":"charge.paid","timestamp":"2026-08-31T22:30:00-03:00","data":{"charge_id":"` + charge + `","amount":4990,"occurred_at":"2026-08-31T22:30:00-03:00"}}`)
		resp := signedStandard(t, base, msgID, body)
		var r webhook.Response
		json.NewDecoder(resp.Body).Decode(&r)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("webhook %s: %d %+v", msgID, resp.StatusCode, r)
		}
	}
	deliver("msg-live-1", "order-live")
	b.Do("paid, live", chromedp.WaitVisible(chromedp.CSS(`#live-events li[data-topic="charge.paid"]`)))
	if got := b.Text(`#live-events li[data-topic="charge.paid"]`); !strings.HasSuffix(got, "Cobrança paga · order-live") {
		t.Errorf("live strip: %q", got)
	}
	deliver("msg-live-2", "ghost-1") // no such charge: a divergence
	b.Do("divergence, live", chromedp.WaitVisible(chromedp.CSS(`#live-events li[data-topic="divergence.opened"]`)))
	b.Screenshot("e2e-live")

	b.Do("month", chromedp.Navigate(base+"/console/month/2026-08"), chromedp.WaitVisible(chromedp.CSS(`tr[data-account="income:revenue"]`)))
	if got := b.Text(`tr[data-account="income:revenue"] td[data-field="closing"]`); got != "R$ 49,90 C" {
		t.Errorf("August revenue after the webhook: %q, want R$ 49,90 C (a credit balance)", got)
	}
	b.Do("divergences", chromedp.Navigate(base+"/console/divergences"), chromedp.WaitVisible(chromedp.CSS("table.delivery")))
	if got := b.Text("table.delivery tbody"); !strings.Contains(got, "psp") || !strings.Contains(got, "msg-live-2") {
		t.Errorf("the divergence's delivery: %q", got)
	}
	b.Screenshot("e2e-divergences")
	b.NoConsoleErrors(nil)
}
