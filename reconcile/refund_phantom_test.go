package reconcile_test

import (
	"slices"
	"testing"
	"time"
)

// bookedRefund is a refund set of the ledger.
type bookedRefund struct {
	Charge  string    `db:"charge_id"`
	Refund  string    `db:"refund_id"`
	Amount  int64     `db:"amount"`
	EventAt time.Time `db:"event_at"`
	Month   time.Time `db:"competence_month"`
}

func (e *env) refundSets() []bookedRefund {
	e.t.Helper()
	e.drain()
	var out []bookedRefund
	if err := e.db.Select(&out, `SELECT charge_id, refund_id, amount, event_at, competence_month
		FROM posting_sets WHERE kind = 'refund' ORDER BY charge_id, refund_id`); err != nil {
		e.t.Fatal(err)
	}
	return out
}

// TestRefundSettledInALaterWindowThanItsPixIsNoPhantom: GET /pix lists a
// Pix by its horario, with its devoluções: a refund booked from its
// webhook, settled in a final window whose statement lists its Pix not
// (the Pix is of an earlier window), is not a phantom of that window; it
// is matched by its Pix's window. A refund the statement of its Pix's
// window lacks is a phantom; one settled after the statement was read is
// not judged yet.
func TestRefundSettledInALaterWindowThanItsPixIsNoPhantom(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	early := pixItem{E2E: e2e(1), Txid: "early", Valor: "5.00", Horario: winFrom.Add(-2 * time.Hour)}
	early.Devolucoes = []devolucao{{ID: "RE", Valor: "5.00", Status: "DEVOLVIDO", Liquidacao: at(30)}}
	lacking := pixItem{E2E: e2e(2), Txid: "lacking", Valor: "4.00", Horario: at(10)}
	lacking.Devolucoes = []devolucao{{ID: "RL", Valor: "1.00", Status: "DEVOLVIDO", Liquidacao: at(60)}}
	fresh := pixItem{E2E: e2e(3), Txid: "fresh", Valor: "3.00", Horario: at(20)}
	fresh.Devolucoes = []devolucao{{ID: "RF", Valor: "1.00", Status: "DEVOLVIDO", Liquidacao: now.Add(-30 * time.Minute)}}
	for _, it := range []struct {
		charge string
		amount int64
		item   pixItem
	}{{"early", 500, early}, {"lacking", 400, lacking}, {"fresh", 300, fresh}} {
		e.charge(it.charge, it.amount, "")
		if code, st := e.postPix(it.item); code != 200 || st != "accepted" {
			t.Fatalf("webhook of %s: %d %s", it.charge, code, st)
		}
	}
	if len(e.refundSets()) != 3 {
		t.Fatalf("refunds booked %+v", e.refundSets())
	}
	// The PSP lists early with its refund, lacking and fresh without.
	lacking.Devolucoes, fresh.Devolucoes = nil, nil
	e.psp.add(early, lacking, fresh)

	run := e.runPix(winFrom, winTo)
	if !run.Final {
		t.Fatalf("run %+v is not of a final window", run)
	}
	var phantoms []string
	if err := e.db.Select(&phantoms, `SELECT charge_id || ' ' || kind || ' ' || refund_id FROM reconciliation_lines
		WHERE run_id = $1 AND reason = 'phantom' ORDER BY charge_id`, run.ID); err != nil {
		t.Fatal(err)
	}
	if want := []string{"lacking refunded RL"}; !slices.Equal(phantoms, want) {
		t.Fatalf("phantoms of [%s, %s): %q, want %q", winFrom, winTo, phantoms, want)
	}
	// Its Pix's window lists it: matched.
	before := e.runPix(winFrom.Add(-4*time.Hour), winFrom)
	if got := e.outcomes(before.ID); !slices.Equal(got, []string{"paid matched  early", "refunded matched  early"}) {
		t.Fatalf("the Pix's window: %q", got)
	}
	if n := e.count(`SELECT count(*) FROM divergences WHERE reason = 'phantom'`); n != 1 {
		t.Fatalf("%d phantom divergences, want RL's", n)
	}
}
