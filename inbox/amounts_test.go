package inbox_test

import (
	"net/http"
	"testing"
)

// TestAmountAboveTheMaximumIsMalformed: an authentic Hodle delivery paying
// or refunding more than the maximum (the default R$ 10 billion), up to
// int64's own maximum, is authentic but malformed: 400, kept with its
// body, a 'malformed' divergence, and no money moves.
func TestAmountAboveTheMaximumIsMalformed(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.Charge("order-1", 4990, "", 0)
	bodies := []string{
		hodlePaid("t-1", "order-1", "10000000000.01"),       // the maximum plus one centavo
		hodlePaid("t-2", "order-1", "92233720368547758.07"), // 2^63−1 centavos
		hodleRefund("rf-1", "order-1", "10000000000.01"),
	}
	for _, body := range bodies {
		if r := e.PostHodle(body); r.Code != http.StatusBadRequest || r.Body.Status != "malformed" {
			t.Fatalf("%s: got %d %+v, want 400 malformed", body, r.Code, r.Body)
		}
	}
	if n := e.Count(`SELECT count(*) FROM divergences WHERE reason = 'malformed' AND detail LIKE '%above the maximum of 1000000000000%'`); n != 3 {
		t.Fatalf("%d malformed divergences naming the maximum, want 3", n)
	}
	if n := e.Count(`SELECT count(*) FROM inbox WHERE status = 'divergent' AND length(body) > 0`); n != 3 {
		t.Fatalf("%d deliveries kept with their body, want 3", n)
	}
	if n := e.Count(`SELECT count(*) FROM posting_sets`); n != 0 {
		t.Fatalf("%d posting sets, want none", n)
	}
	// The maximum itself is an amount like any other (here a mismatch).
	if r := e.PostHodle(hodlePaid("t-3", "order-1", "10000000000.00")); r.Code != http.StatusOK {
		t.Fatalf("payment of the maximum: %d %+v", r.Code, r.Body)
	}
}
