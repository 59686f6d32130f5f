package inbox

import (
	"context"
	"fmt"

	"github.com/razao/razao/webhook/scheme"
)

// statementHeaders are the audit headers of a delivery read from a PSP's
// statement instead of received: it came with no HTTP request.
var statementHeaders = []byte(`{"Source":"statement"}`)

// CheckVerified says whether StoreVerified would take ev for endpoint ep,
// so that a caller storing many can set aside the one it would refuse
// instead of losing the whole call to it.
func (in *Inbox) CheckVerified(ep *Endpoint, ev scheme.Event) error {
	one := []scheme.Event{ev}
	if err := checkEvents(ep, one); err != nil {
		return err
	}
	return checkAmounts(one, in.proc.applier.Ledger.Limit())
}

// StoreVerified stores the events of one delivery that razao verified by
// other means than the webhook, a PSP's statement read by reconciliation,
// for endpoint ep, exactly as an authentic webhook delivery is stored:
// under each event's (type, id) key, so that the same event arriving by
// webhook, before or after, is a duplicate, and applied by the same
// delivery path. body is kept as the delivery's body for audit. Events the
// inbox could not store or whose amounts exceed the ledger's limit are
// refused whole, as the webhook front refuses them; at most ep.MaxItems
// events go in one call.
func (in *Inbox) StoreVerified(ctx context.Context, ep *Endpoint, evs []scheme.Event, body []byte) ([]Stored, error) {
	if err := checkEvents(ep, evs); err != nil {
		return nil, fmt.Errorf("store statement events for %s: %w", ep.Name, err)
	}
	if err := checkAmounts(evs, in.proc.applier.Ledger.Limit()); err != nil {
		return nil, fmt.Errorf("store statement events for %s: %w", ep.Name, err)
	}
	return in.put(ctx, ep, entriesFor(ep, evs, body), body, statementHeaders)
}
