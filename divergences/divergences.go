// Package divergences is the one owner of razao's divergences: the
// problems set aside for finance that the ledger could not book as they
// came (an unknown charge, an amount mismatch, a refund above what was
// paid, a delivery that gave up after its attempts...). It opens them,
// with their divergence.opened event in the same transaction, lists them,
// resolves them with a note, and requeues the deliveries that gave up; no
// other package writes the divergences table.
//
// The delivery path (package webhook, deciding with package charges)
// opens one per delivery (OpenForDeliveries, OpenForDelivery); finance
// reads and resolves them over the API and the console (List, Get,
// Resolve); razao inbox retry and a PSP's redelivery requeue a delivery
// that gave up (Requeue, RequeueCTE). Resolving and requeueing are one
// rule: one validation of the note (checkNote) and one UPDATE (settleSQL).
package divergences

import (
	"database/sql"
	"time"

	"github.com/razao/razao/internal/kind"
)

// Reason says why something is a divergence. The list is the database's
// ck_divergences_reason constraint, word for word (a test compares them).
type Reason string

// Reasons a delivery is a divergence, as the delivery path decides them.
const (
	ReasonUnknownCharge        Reason = "unknown_charge"
	ReasonAmountMismatch       Reason = "amount_mismatch"
	ReasonCurrencyMismatch     Reason = "currency_mismatch"
	ReasonRefundExceedsPaid    Reason = "refund_exceeds_paid"
	ReasonRefundAmountMissing  Reason = "refund_amount_missing"
	ReasonMalformed            Reason = "malformed"
	ReasonDisputed             Reason = "disputed"
	ReasonSecondPayment        Reason = "second_payment"
	ReasonProcessingFailed     Reason = "processing_failed"
	ReasonRefundOfOtherPayment Reason = "refund_of_other_payment"
	ReasonRefundAmountChanged  Reason = "refund_amount_changed"
	ReasonRefundWithoutPayment Reason = "refund_without_payment"
	ReasonMerchantMismatch     Reason = "merchant_mismatch"
)

// Reasons lists every divergence reason.
var Reasons = []Reason{ReasonUnknownCharge, ReasonAmountMismatch, ReasonCurrencyMismatch, ReasonRefundExceedsPaid,
	ReasonRefundAmountMissing, ReasonMalformed, ReasonDisputed, ReasonSecondPayment, ReasonProcessingFailed,
	ReasonRefundOfOtherPayment, ReasonRefundAmountChanged, ReasonRefundWithoutPayment, ReasonMerchantMismatch}

// Status is where a divergence stands (the ck_divergences_status list).
type Status string

// The statuses.
const (
	StatusOpen     Status = "open"
	StatusResolved Status = "resolved"
)

// Statuses lists every status.
var Statuses = []Status{StatusOpen, StatusResolved}

// Source is where a divergence was found.
type Source string

// The sources.
const (
	// SourceWebhook: the delivery path, deciding an inbox delivery.
	SourceWebhook Source = "webhook"
	// SourceReconciliation: a reconciliation run, comparing the PSP's
	// statement with the ledger.
	SourceReconciliation Source = "reconciliation"
)

// MaxNoteLength bounds a resolution note, in characters.
const MaxNoteLength = 2000

// Errors a caller (the HTTP layer, the CLI) tells apart with errors.Is.
var (
	// ErrInvalidStatus: a status filter other than open, resolved or empty.
	ErrInvalidStatus = kind.New(kind.Invalid, "invalid-parameter", "Invalid parameter", "invalid divergence status")
	// ErrInvalidNote: an empty, overlong or non-text note.
	ErrInvalidNote = kind.New(kind.Invalid, "invalid-parameter", "Invalid parameter", "invalid resolution note")
	// ErrNotFound: no divergence has the id (or, for Requeue, the delivery
	// has no divergence).
	ErrNotFound = kind.New(kind.NotFound, "not-found", "Not found", "divergence not found")
	// ErrAlreadyResolved: the divergence was resolved before.
	ErrAlreadyResolved = kind.New(kind.Conflict, "already-resolved", "Divergence already resolved", "divergence already resolved")
	// ErrNotRequeueable: the delivery's divergence is not one of giving
	// up after its attempts (processing_failed): applying it again would
	// decide the same.
	ErrNotRequeueable = kind.New(kind.Conflict, "not-requeueable", "Divergence cannot be requeued",
		"the delivery did not give up after its attempts (its divergence is not processing_failed)")
)

// Divergence is one divergence as finance reads it.
type Divergence struct {
	ID int64 `json:"id"`
	// InboxID is the webhook delivery it was set aside from, if any.
	InboxID        int64      `json:"inbox_id,omitempty"`
	ChargeID       string     `json:"charge_id,omitempty"`
	Reason         Reason     `json:"reason"`
	Detail         string     `json:"detail"`
	Status         Status     `json:"status"`
	ResolutionNote string     `json:"resolution_note,omitempty"`
	ResolvedAt     *time.Time `json:"resolved_at,omitempty"`
	CreatedAt      time.Time  `json:"created_at"`
}

// row is a divergences row as read (columns).
type row struct {
	ID             int64          `db:"id"`
	InboxID        sql.NullInt64  `db:"inbox_id"`
	ChargeID       sql.NullString `db:"charge_id"`
	Reason         string         `db:"reason"`
	Detail         string         `db:"detail"`
	Status         string         `db:"status"`
	ResolutionNote sql.NullString `db:"resolution_note"`
	ResolvedAt     sql.NullTime   `db:"resolved_at"`
	CreatedAt      time.Time      `db:"created_at"`
}

// columns are what row reads, in every statement that returns divergences.
const columns = `id, inbox_id, charge_id, reason, detail, status, resolution_note, resolved_at, created_at`

func (r row) divergence() Divergence {
	d := Divergence{
		ID: r.ID, InboxID: r.InboxID.Int64, ChargeID: r.ChargeID.String, Reason: Reason(r.Reason), Detail: r.Detail,
		Status: Status(r.Status), ResolutionNote: r.ResolutionNote.String, CreatedAt: r.CreatedAt.UTC(),
	}
	if r.ResolvedAt.Valid {
		t := r.ResolvedAt.Time.UTC()
		d.ResolvedAt = &t
	}
	return d
}
