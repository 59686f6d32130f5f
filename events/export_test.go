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
