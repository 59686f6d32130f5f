package events

import (
	"context"

	"github.com/jmoiron/sqlx"
)

// Listening is closed once Run's LISTEN has taken effect, so a test that
// pins down the notification path does not commit before anyone listens.
func (h *Hub) Listening() <-chan struct{} { return h.listening }

// Append is AppendAll of one event, for the tests.
func Append(ctx context.Context, tx sqlx.ExecerContext, topic Topic, chargeID string, payload any) error {
	return AppendAll(ctx, tx, Draft{Topic: topic, ChargeID: chargeID, Payload: payload})
}

// ReadsInFlight is how many reads hold one of the hub's reader slots: a
// read counted by Reads whose query may not have run yet.
func (h *Hub) ReadsInFlight() int {
	h.slotsOnce.Do(func() { h.slots = make(chan struct{}, positive(h.MaxReaders, DefaultMaxReaders)) })
	return len(h.slots)
}
