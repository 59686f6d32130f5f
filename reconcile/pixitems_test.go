package reconcile_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/razao/razao/divergences"
)

// specItems are the specification's pixWebhook1, pixWebhook2 and
// pixResponse1 (API Pix 2.9.0) dated inside the test window, the last one
// with three devoluções: a DEVOLVIDO as the specification has it, one
// without the optional horario.liquidacao, and one of a status the
// specification may add.
func specItems(t *testing.T) []pixItem {
	t.Helper()
	ts := func(m int) string { return at(m).UTC().Format(time.RFC3339Nano) }
	raw := `[
	  {"endToEndId":"E12345678202009091221kkkkkkkkkkk","txid":"c3e0e7a4e7f1469a9f782d3d4999343c","valor":"110.00",
	   "horario":"` + ts(10) + `","infoPagador":"0123456789",
	   "devolucoes":{"id":"123ABC","rtrId":"D12345678202009091221abcdf098765","valor":"10.00",
	     "horario":{"solicitacao":"` + ts(10) + `"},"status":"EM_PROCESSAMENTO"}},
	  {"endToEndId":"E87654321202009091221dfghi123456","txid":"971122d8f37211eaadc10242ac120002","valor":"110.00",
	   "horario":"` + ts(11) + `","infoPagador":"0123456789"},
	  {"endToEndId":"E12345678202009091221abcdef12345","txid":"cd1fe328c875481285a6f233ae41b662","valor":"100.00",
	   "horario":"` + ts(12) + `","infoPagador":"Reforma da casa",
	   "devolucoes":[
	     {"id":"000AAA111","rtrId":"D12345678202009091000abcde123456","valor":"11.00",
	      "horario":{"solicitacao":"` + ts(13) + `","liquidacao":"` + ts(14) + `"},"status":"DEVOLVIDO"},
	     {"id":"000AAA222","rtrId":"D12345678202009091000abcde654321","valor":"12.00",
	      "horario":{"solicitacao":"` + ts(15) + `"},"status":"DEVOLVIDO"},
	     {"id":"000AAA333","rtrId":"D12345678202009091000abcde999999","valor":"13.00",
	      "horario":{"solicitacao":"` + ts(16) + `","liquidacao":"` + ts(17) + `"},"status":"NOVO_STATUS"}
	   ]}]`
	var list []map[string]any
	if err := json.Unmarshal([]byte(raw), &list); err != nil {
		t.Fatal(err)
	}
	items := make([]pixItem, len(list))
	for i, m := range list {
		items[i] = pixItem{Raw: m, Horario: at(10 + i)}
	}
	return items
}

func (e *env) divergencesOf(reason string) []divergences.Divergence {
	e.t.Helper()
	p, err := divergences.List(context.Background(), e.db, "", "", 100)
	if err != nil {
		e.t.Fatal(err)
	}
	var out []divergences.Divergence
	for _, d := range p.Divergences {
		if string(d.Reason) == reason {
			out = append(out, d)
		}
	}
	return out
}

// TestPixStatementJudgesEachItemAlone: each devolução of a statement item
// is a line of its own, so one bad devolução does not make the whole Pix
// invalid: the credits and the good refund are booked, and the two others
// are divergences keyed by their inbox keys, with the statement's side.
func TestPixStatementJudgesEachItemAlone(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.charge("c3e0e7a4e7f1469a9f782d3d4999343c", 11000, "")
	e.charge("971122d8f37211eaadc10242ac120002", 11000, "")
	e.charge("cd1fe328c875481285a6f233ae41b662", 10000, "")
	e.psp.add(specItems(t)...)
	run := e.runPix(winFrom, winTo)
	if run.Status != "succeeded" || run.Booked != 4 || run.Divergences != 2 {
		t.Fatalf("run %+v, want 3 credits and a refund booked, 2 divergences", run)
	}
	if n := e.count(`SELECT count(*) FROM posting_sets WHERE kind = 'refund' AND refund_id = '000AAA111'
		AND return_id = 'D12345678202009091000abcde123456'`); n != 1 || e.sales() != 3 {
		t.Fatalf("%d refunds 000AAA111 with its rtrId, %d sales", n, e.sales())
	}
	for _, want := range []struct {
		reason, refund string
		amount         int64
	}{{"refund_settlement_unknown", "000AAA222", 1200}, {"unknown_refund_status", "000AAA333", 1300}} {
		ds := e.divergencesOf(want.reason)
		if len(ds) != 1 || ds[0].Statement == nil || ds[0].Statement.Amount != want.amount || ds[0].Statement.RefundID != want.refund ||
			ds[0].Statement.PSPID != "E12345678202009091221abcdef12345" {
			t.Fatalf("%s: %+v", want.reason, ds)
		}
	}
	// Run again: the keys open nothing twice.
	if again := e.runPix(winFrom, winTo); again.Booked != 0 || len(e.divergencesOf("refund_settlement_unknown")) != 1 {
		t.Fatalf("run again: %+v", again)
	}
}

