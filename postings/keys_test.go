package postings_test

import (
	"testing"
	"time"

	"github.com/razao/razao/postings"
)

// TestRefundKeysNeverCollide: the keys of a refund's sets name the charge
// and the PSP's refund id in full, readable in the journal; whatever bytes
// the refund id holds (':', '|', digits that look like a length), two
// different pairs never make one key, and the sets carry the keys
// RefundKeys reports (which intake checks against MaxKeyLength).
func TestRefundKeysNeverCollide(t *testing.T) {
	t.Parallel()
	pairs := [][2]string{
		{"order-1", "rf|77"}, {"order-1|rf", "77"}, {"order-1:rf", "77"}, {"order-1", "rf:77"},
		{"7:order-1", "77"}, {"order-1", "7:order-177"}, {"a", "1:b"}, {"a:1", "b"},
	}
	seen := map[string][2]string{}
	at := time.Date(2026, 8, 10, 12, 0, 0, 0, time.UTC)
	for _, p := range pairs {
		keys := postings.RefundKeys(p[0], p[1])
		refund, err := postings.Refund(p[0], p[1], "BRL", 100, at)
		if err != nil {
			t.Fatal(err)
		}
		reversal, _, err := postings.CommissionReversalSet(p[0], p[1], "partner-42", "BRL", 10, at)
		if err != nil {
			t.Fatal(err)
		}
		if refund.IdempotencyKey != keys[0] || reversal.IdempotencyKey != keys[1] {
			t.Fatalf("%v: sets keyed %q, %q; RefundKeys says %q", p, refund.IdempotencyKey, reversal.IdempotencyKey, keys)
		}
		for _, k := range keys {
			if other, ok := seen[k]; ok {
				t.Fatalf("%v and %v both make key %q", p, other, k)
			}
			seen[k] = p
		}
	}
}
