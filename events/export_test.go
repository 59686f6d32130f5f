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

// Reads is how many times the hub has read the outbox, and Wakes how many
// times it has woken its streams: with every stream at one cursor, at most
// one read per wake, whatever their number.
func (h *Hub) Reads() uint64 { return h.reads.Load() }

// Wakes: see Reads.
func (h *Hub) Wakes() uint64 { return h.wakes.Load() }
