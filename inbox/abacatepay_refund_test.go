package inbox_test

import (
	"fmt"
	"net/http"
	"testing"
)

// An AbacatePay refund that states its amount (refundedAmount) is booked
// for that amount, not for the whole payment: a partial refund of R$ 30
// of a R$ 100 checkout leaves R$ 70 of revenue. Without the field the
// refund stays the documented full refund of what remains.
func TestAbacatepayRefundWithStatedAmountIsBookedForIt(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.Charge("order-ab", 10000, "", 0)
	paid := `{"id":"log_p1","event":"checkout.completed","apiVersion":2,"devMode":false,
		"data":{"checkout":{"id":"bill_1","externalId":"order-ab","paidAmount":10000,"platformFee":0,"status":"PAID"}}}`
	if r := e.PostAbacate(paid); r.Code != http.StatusOK || r.Body.Status != "accepted" {
		t.Fatalf("paid: %d %+v", r.Code, r.Body)
	}
	refund := func(id string, amount string) string {
		return fmt.Sprintf(`{"id":%q,"event":"checkout.refunded","apiVersion":2,"devMode":false,
		"data":{"checkout":{"id":"bill_1","externalId":"order-ab","paidAmount":10000%s,"status":"REFUNDED"}}}`, id, amount)
	}
	if r := e.PostAbacate(refund("log_r1", `,"refundedAmount":3000`)); r.Code != http.StatusOK || r.Body.Status != "accepted" {
		t.Fatalf("refund: %d %+v", r.Code, r.Body)
	}
	if got := e.Count(`SELECT coalesce(sum(amount), 0) FROM posting_sets WHERE kind = 'refund' AND charge_id = 'order-ab'`); got != 3000 {
		t.Fatalf("refund booked for %d centavos, want the stated 3000", got)
	}
	e.WantBalances(map[string]int64{"assets:cash": 7000, "income:revenue": -7000})
	// A later refund without an amount refunds what remains, once.
	if r := e.PostAbacate(refund("log_r2", "")); r.Code != http.StatusOK {
		t.Fatalf("full refund: %d %+v", r.Code, r.Body)
	}
	e.WantBalances(map[string]int64{"assets:cash": 0, "income:revenue": 0})
}
