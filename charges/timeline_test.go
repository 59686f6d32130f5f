package charges_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/razao/razao/charges"
	"github.com/razao/razao/inbox"
	"github.com/razao/razao/internal/pgtest"
	"github.com/razao/razao/reconcile"
)

var timelineSources = charges.TimelineSources{Deliveries: inbox.ChargeDeliveries, Lines: reconcile.ChargeLines}

// A timeline is bounded: of a kind the charge has more of than
// MaxTimelinePerKind, the oldest are shown and the kind is named in
// Truncated; the deliveries naming the charge by the PSP reference the
// app registered are its deliveries too; another charge's are not.
func TestTimelineShowsTheOldestOfEachKindAndSaysItIsTruncated(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	ctx := context.Background()
	for _, n := range []charges.NewCharge{{ID: "order-1", PSPRef: "track-1", Amount: 4990}, {ID: "order-2", Amount: 4990}} {
		if _, _, err := charges.Register(ctx, db, n); err != nil {
			t.Fatal(err)
		}
	}
	over := charges.MaxTimelinePerKind + 1
	// Deliveries received a second apart, alternately naming order-1 by
	// its id and by its PSP reference; and one of order-2.
	db.MustExec(`INSERT INTO inbox (delivery_key, endpoint, scheme, merchant, event_type, event_id, kind, charge_ref, event, body, status, received_at)
		SELECT 'k' || g, 'hodle', 'hodle', 'loja-1', 'DEPOSIT_ASSET_FAILED', 'e' || g, 'failed',
			CASE WHEN g % 2 = 0 THEN 'order-1' ELSE 'track-1' END, '{}', '\x00', 'processed',
			timestamptz '2026-08-01 12:00:00Z' + g * interval '1 second'
		FROM generate_series(1, $1::int) g`, over)
	db.MustExec(`INSERT INTO inbox (delivery_key, endpoint, scheme, merchant, event_type, event_id, kind, charge_ref, event, body, status)
		VALUES ('other', 'hodle', 'hodle', 'loja-1', 'DEPOSIT_ASSET_FAILED', 'other', 'failed', 'order-2', '{}', '\x00', 'processed')`)
	db.MustExec(`INSERT INTO outbox (topic, charge_id, payload) VALUES ('charge.failed', 'order-1', '{}'), ('charge.failed', 'order-2', '{}')`)

	tl, err := charges.GetTimeline(ctx, db, "order-1", timelineSources)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(tl.Truncated, []string{charges.EntryDelivery}) || tl.PerKindLimit != charges.MaxTimelinePerKind {
		t.Fatalf("truncated %v (per kind %d), want the deliveries alone", tl.Truncated, tl.PerKindLimit)
	}
	var deliveries, events int
	for i, e := range tl.Entries {
		switch e.Type {
		case charges.EntryDelivery:
			deliveries++
			if e.Delivery.EventID == "e201" || e.Delivery.EventID == "other" {
				t.Errorf("entry %d: delivery %s shown: the newest one, or another charge's", i, e.Delivery.EventID)
			}
		case charges.EntryEvent:
			events++
		}
		if i > 0 && e.At.Before(tl.Entries[i-1].At) {
			t.Errorf("entry %d (%s at %v) before the one ahead of it (%v)", i, e.Type, e.At, tl.Entries[i-1].At)
		}
	}
	if deliveries != charges.MaxTimelinePerKind || events != 1 {
		t.Fatalf("%d deliveries and %d events, want %d and 1", deliveries, events, charges.MaxTimelinePerKind)
	}
	if tl.Entries[0].Delivery == nil || tl.Entries[0].Delivery.EventID != "e1" {
		t.Fatalf("first entry %+v, want the first delivery", tl.Entries[0])
	}

	tl, err = charges.GetTimeline(ctx, db, "order-2", timelineSources)
	if err != nil || len(tl.Truncated) != 0 || len(tl.Entries) != 2 {
		t.Fatalf("order-2: %v %+v, want its delivery and its event, whole", err, tl)
	}
	if _, err := charges.GetTimeline(ctx, db, "nope", timelineSources); !errors.Is(err, charges.ErrNotFound) {
		t.Fatalf("unknown charge: %v, want ErrNotFound", err)
	}
}
