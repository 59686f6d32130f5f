package divergences_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/razao/razao/divergences"
	"github.com/razao/razao/inbox"
	"github.com/razao/razao/internal/pgtest"
)

// delivery stores an inbox delivery in status with a divergence of
// reason, and returns the delivery's and the divergence's ids.
func delivery(t *testing.T, db *sqlx.DB, eventID, status string, reason divergences.Reason) (int64, int64) {
	t.Helper()
	var id, div int64
	if err := db.Get(&id, `INSERT INTO inbox (delivery_key, endpoint, scheme, merchant, event_type, event_id, kind, event, body, status, attempts, processed_at)
		VALUES ('std|charge.paid|' || $1, 'std', 'standard', 'loja-1', 'charge.paid', $1, 'paid', '{}', '\x00', $2, 10, now())
		RETURNING id`, eventID, status); err != nil {
		t.Fatal(err)
	}
	if err := db.Get(&div, `INSERT INTO divergences (inbox_id, reason, detail) VALUES ($1, $2, 'd') RETURNING id`, id, reason); err != nil {
		t.Fatal(err)
	}
	return id, div
}

// Requeueing a delivery resolves its divergence, so it is held to the
// one rule for a note that resolving is held to: every note one refuses
// the other refuses with the same error, and nothing changes.
func TestRequeueRefusesTheNotesResolveRefuses(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	ctx := context.Background()
	now := time.Date(2026, 9, 2, 14, 0, 0, 0, time.UTC)
	id, div := delivery(t, db, "e1", "divergent", divergences.ReasonProcessingFailed)
	for _, note := range []string{"", "   \t\n", strings.Repeat("é", divergences.MaxNoteLength+1), "\xff", "a\x00b"} {
		_, rerr := divergences.Resolve(ctx, db, div, note, now)
		_, qerr := divergences.Requeue(ctx, db, inbox.Requeues{}, id, note, now)
		if !errors.Is(rerr, divergences.ErrInvalidNote) || !errors.Is(qerr, divergences.ErrInvalidNote) {
			t.Errorf("note %q: resolve %v, requeue %v; want both ErrInvalidNote", note, rerr, qerr)
		}
	}
	var status, divStatus string
	if err := db.QueryRow(`SELECT i.status, d.status FROM inbox i JOIN divergences d ON d.inbox_id = i.id WHERE i.id = $1`, id).
		Scan(&status, &divStatus); err != nil {
		t.Fatal(err)
	}
	if status != "divergent" || divStatus != "open" {
		t.Fatalf("refused notes changed the delivery: %s, divergence %s", status, divStatus)
	}
	// The longest note both accept, trimmed alike.
	long := strings.Repeat("é", divergences.MaxNoteLength)
	d, err := divergences.Requeue(ctx, db, inbox.Requeues{}, id, "  "+long+"  ", now)
	if err != nil || d.ResolutionNote != long || d.Status != divergences.StatusResolved || !d.ResolvedAt.Equal(now) {
		t.Fatalf("requeue: %+v, %v", d, err)
	}
	var attempts int
	if err := db.QueryRow(`SELECT status, attempts FROM inbox WHERE id = $1`, id).Scan(&status, &attempts); err != nil {
		t.Fatal(err)
	}
	if status != "pending" || attempts != 0 {
		t.Fatalf("requeued delivery %s with %d attempts, want pending with 0", status, attempts)
	}
}

// Only a delivery that gave up after its attempts is requeued: any other
// divergence would be decided the same way again. Each refusal says why.
func TestRequeueOnlyDeliveriesThatGaveUp(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	ctx := context.Background()
	now := time.Now()
	mismatch, _ := delivery(t, db, "e1", "divergent", divergences.ReasonAmountMismatch)
	gaveUp, div := delivery(t, db, "e2", "divergent", divergences.ReasonProcessingFailed)
	if _, err := divergences.Resolve(ctx, db, div, "resolved by hand", now); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name     string
		delivery int64
		want     error
	}{
		{"amount mismatch", mismatch, divergences.ErrNotRequeueable},
		{"already resolved", gaveUp, divergences.ErrAlreadyResolved},
		{"no divergence", 9999, divergences.ErrNotFound},
	} {
		if _, err := divergences.Requeue(ctx, db, inbox.Requeues{}, tt.delivery, "retry", now); !errors.Is(err, tt.want) {
			t.Errorf("%s: %v, want %v", tt.name, err, tt.want)
		}
	}
	var pending int
	db.Get(&pending, `SELECT count(*) FROM inbox WHERE status = 'pending'`)
	if pending != 0 {
		t.Fatalf("%d deliveries requeued by refusals", pending)
	}
}

// The note a PSP's redelivery resolves with is a note like any other.
func TestRedeliveryNoteIsAValidNote(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	_, div := delivery(t, db, "e1", "divergent", divergences.ReasonProcessingFailed)
	d, err := divergences.Resolve(context.Background(), db, div, divergences.RedeliveryNote, time.Now())
	if err != nil || d.ResolutionNote != divergences.RedeliveryNote {
		t.Fatalf("%+v, %v", d, err)
	}
}
