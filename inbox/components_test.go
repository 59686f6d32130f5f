package inbox_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/razao/razao/verify"
)

// pixItem is one Pix of a callback, paid to charge txid at the test's
// clock, with componentesValor cv (raw JSON, "" for none) and devoluções
// devs (raw JSON, "" for none).
func pixItem(e2e, txid, valor, cv, devs string) string {
	s := fmt.Sprintf(`{"endToEndId":%q,"txid":%q,"valor":%q,"horario":%q`, e2e, txid, valor, clock.UTC().Format(time.RFC3339))
	if cv != "" {
		s += `,"componentesValor":` + cv
	}
	if devs != "" {
		s += `,"devolucoes":` + devs
	}
	return s + "}"
}

// The Pix API's own Pix Troco example: 80.00 purchase, 20.00 change.
const trocoParts = `{"original":{"valor":"80.00"},"troco":{"valor":"20.00","modalidadeAgente":"AGTEC","prestadorDeServicoDeSaque":"12345678"}}`

// wantVerified runs razao verify over the test's ledger.
func (e *env) wantVerified() {
	e.T.Helper()
	r, err := verify.Run(context.Background(), e.DB)
	if err != nil {
		e.T.Fatalf("verify: %v", err)
	}
	if !r.OK() {
		var b strings.Builder
		r.WriteTo(&b)
		e.T.Fatalf("verify:\n%s", b.String())
	}
}

// wantDivergence asserts the ledger's only divergence has reason and a
// detail saying each of says.
func (e *env) wantDivergence(reason string, says ...string) {
	e.T.Helper()
	var got []struct {
		Reason string `db:"reason"`
		Detail string `db:"detail"`
	}
	if err := e.DB.Select(&got, `SELECT reason, detail FROM divergences ORDER BY id`); err != nil {
		e.T.Fatal(err)
	}
	if len(got) != 1 || got[0].Reason != reason {
		e.T.Fatalf("divergences %+v, want one %s", got, reason)
	}
	for _, s := range says {
		if !strings.Contains(got[0].Detail, s) {
			e.T.Fatalf("divergence %q does not say %q", got[0].Detail, s)
		}
	}
}

// A Troco Pix of 80.00 purchase + 20.00 change on a charge of 80.00 is
// its payment: a sale of 80.00, and 20.00 that came in by Pix and went out
// of the till.
func TestBCBPixTrocoBooksTheSaleAndTheCashPaidOut(t *testing.T) {
	t.Parallel()
	e := newEnvWith(t, pixEndpoint(10))
	e.Charge("troco1", 8000, "partner-42", 1000)
	r := e.PostPix("pix", []byte(`{"pix":[`+pixItem("E12345678202608312230troco000001", "troco1", "100.00", trocoParts, "")+`]}`))
	if r.Code != 200 {
		t.Fatalf("callback: %d %q", r.Code, r.Body.Error)
	}
	if n := e.Count(`SELECT count(*) FROM divergences`); n != 0 {
		t.Fatalf("%d divergences, want none", n)
	}
	e.WantBalances(map[string]int64{"assets:cash": 10000, "income:revenue": -8000, "assets:till:pix-change": -2000,
		"expenses:commission": 800, "liabilities:commission-payable:partner-42": -800})
	if n := e.Count(`SELECT count(*) FROM charges WHERE id = 'troco1' AND state = 'paid' AND paid_amount = 8000`); n != 1 {
		t.Fatal("charge troco1 is not paid 8000")
	}
	e.wantVerified()
}

// On a charge of 100.00 the same Pix is not the charge's payment: the sale
// in it is 80.00. Booking it would make the change revenue.
func TestBCBPixTrocoOnAChargeOfValorIsAnAmountMismatch(t *testing.T) {
	t.Parallel()
	e := newEnvWith(t, pixEndpoint(10))
	e.Charge("troco2", 10000, "", 0)
	r := e.PostPix("pix", []byte(`{"pix":[`+pixItem("E12345678202608312230troco000002", "troco2", "100.00", trocoParts, "")+`]}`))
	if r.Code != 200 {
		t.Fatalf("callback: %d %q", r.Code, r.Body.Error)
	}
	e.wantDivergence("amount_mismatch", "paid 10000", "(original) is 8000", "troco 20.00", "charge is 10000")
	e.WantBalances(map[string]int64{})
	e.wantVerified()
}

