// Package scheme authenticates webhook deliveries and maps their payloads to
// razao's business events, one implementation per provider scheme described
// in PSP-SCHEMES.md: hodle, abacatepay, standard (Standard Webhooks) and
// bcb-pix (the Banco Central Pix API callback).
//
// The package does no I/O: the HTTP layer reads the body through its size
// limit, builds a Request, and calls IsTest, Authenticate, then Parse (or
// ParseDelivery). Every comparison of a secret or MAC is constant-time, every
// MAC is computed over the raw bytes received, and no error message ever
// carries a secret or an expected MAC.
package scheme

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"
)

// Kind is the business meaning of an event.
type Kind string

// The kinds of business event a delivery can carry.
const (
	// KindPaid: a charge was paid; book the sale.
	KindPaid Kind = "paid"
	// KindRefunded: money went back to the payer; book a refund.
	KindRefunded Kind = "refunded"
	// KindFailed: the PSP reports a failure; recorded, no money moves (a
	// failure is not a refund).
	KindFailed Kind = "failed"
	// KindTest: the PSP's registration test; answered 200, never written.
	KindTest Kind = "test"
	// KindIgnored: an authentic event razao has no use for; answered 200.
	KindIgnored Kind = "ignored"
	// KindDisputed: the payer disputes the payment; a divergence for finance.
	KindDisputed Kind = "disputed"
	// KindUnbookable: an authentic event razao reads but cannot book as
	// it came (Event.Problem says why: a bcb-pix DEVOLVIDO without
	// horario.liquidacao, a status the specification added later, an item
	// whose fields do not read); a divergence for finance with what the
	// PSP said, while the rest of its delivery is booked.
	KindUnbookable Kind = "unbookable"
)

// Event is one business event extracted from an authentic delivery.
type Event struct {
	Kind Kind
	// Type is the PSP's own event type string, e.g. "DEPOSIT_ASSET_SUCCESS",
	// "charge.paid", "pix", "devolucao:DEVOLVIDO".
	Type string
	// EventID is the PSP's stable id for this event: together with the
	// endpoint and Type it forms the inbox key. Standard Webhooks carry it in
	// the webhook-id header, so Parse leaves it empty there and ParseDelivery
	// fills it in.
	EventID string
	// ChargeID is our charge id as echoed by the PSP (externalId, charge_id,
	// txid); may be empty.
	ChargeID string
	// PSPRef is the PSP's own reference for the payment (hodle trackId,
	// abacatepay resource id, bcb endToEndId); may be empty.
	PSPRef string
	// RefundID is the PSP's refund id for refunds (standard data.refund_id,
	// hodle data.eventId, bcb devolução id, abacatepay the envelope id).
	RefundID string
	// Amount is in centavos, meaningful only if HasAmount.
	Amount    int64
	HasAmount bool
	// FullRefund marks a refund without a stated amount whose scheme
	// documents refunds as always total (abacatepay): the caller refunds the
	// full remaining amount. A refund with neither HasAmount nor FullRefund
	// (hodle without valueInBrl) is a divergence.
	FullRefund bool
	// Fee is the PSP's fee in centavos, set only where the scheme documents
	// it (abacatepay platformFee); HasFee says so.
	Fee    int64
	HasFee bool
	// Components is what Amount is made of, when the payload says so
	// (bcb-pix componentesValor): the sale, cash handed over the counter,
	// interest, fines, rebates, discounts. nil when it says nothing.
	Components *Components `json:",omitempty"`
	// OccurredAt is the business time of the event when the payload carries
	// one; zero otherwise.
	OccurredAt time.Time
	// Extra keeps undocumented fields for audit, e.g. hodle "fee" => "0.75";
	// nil when there are none. Nothing in it is booked.
	Extra map[string]string
	// ReturnID is the PSP's own id of a refund's transfer where the
	// scheme states one (bcb-pix rtrId, the pacs.004's
	// ReturnIdentification); kept with the refund in the ledger.
	ReturnID string `json:",omitempty"`
	// Nature is what kind of refund it is, where the scheme says (bcb-pix
	// natureza: ORIGINAL, RETIRADA, MED_OPERACIONAL, MED_FRAUDE,
	// MED_PIX_AUTOMATICO); "" when not stated, which the Pix API reads as
	// ORIGINAL. A return under the MED (MED_*) is not the merchant's own
	// refund, and is booked apart.
	Nature string `json:",omitempty"`
	// Problem says why a KindUnbookable event cannot be booked; nil for
	// every other kind.
	Problem *Problem `json:",omitempty"`
}

// Problem is why an event is KindUnbookable.
type Problem struct {
	// Reason is one of Problems: the reason of the divergence it becomes.
	Reason string
	// Detail says what was read and what was not.
	Detail string
}

// Request is what a scheme sees of an HTTP delivery.
type Request struct {
	Header http.Header
	Query  url.Values
	// Body is the raw bytes, already read through the size limit.
	Body []byte
	// Now is the injected clock; a zero Now fails every timestamp check.
	Now time.Time
	// ClientCertVerified says the request carried a client certificate
	// that chains to this endpoint's own CA bundle and names what it
	// accepts (mutual TLS; see webhook.MTLS), from razao's TLS handshake
	// or a trusted proxy's header.
	ClientCertVerified bool
}

