package scheme

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

const bcbPixName = "bcb-pix"

// The Pix API callback's constants.
const (
	bcbSecretQuery   = "hmac"
	bcbCreditType    = "pix"
	bcbRefundPrefix  = "devolucao:"
	bcbEndToEndLen   = 32
	bcbMaxTxidLen    = 35
	bcbMaxRefundLen  = 35
	bcbMaxValorWhole = 10
	// bcbMaxReturnIDLen bounds an rtrId kept with its refund.
	bcbMaxReturnIDLen = 64

	bcbReturned   = "DEVOLVIDO"
	bcbProcessing = "EM_PROCESSAMENTO"
	bcbNotDone    = "NAO_REALIZADO"
)

// IsBCBRefund reports whether a bcb-pix event type is a devolução's (read
// or not), rather than its Pix's credit.
func IsBCBRefund(eventType string) bool { return strings.HasPrefix(eventType, bcbRefundPrefix) }

// bcbPix authenticates by mutual TLS, or by a URL secret (?hmac=) where TLS
// ends at a proxy.
type bcbPix struct {
	secrets []string
}

func newBCBPix(cfg Config) (Scheme, error) {
	// No secret is a valid configuration: mutual TLS only.
	for i, s := range cfg.Secrets {
		if len(s) < minURLSecretLen {
			return nil, fmt.Errorf("%w: %s: secret %d is shorter than %d characters",
				ErrConfig, bcbPixName, i+1, minURLSecretLen)
		}
	}
	return &bcbPix{secrets: append([]string(nil), cfg.Secrets...)}, nil
}

// Name implements Scheme.
func (*bcbPix) Name() string { return bcbPixName }

// IsTest implements Scheme: the Pix API has no registration test event.
func (*bcbPix) IsTest(Request) bool { return false }

// Authenticate implements Scheme.
func (b *bcbPix) Authenticate(r Request) error {
	if r.ClientCertVerified {
		return nil
	}
	if len(b.secrets) == 0 {
		return unauthenticated("no verified client certificate and no URL secret configured")
	}
	q := r.Query[bcbSecretQuery]
	switch {
	case len(q) == 0:
		return unauthenticated("no verified client certificate and no %s query parameter", bcbSecretQuery)
	case len(q) > 1:
		return unauthenticated("%d %s query parameters, want one", len(q), bcbSecretQuery)
	}
	for _, want := range b.secrets {
		if secretEqual(q[0], want) {
			return nil
		}
	}
	return unauthenticated("%s query parameter matches no configured secret", bcbSecretQuery)
}

// DeliveryID implements Scheme: a callback has no id of its own.
func (*bcbPix) DeliveryID(Request) string { return "" }

// Parse implements Scheme: every item of {"pix": [...]} yields a credit
// event keyed by endToEndId, and each of its devoluções an event keyed by
// endToEndId:id:status. Only a DEVOLVIDO devolução is a refund; the others
// are recorded as ignored so that each status change is kept once.
//
// txid may be absent (a Pix to a key, with no charge of ours); when present
// it must be 1–35 alphanumerics. Each item, and each devolução, is judged
// on its own: one razao cannot book (a field that does not read, a
// DEVOLVIDO without the optional horario.liquidacao, a status or natureza
// the specification adds later) is a KindUnbookable event under the key
// it would have had, and the rest of the callback is booked. Only a body
// that is not {"pix": [at least one item]} is malformed as a whole.
func (*bcbPix) Parse(body []byte) ([]Event, error) {
	env, err := decodeObject(body)
	if err != nil {
		return nil, err
	}
	items, ok := env.m["pix"].([]any)
	if !ok || len(items) == 0 {
		return nil, malformed("pix", "must be a non-empty array")
	}
	var events []Event
	for i, raw := range items {
		events = append(events, bcbItem(fmt.Sprintf("pix[%d]", i), raw)...)
	}
	return events, nil
}

