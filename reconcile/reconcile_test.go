package reconcile_test

import (
	"slices"
	"testing"
	"time"
)

// TestLostPixIsBookedOnceAndItsLateWebhookIsADuplicate: a payment whose
// webhook was answered 503 and never retried (so never stored) is booked
// by the next run exactly once; the webhook arriving afterwards is a plain
// duplicate, and running the window again books nothing.
func TestLostPixIsBookedOnceAndItsLateWebhookIsADuplicate(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.charge("c1", 4990, "")
	e.charge("c2", 1500, "")
	lost := pixItem{E2E: e2e(1), Txid: "c1", Valor: "49.90", Horario: at(10)}
	delivered := pixItem{E2E: e2e(2), Txid: "c2", Valor: "15.00", Horario: at(20)}
	if code, st := e.postPix(delivered); code != 200 || st != "accepted" {
		t.Fatalf("webhook of c2: %d %s", code, st)
	}
	e.psp.add(lost, delivered)

	run := e.runPix(winFrom, winTo)
	if run.Status != "succeeded" || run.Lines != 2 || run.Matched != 1 || run.Booked != 1 || run.Divergences != 0 {
		t.Fatalf("first run: %+v", run)
	}
	if got, want := e.outcomes(run.ID), []string{"paid booked  c1", "paid matched  c2"}; !slices.Equal(got, want) {
		t.Fatalf("lines %q, want %q", got, want)
	}
	if n := e.count(`SELECT count(*) FROM posting_sets WHERE kind = 'sale' AND charge_id = 'c1'`); n != 1 {
		t.Fatalf("%d sales of c1, want 1", n)
	}
	if n := e.count(`SELECT count(*) FROM inbox WHERE endpoint = 'bcb' AND event_type = 'pix' AND event_id = $1 AND status = 'processed'`, e2e(1)); n != 1 {
		t.Fatalf("the booked line is not the webhook's own inbox row (%d)", n)
	}
	if code, st := e.postPix(lost); code != 200 || st != "duplicate" {
		t.Fatalf("late webhook of c1: %d %s, want a duplicate", code, st)
	}
	again := e.runPix(winFrom, winTo)
	if again.Booked != 0 || again.Matched != 2 || again.Divergences != 0 {
		t.Fatalf("second run: %+v", again)
	}
	if e.sales() != 2 || e.count(`SELECT count(*) FROM divergences`) != 0 {
		t.Fatalf("%d sales, %d divergences after everything", e.sales(), e.count(`SELECT count(*) FROM divergences`))
	}
}

// TestStatementRefundsAndDivergences: a DEVOLVIDO refund absent from the
// ledger is booked in its settlement month; EM_PROCESSAMENTO moves
// nothing; a differing amount, an unknown txid and a phantom payment each
// open their divergence with both sides.
func TestStatementRefundsAndDivergences(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, c := range []string{"paid1", "short", "phantom"} {
		e.charge(c, 10000, "")
	}
	// paid1 and phantom are paid by webhook; only paid1 is on the statement.
	paid := pixItem{E2E: e2e(1), Txid: "paid1", Valor: "100.00", Horario: at(5)}
	phantom := pixItem{E2E: e2e(9), Txid: "phantom", Valor: "100.00", Horario: at(6)}
	for _, it := range []pixItem{paid, phantom} {
		if code, st := e.postPix(it); code != 200 || st != "accepted" {
			t.Fatalf("webhook: %d %s", code, st)
		}
	}
	settled := at(90)
	paid.Devolucoes = []devolucao{{ID: "D1", Valor: "30.00", Status: "DEVOLVIDO", Liquidacao: settled},
		{ID: "D2", Valor: "10.00", Status: "EM_PROCESSAMENTO"}}
	e.psp.add(paid,
		pixItem{E2E: e2e(2), Txid: "short", Valor: "99.00", Horario: at(30)},
		pixItem{E2E: e2e(3), Txid: "nosuch", Valor: "1.00", Horario: at(40)})

	run := e.runPix(winFrom, winTo)
	want := []string{
		"paid matched  paid1",
		"refunded booked  paid1",
		"refund_open matched not_settled paid1",
		"paid divergence amount_mismatch short",
		"paid divergence unknown_charge",
		"paid divergence phantom phantom",
	}
	if got := e.outcomes(run.ID); !slices.Equal(got, want) {
		t.Fatalf("lines\n%q\nwant\n%q", got, want)
	}
	var refund struct {
		Amount     int64     `db:"amount"`
		Competence time.Time `db:"competence"`
	}
	if err := e.db.Get(&refund, `SELECT amount, competence FROM posting_sets WHERE kind = 'refund' AND charge_id = 'paid1' AND refund_id = 'D1'`); err != nil {
		t.Fatalf("refund D1 not booked: %v", err)
	}
	if refund.Amount != 3000 || refund.Competence.Format("2006-01-02") != e.ledger.Calendar().Date(settled).Format("2006-01-02") {
		t.Fatalf("refund booked %+v, want 3000 on %s", refund, e.ledger.Calendar().Date(settled))
	}
	if n := e.count(`SELECT count(*) FROM posting_sets WHERE refund_id = 'D2'`); n != 0 {
		t.Fatal("EM_PROCESSAMENTO moved money")
	}
	lines, _ := linesOf(e, run.ID)
	short := lines[3]
	if short.Amount != 9900 || short.LedgerAmount == nil || *short.LedgerAmount != 10000 {
		t.Fatalf("amount divergence without both sides: %+v", short)
	}
	ph := lines[5]
	if ph.Side != "ledger" || ph.LedgerAmount == nil || *ph.LedgerAmount != 10000 {
		t.Fatalf("phantom without the ledger side: %+v", ph)
	}
	// The refund's webhook arriving later is a duplicate.
	if code, st := e.postPix(paid); code != 200 || st != "duplicate" && st != "ignored" {
		t.Fatalf("late callback: %d %s", code, st)
	}
	if n := e.count(`SELECT count(*) FROM posting_sets WHERE kind = 'refund'`); n != 1 {
		t.Fatalf("%d refunds booked, want 1", n)
	}
}

// TestNonFinalWindowHasNoPhantoms: until a window is final, a payment the
// statement does not list yet is a PSP listing late, not a phantom.
func TestNonFinalWindowHasNoPhantoms(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.charge("c1", 100, "")
	if code, _ := e.postPix(pixItem{E2E: e2e(1), Txid: "c1", Valor: "1.00", Horario: now.Add(-10 * time.Minute)}); code != 200 {
		t.Fatal(code)
	}
	run := e.runPix(now.Add(-30*time.Minute), now)
	if run.Final || run.Lines != 0 || run.Divergences != 0 {
		t.Fatalf("non-final run: %+v", run)
	}
	if n := e.count(`SELECT count(*) FROM reconciliation_lines WHERE run_id = $1`, run.ID); n != 0 {
		t.Fatalf("%d lines in a non-final window the PSP lists nothing of", n)
	}
}
