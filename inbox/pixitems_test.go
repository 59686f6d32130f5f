package inbox_test

import (
	"context"
	"strings"
	"testing"

	"github.com/razao/razao/divergences"
	"github.com/razao/razao/webhook"
)

// pixItemsBody is the specification's pixWebhook1 and pixWebhook2 (API
// Pix 2.9.0), dated in 2026 (its 2020 dates are before razao's go-live),
// and its pixResponse1 whose devoluções are a DEVOLVIDO as the
// specification has it, one without the optional horario.liquidacao, and
// one of a status the specification may add.
const pixItemsBody = `{"pix":[
  {"endToEndId":"E12345678202009091221kkkkkkkkkkk","txid":"c3e0e7a4e7f1469a9f782d3d4999343c","valor":"110.00",
   "horario":"2026-09-09T20:15:00.358Z","infoPagador":"0123456789",
   "devolucoes":{"id":"123ABC","rtrId":"D12345678202009091221abcdf098765","valor":"10.00",
     "horario":{"solicitacao":"2026-09-09T20:15:00.358Z"},"status":"EM_PROCESSAMENTO"}},
  {"endToEndId":"E87654321202009091221dfghi123456","txid":"971122d8f37211eaadc10242ac120002","valor":"110.00",
   "horario":"2026-09-09T20:15:00.358Z","infoPagador":"0123456789"},
  {"endToEndId":"E12345678202009091221abcdef12345","txid":"cd1fe328c875481285a6f233ae41b662","valor":"100.00",
   "horario":"2026-09-10T13:03:33.902Z","infoPagador":"Reforma da casa",
   "devolucoes":[
     {"id":"000AAA111","rtrId":"D12345678202009091000abcde123456","valor":"11.00",
      "horario":{"solicitacao":"2026-09-10T13:03:33.902Z","liquidacao":"2026-09-10T13:04:00.000Z"},"status":"DEVOLVIDO"},
     {"id":"000AAA222","rtrId":"D12345678202009091000abcde654321","valor":"12.00",
      "horario":{"solicitacao":"2026-09-10T13:05:00.000Z"},"status":"DEVOLVIDO"},
     {"id":"000AAA333","rtrId":"D12345678202009091000abcde999999","valor":"13.00",
      "horario":{"solicitacao":"2026-09-10T13:06:00.000Z","liquidacao":"2026-09-10T13:07:00.000Z"},"status":"NOVO_STATUS"}
   ]}
]}`

func newPixEnv(t *testing.T) *env {
	t.Helper()
	e := newEnvWith(t, webhook.EndpointConfig{Name: "pix", Scheme: "bcb-pix", Merchant: "loja-1", Secrets: []string{bcbSecret}})
	e.Charge("c3e0e7a4e7f1469a9f782d3d4999343c", 11000, "", 0)
	e.Charge("971122d8f37211eaadc10242ac120002", 11000, "", 0)
	e.Charge("cd1fe328c875481285a6f233ae41b662", 10000, "", 0)
	return e
}

// listDivergences returns every divergence, oldest first.
func (e *env) listDivergences() []divergences.Divergence {
	e.T.Helper()
	p, err := divergences.List(context.Background(), e.DB, "", "", 100)
	if err != nil {
		e.T.Fatal(err)
	}
	return p.Divergences
}