// Why a bcb-pix item or devolução is unbookable (Problem.Reason): the
// words of the divergence it becomes.
const (
	// ProblemMalformed: a field the specification requires does not read.
	ProblemMalformed = "malformed"
	// ProblemSettlementUnknown: a DEVOLVIDO without horario.liquidacao
	// (optional in the specification): money went back, but razao does
	// not know when, and a refund is booked in the month it settled.
	ProblemSettlementUnknown = "refund_settlement_unknown"
	// ProblemUnknownStatus: a devolução status outside EM_PROCESSAMENTO,
	// DEVOLVIDO and NAO_REALIZADO (new enum values are a compatible
	// change in the specification): razao cannot tell whether money moved.
	ProblemUnknownStatus = "unknown_refund_status"
	// ProblemUnknownNature: a DEVOLVIDO whose natureza is neither the
	// merchant's own refund (ORIGINAL, RETIRADA) nor a MED return (MED_*):
	// razao cannot tell how to book it.
	ProblemUnknownNature = "unknown_refund_nature"
)

// Problems lists every Problem.Reason a scheme gives.
var Problems = []string{ProblemMalformed, ProblemSettlementUnknown, ProblemUnknownStatus, ProblemUnknownNature}

// The natureza of a devolução (the specification's DevolucaoNatureza).
const (
	NatureOriginal = "ORIGINAL"
	NatureRetirada = "RETIRADA"
	// NatureMEDPrefix starts every return made under the MED (Mecanismo
	// Especial de Devolução): MED_OPERACIONAL, MED_FRAUDE,
	// MED_PIX_AUTOMATICO and any the specification adds.
	NatureMEDPrefix = "MED_"
)

// The event types of what cannot be keyed as the specification keys it:
// an item without a readable endToEndId, a devolução without a readable id
// or status. They are keyed by a hash of their JSON instead.
const (
	bcbUnreadableItem   = "pix:unreadable"
	bcbUnreadableRefund = bcbRefundPrefix + "unreadable"
)

// bcbItem maps one Pix to its credit event and its devoluções, each judged
// on its own.
func bcbItem(path string, raw any) []Event {
	m, ok := raw.(map[string]any)
	if !ok {
		return []Event{unbookable(Event{Type: bcbUnreadableItem, EventID: hashKey(raw)}, malformed(path, "must be an object"))}
	}
	item := object{path: path, m: m}
	e2e, err := item.str("endToEndId")
	if err == nil && (len(e2e) != bcbEndToEndLen || !isAlnum(e2e)) {
		err = malformed(item.field("endToEndId"), "must be 32 alphanumerics")
	}
	if err != nil {
		// Nothing keys the item or its devoluções: one event for all.
		return []Event{unbookable(Event{Type: bcbUnreadableItem, EventID: hashKey(raw)}, err)}
	}
	credit, err := bcbCredit(item, e2e)
	if err == nil {
		credit.Components, err = bcbParts(item)
	}
	refunds := bcbRefunds(item, credit)
	if err != nil {
		credit = unbookable(credit, err)
	}
	return append([]Event{credit}, refunds...)
}

// bcbCredit reads the Pix's own fields into its credit event. On error the
// event holds every field read before the one that failed.
func bcbCredit(item object, e2e string) (Event, error) {
	credit := Event{Kind: KindPaid, Type: bcbCreditType, EventID: e2e, PSPRef: e2e}
	txid, err := item.optStr("txid")
	if err != nil {
		return credit, err
	}
	if item.has("txid") && (len(txid) > bcbMaxTxidLen || !isAlnum(txid)) {
		return credit, malformed(item.field("txid"), "must be 1 to 35 alphanumerics")
	}
	credit.ChargeID = txid
	amount, err := bcbValor(item)
	if err != nil {
		return credit, err
	}
	credit.Amount, credit.HasAmount = amount, true
	when, ok, err := item.time("horario")
	if err != nil || !ok {
		return credit, orRequired(err, item.field("horario"))
	}
	credit.OccurredAt = when
	return credit, nil
}

