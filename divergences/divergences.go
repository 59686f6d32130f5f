// Package divergences is the one owner of razao's divergences: the
// problems set aside for finance that the ledger could not book as they
// came (an unknown charge, an amount mismatch, a refund above what was
// paid, a delivery that gave up after its attempts...). It opens them,
// with their divergence.opened event in the same transaction, lists them,
// resolves them with a note, and requeues the deliveries that gave up; no
// other package writes the divergences table.
//
// The delivery path (package webhook, deciding with package charges)
// opens one per delivery (OpenForDeliveries, OpenForDelivery); a
// reconciliation run (package reconcile) opens, set-based in one
// statement, one per fact and reason it finds (OpenFound: an amount, a
// refund or a fee that differs, an unknown charge, a phantom, a line that
// could not be read), keyed so that running a window again opens none
// twice, with the statement's and the ledger's sides; finance
// reads and resolves them over the API and the console (List, Get,
// Describe, Resolve, Book); razao inbox retry and a PSP's redelivery
// requeue a delivery that gave up (Requeue, RequeueCTE). Resolving and
// requeueing are one rule: one validation of the note (checkNote) and one
// UPDATE (settleSQL). A divergence that stands for money (one whose
// figures offer bookings: offers.go) is resolved only by booking one of
// them (Book), its set and its resolution in one transaction; a note
// alone closes the rest.
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

// Reasons a reconciliation run finds besides the delivery path's (it
// finds unknown_charge, amount_mismatch, second_payment and
// merchant_mismatch too).
const (
	// ReasonFeeMismatch: the statement's fee is not the fee booked.
	ReasonFeeMismatch Reason = "fee_mismatch"
	// ReasonRefundAmountMismatch: a refund of another amount than booked.
	ReasonRefundAmountMismatch Reason = "refund_amount_mismatch"
	// ReasonRefundNotSettled: a devolução that moved nothing
	// (EM_PROCESSAMENTO, NAO_REALIZADO) which the ledger booked.
	ReasonRefundNotSettled Reason = "refund_not_settled"
	// ReasonPhantom: money the ledger has and the statement of a final
	// window lacks.
	ReasonPhantom Reason = "phantom"
	// ReasonInvalidLine: a line that could not be read, or that the
	// ledger would refuse at intake.
	ReasonInvalidLine Reason = "invalid_line"
	// ReasonDivergentInInbox: the line's delivery is set aside in the
	// inbox without a divergence of its own.
	ReasonDivergentInInbox Reason = "divergent_in_inbox"
)

// Reasons a Pix item or devolução razao reads but cannot book is a
// divergence, on either path (the webhook's and the statement's): the
// words of the scheme's Problem reasons (scheme.Problems).
const (
	// ReasonRefundSettlementUnknown: a DEVOLVIDO without
	// horario.liquidacao: money went back on a date the PSP does not
	// state, and a refund is booked in the month it settled.
	ReasonRefundSettlementUnknown Reason = "refund_settlement_unknown"
	// ReasonUnknownRefundStatus: a devolução status razao does not know
	// (the specification may add some): whether money moved is unknown.
	ReasonUnknownRefundStatus Reason = "unknown_refund_status"
	// ReasonUnknownRefundNature: a DEVOLVIDO whose natureza is neither
	// the merchant's own refund nor a MED return.
	ReasonUnknownRefundNature Reason = "unknown_refund_nature"
)

// Reasons lists every divergence reason.
var Reasons = []Reason{ReasonUnknownCharge, ReasonAmountMismatch, ReasonCurrencyMismatch, ReasonRefundExceedsPaid,
	ReasonRefundAmountMissing, ReasonMalformed, ReasonDisputed, ReasonSecondPayment, ReasonProcessingFailed,
	ReasonRefundOfOtherPayment, ReasonRefundAmountChanged, ReasonRefundWithoutPayment, ReasonMerchantMismatch,
	ReasonFeeMismatch, ReasonRefundAmountMismatch, ReasonRefundNotSettled, ReasonPhantom, ReasonInvalidLine,
	ReasonDivergentInInbox, ReasonRefundSettlementUnknown, ReasonUnknownRefundStatus, ReasonUnknownRefundNature}

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