// TestPixCallbackBooksWhatItCanAndSetsAsideTheRest: a DEVOLVIDO without
// horario.liquidacao and a devolução of a status razao does not know do
// not fail the callback: it is answered 200, the credits and the refund
// are booked, and each of the two others is a divergence
// with what the PSP said and what the ledger has.
func TestPixCallbackBooksWhatItCanAndSetsAsideTheRest(t *testing.T) {
	t.Parallel()
	e := newPixEnv(t)
	r := e.PostPix("pix", []byte(pixItemsBody))
	if r.Code != 200 || r.Body.Status != "accepted" || len(r.Body.Events) != 7 {
		t.Fatalf("callback: %d %+v", r.Code, r.Body)
	}
	e.Settled()
	e.WantBalances(map[string]int64{"assets:cash": 32000 - 1100, "income:revenue": -32000 + 1100})
	if n := e.Count(`SELECT count(*) FROM posting_sets WHERE kind = 'refund' AND refund_id = '000AAA111'
		AND return_id = 'D12345678202009091000abcde123456' AND refund_nature IS NULL`); n != 1 {
		t.Fatalf("%d refunds 000AAA111 booked with their rtrId", n)
	}
	got := e.listDivergences()
	if len(got) != 2 {
		t.Fatalf("divergences %+v, want 2", got)
	}
	for i, want := range []struct {
		reason   divergences.Reason
		refund   string
		amount   int64
		inDetail string
	}{
		{divergences.Reason("refund_settlement_unknown"), "000AAA222", 1200, "horario.liquidacao"},
		{divergences.Reason("unknown_refund_status"), "000AAA333", 1300, `"NOVO_STATUS"`},
	} {
		d := got[i]
		if d.Reason != want.reason || d.ChargeID != "cd1fe328c875481285a6f233ae41b662" || !strings.Contains(d.Detail, want.inDetail) ||
			d.Statement == nil || d.Statement.Amount != want.amount || d.Statement.RefundID != want.refund ||
			d.Statement.PSPID != "E12345678202009091221abcdef12345" || d.Statement.ChargeRef != "cd1fe328c875481285a6f233ae41b662" {
			t.Errorf("divergence %d = %+v (statement %+v), want %s of refund %s for %d", i, d, d.Statement, want.reason, want.refund, want.amount)
		}
		if d.Ledger != nil {
			t.Errorf("divergence %d: the ledger booked %+v of a refund it never booked", i, *d.Ledger)
		}
	}
	// The same callback again is one delivery: nothing more.
	if r := e.PostPix("pix", []byte(pixItemsBody)); r.Code != 200 || r.Body.Status != "duplicate" {
		t.Fatalf("again: %d %+v", r.Code, r.Body)
	}
	e.Settled()
	if n := len(e.listDivergences()); n != 2 {
		t.Fatalf("%d divergences after the same callback again", n)
	}
}

// TestPixSameEndToEndIdWithAnotherValorIsADivergence: the same endToEndId
// with another valor, or a devolução with another valor, is not a
// duplicate: each is kept, answered 200, and a divergence with both
// amounts; the same conflicting callback again is a
// duplicate of it, and the ledger keeps what it booked.
func TestPixSameEndToEndIdWithAnotherValorIsADivergence(t *testing.T) {
	t.Parallel()
	e := newEnvWith(t, webhook.EndpointConfig{Name: "pix", Scheme: "bcb-pix", Merchant: "loja-1", Secrets: []string{bcbSecret}})
	e.Charge("charge1", 4990, "", 0)
	const e2e1 = "E12345678202609011000abcdefghijk"
	body := func(valor, devValor string) []byte {
		return []byte(`{"pix":[{"endToEndId":"` + e2e1 + `","txid":"charge1","valor":"` + valor + `","horario":"2026-09-01T10:00:00Z",
			"devolucoes":[{"id":"dev1","rtrId":"D12345678202609011100abcdefghijk","valor":"` + devValor + `",
			"horario":{"solicitacao":"2026-09-02T10:00:00Z","liquidacao":"2026-09-02T10:00:05Z"},"status":"DEVOLVIDO"}]}]}`)
	}
	if r := e.PostPix("pix", body("49.90", "10.00")); r.Code != 200 || r.Body.Status != "accepted" {
		t.Fatalf("first: %d %+v", r.Code, r.Body)
	}
	e.Settled()
	if r := e.PostPix("pix", body("49.90", "10.00")); r.Code != 200 || r.Body.Status != "duplicate" {
		t.Fatalf("the same again: %d %+v", r.Code, r.Body)
	}
	if r := e.PostPix("pix", body("59.90", "12.00")); r.Code != 200 || r.Body.Status != "accepted" {
		t.Fatalf("another valor: %d %+v", r.Code, r.Body)
	}
	if r := e.PostPix("pix", body("59.90", "12.00")); r.Code != 200 || r.Body.Status != "duplicate" {
		t.Fatalf("the conflicting callback again: %d %+v", r.Code, r.Body)
	}
	e.Settled()
	e.WantBalances(map[string]int64{"assets:cash": 4990 - 1000, "income:revenue": -4990 + 1000})
	got := e.listDivergences()
	if len(got) != 2 {
		t.Fatalf("divergences %+v, want 2", got)
	}
	for i, want := range []struct {
		reason      divergences.Reason
		psp, ledger int64
		refund      string
	}{{divergences.ReasonAmountMismatch, 5990, 4990, ""}, {divergences.ReasonRefundAmountChanged, 1200, 1000, "dev1"}} {
		d := got[i]
		if d.Reason != want.reason || d.Statement == nil || d.Statement.Amount != want.psp || d.Statement.RefundID != want.refund ||
			d.Ledger == nil || d.Ledger.Amount == nil || *d.Ledger.Amount != want.ledger || d.InboxID == 0 {
			t.Errorf("divergence %d = %+v (statement %+v, ledger %+v), want %s %d against %d", i, d, d.Statement, d.Ledger, want.reason, want.psp, want.ledger)
		}
	}
}
