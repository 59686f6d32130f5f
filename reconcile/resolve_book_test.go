package reconcile_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/razao/razao/accounts"
	"github.com/razao/razao/auth"
	"github.com/razao/razao/divergences"
	"github.com/razao/razao/internal/contract"
	"github.com/razao/razao/internal/ledgertest"
	"github.com/razao/razao/reconcile"
	"github.com/razao/razao/verify"
)

// Resolving the divergences of a reconciliation by booking makes the
// ledger agree with the PSP: a payment 1.00 short of its charge booked as
// the sale it is, a payment for an unknown txid and a second payment held
// as customer credits, the second payment's refund drawn from its credit,
// a fee that differs booked to fees. Each offer is read from GET
// /v1/divergences/{id} with amounts from both sides; a note alone is
// refused for them. Running the windows again finds nothing left: no
// divergence opened, every divergent line pointing at a resolved one, and
// cash equal to what the PSP's statements hold.
func TestResolvingByBookingLeavesTheNextReconciliationNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	h, tok := apiEnv(e)
	h = contract.Middleware(t, h)
	for _, c := range []string{"paid1", "short"} {
		e.charge(c, 10000, "")
	}
	e.charge("twice", 5000, "")
	e.charge("ab-1", 10000, "")
	paid := pixItem{E2E: e2e(1), Txid: "paid1", Valor: "100.00", Horario: at(5)}
	first := pixItem{E2E: e2e(4), Txid: "twice", Valor: "50.00", Horario: at(10)}
	// The customer pays "twice" again, and the PSP gives 30.00 of it back.
	again := pixItem{E2E: e2e(5), Txid: "twice", Valor: "50.00", Horario: at(12),
		Devolucoes: []devolucao{{ID: "dv1", Valor: "30.00", Status: "DEVOLVIDO", Liquidacao: at(90)}}}
	for _, it := range []pixItem{paid, first, again} {
		if code, _ := e.postPix(it); code != 200 {
			t.Fatalf("webhook %s: %d", it.E2E, code)
		}
	}
	e.psp.add(paid, first, again,
		pixItem{E2E: e2e(2), Txid: "short", Valor: "99.00", Horario: at(30)},
		pixItem{E2E: e2e(3), Txid: "nosuch", Valor: "1.00", Horario: at(40)})
	fee := "id,externalId,amount,fee,paidAt\nch_1,ab-1,10000,80," + at(1).Format(time.RFC3339) + "\n"
	if run := e.runCSV("abacate", fee); run.Booked != 1 {
		t.Fatalf("abacate's first run %+v", run)
	}
	fee = strings.Replace(fee, ",80,", ",99,", 1)
	runs := func() []reconcile.Run {
		return []reconcile.Run{e.runPix(winFrom, winTo), e.runCSV("abacate", fee)}
	}
	runs()
	opened := e.count(`SELECT count(*) FROM divergences`)
	open := listOpen(e, h, tok[auth.Read])
	byReason := map[divergences.Reason]divergences.Divergence{}
	for _, d := range open {
		byReason[d.Reason] = d
	}
	if len(open) != 5 || len(byReason) != 5 {
		t.Fatalf("open divergences %+v, want amount_mismatch, unknown_charge, second_payment, refund_of_other_payment, fee_mismatch", open)
	}

	offers := func(d divergences.Divergence) map[divergences.Booking]int64 {
		t.Helper()
		rr := call(h, "GET", "/v1/divergences/"+jsonNumber(d.ID), tok[auth.Read], "", nil)
		var got divergences.Detail
		if rr.Code != http.StatusOK || json.Unmarshal(rr.Body.Bytes(), &got) != nil {
			t.Fatalf("GET divergence %d: %d %s", d.ID, rr.Code, rr.Body)
		}
		out := map[divergences.Booking]int64{}
		for _, o := range got.Offers {
			out[o.Resolution] = o.Amount
		}
		return out
	}
	resolve := func(d divergences.Divergence, body string) *divergences.Divergence {
		t.Helper()
		rr := call(h, "POST", "/v1/divergences/"+jsonNumber(d.ID)+"/resolve", tok[auth.Admin], "application/json", []byte(body))
		if rr.Code != http.StatusOK {
			t.Fatalf("resolve %d (%s) with %s: %d %s", d.ID, d.Reason, body, rr.Code, rr.Body)
		}
		var got divergences.Divergence
		json.Unmarshal(rr.Body.Bytes(), &got)
		return &got
	}
	wantOffers := map[divergences.Reason]map[divergences.Booking]int64{
		divergences.ReasonAmountMismatch:       {divergences.BookCustomerCredit: 9900, divergences.BookRevenue: 9900},
		divergences.ReasonUnknownCharge:        {divergences.BookCustomerCredit: 100, divergences.BookRevenue: 100},
		divergences.ReasonSecondPayment:        {divergences.BookCustomerCredit: 5000},
		divergences.ReasonRefundOfOtherPayment: {divergences.BookCreditRefund: 3000, divergences.BookLoss: 3000},
		divergences.ReasonFeeMismatch:          {divergences.BookFeeDifference: 19},
	}
	for reason, want := range wantOffers {
		if got := offers(byReason[reason]); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s offers %v, want %v", reason, got, want)
		}
	}

	second := byReason[divergences.ReasonSecondPayment]
	rr := call(h, "POST", "/v1/divergences/"+jsonNumber(second.ID)+"/resolve", tok[auth.Admin], "application/json",
		[]byte(`{"note":"cliente pagou duas vezes"}`))
	if rr.Code != http.StatusConflict || !strings.Contains(rr.Body.String(), "booking-required") ||
		!strings.Contains(rr.Body.String(), "customer_credit of 5000") {
		t.Fatalf("a note alone for a second payment: %d %s", rr.Code, rr.Body)
	}
	credit := resolve(second, `{"resolution":"customer_credit","note":"cliente pagou duas vezes"}`)
	if credit.ResolutionSetID == nil || credit.Resolution != divergences.BookCustomerCredit {
		t.Fatalf("second payment resolved as %+v", credit)
	}
	resolve(byReason[divergences.ReasonRefundOfOtherPayment],
		fmt.Sprintf(`{"resolution":"credit_refund","credit_divergence_id":%d}`, second.ID))
	resolve(byReason[divergences.ReasonAmountMismatch], `{"resolution":"revenue","note":"cliente pagou 99,00; vendido assim"}`)
	resolve(byReason[divergences.ReasonUnknownCharge], `{"resolution":"customer_credit"}`)
	resolve(byReason[divergences.ReasonFeeMismatch], `{"resolution":"fee_difference"}`)
	if rest := listOpen(e, h, tok[auth.Read]); len(rest) != 0 {
		t.Fatalf("open after resolving: %+v", rest)
	}

	again2 := runs()
	if n := e.count(`SELECT count(*) FROM divergences`); n != opened {
		t.Fatalf("%d divergences after running again, want the first runs' %d", n, opened)
	}
	for _, run := range again2 {
		lines, _ := linesOf(e, run.ID)
		for _, l := range lines {
			if l.Outcome != "divergence" {
				continue
			}
			if l.DivergenceID == nil {
				t.Fatalf("run %d line %d points at no divergence", run.ID, l.Line)
			}
			if d, err := divergences.Get(t.Context(), e.db, *l.DivergenceID); err != nil || d.Status != divergences.StatusResolved {
				t.Errorf("run %d line %d points at %+v (%v), want a resolved divergence", run.ID, l.Line, d, err)
			}
		}
	}
	if rest := listOpen(e, h, tok[auth.Read]); len(rest) != 0 {
		t.Fatalf("open after running again: %+v", rest)
	}
	// The statements hold 100 + 50 + 50 − 30 + 99 + 1 (bcb) and 100 − 0.99
	// (abacate).
	if cash := ledgertest.Balance(t, e.db, accounts.Cash, ""); cash != 10000+5000+5000-3000+9900+100+10000-99 {
		t.Errorf("cash %d, want what the PSP holds, %d", cash, 10000+5000+5000-3000+9900+100+10000-99)
	}
	if c := ledgertest.Balance(t, e.db, accounts.CustomerCredits, ""); c != -(5000 - 3000 + 100) {
		t.Errorf("customer credits %d, want -2100: 20.00 left of the second payment and the unknown txid's 1.00", c)
	}
	if r, err := verify.Run(t.Context(), e.db); err != nil || !r.OK() {
		t.Errorf("razao verify over the resolutions' sets: %v %+v", err, r)
	}
}
