package inbox_test

import (
	"context"
	"testing"
	"time"

	"github.com/razao/razao/monthsums"
	"github.com/razao/razao/periods"
	"github.com/razao/razao/reports"
)

// TestPixMEDReturnIsBookedApartFromTheMerchantsRefund: a devolução made
// under the MED (natureza MED_OPERACIONAL) is not the merchant's own
// refund: each refund keeps its rtrId and natureza with its posting set;
// the MED return is booked on
// expenses:med-returns, its own line of the trial balance, and the income
// statement's refunds are the merchant's only.
func TestPixMEDReturnIsBookedApartFromTheMerchantsRefund(t *testing.T) {
	t.Parallel()
	e := newPixEnv(t)
	body := `{"pix":[{"endToEndId":"E12345678202009091221abcdef12345","txid":"cd1fe328c875481285a6f233ae41b662","valor":"100.00",
	  "horario":"2026-09-10T13:03:33.902Z","devolucoes":[
	    {"id":"000AAA111","rtrId":"D12345678202009091000abcde123456","valor":"10.00","natureza":"ORIGINAL",
	     "horario":{"solicitacao":"2026-09-10T14:00:00Z","liquidacao":"2026-09-10T14:00:05Z"},"status":"DEVOLVIDO"},
	    {"id":"000MED222","rtrId":"D12345678202009091000abcdeMED222","valor":"20.00","natureza":"MED_OPERACIONAL",
	     "horario":{"solicitacao":"2026-09-11T14:00:00Z","liquidacao":"2026-09-11T14:00:05Z"},"status":"DEVOLVIDO"}]}]}`
	if r := e.PostPix("pix", []byte(body)); r.Code != 200 || r.Body.Status != "accepted" {
		t.Fatalf("callback: %d %+v", r.Code, r.Body)
	}
	e.Settled()
	e.WantBalances(map[string]int64{"assets:cash": 10000 - 1000 - 2000, "income:revenue": -10000 + 1000, "expenses:med-returns": 2000})
	var refunds []struct {
		RefundID string `db:"refund_id"`
		ReturnID string `db:"return_id"`
		Nature   string `db:"refund_nature"`
	}
	if err := e.DB.Select(&refunds, `SELECT refund_id, return_id, refund_nature FROM posting_sets WHERE kind = 'refund' ORDER BY refund_id`); err != nil {
		t.Fatal(err)
	}
	if len(refunds) != 2 || refunds[0] != (struct {
		RefundID string `db:"refund_id"`
		ReturnID string `db:"return_id"`
		Nature   string `db:"refund_nature"`
	}{"000AAA111", "D12345678202009091000abcde123456", "ORIGINAL"}) || refunds[1].ReturnID != "D12345678202009091000abcdeMED222" || refunds[1].Nature != "MED_OPERACIONAL" {
		t.Fatalf("refunds as kept: %+v", refunds)
	}

	ctx := context.Background()
	m := periods.Month{Year: 2026, Month: time.September}
	tb, err := reports.TrialBalance(ctx, e.DB, monthsums.Books{}, m)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, l := range tb.Lines {
		if l.Account == "expenses:med-returns" {
			found = l.Debits == 2000 && l.Credits == 0 && l.Closing == 2000
		}
		if l.Account == "income:revenue" && l.Debits != 1000 {
			t.Errorf("revenue debited %d, want the merchant's refund of 1000 only", l.Debits)
		}
	}
	if !found {
		t.Fatalf("trial balance has no MED line of 2000: %+v", tb.Lines)
	}
	inc, err := reports.IncomeStatement(ctx, e.DB, monthsums.Books{}, m)
	if err != nil {
		t.Fatal(err)
	}
	if inc.Refunds != 1000 || inc.RefundsCount != 1 || inc.NetIncome != 10000-1000-2000 {
		t.Fatalf("income statement %+v, want the merchant's refund of 1000 alone and the MED return in the result", inc)
	}
}