// A cobv paid late (the spec's example: 100.00, multa 3.00, juros 2.00)
// and one paid early (abatimento, desconto): the sale is the original,
// each other part is on its own account, every set balances.
func TestBCBPixCobvBooksInterestFinesRebatesAndDiscountsApart(t *testing.T) {
	t.Parallel()
	e := newEnvWith(t, pixEndpoint(10))
	e.Charge("cobv1", 10000, "", 0)
	e.Charge("cobv2", 10000, "", 0)
	r := e.PostPix("pix", []byte(`{"pix":[`+
		pixItem("E12345678202608312230cobv000001x", "cobv1", "105.00",
			`{"original":{"valor":"100.00"},"multa":{"valor":"3.00"},"juros":{"valor":"2.00"}}`, "")+","+
		pixItem("E12345678202608312230cobv000002x", "cobv2", "93.50",
			`{"original":{"valor":"100.00"},"abatimento":{"valor":"5.00"},"desconto":{"valor":"1.50"}}`, "")+`]}`))
	if r.Code != 200 {
		t.Fatalf("callback: %d %q", r.Code, r.Body.Error)
	}
	if n := e.Count(`SELECT count(*) FROM divergences`); n != 0 {
		t.Fatalf("%d divergences, want none", n)
	}
	e.WantBalances(map[string]int64{"assets:cash": 10500 + 9350, "income:revenue": -20000,
		"income:fines": -300, "income:interest": -200, "expenses:rebates": 500, "expenses:discounts": 150})
	e.wantVerified()
}

// Parts that do not add up to valor are the PSP's figures disagreeing:
// a divergence with both sides, the callback answered 200, nothing booked.
func TestBCBPixComponentsNotAddingUpToValorAreADivergence(t *testing.T) {
	t.Parallel()
	e := newEnvWith(t, pixEndpoint(10))
	e.Charge("troco3", 8000, "", 0)
	r := e.PostPix("pix", []byte(`{"pix":[`+pixItem("E12345678202608312230troco000003", "troco3", "100.00",
		`{"original":{"valor":"80.00"},"troco":{"valor":"15.00","modalidadeAgente":"AGTEC","prestadorDoServicoDeSaque":"12345678"}}`, "")+`]}`))
	if r.Code != 200 {
		t.Fatalf("callback: %d %q", r.Code, r.Body.Error)
	}
	e.wantDivergence("amount_mismatch", "paid 10000", "original 80.00 + troco 15.00", "add up to 9500")
	e.WantBalances(map[string]int64{})
}

// A devolução of natureza RETIRADA gives the change back, not the sale:
// it must not be booked as a refund of revenue. The sale's own refund
// (ORIGINAL) is.
func TestBCBPixRetiradaIsNotARefundOfTheSale(t *testing.T) {
	t.Parallel()
	e := newEnvWith(t, pixEndpoint(10))
	e.Charge("troco4", 8000, "", 0)
	settled := clock.UTC().Add(time.Minute).Format(time.RFC3339)
	devs := `[{"id":"ret1","rtrId":"D12345678202608312230abcdefghijk","valor":"20.00","natureza":"RETIRADA",
	    "horario":{"solicitacao":"` + settled + `","liquidacao":"` + settled + `"},"status":"DEVOLVIDO"},
	  {"id":"ori1","rtrId":"D12345678202608312230abcdefghijl","valor":"30.00","natureza":"ORIGINAL",
	    "horario":{"solicitacao":"` + settled + `","liquidacao":"` + settled + `"},"status":"DEVOLVIDO"}]`
	r := e.PostPix("pix", []byte(`{"pix":[`+pixItem("E12345678202608312230troco000004", "troco4", "100.00", trocoParts, devs)+`]}`))
	if r.Code != 200 {
		t.Fatalf("callback: %d %q", r.Code, r.Body.Error)
	}
	e.wantDivergence("refund_exceeds_paid", "ret1", "RETIRADA")
	e.WantBalances(map[string]int64{"assets:cash": 10000 - 3000, "income:revenue": -8000 + 3000, "assets:till:pix-change": -2000})
	e.wantVerified()
}
