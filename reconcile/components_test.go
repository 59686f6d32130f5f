package reconcile_test

import (
	"encoding/json"
	"slices"
	"testing"
)

// The Pix API's own Pix Troco example: 80.00 purchase, 20.00 change.
var trocoComponentes = json.RawMessage(`{"original":{"valor":"80.00"},"troco":{"valor":"20.00","modalidadeAgente":"AGTEC","prestadorDeServicoDeSaque":"12345678"}}`)

// balance is an account's balance over the whole ledger.
func (e *env) balance(code string) int {
	e.t.Helper()
	return e.count(`SELECT coalesce(sum(p.amount), 0) FROM postings p JOIN accounts a ON a.id = p.account_id WHERE a.code = $1`, code)
}

// A Troco Pix found only on the statement is booked as its webhook would
// have been: a sale of 80.00 and 20.00 out of the till, not an
// amount_mismatch against the charge of 80.00. A troco on a charge of
// 100.00 is one, with nothing booked; a Pix whose webhook booked it
// matches its statement line (valor 100.00 against paid 80.00); and the
// RETIRADA of its change is never a refund of the sale.
func TestPixRunBooksATrocoPixAsItsWebhookWould(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.charge("troco1", 8000, "")
	e.charge("troco2", 10000, "")
	e.charge("troco3", 8000, "")
	hooked := pixItem{E2E: e2e(3), Txid: "troco3", Valor: "100.00", Horario: at(30), Componentes: trocoComponentes}
	if code, status := e.postPix(hooked); code != 200 {
		t.Fatalf("webhook: %d %s", code, status)
	}
	e.psp.add(
		pixItem{E2E: e2e(1), Txid: "troco1", Valor: "100.00", Horario: at(10), Componentes: trocoComponentes,
			Devolucoes: []devolucao{{ID: "ret1", Valor: "20.00", Status: "DEVOLVIDO", Liquidacao: at(15), Natureza: "RETIRADA"}}},
		pixItem{E2E: e2e(2), Txid: "troco2", Valor: "100.00", Horario: at(20), Componentes: trocoComponentes},
		hooked,
	)
	run := e.runPix(winFrom, winTo)
	got := e.outcomes(run.ID)
	want := []string{"paid booked  troco1", "refunded booked  troco1", "paid divergence amount_mismatch troco2", "paid matched  troco3"}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("lines %q, want %q", got, want)
	}
	if n := e.count(`SELECT count(*) FROM charges WHERE state = 'paid' AND paid_amount = 8000 AND id IN ('troco1', 'troco3')`); n != 2 {
		t.Fatalf("%d of troco1, troco3 paid 8000, want 2", n)
	}
	if c, r, till := e.balance("assets:cash"), e.balance("income:revenue"), e.balance("assets:till:pix-change"); c != 20000 || r != -16000 || till != -4000 {
		t.Fatalf("cash %d, revenue %d, till %d; want 20000, -16000, -4000", c, r, till)
	}
	var detail string
	if err := e.db.Get(&detail, `SELECT d.detail FROM divergences d JOIN inbox i ON i.id = d.inbox_id WHERE i.event_id = $1`, e2e(1)+":ret1:DEVOLVIDO"); err != nil {
		t.Fatalf("the RETIRADA's divergence: %v", err)
	}
	if n := e.count(`SELECT count(*) FROM posting_sets WHERE kind = 'refund'`); n != 0 {
		t.Fatalf("%d refunds booked, want none (the RETIRADA: %s)", n, detail)
	}
}
