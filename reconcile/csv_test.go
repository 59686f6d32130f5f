package reconcile_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/razao/razao/reconcile"
)

// TestCSVLostHodlePaymentIsRecognisedByItsTrackID: a Hodle payment whose
// webhook was answered 503 (Hodle never retries) is booked from the CSV
// statement; the webhook arriving afterwards under its own key is
// recognised as the same payment by its trackId: nothing is booked twice
// and no second-payment divergence opens.
func TestCSVLostHodlePaymentIsRecognisedByItsTrackID(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.charge("order-1", 4990, "")
	file := "trackId,externalId,type,amount,date,refundId\n" +
		"trk-1,order-1,DEPOSIT,49.90," + at(3).Format(time.RFC3339) + ",\n"
	run := e.runCSV("hodle", file)
	if run.Booked != 1 || run.Lines != 1 || run.FileSHA256 == nil {
		t.Fatalf("run %+v", run)
	}
	if code, st := e.postHodle("trk-1", "order-1", "49.90"); code != 200 || st != "accepted" {
		t.Fatalf("late webhook: %d %s", code, st)
	}
	if e.sales() != 1 || e.count(`SELECT count(*) FROM divergences`) != 0 {
		t.Fatalf("%d sales, %d divergences, want 1 and 0", e.sales(), e.count(`SELECT count(*) FROM divergences`))
	}
	again := e.runCSV("hodle", file)
	if again.Matched != 1 || again.Booked != 0 {
		t.Fatalf("second run %+v", again)
	}
}

// TestCSVFeeThatDiffersIsADivergence: AbacatePay states its fee; a
// statement fee other than the one booked is a divergence with both.
func TestCSVFeeThatDiffersIsADivergence(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.charge("ab-1", 10000, "")
	e.charge("ab-2", 10000, "")
	file := "id,externalId,amount,fee,paidAt\n" +
		"ch_1,ab-1,10000,80," + at(1).Format(time.RFC3339) + "\n"
	first := e.runCSV("abacate", file)
	if first.Booked != 1 {
		t.Fatalf("first run %+v", first)
	}
	// The PSP's statement now states another fee for the same payment.
	run := e.runCSV("abacate", strings.Replace(file, ",80,", ",99,", 1))
	lines, _ := linesOf(e, run.ID)
	l := lines[0]
	if l.Outcome != "divergence" || *l.Reason != reconcile.ReasonFeeMismatch || *l.Fee != 99 || *l.LedgerFee != 80 {
		t.Fatalf("fee line %+v", l)
	}
}

// TestCSVBrazilianDialectReconcilesLikeTheAPI: a br statement (';',
// decimal comma, BOM) reconciles to the same outcomes and the same
// bookings as the equivalent statement read from the Pix API.
func TestCSVBrazilianDialectReconcilesLikeTheAPI(t *testing.T) {
	t.Parallel()
	setup := func(e *env) {
		for i, amount := range []int64{123456, 500, 700} {
			e.charge(fmt.Sprintf("br%d", i+1), amount, "")
		}
		// br2 was delivered; br1 and br3 were lost; br3 differs.
		if code, _ := e.postPix(pixItem{E2E: e2e(2), Txid: "br2", Valor: "5.00", Horario: at(2)}); code != 200 {
			t.Fatal(code)
		}
	}
	api := newEnv(t)
	setup(api)
	api.psp.add(
		pixItem{E2E: e2e(1), Txid: "br1", Valor: "1234.56", Horario: at(1),
			Devolucoes: []devolucao{{ID: "R1", Valor: "34.56", Status: "DEVOLVIDO", Liquidacao: at(50)}}},
		pixItem{E2E: e2e(2), Txid: "br2", Valor: "5.00", Horario: at(2)},
		pixItem{E2E: e2e(3), Txid: "br3", Valor: "7.01", Horario: at(3)})
	apiRun := api.runPix(winFrom, winTo)

	csv := newEnv(t)
	csv.cfgs[0] = reconcile.EndpointConfig{Endpoint: "bcb", Source: "csv", FinalAfter: time.Hour, CSV: brPixCSV}
	csv.rec = csv.reconciler(fakeClientSecret)
	setup(csv)
	br := func(t time.Time) string { return t.In(csv.ledger.Calendar().Location()).Format(time.RFC3339) }
	file := "\xEF\xBB\xBFe2e;txid;tipo;valor;horario;devolucao\r\n" +
		e2e(1) + ";br1;PIX;1.234,56;" + br(at(1)) + ";\r\n" +
		e2e(1) + ";br1;DEVOLUCAO;34,56;" + br(at(50)) + ";R1\r\n" +
		e2e(2) + ";br2;PIX;5,00;" + br(at(2)) + ";\r\n" +
		e2e(3) + ";br3;PIX;7,01;" + br(at(3)) + ";\r\n"
	csvRun := csv.runCSV("bcb", file)

	if got, want := csv.outcomes(csvRun.ID), api.outcomes(apiRun.ID); !slices.Equal(got, want) {
		t.Fatalf("csv lines\n%q\napi lines\n%q", got, want)
	}
	if csvRun.Matched != apiRun.Matched || csvRun.Booked != apiRun.Booked || csvRun.Divergences != apiRun.Divergences {
		t.Fatalf("csv %+v\napi %+v", csvRun, apiRun)
	}
	sets := func(e *env) []string {
		var out []string
		if err := e.db.Select(&out, `SELECT kind || ' ' || charge_id || ' ' || amount || ' ' || competence
			FROM posting_sets WHERE kind IN ('sale', 'refund') ORDER BY charge_id, kind`); err != nil {
			t.Fatal(err)
		}
		return out
	}
	if got, want := sets(csv), sets(api); !slices.Equal(got, want) || len(got) != 3 {
		t.Fatalf("csv booked %q, api booked %q", got, want)
	}
}

