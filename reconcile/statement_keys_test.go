package reconcile_test

import (
	"context"
	"strings"
	"testing"
	"time"
)

// Two Pix each with a devolução "D1" (the Pix API numbers devoluções per
// Pix) in one CSV: both are refunded. Keyed by the refund id alone, the
// two lines would be one, and one refund lost.
func TestCSVRefundIDsArePerPayment(t *testing.T) {
	e := newEnv(t)
	e.charge("c1", 1000, "")
	e.charge("c2", 1000, "")
	br := func(tm time.Time) string { return tm.In(e.ledger.Calendar().Location()).Format(time.RFC3339) }
	file := "e2e;txid;tipo;valor;horario;devolucao\r\n" +
		e2e(1) + ";c1;PIX;10,00;" + br(at(1)) + ";\r\n" +
		e2e(2) + ";c2;PIX;10,00;" + br(at(2)) + ";\r\n" +
		e2e(1) + ";c1;DEVOLUCAO;3,00;" + br(at(10)) + ";D1\r\n" +
		e2e(2) + ";c2;DEVOLUCAO;4,00;" + br(at(11)) + ";D1\r\n"
	run := e.runCSV("bcbcsv", file)
	t.Logf("run: lines=%d matched=%d booked=%d div=%d", run.Lines, run.Matched, run.Booked, run.Divergences)
	t.Logf("outcomes: %q", e.outcomes(run.ID))
	n := e.count(`SELECT count(*) FROM posting_sets WHERE kind = 'refund'`)
	if n != 2 {
		t.Errorf("%d refunds booked, want 2", n)
	}
}

// A refund id of 200 bytes (within the reader's 256, beyond what its set
// keys may hold) is one invalid line: the lost payment beside it is still
// booked, and so is the rest of its chunk.
func TestCSVLineTheInboxWouldRefuseIsInvalidAlone(t *testing.T) {
	e := newEnv(t)
	e.charge("p1", 1000, "")
	e.charge("ok-1", 100, "")
	if code, _ := e.postHodle("trk-p1", "p1", "10.00"); code != 200 {
		t.Fatal(code)
	}
	ts := at(1).Format(time.RFC3339)
	file := "trackId,externalId,type,amount,date,refundId\n" +
		"trk-ok,ok-1,DEPOSIT,1.00," + ts + ",\n" +
		"trk-p1,p1,REFUND,1.00," + ts + "," + strings.Repeat("r", 200) + "\n"
	for i := 0; i < 2; i++ {
		_, err := e.rec.ReconcileFile(context.Background(), "hodle", strings.NewReader(file), winFrom, winTo)
		t.Logf("run %d: err=%v", i, err)
	}
	if n := e.count(`SELECT count(*) FROM posting_sets WHERE kind = 'sale' AND charge_id = 'ok-1'`); n != 1 {
		t.Errorf("ok-1 sale count %d, want 1", n)
	}
}

// The same across two statement files: the second "D1" is not taken for a
// duplicate of the first.
func TestCSVRefundIDsArePerPaymentAcrossRuns(t *testing.T) {
	e := newEnv(t)
	e.charge("c1", 1000, "")
	e.charge("c2", 1000, "")
	br := func(tm time.Time) string { return tm.In(e.ledger.Calendar().Location()).Format(time.RFC3339) }
	hdr := "e2e;txid;tipo;valor;horario;devolucao\r\n"
	run1 := e.runCSV("bcbcsv", hdr+e2e(1)+";c1;PIX;10,00;"+br(at(1))+";\r\n"+e2e(1)+";c1;DEVOLUCAO;3,00;"+br(at(10))+";D1\r\n")
	run2 := e.runCSV("bcbcsv", hdr+e2e(2)+";c2;PIX;10,00;"+br(at(2))+";\r\n"+e2e(2)+";c2;DEVOLUCAO;4,00;"+br(at(11))+";D1\r\n")
	t.Logf("run1 %q run2 %q", e.outcomes(run1.ID), e.outcomes(run2.ID))
	if n := e.count(`SELECT count(*) FROM posting_sets WHERE kind = 'refund' AND charge_id = 'c2'`); n != 1 {
		t.Errorf("c2 has %d refunds, want 1 (run2 booked=%d)", n, run2.Booked)
	}
}

// Ids holding the key's separator cannot make two refunds one: payment
// "a:b" refunded "c" and payment "a" refunded "b:c" are two refunds.
func TestCSVRefundKeysCannotCollide(t *testing.T) {
	e := newEnv(t)
	e.charge("h1", 1000, "")
	e.charge("h2", 1000, "")
	ts := at(1).Format(time.RFC3339)
	file := "trackId,externalId,type,amount,date,refundId\n" +
		"a:b,h1,DEPOSIT,10.00," + ts + ",\n" +
		"a,h2,DEPOSIT,10.00," + ts + ",\n" +
		"a:b,h1,REFUND,1.00," + ts + ",c\n" +
		"a,h2,REFUND,2.00," + ts + ",b:c\n"
	run := e.runCSV("hodle", file)
	if n := e.count(`SELECT count(*) FROM posting_sets WHERE kind = 'refund'`); n != 2 {
		t.Errorf("%d refunds booked, want 2; outcomes %q", n, e.outcomes(run.ID))
	}
}

// Every line of a run the inbox would refuse at booking is an invalid
// line saying why, each with its divergence, written together.
func TestLinesRefusedAtBookingAreInvalidLinesWithTheirDivergences(t *testing.T) {
	e := newEnv(t)
	for _, id := range []string{"p1", "p2"} {
		e.charge(id, 1000, "")
		if code, _ := e.postHodle("trk-"+id, id, "10.00"); code != 200 {
			t.Fatal(code)
		}
	}
	e.charge("ok-1", 100, "")
	ts := at(1).Format(time.RFC3339)
	file := "trackId,externalId,type,amount,date,refundId\n" +
		"trk-p1,p1,REFUND,1.00," + ts + "," + strings.Repeat("r", 200) + "\n" +
		"trk-ok,ok-1,DEPOSIT,1.00," + ts + ",\n" +
		"trk-p2,p2,REFUND,1.00," + ts + "," + strings.Repeat("s", 200) + "\n"
	run, err := e.rec.ReconcileFile(context.Background(), "hodle", strings.NewReader(file), winFrom, winTo)
	if err != nil {
		t.Fatal(err)
	}
	var refused []struct {
		Line       int64  `db:"line"`
		Detail     string `db:"detail"`
		Divergence *int64 `db:"divergence_id"`
	}
	if err := e.db.Select(&refused, `SELECT line, detail, divergence_id FROM reconciliation_lines
		WHERE run_id = $1 AND outcome = 'divergence' AND reason = 'invalid_line' ORDER BY line`, run.ID); err != nil {
		t.Fatal(err)
	}
	if len(refused) != 2 || refused[0].Line != 1 || refused[1].Line != 3 {
		t.Fatalf("refused lines %+v, want lines 1 and 3", refused)
	}
	for _, l := range refused {
		if l.Detail == "" || l.Divergence == nil {
			t.Errorf("line %d: detail %q, divergence %v", l.Line, l.Detail, l.Divergence)
		}
	}
	if run.Booked != 1 || run.Divergences != 2 {
		t.Errorf("run booked %d, %d divergences; want 1 and 2", run.Booked, run.Divergences)
	}
}
