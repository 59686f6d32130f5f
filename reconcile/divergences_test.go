package reconcile_test

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/razao/razao/auth"
	"github.com/razao/razao/divergences"
	"github.com/razao/razao/events"
	"github.com/razao/razao/internal/contract"
	"github.com/razao/razao/reconcile"
)

// openedEvents are the divergence.opened events of the outbox, as the
// event stream reads them, by divergence id.
func openedEvents(e *env) map[int64]map[string]any {
	e.t.Helper()
	evs, err := events.Since(context.Background(), e.db, "", events.MaxLimit)
	if err != nil {
		e.t.Fatal(err)
	}
	out := map[int64]map[string]any{}
	for _, ev := range evs {
		if ev.Topic != events.TopicDivergenceOpened {
			continue
		}
		var p map[string]any
		if err := json.Unmarshal(ev.Payload, &p); err != nil {
			e.t.Fatal(err)
		}
		id := int64(p["divergence_id"].(float64))
		if _, dup := out[id]; dup {
			e.t.Fatalf("divergence %d announced twice", id)
		}
		out[id] = p
	}
	return out
}

// listOpen reads GET /v1/divergences?status=open through the API, every
// response validated against the OpenAPI document.
func listOpen(e *env, h http.Handler, token string) []divergences.Divergence {
	e.t.Helper()
	rr := call(h, "GET", "/v1/divergences?status=open", token, "", nil)
	var page divergences.Page
	if rr.Code != http.StatusOK || json.Unmarshal(rr.Body.Bytes(), &page) != nil {
		e.t.Fatalf("GET /v1/divergences: %d %s", rr.Code, rr.Body)
	}
	return page.Divergences
}

// A difference a reconciliation run finds (an amount that differs, an
// unknown txid, a phantom payment, a fee that differs) is a divergence
// for finance like the webhook front's: listed by GET /v1/divergences
// with both sides, announced by divergence.opened, and pointed at by its
// line. Running the windows again opens none twice and announces none
// again; the new runs' lines point at the same divergences.
func TestReconciliationDivergencesAreListedAndAnnouncedOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	h, tok := apiEnv(e)
	h = contract.Middleware(t, h)
	fee := divergentScene(t, e)
	fee = strings.Replace(fee, ",80,", ",99,", 1)

	kicks := 0
	e.rec.OnCommit = func() { kicks++ }
	runs := func() []reconcile.Run {
		return []reconcile.Run{e.runPix(winFrom, winTo), e.runCSV("abacate", fee)}
	}
	first := runs()
	if first[0].Divergences != 3 || first[1].Divergences != 1 {
		t.Fatalf("runs %+v", first)
	}
	divs := listOpen(e, h, tok[auth.Read])
	byReason := map[divergences.Reason]divergences.Divergence{}
	for _, d := range divs {
		if d.Source != divergences.SourceReconciliation || d.Reconciliation == nil {
			t.Fatalf("divergence %+v, want a reconciliation's", d)
		}
		byReason[d.Reason] = d
	}
	if len(divs) != 4 || len(byReason) != 4 {
		t.Fatalf("%d open divergences %+v, want amount_mismatch, unknown_charge, phantom and fee_mismatch", len(divs), divs)
	}
	i64 := func(p *int64) int64 {
		if p == nil {
			return -1
		}
		return *p
	}
	short := byReason[divergences.ReasonAmountMismatch]
	if short.ChargeID != "short" || short.Statement == nil || short.Statement.Amount != 9900 || short.Statement.PSPID != e2e(2) ||
		short.Ledger == nil || i64(short.Ledger.Amount) != 10000 || short.Reconciliation.Endpoint != "bcb" ||
		i64(short.Reconciliation.RunID) != first[0].ID {
		t.Errorf("amount mismatch without both sides: %+v %+v %+v", short, short.Statement, short.Ledger)
	}
	unknown := byReason[divergences.ReasonUnknownCharge]
	if unknown.Statement == nil || unknown.Statement.ChargeRef != "nosuch" || unknown.Statement.Amount != 100 || unknown.Ledger != nil {
		t.Errorf("unknown txid: %+v %+v", unknown, unknown.Statement)
	}
	ph := byReason[divergences.ReasonPhantom]
	if ph.ChargeID != "phantom" || ph.Statement != nil || ph.Ledger == nil || i64(ph.Ledger.Amount) != 10000 || ph.Ledger.InboxID == nil {
		t.Errorf("phantom without the ledger's side: %+v %+v", ph, ph.Ledger)
	}
	fm := byReason[divergences.ReasonFeeMismatch]
	if fm.ChargeID != "ab-1" || fm.Statement == nil || i64(fm.Statement.Fee) != 99 || fm.Ledger == nil || i64(fm.Ledger.Fee) != 80 ||
		fm.Reconciliation.Endpoint != "abacate" {
		t.Errorf("fee mismatch without both sides: %+v %+v %+v", fm, fm.Statement, fm.Ledger)
	}

	evs := openedEvents(e)
	for _, d := range divs {
		p, ok := evs[d.ID]
		if !ok {
			t.Errorf("divergence %d (%s) was not announced", d.ID, d.Reason)
			continue
		}
		rec, _ := p["reconciliation"].(map[string]any)
		if p["source"] != "reconciliation" || p["reason"] != string(d.Reason) || p["charge_id"] != d.ChargeID ||
			p["detail"] != d.Detail || rec["endpoint"] != d.Reconciliation.Endpoint {
			t.Errorf("divergence %d announced as %v", d.ID, p)
		}
	}
	if len(evs) != 4 {
		t.Errorf("%d divergence.opened events, want 4", len(evs))
	}
	// Each run that opened divergences kicks the event stream's notifier.
	if kicks != 2 {
		t.Errorf("%d notifier kicks, want 2", kicks)
	}
	pointing := func(runs []reconcile.Run) []int64 {
		var ids []int64
		for _, run := range runs {
			lines, _ := linesOf(e, run.ID)
			for _, l := range lines {
				if l.Outcome == "divergence" {
					if l.DivergenceID == nil {
						t.Fatalf("run %d line %d (%s) points at no divergence", run.ID, l.Line, *l.Reason)
					}
					ids = append(ids, *l.DivergenceID)
				}
			}
		}
		slices.Sort(ids)
		return ids
	}
	var want []int64
	for _, d := range divs {
		want = append(want, d.ID)
	}
	slices.Sort(want)
	if got := pointing(first); !slices.Equal(got, want) {
		t.Fatalf("lines point at %v, want %v", got, want)
	}

	// Finance resolves one; the same windows run again.
	if rr := call(h, "POST", "/v1/divergences/"+jsonNumber(fm.ID)+"/resolve", tok[auth.Admin], "application/json",
		[]byte(`{"resolution":"fee_difference","note":"taxa corrigida pelo PSP"}`)); rr.Code != http.StatusOK {
		t.Fatalf("resolve: %d %s", rr.Code, rr.Body)
	}
	again := runs()
	if again[0].Divergences != 3 || again[1].Divergences != 1 {
		t.Fatalf("second runs %+v", again)
	}
	if got := pointing(again); !slices.Equal(got, want) {
		t.Fatalf("the second runs' lines point at %v, want the first's %v", got, want)
	}
	if n := e.count(`SELECT count(*) FROM divergences`); n != 4 {
		t.Fatalf("%d divergences after running the windows again, want 4", n)
	}
	if kicks != 2 {
		t.Errorf("%d notifier kicks after runs that opened nothing, want still 2", kicks)
	}
	if n := len(openedEvents(e)); n != 4 {
		t.Fatalf("%d divergence.opened events after running the windows again, want 4", n)
	}
	if open := listOpen(e, h, tok[auth.Read]); len(open) != 3 {
		t.Fatalf("%d open after running again, want 3: a resolved divergence stays resolved", len(open))
	}
}