// TestCSVHostileLines: every line that cannot be read, or that the ledger
// could not take, ends as a divergence saying why; nothing is stored for
// it and the rest of the file is reconciled.
func TestCSVHostileLines(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.charge("ok-1", 100, "")
	ts := at(1).Format(time.RFC3339)
	file := "trackId,externalId,type,amount,date,refundId\n" +
		"t1,ok-1,DEPOSIT,1.00," + ts + ",\n" +
		"t2,ok-1,DEPOSIT,92233720368547758.07," + ts + ",\n" + // 2^63-1 centavos, above the ledger's limit
		"t3,x,DEPOSIT,-1.00," + ts + ",\n" +
		"t4|x\x00,x,DEPOSIT,1.00," + ts + ",\n" +
		"t5,x,DEPOSIT,1.00,0001-01-01T00:00:00Z,\n" +
		"t6,x,DEPOSIT,1.00,not-a-time,\n" +
		"t7,x,CHARGEBACK,1.00," + ts + ",\n" +
		"t8,x,REFUND,1.00," + ts + ",\n" +
		"too,few\n"
	run := e.runCSV("hodle", file)
	got := e.outcomes(run.ID)
	want := []string{"paid booked  ok-1"}
	for range 8 {
		want = append(want, "invalid divergence invalid_line")
	}
	if !slices.Equal(got, want) {
		t.Fatalf("lines\n%q\nwant\n%q", got, want)
	}
	if e.sales() != 1 {
		t.Fatalf("%d sales, want 1", e.sales())
	}
}

// TestCSVRefusedWhole: a file without a mapped column, or a line longer
// than the record limit, is refused as input, and no run is left running.
func TestCSVRefusedWhole(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for name, file := range map[string]string{
		"missing column": "trackId,amount\nt1,1.00\n",
		"huge line":      "trackId,externalId,type,amount,date,refundId\n" + strings.Repeat("x", 70<<10) + "\n",
		// One quoted field of short lines is one record.
		"huge quoted field": "trackId,externalId,type,amount,date,refundId\n\"" + strings.Repeat("x\n", 40<<10) + "\",x,DEPOSIT,1.00,,\n",
		"empty":             "",
	} {
		_, err := e.rec.ReconcileFile(context.Background(), "hodle", strings.NewReader(file), winFrom, winTo)
		if !errors.Is(err, reconcile.ErrInput) {
			t.Errorf("%s: %v, want ErrInput", name, err)
		}
	}
	if n := e.count(`SELECT count(*) FROM reconciliation_runs WHERE status <> 'failed'`); n != 0 {
		t.Fatalf("%d runs not failed", n)
	}
	if _, err := e.rec.ReconcileFile(context.Background(), "bcb", strings.NewReader(""), winFrom, winTo); !errors.Is(err, reconcile.ErrUnknownEndpoint) {
		t.Fatalf("file for a bcb-pix statement: %v", err)
	}
	if _, err := e.rec.ReconcileFile(context.Background(), "hodle", strings.NewReader(""), time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC), winTo); !errors.Is(err, reconcile.ErrInput) {
		t.Fatalf("window from 0001-01-01: %v", err)
	}
}

// A file without a window stated takes it from its lines' times: when
// every line is invalid (a negative amount), the run says that, not that
// no time was readable.
func TestCSVWithOnlyInvalidLinesSaysSo(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	file := "trackId,externalId,type,amount,date,refundId\nt1,o1,DEPOSIT,-5.00,2026-11-30T12:00:00Z,\n"
	_, err := e.rec.ReconcileFile(context.Background(), "hodle", strings.NewReader(file), time.Time{}, time.Time{})
	if !errors.Is(err, reconcile.ErrInput) || !strings.Contains(err.Error(), "no valid line to take the window from (1 line(s), none valid)") {
		t.Fatalf("%v, want ErrInput saying no line is valid", err)
	}
}
