package divergences

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/razao/razao/money"
)

// Said is what a divergence's detail says, as a kind of detail (its
// code) and the arguments of that kind, so that it can be said in
// English, as the API's detail has always been, and in Portuguese, for
// the finance console. Each kind has a constructor (SecondPayment,
// RefundExceedsLeft...); the table sayings holds both languages.
//
// The zero Said says nothing: a divergence opened before the structured
// form was stored (its Divergence.Detail alone).
type Said struct {
	// Code names the kind of detail, a key of sayings.
	Code string
	// Args are the kind's arguments, in its order, each of its argument's
	// Go type (arg).
	Args []any
}

// arg is the kind of one argument of a detail: how it is held, stored
// (detail_args, a JSON array) and written in each language.
type arg int

const (
	// amount is centavos (int64): a bare integer in English, as the
	// English details have always written it; R$ 1.234,56 in Portuguese.
	amount arg = iota
	// id is an identifier or a code (string), written as is in both.
	id
	// text is free text written by someone else: a parser's or the
	// ledger's error, a PSP's words (string). It stays as written, in
	// English or whatever it is, quoted inside the Portuguese sentence.
	text
	// count is a number that is not money (int64).
	count
	// duration is a time.Duration.
	duration
	// parts are a Pix's parts (money.Parts).
	parts
	// lineKind is a statement line's kind (string: paid, refunded,
	// refund_open, invalid), named in Portuguese as the console does.
	lineKind
	// stated is an amount and a fee a PSP stated, either absent
	// (Figures).
	stated
	// reason is a divergence's reason (string), named in Portuguese
	// (ReasonNames).
	reason
)

// saying is one kind of detail: its English and Portuguese formats and
// the kinds of their arguments. The English format is the one the call
// site wrote before (its verbs over the arguments as held); the
// Portuguese one takes every argument as a string, already written
// (portuguese).
type saying struct {
	en, pt string
	args   []arg
}

// The codes a reconciliation run writes in SQL (reconcile's foundSQL).
const (
	CodeStatementAmount = "statement_amount"
	CodeStatementFee    = "statement_fee"
	CodeStatementLine   = "statement_line"
	CodePhantom         = "phantom"
	CodeLineText        = "line_text"
)