// TestPixWebhookThenStatementOfTheSameItemIsOneDivergence: the webhook's
// callback and the statement give the same verdicts: the devolução the
// webhook set aside is the statement line's divergence too.
func TestPixWebhookThenStatementOfTheSameItemIsOneDivergence(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.charge("c3e0e7a4e7f1469a9f782d3d4999343c", 11000, "")
	e.charge("971122d8f37211eaadc10242ac120002", 11000, "")
	e.charge("cd1fe328c875481285a6f233ae41b662", 10000, "")
	items := specItems(t)
	if code, status := e.postPix(items...); code != 200 || status != "accepted" {
		t.Fatalf("callback: %d %s", code, status)
	}
	e.psp.add(items...)
	run := e.runPix(winFrom, winTo)
	if run.Booked != 0 || run.Divergences != 2 {
		t.Fatalf("run %+v, want nothing more booked and the 2 divergences", run)
	}
	for _, r := range []string{"refund_settlement_unknown", "unknown_refund_status"} {
		if ds := e.divergencesOf(r); len(ds) != 1 || ds[0].Source != divergences.SourceWebhook {
			t.Fatalf("%s: %+v, want the webhook's one", r, ds)
		}
	}
}

// TestPixStatementWithAnotherValorUnderAStoredKey: a statement line under
// the key of a delivery stored but not booked (set aside, parked) is not
// that delivery whatever its amount: read as it, the webhook's 49.90 for
// a Pix the statement says was 59.90 would stay an unknown charge, and a
// devolução of 12.00 the webhook had said was 10.00 would count as
// "booked". Each is a divergence with both amounts.
func TestPixStatementWithAnotherValorUnderAStoredKey(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.charge("paid2", 4990, "")
	// An unknown charge, set aside; a payment of another amount than its
	// charge, set aside, and its devolução parked behind it.
	if code, _ := e.postPix(pixItem{E2E: e2e(1), Txid: "nocharge", Valor: "49.90", Horario: at(5)},
		pixItem{E2E: e2e(2), Txid: "paid2", Valor: "50.00", Horario: at(6),
			Devolucoes: []devolucao{{ID: "dev2", Valor: "10.00", Status: "DEVOLVIDO", Liquidacao: at(7)}}}); code != 200 {
		t.Fatalf("callback: %d", code)
	}
	e.psp.add(pixItem{E2E: e2e(1), Txid: "nocharge", Valor: "59.90", Horario: at(5)},
		pixItem{E2E: e2e(2), Txid: "paid2", Valor: "50.00", Horario: at(6),
			Devolucoes: []devolucao{{ID: "dev2", Valor: "12.00", Status: "DEVOLVIDO", Liquidacao: at(7)}}})
	run := e.runPix(winFrom, winTo)
	if got := strings.Join(e.outcomes(run.ID), "; "); got != "paid divergence amount_mismatch; paid divergence amount_mismatch paid2; refunded divergence refund_amount_mismatch paid2" {
		t.Fatalf("lines: %s", got)
	}
	ls, _ := linesOf(e, run.ID)
	if ls[0].LedgerAmount == nil || *ls[0].LedgerAmount != 4990 || ls[0].Amount != 5990 ||
		ls[2].LedgerAmount == nil || *ls[2].LedgerAmount != 1000 || ls[2].Amount != 1200 {
		t.Fatalf("both amounts: %+v / %+v", ls[0], ls[2])
	}
	if n := e.count(`SELECT count(*) FROM posting_sets`); n != 0 {
		t.Fatalf("%d sets booked", n)
	}
}

// TestPixItemAtExactlyFimIsReadOnce: GET /pix lists horario in [inicio,
// fim], fim inclusive, and razao's windows are [from, to): an item at
// exactly the end of one window is the next window's only, and an item a
// second before it the first window's only; both are booked once and
// neither is a phantom.
func TestPixItemAtExactlyFimIsReadOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	mid := at(60)
	e.charge("before", 100, "")
	e.charge("atfim", 100, "")
	e.psp.add(pixItem{E2E: e2e(1), Txid: "before", Valor: "1.00", Horario: mid.Add(-time.Second)},
		pixItem{E2E: e2e(2), Txid: "atfim", Valor: "1.00", Horario: mid})
	first := e.runPix(winFrom, mid)
	second := e.runPix(mid, winTo)
	if first.Lines != 1 || first.Booked != 1 || first.Divergences != 0 {
		t.Fatalf("window ending at the item: %+v, want the item before only", first)
	}
	if second.Lines != 1 || second.Booked != 1 || second.Matched != 0 || second.Divergences != 0 {
		t.Fatalf("window starting at the item: %+v, want it booked there", second)
	}
	if e.sales() != 2 {
		t.Fatalf("%d sales", e.sales())
	}
}