// Scheme authenticates and parses deliveries for one configured endpoint.
// Implementations are immutable after New and safe for concurrent use.
type Scheme interface {
	// Name is the scheme's configured name: "hodle", "abacatepay",
	// "standard" or "bcb-pix".
	Name() string
	// IsTest reports whether the delivery is the PSP's registration test
	// event, answered 200 with no write before any authentication (hodle
	// WEBHOOK_TEST). It is never fooled into treating anything else as a
	// test: the body must be one strictly valid JSON object whose top-level
	// event is exactly the test event. It runs before authentication, so
	// its cost must be bounded whatever the body: a length check first, a
	// parse only of a body small enough to be a test.
	IsTest(r Request) bool
	// Authenticate proves the delivery is genuine. Errors wrap
	// ErrUnauthenticated.
	Authenticate(r Request) error
	// Parse maps an authentic body to events (bcb-pix may yield many).
	// Errors wrap ErrMalformed and are *MalformedError values naming the
	// field.
	Parse(body []byte) ([]Event, error)
	// DeliveryID is a stable id for the whole delivery, used as a malformed
	// delivery's inbox key when Parse fails: standard's webhook-id header,
	// abacatepay's envelope id; else "" (the caller then uses the body's
	// SHA-256).
	DeliveryID(r Request) string
}

// Config is the per-endpoint configuration of a scheme.
type Config struct {
	// Secrets holds the current secret first, then the previous one during
	// a rotation; at most 2.
	Secrets []string
	// PublicKey is abacatepay's public HMAC key; empty means the published
	// default (DefaultAbacatepayPublicKey).
	PublicKey string
}

// Errors every scheme wraps.
var (
	// ErrUnauthenticated: the delivery could not be proven genuine (401).
	ErrUnauthenticated = errors.New("webhook not authenticated")
	// ErrMalformed: an authentic body that does not match its scheme (400,
	// kept for finance).
	ErrMalformed = errors.New("webhook payload malformed")
	// ErrConfig: an endpoint's scheme configuration is unusable (start-up).
	ErrConfig = errors.New("webhook scheme misconfigured")
)

// maxSecrets is current plus previous: a rotation never needs more, and each
// extra secret is one more key an attacker may have stolen.
const maxSecrets = 2

// New returns the scheme called name configured with cfg. An unknown name or
// an unusable configuration is an error wrapping ErrConfig; its message names
// the offending secret by position, never by value.
func New(name string, cfg Config) (Scheme, error) {
	if len(cfg.Secrets) > maxSecrets {
		return nil, fmt.Errorf("%w: %s: %d secrets configured, at most %d (current, previous)",
			ErrConfig, name, len(cfg.Secrets), maxSecrets)
	}
	for i, s := range cfg.Secrets {
		if s == "" {
			return nil, fmt.Errorf("%w: %s: secret %d is empty", ErrConfig, name, i+1)
		}
	}
	switch name {
	case hodleName:
		return newHodle(cfg)
	case abacatepayName:
		return newAbacatepay(cfg)
	case standardName:
		return newStandard(cfg)
	case bcbPixName:
		return newBCBPix(cfg)
	default:
		return nil, fmt.Errorf("%w: unknown scheme %.40q", ErrConfig, name)
	}
}

// ParseDelivery parses an authentic delivery and gives every event without
// an EventID the delivery's id: Standard Webhooks carry the event id in the
// webhook-id header, which Parse, seeing only the body, cannot read. Callers
// should prefer it to Parse; for the other schemes the two agree.
func ParseDelivery(s Scheme, r Request) ([]Event, error) {
	events, err := s.Parse(r.Body)
	if err != nil {
		return nil, err
	}
	id := s.DeliveryID(r)
	for i := range events {
		if events[i].EventID == "" {
			events[i].EventID = id
		}
	}
	return events, nil
}

// unauthenticated wraps ErrUnauthenticated with a reason that must never
// hold a secret or a MAC.
func unauthenticated(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrUnauthenticated, fmt.Sprintf(format, args...))
}

// requireSecrets refuses a scheme configured with no secret at all.
func requireSecrets(name string, cfg Config) error {
	if len(cfg.Secrets) == 0 {
		return fmt.Errorf("%w: %s: no secret configured", ErrConfig, name)
	}
	return nil
}

// OfCashOut reports whether e is a refund of cash handed over the counter
// (a bcb-pix devolução of natureza RETIRADA: a Pix Saque's cash, a Pix
// Troco's change), not of the sale: its Nature says so, whether it came
// from the webhook or the statement.
func (e Event) OfCashOut() bool { return e.Nature == NatureRetirada }

// setExtra records an undocumented field for audit.
func (e *Event) setExtra(key, value string) {
	if e.Extra == nil {
		e.Extra = map[string]string{}
	}
	e.Extra[key] = value
}