// A line the delivery path set aside already (its webhook's divergence)
// is that divergence: the run's line points at it and opens none.
func TestReconciledLineOfADivergentDeliveryIsItsDivergence(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.charge("short", 10000, "")
	short := pixItem{E2E: e2e(2), Txid: "short", Valor: "99.00", Horario: at(30)}
	if code, st := e.postPix(short); code != 200 || st != "accepted" {
		t.Fatalf("webhook: %d %s", code, st)
	}
	var webhookDiv int64
	if err := e.db.Get(&webhookDiv, `SELECT id FROM divergences WHERE reason = 'amount_mismatch' AND source = 'webhook'`); err != nil {
		t.Fatalf("the webhook's divergence: %v", err)
	}
	e.psp.add(short)
	run := e.runPix(winFrom, winTo)
	lines, _ := linesOf(e, run.ID)
	if len(lines) != 1 || lines[0].Outcome != "divergence" || lines[0].DivergenceID == nil || *lines[0].DivergenceID != webhookDiv {
		t.Fatalf("lines %+v, want one pointing at divergence %d", lines, webhookDiv)
	}
	if n := e.count(`SELECT count(*) FROM divergences`); n != 1 {
		t.Fatalf("%d divergences, want the webhook's alone", n)
	}
}

// divergentScene is the books and statements every kind of run divergence
// comes from: charges paid1, short, phantom and ab-1; paid1 and phantom
// paid through the webhook; the PSP's statement listing paid1, short
// stated as 99.00 and an unknown txid (phantom left out); abacate's CSV
// booking ab-1 with a fee of 0.80, which it returns for a run to state
// again otherwise.
func divergentScene(t *testing.T, e *env) string {
	t.Helper()
	for _, c := range []string{"paid1", "short", "phantom"} {
		e.charge(c, 10000, "")
	}
	e.charge("ab-1", 10000, "")
	paid := pixItem{E2E: e2e(1), Txid: "paid1", Valor: "100.00", Horario: at(5)}
	phantom := pixItem{E2E: e2e(9), Txid: "phantom", Valor: "100.00", Horario: at(6)}
	for _, it := range []pixItem{paid, phantom} {
		if code, st := e.postPix(it); code != 200 || st != "accepted" {
			t.Fatalf("webhook: %d %s", code, st)
		}
	}
	e.psp.add(paid,
		pixItem{E2E: e2e(2), Txid: "short", Valor: "99.00", Horario: at(30)},
		pixItem{E2E: e2e(3), Txid: "nosuch", Valor: "1.00", Horario: at(40)})
	csv := "id,externalId,amount,fee,paidAt\nch_1,ab-1,10000,80," + at(1).Format(time.RFC3339) + "\n"
	if run := e.runCSV("abacate", csv); run.Booked != 1 {
		t.Fatalf("abacate's first run %+v", run)
	}
	return csv
}