// sayings are every kind of detail, by code. A code, once stored, keeps
// its meaning and its arguments: a change is a new code.
var sayings = map[string]saying{
	"unknown_charge_id":  {"no charge with id %q", "nenhuma cobrança com o id %q", []arg{id}},
	"unknown_charge_ref": {"no charge with psp reference %q", "nenhuma cobrança com a referência do PSP %q", []arg{id}},
	"merchant_mismatch": {"charge of merchant %q; event through an endpoint of merchant %q",
		"cobrança do lojista %q; evento recebido por um endpoint do lojista %q", []arg{id, id}},
	"event_refused":  {"%s", "evento recusado: “%s”", []arg{text}},
	"refund_refused": {"refund %s: %s", "estorno %s recusado: “%s”", []arg{id, text}},
	"unreadable":     {"%s", "mensagem ilegível: “%s”", []arg{text}},
	"psp_problem":    {"%s", "o que o PSP informou não pode ser lançado: “%s”", []arg{text}},
	"unbookable":     {"an event razao cannot book (%s)", "um evento que o razao não sabe lançar (%s)", []arg{id}},
	"disputed":       {"the PSP reports a dispute (%s)", "o PSP informa uma contestação (%s)", []arg{id}},
	"gave_up":        {"gave up after %d attempts: %s", "desistiu após %s tentativas: “%s”", []arg{count, text}},
	"second_payment": {"charge already paid by %s; payment %s of %d arrived too", "cobrança já paga por %s; chegou também o pagamento %s de %s", []arg{id, id, amount}},
	"second_payment_unknown_ref": {"charge already paid by a payment of unknown reference; payment %s of %d arrived too",
		"cobrança já paga por um pagamento de referência desconhecida; chegou também o pagamento %s de %s", []arg{id, amount}},
	"payment_restated": {"payment %s was booked for %d (PSP fee %d); now stated as %d (PSP fee %d)",
		"pagamento %s lançado por %s (tarifa do PSP %s); agora informado como %s (tarifa do PSP %s)", []arg{id, amount, amount, amount, amount}},
	"payment_without_amount": {"payment states no amount; charge is %d", "pagamento sem valor informado; a cobrança é de %s", []arg{amount}},
	"parts_do_not_add_up": {"paid %d, but its parts (%s) add up to %d", "pago %s, mas as partes (%s) somam %s",
		[]arg{amount, parts, amount}},
	"original_is_not_charge": {"paid %d of which the sale (original) is %d (%s), charge is %d",
		"pago %s, dos quais a venda (original) é %s (%s); a cobrança é de %s", []arg{amount, amount, parts, amount}},
	"parts_leave_nothing_paid": {"paid %d of which %d for the charge of %d: its parts (%s) leave nothing paid",
		"pago %s, dos quais %s pela cobrança de %s: as partes (%s) não deixam nada pago", []arg{amount, amount, amount, parts}},
	"paid_other_amount": {"paid %d, charge is %d", "pago %s; a cobrança é de %s", []arg{amount, amount}},
	"fee_out_of_range":  {"PSP fee %d on a payment of %d", "tarifa do PSP de %s sobre um pagamento de %s", []arg{amount, amount}},
	"refund_without_id": {"refund without a refund id", "estorno sem id de estorno", nil},
	"refund_of_other_payment": {"refund %s is of payment %s; the charge was paid by %s",
		"o estorno %s é do pagamento %s; a cobrança foi paga por %s", []arg{id, id, id}},
	"refund_of_cash_out": {"refund %s of %d is of the cash handed over the counter (natureza RETIRADA), not of the sale of %d: not booked as a refund of the sale",
		"o estorno %s de %s é do dinheiro entregue no caixa (natureza RETIRADA), não da venda de %s: não lançado como estorno da venda",
		[]arg{id, amount, amount}},
	"refund_restated": {"refund %s was booked for %d as %s; now stated as %d",
		"estorno %s lançado por %s como %s; agora informado como %s", []arg{id, amount, id, amount}},
	"refund_without_amount": {"refund %s states no amount", "estorno %s sem valor informado", []arg{id}},
	"refund_exceeds_left": {"refund %s of %d; %d of %d left to refund", "estorno %s de %s; restam %s de %s a estornar",
		[]arg{id, amount, amount, amount}},
	"payment_stated_again": {"the PSP stated payment %s (%s) as %s in delivery %d; now as %s: the same id with other figures",
		"o PSP informou o pagamento %s (%s) como %s na entrega %s; agora como %s: o mesmo id com outros valores",
		[]arg{id, id, stated, count, stated}},
	"refund_stated_again": {"the PSP stated refund %s (%s) as %s in delivery %d; now as %s: the same id with other figures",
		"o PSP informou o estorno %s (%s) como %s na entrega %s; agora como %s: o mesmo id com outros valores",
		[]arg{id, id, stated, count, stated}},
	"refund_parked_too_long": {"refund parked for over %s waiting for the payment of %s",
		"estorno em espera por mais de %s pelo pagamento de %s", []arg{duration, id}},
	CodeStatementAmount: {"the statement says %d, the ledger has %d", "o extrato diz %s; o razão tem %s", []arg{amount, amount}},
	CodeStatementFee:    {"the statement's fee is %d, the fee booked %d", "a tarifa do extrato é %s; a lançada, %s", []arg{amount, amount}},
	CodeStatementLine:   {"a %s line of the statement: %s", "uma linha de %s do extrato: %s", []arg{lineKind, reason}},
	CodePhantom:         {"booked in the ledger, absent from the statement", "lançado no razão, ausente do extrato", nil},
	CodeLineText:        {"%s", "linha do extrato: “%s”", []arg{text}},
}

// say is the detail code with args, which must be of its kinds (a
// constructor's call is checked by the table test, every kind of it).
func say(code string, args ...any) Said { return Said{Code: code, Args: args} }

// UnknownChargeID: no charge has the id an event names.
func UnknownChargeID(chargeID string) Said { return say("unknown_charge_id", chargeID) }

// UnknownChargeRef: no charge has the PSP reference an event names.
func UnknownChargeRef(pspRef string) Said { return say("unknown_charge_ref", pspRef) }

// MerchantMismatch: an event came through another merchant's endpoint.
func MerchantMismatch(chargeMerchant, eventMerchant string) Said {
	return say("merchant_mismatch", chargeMerchant, eventMerchant)
}

// EventRefused: the ledger refuses an event (err: its words).
func EventRefused(err error) Said { return say("event_refused", err.Error()) }

// RefundRefused: the ledger refuses the refund refundID (err: its words).
func RefundRefused(refundID string, err error) Said {
	return say("refund_refused", refundID, err.Error())
}

// Unreadable: a delivery could not be read at all (err: the parser's
// words).
func Unreadable(err error) Said { return say("unreadable", err.Error()) }

// PSPProblem: an event was read but cannot be booked, as its scheme
// says (problem: the scheme's words, scheme.Problem.Detail).
func PSPProblem(problem string) Said { return say("psp_problem", problem) }

// Unbookable: an event of a type razao reads but cannot book.
func Unbookable(eventType string) Said { return say("unbookable", eventType) }