// Sources lists every source (the ck_divergences_source list).
var Sources = []Source{SourceWebhook, SourceReconciliation}

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
	ID     int64  `json:"id"`
	Source Source `json:"source"`
	// InboxID is the webhook delivery it was set aside from, if any.
	InboxID  int64  `json:"inbox_id,omitempty"`
	ChargeID string `json:"charge_id,omitempty"`
	Reason   Reason `json:"reason"`
	Detail   string `json:"detail"`
	// Said is Detail in its structured form, for the console to say it in
	// Portuguese (DetailPT); zero for a divergence opened before it was
	// stored. Not in the API, whose detail stays the English.
	Said           Said       `json:"-"`
	Status         Status     `json:"status"`
	ResolutionNote string     `json:"resolution_note,omitempty"`
	ResolvedAt     *time.Time `json:"resolved_at,omitempty"`
	// Resolution is the booking it was resolved by (see Book), absent
	// for a note alone; ResolutionSetID is the set booked, and
	// CreditDivergenceID, for a credit_refund, the divergence whose
	// customer_credit it drew from.
	Resolution         Booking   `json:"resolution,omitempty"`
	ResolutionSetID    *int64    `json:"resolution_set_id,omitempty"`
	CreditDivergenceID *int64    `json:"credit_divergence_id,omitempty"`
	CreatedAt          time.Time `json:"created_at"`
	// Reconciliation is set for a divergence a reconciliation run found:
	// where.
	Reconciliation *Reconciliation `json:"reconciliation,omitempty"`
	// Statement is what the PSP says: its statement's line, or, for a
	// delivery that states both sides, its notification; absent for money
	// the ledger has and the statement lacks (a phantom).
	Statement *StatementSide `json:"statement,omitempty"`
	// Ledger is what the ledger has; absent when it has nothing (an
	// unknown charge, a line that could not be read).
	Ledger *LedgerSide `json:"ledger,omitempty"`
}

// Reconciliation says which run found a divergence first.
type Reconciliation struct {
	Endpoint string `json:"endpoint"`
	// RunID and Line are the run and its line (the ledger's side, for a
	// phantom); RunID is absent once the run is deleted.
	RunID *int64 `json:"run_id,omitempty"`
	Line  int64  `json:"line"`
	// Kind is what the line says happened: paid, refunded, refund_open
	// or invalid.
	Kind string `json:"kind"`
}

// StatementSide is a statement line's side of a divergence.
type StatementSide struct {
	PSPID     string     `json:"psp_id"`
	ChargeRef string     `json:"charge_ref"`
	RefundID  string     `json:"refund_id"`
	Amount    int64      `json:"amount"`
	Fee       *int64     `json:"fee,omitempty"`
	At        *time.Time `json:"at,omitempty"`
}

// LedgerSide is the ledger's side of a divergence a run found.
type LedgerSide struct {
	RefundID string `json:"refund_id,omitempty"`
	Amount   *int64 `json:"amount,omitempty"`
	Fee      *int64 `json:"fee,omitempty"`
	// InboxID is the delivery that booked it (a phantom's).
	InboxID *int64 `json:"inbox_id,omitempty"`
}

