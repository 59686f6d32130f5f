package inbox_test

import (
	"context"
	"testing"

	"github.com/razao/razao/webhook"
	"github.com/razao/razao/webhook/scheme"
)

// A source that only stores verified deliveries (reconciliation, reading a
// PSP's statement) hands them to Inbox.Store and the one path books them:
// exactly once, a second store of the same delivery being a duplicate.
func TestStoredVerifiedDeliveryIsBookedByTheOnePath(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.Charge("order-1", 4990, "partner-42", 1000)
	ep, err := webhook.NewEndpoint(defaultEndpoints[2], func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	ev := scheme.Event{Kind: scheme.KindPaid, Type: "charge.paid", EventID: "recon-1", ChargeID: "order-1",
		Amount: 4990, HasAmount: true, OccurredAt: clock}
	for i, wantDuplicate := range []bool{false, true} {
		stored, err := e.Inbox.Store(context.Background(), &ep.Endpoint, []scheme.Event{ev}, []byte(`{"from":"statement"}`), []byte(`{}`))
		if err != nil {
			t.Fatal(err)
		}
		if len(stored) != 1 || stored[0].Duplicate != wantDuplicate {
			t.Fatalf("store %d: %+v, want duplicate %v", i, stored, wantDuplicate)
		}
		e.Drain()
	}
	e.assertPaidOnce("order-1")
}