// Disputed: the PSP reports a dispute, by an event of eventType.
func Disputed(eventType string) Said { return say("disputed", eventType) }

// GaveUp: a delivery failed attempts times, the last with cause.
func GaveUp(attempts int, cause error) Said {
	return say("gave_up", int64(attempts), fmt.Sprint(cause))
}

// SecondPayment: the charge was paid by paidBy ("": a payment whose
// reference is unknown) and payment, of amount, came too.
func SecondPayment(paidBy, payment string, amount int64) Said {
	if paidBy == "" {
		return say("second_payment_unknown_ref", payment, amount)
	}
	return say("second_payment", paidBy, payment, amount)
}

// PaymentRestated: the payment booked for bookedAmount with bookedFee is
// stated again for amount with fee.
func PaymentRestated(payment string, bookedAmount, bookedFee, amount, fee int64) Said {
	return say("payment_restated", payment, bookedAmount, bookedFee, amount, fee)
}

// PaymentWithoutAmount: a payment states no amount for a charge of
// charge.
func PaymentWithoutAmount(charge int64) Said { return say("payment_without_amount", charge) }

// PartsDoNotAddUp: a payment of paid states parts that add up to sum.
func PartsDoNotAddUp(paid int64, p money.Parts, sum int64) Said {
	return say("parts_do_not_add_up", paid, p, sum)
}

// OriginalIsNotCharge: a payment of paid states an original other than
// the charge's amount.
func OriginalIsNotCharge(paid, original int64, p money.Parts, charge int64) Said {
	return say("original_is_not_charge", paid, original, p, charge)
}

// PartsLeaveNothingPaid: a payment of paid, of which paidFor for the
// charge, has reductions that leave nothing paid.
func PartsLeaveNothingPaid(paid, paidFor, charge int64, p money.Parts) Said {
	return say("parts_leave_nothing_paid", paid, paidFor, charge, p)
}

// PaidOtherAmount: a payment of paid for a charge of charge.
func PaidOtherAmount(paid, charge int64) Said { return say("paid_other_amount", paid, charge) }

// FeeOutOfRange: a PSP fee below zero or not below its payment.
func FeeOutOfRange(fee, paid int64) Said { return say("fee_out_of_range", fee, paid) }

// RefundWithoutID: a refund names no refund id.
func RefundWithoutID() Said { return say("refund_without_id") }

// RefundOfOtherPayment: the refund refundID is of payment, while the
// charge was paid by paidBy.
func RefundOfOtherPayment(refundID, payment, paidBy string) Said {
	return say("refund_of_other_payment", refundID, payment, paidBy)
}

// RefundOfCashOut: a refund of amount gives back a Pix's cash out, not
// the sale of paid.
func RefundOfCashOut(refundID string, amount, paid int64) Said {
	return say("refund_of_cash_out", refundID, amount, paid)
}

// RefundRestated: the refund booked for booked as bookedID is stated
// again for amount.
func RefundRestated(refundID string, booked int64, bookedID string, amount int64) Said {
	return say("refund_restated", refundID, booked, bookedID, amount)
}

// RefundWithoutAmount: a refund states no amount.
func RefundWithoutAmount(refundID string) Said { return say("refund_without_amount", refundID) }

// RefundExceedsLeft: a refund of amount when remaining of paid is left.
func RefundExceedsLeft(refundID string, amount, remaining, paid int64) Said {
	return say("refund_exceeds_left", refundID, amount, remaining, paid)
}

// Figures are an amount and a fee as a PSP stated them; nil: not stated.
type Figures struct {
	Amount *int64 `json:"amount"`
	Fee    *int64 `json:"fee"`
}

// StatedAgain: the PSP stated the payment (or, refund, the refund)
// eventID, of eventType, as was in the delivery wasDelivery and now as
// now.
func StatedAgain(refund bool, eventID, eventType string, was Figures, wasDelivery int64, now Figures) Said {
	code := "payment_stated_again"
	if refund {
		code = "refund_stated_again"
	}
	return say(code, eventID, eventType, was, wasDelivery, now)
}

// RefundParkedTooLong: a refund waited over limit for the payment of
// chargeRef.
func RefundParkedTooLong(limit time.Duration, chargeRef string) Said {
	return say("refund_parked_too_long", limit, chargeRef)
}

// English is the detail in English: the divergence's detail as stored
// and as the API returns it.
func (s Said) English() string {
	sy, ok := sayings[s.Code]
	if !ok {
		return ""
	}
	args := make([]any, len(s.Args))
	for i, a := range s.Args {
		switch v := a.(type) {
		case money.Parts:
			args[i] = v.String()
		case Figures:
			args[i] = v.english()
		default:
			args[i] = a
		}
	}
	return fmt.Sprintf(sy.en, args...)
}