// row is a divergences row as read (columns).
type row struct {
	ID             int64          `db:"id"`
	Source         string         `db:"source"`
	InboxID        sql.NullInt64  `db:"inbox_id"`
	ChargeID       sql.NullString `db:"charge_id"`
	Reason         string         `db:"reason"`
	Detail         string         `db:"detail"`
	DetailCode     sql.NullString `db:"detail_code"`
	DetailArgs     []byte         `db:"detail_args"`
	Status         string         `db:"status"`
	ResolutionNote sql.NullString `db:"resolution_note"`
	ResolvedAt     sql.NullTime   `db:"resolved_at"`
	CreatedAt      time.Time      `db:"created_at"`
	Resolution     sql.NullString `db:"resolution"`
	ResolutionSet  *int64         `db:"resolution_set_id"`
	ResolutionCred *int64         `db:"resolution_credit_id"`

	Endpoint           sql.NullString `db:"endpoint"`
	RunID              *int64         `db:"run_id"`
	RunLine            sql.NullInt64  `db:"run_line"`
	LineKind           sql.NullString `db:"line_kind"`
	StatementPSPID     sql.NullString `db:"statement_psp_id"`
	StatementChargeRef sql.NullString `db:"statement_charge_ref"`
	StatementRefundID  sql.NullString `db:"statement_refund_id"`
	StatementAmount    sql.NullInt64  `db:"statement_amount"`
	StatementFee       *int64         `db:"statement_fee"`
	StatementAt        *time.Time     `db:"statement_at"`
	LedgerRefundID     sql.NullString `db:"ledger_refund_id"`
	LedgerAmount       *int64         `db:"ledger_amount"`
	LedgerFee          *int64         `db:"ledger_fee"`
	LedgerInboxID      *int64         `db:"ledger_inbox_id"`
}

// columns are what row reads, in every statement that returns divergences.
const columns = `id, source, inbox_id, charge_id, reason, detail, detail_code, detail_args, status, resolution_note, resolved_at, created_at,
	resolution, resolution_set_id, resolution_credit_id,
	endpoint, run_id, run_line, line_kind, statement_psp_id, statement_charge_ref, statement_refund_id,
	statement_amount, statement_fee, statement_at, ledger_refund_id, ledger_amount, ledger_fee, ledger_inbox_id`

func (r row) divergence() Divergence {
	d := Divergence{
		ID: r.ID, Source: Source(r.Source), InboxID: r.InboxID.Int64, ChargeID: r.ChargeID.String, Reason: Reason(r.Reason),
		Detail: r.Detail, Said: readSaid(r.DetailCode.String, r.DetailArgs), Status: Status(r.Status), ResolutionNote: r.ResolutionNote.String, CreatedAt: r.CreatedAt.UTC(),
		Resolution: Booking(r.Resolution.String), ResolutionSetID: r.ResolutionSet, CreditDivergenceID: r.ResolutionCred,
	}
	if r.ResolvedAt.Valid {
		t := r.ResolvedAt.Time.UTC()
		d.ResolvedAt = &t
	}
	if d.Source == SourceReconciliation {
		d.Reconciliation = &Reconciliation{Endpoint: r.Endpoint.String, RunID: r.RunID, Line: r.RunLine.Int64, Kind: r.LineKind.String}
	}
	if r.StatementAmount.Valid {
		d.Statement = &StatementSide{PSPID: r.StatementPSPID.String, ChargeRef: r.StatementChargeRef.String,
			RefundID: r.StatementRefundID.String, Amount: r.StatementAmount.Int64, Fee: r.StatementFee}
		if r.StatementAt != nil {
			t := r.StatementAt.UTC()
			d.Statement.At = &t
		}
	}
	if r.LedgerAmount != nil || r.LedgerFee != nil || r.LedgerInboxID != nil {
		d.Ledger = &LedgerSide{RefundID: r.LedgerRefundID.String, Amount: r.LedgerAmount, Fee: r.LedgerFee, InboxID: r.LedgerInboxID}
	}
	return d
}

// DetailPT is the divergence's detail in Portuguese, for the finance
// console: said from its structured form, or, for a divergence opened
// before that was stored, the English detail as stored.
func (d Divergence) DetailPT() string {
	if pt := d.Said.Portuguese(); pt != "" {
		return pt
	}
	return d.Detail
}