// unbookable makes ev, which could not be read or booked because of err,
// a KindUnbookable event: what was read of it stays, for finance to see
// what the PSP said; its time is dropped (it may be the one that failed,
// and an unbookable event is dated by its receipt).
func unbookable(ev Event, err error) Event {
	reason := ProblemMalformed
	var p *problemError
	if errors.As(err, &p) {
		reason = p.reason
	}
	ev.Kind, ev.OccurredAt = KindUnbookable, time.Time{}
	ev.Problem = &Problem{Reason: reason, Detail: err.Error()}
	return ev
}

// problemError is a devolução razao reads but cannot book.
type problemError struct {
	reason, detail string
}

func (e *problemError) Error() string { return e.detail }

// hashKey keys what has no id of its own by its JSON: the same item
// sent again is the same event. encoding/json writes map keys sorted and
// numbers as received, so the hash does not depend on the key order.
func hashKey(v any) string {
	b, _ := json.Marshal(v)
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// bcbValor reads valor, a reais string of the form \d{1,10}\.\d{2}.
func bcbValor(o object) (int64, error) {
	v, ok := o.m["valor"].(string)
	whole, frac, dot := strings.Cut(v, ".")
	if !ok || !dot || !isDigits(whole) || len(whole) > bcbMaxValorWhole ||
		len(frac) != 2 || !isDigits(frac) {
		return 0, malformed(o.field("valor"), `must be a string of the form \d{1,10}\.\d{2}`)
	}
	amount, _, err := o.reais("valor")
	return amount, err
}

// bcbRefunds maps devolucoes, an array or (tolerated) a single object,
// each devolução on its own.
func bcbRefunds(item object, credit Event) []Event {
	if !item.has("devolucoes") {
		return nil
	}
	var list []any
	switch v := item.m["devolucoes"].(type) {
	case []any:
		list = v
	case map[string]any:
		list = []any{v}
	default:
		ev := Event{Type: bcbUnreadableRefund, EventID: credit.EventID + ":" + hashKey(v),
			ChargeID: credit.ChargeID, PSPRef: credit.PSPRef}
		return []Event{unbookable(ev, malformed(item.field("devolucoes"), "must be an array or an object"))}
	}
	events := make([]Event, 0, len(list))
	for i, raw := range list {
		path := fmt.Sprintf("%s[%d]", item.field("devolucoes"), i)
		m, ok := raw.(map[string]any)
		if !ok {
			ev := Event{Type: bcbUnreadableRefund, EventID: credit.EventID + ":" + hashKey(raw),
				ChargeID: credit.ChargeID, PSPRef: credit.PSPRef}
			events = append(events, unbookable(ev, malformed(path, "must be an object")))
			continue
		}
		events = append(events, bcbRefund(object{path: path, m: m}, credit))
	}
	return events
}

// bcbMaxStatusLen bounds a devolução status razao keys an event by: the
// specification's are at most 16 characters.
const bcbMaxStatusLen = 35

// bcbRefund maps one devolução. Its id goes into the inbox key, so it is
// held to the Pix API's 1–35 alphanumerics (no ':' can blur the key), and
// its status, which goes into the key too, to capitals, digits and '_'. A
// devolução without either is keyed by its JSON; one razao reads but
// cannot book is KindUnbookable under its own key, so that the same
// devolução, read again from the statement, is the same delivery.
func bcbRefund(dev object, credit Event) Event {
	ev := Event{ChargeID: credit.ChargeID, PSPRef: credit.PSPRef}
	id, err := dev.str("id")
	if err == nil && (len(id) > bcbMaxRefundLen || !isAlnum(id)) {
		err = malformed(dev.field("id"), "must be 1 to 35 alphanumerics")
	}
	var status string
	if err == nil {
		status, err = dev.str("status")
	}
	if err == nil && !isStatusToken(status) {
		err = malformed(dev.field("status"), "must be capitals, digits and '_', at most 35")
	}
	if err != nil {
		// Not keyed by its id, which may be what does not read.
		ev.Type, ev.EventID = bcbUnreadableRefund, credit.EventID+":"+hashKey(dev.m)
		return unbookable(ev, err)
	}
	ev.Kind, ev.Type, ev.EventID, ev.RefundID = KindIgnored, bcbRefundPrefix+status, credit.EventID+":"+id+":"+status, id
	if err := bcbRefundFields(dev, status, &ev); err != nil {
		return unbookable(ev, err)
	}
	if status == bcbReturned {
		ev.Kind = KindRefunded
	}
	return ev
}

// bcbRefundFields reads a keyed devolução's valor, rtrId, natureza and
// horario into ev, and says why razao cannot book it, if it cannot.
func bcbRefundFields(dev object, status string, ev *Event) error {
	amount, err := bcbValor(dev)
	if err != nil {
		return err
	}
	ev.Amount, ev.HasAmount = amount, true
	if dev.has("rtrId") {
		rtr, ok := dev.m["rtrId"].(string)
		// 32 alphanumerics in the specification; up to 64 kept, so that
		// a PSP's longer id is kept rather than the refund refused.
		if !ok || len(rtr) > bcbMaxReturnIDLen || !isAlnum(rtr) {
			return malformed(dev.field("rtrId"), "must be 1 to 64 alphanumerics")
		}
		ev.ReturnID = rtr
	}
	nature, err := dev.optStr("natureza")
	if err != nil {
		return err
	}
	if dev.has("natureza") && !isStatusToken(nature) {
		return malformed(dev.field("natureza"), "must be capitals, digits and '_', at most 35")
	}
	ev.Nature = nature
	settled, requested, err := bcbRefundTimes(dev)
	if err != nil {
		return err
	}
	switch status {
	case bcbReturned:
	case bcbProcessing, bcbNotDone:
		// Moved nothing: kept, never booked, whatever its natureza.
		ev.OccurredAt = settled
		return nil
	default:
		return &problemError{ProblemUnknownStatus, fmt.Sprintf("%s: %q is not a status razao knows (EM_PROCESSAMENTO, DEVOLVIDO, NAO_REALIZADO): whether money moved is unknown",
			dev.field("status"), status)}
	}
	if settled.IsZero() {
		asked := "no horario.solicitacao either"
		if !requested.IsZero() {
			asked = "requested at " + requested.UTC().Format(time.RFC3339Nano)
		}
		return &problemError{ProblemSettlementUnknown, fmt.Sprintf("%s: absent from a DEVOLVIDO (%s): the refund moved money on a date the PSP does not state",
			dev.field("horario.liquidacao"), asked)}
	}
	if nature != "" && nature != NatureOriginal && nature != NatureRetirada && !strings.HasPrefix(nature, NatureMEDPrefix) {
		return &problemError{ProblemUnknownNature, fmt.Sprintf("%s: %q is neither the merchant's own refund (ORIGINAL, RETIRADA) nor a MED return (MED_*)",
			dev.field("natureza"), nature)}
	}
	ev.OccurredAt = settled
	return nil
}

// bcbRefundTimes reads horario.liquidacao and horario.solicitacao, both
// optional in the specification (zero when absent).
func bcbRefundTimes(dev object) (settled, requested time.Time, err error) {
	if !dev.has("horario") {
		return settled, requested, nil
	}
	horario, err := dev.object("horario")
	if err != nil {
		return settled, requested, err
	}
	if requested, _, err = horario.time("solicitacao"); err != nil {
		return settled, requested, err
	}
	settled, _, err = horario.time("liquidacao")
	return settled, requested, err
}

// isStatusToken reports whether s may stand in an inbox key as a status
// or natureza: 1 to 35 capitals, digits and '_', starting with a capital.
func isStatusToken(s string) bool {
	if s == "" || len(s) > bcbMaxStatusLen || s[0] < 'A' || s[0] > 'Z' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}
