package divergences_test

import (
	"context"
	"encoding/json"
	"math"
	"testing"
	"time"

	"github.com/razao/razao/divergences"
	"github.com/razao/razao/internal/pgtest"
	"github.com/razao/razao/money"
)

// A delivery's divergence stores its detail's English as detail, as
// before, and its kind and arguments beside it (detail_code,
// detail_args), which read back through PostgreSQL's jsonb as they were:
// the largest amount exactly, a Pix's parts, figures, a duration. The
// divergence.opened event's detail is the English.
func TestADeliverysDivergenceStoresItsDetailsKind(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	ctx := context.Background()
	fee := int64(35)
	for i, said := range []divergences.Said{
		divergences.SecondPayment("psp:E1", "psp:E2", math.MaxInt64),
		divergences.PartsDoNotAddUp(10000, money.Parts{Original: 10000, Fine: 200, Rebate: 50}, 10150),
		divergences.StatedAgain(true, "evt-1", "refund.succeeded", divergences.Figures{Fee: &fee}, 7, divergences.Figures{}),
		divergences.RefundParkedTooLong(36*time.Hour, "ord-1"),
		divergences.RefundWithoutID(),
	} {
		id, _ := delivery(t, db, said.Code+"-"+string(rune('a'+i)), "divergent", divergences.ReasonMalformed)
		db.MustExec(`DELETE FROM divergences WHERE inbox_id = $1`, id)
		d := divergences.Delivery{InboxID: id, Reason: divergences.ReasonMalformed, Detail: said}
		opened, err := divergences.OpenForDeliveries(ctx, db, []divergences.Delivery{d})
		if err != nil {
			t.Fatal(err)
		}
		got, err := divergences.Get(ctx, db, opened[id])
		if err != nil {
			t.Fatal(err)
		}
		if got.Detail != said.English() || got.Said.English() != said.English() || got.DetailPT() != said.Portuguese() ||
			got.Said.Code != said.Code {
			t.Errorf("%s: stored %q, read back %s %v (%q / %q)", said.Code, got.Detail, got.Said.Code, got.Said.Args,
				got.Said.English(), got.DetailPT())
		}
		var p struct{ Detail string }
		if b, err := json.Marshal(d.Event(got.ID).Payload); err != nil || json.Unmarshal(b, &p) != nil || p.Detail != said.English() {
			t.Errorf("%s: event payload %s", said.Code, b)
		}
	}
}