// Portuguese is the detail in Portuguese, for the finance console; ""
// for a Said that says nothing (or of a code this build does not know).
func (s Said) Portuguese() string {
	sy, ok := sayings[s.Code]
	if !ok || len(s.Args) != len(sy.args) {
		return ""
	}
	args := make([]any, len(s.Args))
	for i, a := range s.Args {
		switch v := a.(type) {
		case int64:
			if sy.args[i] == amount {
				args[i] = money.FormatBRL(v)
			} else {
				args[i] = strconv.FormatInt(v, 10)
			}
		case string:
			switch name, ok := lineKinds[v]; {
			case ok && sy.args[i] == lineKind:
				args[i] = name
			case sy.args[i] == reason:
				args[i] = Reason(v).Portuguese()
			default:
				args[i] = v
			}
		case time.Duration:
			args[i] = ptDuration(v)
		case money.Parts:
			args[i] = v.Spell(money.FormatBRL)
		case Figures:
			args[i] = v.portuguese()
		default:
			args[i] = a
		}
	}
	return fmt.Sprintf(sy.pt, args...)
}

// lineKinds name a statement line's kinds as the console's labels do.
var lineKinds = map[string]string{"paid": "pagamento", "refunded": "estorno", "refund_open": "estorno em aberto", "invalid": "inválida"}

func (f Figures) english() string {
	s := "no amount"
	if f.Amount != nil {
		s = strconv.FormatInt(*f.Amount, 10)
	}
	if f.Fee != nil {
		s += fmt.Sprintf(" (fee %d)", *f.Fee)
	}
	return s
}

func (f Figures) portuguese() string {
	s := "sem valor"
	if f.Amount != nil {
		s = money.FormatBRL(*f.Amount)
	}
	if f.Fee != nil {
		s += " (tarifa " + money.FormatBRL(*f.Fee) + ")"
	}
	return s
}

// ptDuration writes a limit as a person would: 3 dias, 36 h, else as Go
// writes it.
func ptDuration(d time.Duration) string {
	switch {
	case d > 0 && d%(24*time.Hour) == 0:
		if n := d / (24 * time.Hour); n > 1 {
			return fmt.Sprintf("%d dias", n)
		}
		return "1 dia"
	case d > 0 && d%time.Hour == 0:
		return fmt.Sprintf("%d h", d/time.Hour)
	}
	return d.String()
}

// stored is s as stored: detail_code and detail_args, both NULL
// for nothing said.
func (s Said) stored() (code *string, args *string, err error) {
	if s.Code == "" {
		return nil, nil, nil
	}
	if _, ok := sayings[s.Code]; !ok {
		return nil, nil, fmt.Errorf("detail of unknown code %q", s.Code)
	}
	b, err := json.Marshal(s.argsAsStored())
	if err != nil {
		return nil, nil, fmt.Errorf("detail %s: %w", s.Code, err)
	}
	c, a := s.Code, string(b)
	return &c, &a, nil
}

// argsAsStored are the arguments as detail_args holds them: a duration
// in nanoseconds, a Pix's parts as an object of centavos; the rest as
// they are.
func (s Said) argsAsStored() []any {
	out := make([]any, len(s.Args))
	for i, a := range s.Args {
		switch v := a.(type) {
		case time.Duration:
			out[i] = int64(v)
		default:
			out[i] = a
		}
	}
	return out
}

// readSaid is the Said stored as code and args (detail_args); the zero
// Said, that says nothing, when there is none, or when this build cannot
// read it (a code of a newer one): the console then shows the stored
// English detail.
func readSaid(code string, args []byte) Said {
	sy, ok := sayings[code]
	if !ok || len(args) == 0 {
		return Said{}
	}
	var raw []json.RawMessage
	if err := json.Unmarshal(args, &raw); err != nil || len(raw) != len(sy.args) {
		return Said{}
	}
	out := Said{Code: code, Args: make([]any, len(raw))}
	for i, r := range raw {
		v, err := readArg(sy.args[i], r)
		if err != nil {
			return Said{}
		}
		out.Args[i] = v
	}
	return out
}

func readArg(k arg, r json.RawMessage) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(r))
	dec.UseNumber()
	switch k {
	case amount, count, duration:
		var n json.Number
		if err := dec.Decode(&n); err != nil {
			return nil, err
		}
		v, err := n.Int64()
		if k == duration {
			return time.Duration(v), err
		}
		return v, err
	case parts:
		var p money.Parts
		err := dec.Decode(&p)
		return p, err
	case stated:
		var f Figures
		err := dec.Decode(&f)
		return f, err
	default:
		var s string
		err := dec.Decode(&s)
		return s, err
	}
}
