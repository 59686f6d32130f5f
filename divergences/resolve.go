package divergences

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
)

// checkNote is the one rule for a resolution note, whoever resolves
// (finance over the API or the console, an operator requeueing a
// delivery): 1 to MaxNoteLength characters of valid UTF-8 without NUL,
// once surrounding space is trimmed. It returns the note as stored.
func checkNote(note string) (string, error) {
	note = strings.TrimSpace(note)
	if note == "" || !utf8.ValidString(note) || utf8.RuneCountInString(note) > MaxNoteLength || strings.ContainsRune(note, 0) {
		return "", fmt.Errorf("%w: want 1 to %d characters of text", ErrInvalidNote, MaxNoteLength)
	}
	return note, nil
}

// Deliveries is the inbox's side of a requeue: the SQL over the inbox's
// table that Requeue and RequeueCTE put in their one statement, so that
// a divergence is resolved and its delivery made due again together.
// Package inbox implements it (inbox.Requeues): the inbox's table and
// states are its own, and it imports this package, which names it only
// through this interface.
type Deliveries interface {
	// SetAsideSQL is a condition: the delivery whose id is the SQL
	// expression id is still set aside.
	SetAsideSQL(id string) string
	// RequeueSQL is the common table expression "requeued": the
	// deliveries among ids (a subquery) that are still set aside, made
	// due now with their attempts reset, returning their ids.
	RequeueSQL(ids string) string
}

// Resolve marks an open divergence resolved at now with note (see
// checkNote) and returns it. It fails with ErrNotFound,
// ErrAlreadyResolved, ErrInvalidNote, or ErrBookingRequired for a
// divergence that stands for money (one that offers bookings: Describe),
// which only Book resolves. Of two concurrent resolutions one wins; the
// other gets ErrAlreadyResolved. Nothing in the ledger changes.
func Resolve(ctx context.Context, db sqlx.ExtContext, id int64, note string, now time.Time) (Divergence, error) {
	note, err := checkNote(note)
	if err != nil {
		return Divergence{}, err
	}
	// A divergence's reason and sides never change: read before the
	// UPDATE, they say whether a note may close it.
	var f figures
	err = sqlx.GetContext(ctx, db, &f, figuresSQL+` WHERE d.id = $1`, id)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return Divergence{}, fmt.Errorf("%w: %d", ErrNotFound, id)
	case err != nil:
		return Divergence{}, fmt.Errorf("resolve divergence %d: %w", id, err)
	case f.Status != StatusOpen:
		return Divergence{}, fmt.Errorf("%w: %d", ErrAlreadyResolved, id)
	}
	if err := requireNoMoney(f); err != nil {
		return Divergence{}, err
	}
	var r row
	err = sqlx.GetContext(ctx, db, &r, resolveSQL, id, note, now)
	if err == nil {
		return r.divergence(), nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return Divergence{}, fmt.Errorf("resolve divergence %d: %w", id, err)
	}
	return Divergence{}, fmt.Errorf("%w: %d", ErrAlreadyResolved, id)
}

// Requeue resolves, with note (see checkNote) at now, the divergence of
// the delivery deliveryID that gave up after its attempts, and makes the
// delivery due again with its attempts reset, in one statement: for after
// the cause (an outage, a bad deploy) is fixed. It returns the resolved
// divergence, or fails with ErrInvalidNote, ErrNotFound (the delivery has
// no divergence), ErrAlreadyResolved or ErrNotRequeueable. in is the
// inbox's side of the statement. The caller rings the workers
// (inbox.Processor.Requeue does).
func Requeue(ctx context.Context, db sqlx.ExtContext, in Deliveries, deliveryID int64, note string, now time.Time) (Divergence, error) {
	note, err := checkNote(note)
	if err != nil {
		return Divergence{}, err
	}
	var r row
	err = sqlx.GetContext(ctx, db, &r, requeueSQL(in), deliveryID, note, now)
	if err == nil {
		return r.divergence(), nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return Divergence{}, fmt.Errorf("requeue delivery %d: %w", deliveryID, err)
	}
	err = sqlx.GetContext(ctx, db, &r, byDeliverySQL, deliveryID)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return Divergence{}, fmt.Errorf("%w: delivery %d has no divergence (it did not give up, or there is no such delivery)", ErrNotFound, deliveryID)
	case err != nil:
		return Divergence{}, fmt.Errorf("requeue delivery %d: %w", deliveryID, err)
	case r.Status == string(StatusResolved):
		return Divergence{}, fmt.Errorf("%w: %d, of delivery %d", ErrAlreadyResolved, r.ID, deliveryID)
	}
	return Divergence{}, fmt.Errorf("%w: delivery %d's divergence %d is %s", ErrNotRequeueable, deliveryID, r.ID, r.Reason)
}

// RedeliveryNote is the note of a divergence resolved because its PSP
// delivered it again (RequeueCTE): a valid note like any other (a test
// holds it to checkNote).
const RedeliveryNote = "requeued: the PSP delivered it again"

// RequeueCTE is Requeue for the deliveries among ids (a subquery) in a
// caller's statement, as the common table expressions "resolved" and
// "requeued" (the inbox ids made due): the inbox's redeliveries requeue
// in the same statement that finds them, whose side of it is in. The note
// is RedeliveryNote.
func RequeueCTE(in Deliveries, ids string) string {
	return settleSQL(`d.inbox_id IN (`+ids+`) AND `+requeueable(in), pq.QuoteLiteral(RedeliveryNote), `now()`, in)
}
