// Package reconcile reconciles a PSP's statement against the ledger: the
// recovery path for notifications that never arrived. A run reads one
// window of one endpoint's statement (the BCB Pix API, see bcbpix, or a
// CSV file), loads its lines into PostgreSQL with COPY, matches them there
// with joins against the inbox, the charges and the posting sets, and
// leaves every line, and every ledger fact of the window the statement
// lacks, in exactly one outcome: matched, booked from the statement
// (stored into the inbox, which books it through the one delivery path),
// or a divergence for finance with both sides. See RECONCILIATION.md.
package reconcile

import (
	"errors"
	"time"

	"github.com/razao/razao/divergences"
	"github.com/razao/razao/internal/kind"
	"github.com/razao/razao/money"
)

// Kind is what a statement line says happened.
type Kind string

// The kinds of line.
const (
	// KindPaid: the PSP received a payment.
	KindPaid Kind = "paid"
	// KindRefunded: money went back to the payer (a DEVOLVIDO devolução).
	KindRefunded Kind = "refunded"
	// KindRefundOpen: a devolução that moved nothing (EM_PROCESSAMENTO,
	// NAO_REALIZADO): the ledger must not have booked it.
	KindRefundOpen Kind = "refund_open"
	// KindInvalid: a line that could not be read; a divergence with its cause.
	KindInvalid Kind = "invalid"
)

// Outcome is what a line ends as.
type Outcome string

// The outcomes of RECONCILIATION.md.
const (
	Matched    Outcome = "matched"
	Booked     Outcome = "booked"
	Divergence Outcome = "divergence"
)

// Reasons a line is a divergence (or, for matched and booked lines, the
// note that says why). A divergence's are divergences' own words: the
// line's divergence carries the same reason.
const (
	ReasonAmountMismatch       = string(divergences.ReasonAmountMismatch)
	ReasonFeeMismatch          = string(divergences.ReasonFeeMismatch)
	ReasonRefundAmountMismatch = string(divergences.ReasonRefundAmountMismatch)
	ReasonRefundNotSettled     = string(divergences.ReasonRefundNotSettled)
	ReasonUnknownCharge        = string(divergences.ReasonUnknownCharge)
	ReasonSecondPayment        = string(divergences.ReasonSecondPayment)
	ReasonMerchantMismatch     = string(divergences.ReasonMerchantMismatch)
	ReasonPhantom              = string(divergences.ReasonPhantom)
	ReasonInvalidLine          = string(divergences.ReasonInvalidLine)
	// ReasonInInbox: the delivery is in the inbox, not yet applied: the
	// delivery path books it.
	ReasonInInbox = "in_inbox"
	// ReasonNotSettled: a devolução that moved nothing, and the ledger
	// booked nothing.
	ReasonNotSettled = "not_settled"
)

// Line is one line of a statement, read by a source, before matching.
type Line struct {
	Kind Kind
	// EventType and EventID are the inbox key the line is booked under.
	EventType, EventID string
	// PSPID is the PSP's id of the payment (endToEndId, trackId, the
	// AbacatePay charge id); for a refund, of the payment refunded.
	PSPID     string
	ChargeRef string
	RefundID  string
	Amount    int64
	Fee       int64
	HasFee    bool
	At        time.Time
	// Parts is what a payment's amount is made of, when the statement
	// says so (a Pix's componentesValor): the charge is paid by its
	// original, and the cash handed over the counter is not the charge's.
	Parts money.Parts
	// Detail says why an invalid line could not be read.
	Detail string
	// ReturnID and Nature are a refund's return id and natureza where the
	// statement states them (bcb-pix rtrId, natureza): booked from the
	// statement, the refund keeps them as its webhook would have.
	ReturnID, Nature string
	// Reason is an invalid line's divergence reason when it is not
	// invalid_line: a bcb-pix item the webhook's parser reads but razao
	// cannot book carries its own (refund_settlement_unknown...), the
	// reason its webhook delivery's divergence has.
	Reason string
}

// ErrConfig reports an unusable reconciliation configuration.
var ErrConfig = errors.New("reconciliation config")

// ErrInput reports a statement or request that cannot be reconciled: a
// file too large, a header missing a mapped column, a bad window.
var ErrInput = kind.New(kind.Invalid, "invalid-statement", "Statement cannot be reconciled", "reconciliation input")

// maxIDLength bounds every id a line carries, as the inbox bounds them.
const maxIDLength = 256
