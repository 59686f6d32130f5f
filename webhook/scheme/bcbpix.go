package scheme

import (
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

	bcbReturned   = "DEVOLVIDO"
	bcbProcessing = "EM_PROCESSAMENTO"
	bcbNotDone    = "NAO_REALIZADO"
)

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
// it must be 1–35 alphanumerics. One bad item makes the whole callback
// malformed: the PSP sent it as one request.
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
		path := fmt.Sprintf("pix[%d]", i)
		m, ok := raw.(map[string]any)
		if !ok {
			return nil, malformed(path, "must be an object")
		}
		evs, err := bcbItem(object{path: path, m: m})
		if err != nil {
			return nil, err
		}
		events = append(events, evs...)
	}
	return events, nil
}

// bcbItem maps one Pix to its credit event and its devoluções.
func bcbItem(item object) ([]Event, error) {
	e2e, err := item.str("endToEndId")
	if err != nil {
		return nil, err
	}
	if len(e2e) != bcbEndToEndLen || !isAlnum(e2e) {
		return nil, malformed(item.field("endToEndId"), "must be 32 alphanumerics")
	}
	txid, err := item.optStr("txid")
	if err != nil {
		return nil, err
	}
	if item.has("txid") && (len(txid) > bcbMaxTxidLen || !isAlnum(txid)) {
		return nil, malformed(item.field("txid"), "must be 1 to 35 alphanumerics")
	}
	amount, err := bcbValor(item)
	if err != nil {
		return nil, err
	}
	when, ok, err := item.time("horario")
	if err != nil || !ok {
		return nil, orRequired(err, item.field("horario"))
	}
	credit := Event{
		Kind: KindPaid, Type: bcbCreditType, EventID: e2e,
		ChargeID: txid, PSPRef: e2e,
		Amount: amount, HasAmount: true, OccurredAt: when,
	}
	refunds, err := bcbRefunds(item, credit)
	if err != nil {
		return nil, err
	}
	return bcbComponents(item, append([]Event{credit}, refunds...))
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

// bcbRefunds maps devolucoes, an array or (tolerated) a single object.
func bcbRefunds(item object, credit Event) ([]Event, error) {
	if !item.has("devolucoes") {
		return nil, nil
	}
	var list []any
	switch v := item.m["devolucoes"].(type) {
	case []any:
		list = v
	case map[string]any:
		list = []any{v}
	default:
		return nil, malformed(item.field("devolucoes"), "must be an array or an object")
	}
	events := make([]Event, 0, len(list))
	for i, raw := range list {
		path := fmt.Sprintf("%s[%d]", item.field("devolucoes"), i)
		m, ok := raw.(map[string]any)
		if !ok {
			return nil, malformed(path, "must be an object")
		}
		ev, err := bcbRefund(object{path: path, m: m}, credit)
		if err != nil {
			return nil, err
		}
		events = append(events, ev)
	}
	return events, nil
}

// bcbRefund maps one devolução. Its id goes into the inbox key, so it is
// held to the Pix API's 1–35 alphanumerics (no ':' can blur the key).
func bcbRefund(dev object, credit Event) (Event, error) {
	id, err := dev.str("id")
	if err != nil {
		return Event{}, err
	}
	if len(id) > bcbMaxRefundLen || !isAlnum(id) {
		return Event{}, malformed(dev.field("id"), "must be 1 to 35 alphanumerics")
	}
	status, err := dev.str("status")
	if err != nil {
		return Event{}, err
	}
	if status != bcbReturned && status != bcbProcessing && status != bcbNotDone {
		return Event{}, malformed(dev.field("status"), "must be EM_PROCESSAMENTO, DEVOLVIDO or NAO_REALIZADO")
	}
	amount, err := bcbValor(dev)
	if err != nil {
		return Event{}, err
	}
	settled, err := bcbSettledAt(dev, status)
	if err != nil {
		return Event{}, err
	}
	ev := Event{
		Kind: KindIgnored, Type: bcbRefundPrefix + status,
		EventID:  credit.EventID + ":" + id + ":" + status,
		ChargeID: credit.ChargeID, PSPRef: credit.PSPRef, RefundID: id,
		Amount: amount, HasAmount: true, OccurredAt: settled,
	}
	if status == bcbReturned {
		ev.Kind = KindRefunded
	}
	if rtrID, ok := dev.text("rtrId"); ok {
		ev.setExtra("rtrId", rtrID)
	}
	return ev, nil
}

// bcbSettledAt reads horario.liquidacao: required for DEVOLVIDO, because a
// refund is booked in the competence of its settlement.
func bcbSettledAt(dev object, status string) (t time.Time, err error) {
	if !dev.has("horario") {
		if status == bcbReturned {
			return t, malformed(dev.field("horario"), "required for DEVOLVIDO")
		}
		return t, nil
	}
	horario, err := dev.object("horario")
	if err != nil {
		return t, err
	}
	if _, _, err := horario.time("solicitacao"); err != nil {
		return t, err
	}
	settled, ok, err := horario.time("liquidacao")
	if err != nil {
		return t, err
	}
	if !ok && status == bcbReturned {
		return t, malformed(horario.field("liquidacao"), "required for DEVOLVIDO")
	}
	return settled, nil
}
