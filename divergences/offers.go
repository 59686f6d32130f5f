package divergences

import (
	"time"

	"github.com/razao/razao/accounts"
	"github.com/razao/razao/postings"
)

// Booking is a way to resolve a divergence that stands for money: the
// set it books makes the ledger agree with the PSP's statement. The list
// is the database's ck_divergences_resolution, word for word.
type Booking string

// The bookings. Amounts are the divergence's own (its statement's side,
// or the delivery it was set aside from, against the ledger's side),
// never typed by whoever resolves it.
const (
	// BookCustomerCredit: money the PSP received that pays no charge (a
	// second payment, a payment for an unknown charge, what a payment
	// brought beyond its sale) is owed to the customer: D assets:cash /
	// C liabilities:customer-credits.
	BookCustomerCredit Booking = "customer_credit"
	// BookRevenue: the money is the sale it is, or the difference of a
	// payment booked for another amount: D assets:cash / C
	// income:revenue (the other way round when the PSP has less).
	BookRevenue Booking = "revenue"
	// BookCreditRefund: money that went back to a customer out of the
	// credit a customer_credit resolution booked (credit_divergence_id):
	// D liabilities:customer-credits / C assets:cash.
	BookCreditRefund Booking = "credit_refund"
	// BookLoss: money that went back with nothing to charge it to: D
	// expenses:reconciliation-losses / C assets:cash.
	BookLoss Booking = "loss"
	// BookRefundDifference: a refund the PSP made for another amount
	// than booked (or did not make): the difference, D income:revenue /
	// C assets:cash when more went back, the other way when less.
	BookRefundDifference Booking = "refund_difference"
	// BookFeeDifference: the PSP's fee is not the one booked: the
	// difference, D expenses:psp-fees / C assets:cash when it is more,
	// the other way when less.
	BookFeeDifference Booking = "fee_difference"
)

// Bookings lists every booking.
var Bookings = []Booking{BookCustomerCredit, BookRevenue, BookCreditRefund, BookLoss, BookRefundDifference, BookFeeDifference}

// ParamCreditDivergence is the one parameter a booking takes: which
// customer_credit a credit_refund draws from.
const ParamCreditDivergence = "credit_divergence_id"

// Offer is a booking a divergence offers: the set it would book.
type Offer struct {
	Resolution Booking `json:"resolution"`
	// Amount is what the set moves (the sum of its debits), in centavos.
	Amount int64 `json:"amount"`
	// Legs are the set's postings: debits positive, credits negative.
	Legs []postings.Leg `json:"legs"`
	// Parameters the resolution needs besides its kind.
	Parameters []string `json:"parameters,omitempty"`
	// Description says what it books.
	Description string `json:"description"`
}

// figures are what a divergence's offers are computed from: both sides,
// as the divergence holds them (its statement's or its delivery's, and
// the ledger's).
type figures struct {
	ID       int64  `db:"id"`
	Reason   Reason `db:"reason"`
	Status   Status `db:"status"`
	ChargeID string `db:"charge_id"`
	// ChargeRegistered: ChargeID names a registered charge (an unknown
	// charge's does not), which the booked set may then name.
	ChargeRegistered bool `db:"charge_registered"`
	// Kind is what the PSP says happened: paid (money in), refunded
	// (money out), refund_open (nothing moved), or else.
	Kind string `db:"kind"`
	// Stated and StatedFee are the PSP's amount and fee, nil where it
	// states none.
	Stated    *int64 `db:"stated_amount"`
	StatedFee *int64 `db:"stated_fee"`
	// Ledger and LedgerFee are the ledger's side as the divergence
	// recorded it; Sale is the charge's sale set's amount, if booked.
	Ledger    *int64 `db:"ledger_amount"`
	LedgerFee *int64 `db:"ledger_fee"`
	Sale      *int64 `db:"sale_amount"`
	// At is when the money moved, as the PSP states it, else when it was
	// received, else when the divergence was recorded.
	At time.Time `db:"at"`
}

// offers are the bookings f offers, in the order finance is shown them;
// none for a divergence that moves no money, or whose figure neither
// side states (a payment that states no amount): a note closes those.
func (f figures) offers() []Offer {
	var out []Offer
	add := func(b Booking, signed int64, why string) {
		if signed == 0 {
			return
		}
		if o, ok := offer(b, signed, why); ok {
			out = append(out, o)
		}
	}
	// payment books a whole payment the ledger lacks: the PSP kept its
	// fee, so cash is what it left and the fee an expense.
	payment := func(b Booking, why string) {
		if o, ok := offer(b, *f.Stated, why); ok {
			out = append(out, o.lessFee(f.StatedFee))
		}
	}
	in, outflow := f.Kind == "paid", f.Kind == "refunded"
	switch f.Reason {
	case ReasonSecondPayment, ReasonMerchantMismatch:
		if in && f.Stated != nil {
			payment(BookCustomerCredit, "the payment is owed to the customer until refunded or applied")
		}
	case ReasonUnknownCharge:
		switch {
		case in && f.Stated != nil:
			payment(BookCustomerCredit, "the payment is owed to the customer until refunded or applied")
			payment(BookRevenue, "the payment is a sale of its own, without a charge")
		case outflow && f.Stated != nil:
			f.refundOut(add)
		}
	case ReasonAmountMismatch:
		if !in || f.Stated == nil {
			break
		}
		if f.Sale == nil {
			// Nothing booked: the whole payment is what the ledger lacks.
			payment(BookCustomerCredit, "the payment is owed to the customer until refunded or applied")
			payment(BookRevenue, "the payment is a sale for what was paid")
			break
		}
		booked := *f.Sale
		if f.Ledger != nil {
			booked = *f.Ledger
		}
		d := *f.Stated - booked
		add(BookRevenue, d, "the difference between the payment and the sale booked is revenue")
		if d > 0 {
			add(BookCustomerCredit, d, "what was paid beyond the sale booked is owed to the customer")
		}
	case ReasonRefundOfOtherPayment, ReasonRefundWithoutPayment, ReasonRefundExceedsPaid:
		if outflow && f.Stated != nil {
			f.refundOut(add)
		}
	case ReasonRefundAmountMismatch, ReasonRefundAmountChanged:
		if outflow && f.Stated != nil && f.Ledger != nil {
			add(BookRefundDifference, *f.Stated-*f.Ledger, "the difference between the refund made and the refund booked")
		}
	case ReasonRefundNotSettled:
		if f.Ledger != nil {
			add(BookRefundDifference, -*f.Ledger, "the refund booked moved no money")
		}
	case ReasonFeeMismatch:
		if f.StatedFee != nil {
			var booked int64
			if f.LedgerFee != nil {
				booked = *f.LedgerFee
			}
			add(BookFeeDifference, *f.StatedFee-booked, "the difference between the PSP's fee and the fee booked")
		}
	}
	return out
}

// refundOut offers what money that went back with no refund booked for
// it may be: a customer's credit refunded, or a loss.
func (f figures) refundOut(add func(Booking, int64, string)) {
	add(BookCreditRefund, *f.Stated, "the refund gives back a customer's credit")
	add(BookLoss, *f.Stated, "the refund went back with nothing to charge it to")
}

// offer is booking b of signed centavos (negative: the PSP has less than
// the ledger) as an Offer: its two legs, balanced. ok is false for an
// amount that cannot be one (the most negative int64).
func offer(b Booking, signed int64, why string) (Offer, bool) {
	amount := signed
	if amount < 0 {
		amount = -amount
	}
	if amount <= 0 {
		return Offer{}, false
	}
	// debit is the account the money goes to when signed > 0, credit the
	// one it comes from; a negative amount swaps them.
	var debit, credit string
	switch b {
	case BookCustomerCredit:
		debit, credit = accounts.Cash, accounts.CustomerCredits
	case BookRevenue:
		debit, credit = accounts.Cash, accounts.Revenue
	case BookCreditRefund:
		debit, credit = accounts.CustomerCredits, accounts.Cash
	case BookLoss:
		debit, credit = accounts.ReconciliationLosses, accounts.Cash
	case BookRefundDifference:
		debit, credit = accounts.Revenue, accounts.Cash
	case BookFeeDifference:
		debit, credit = accounts.PSPFees, accounts.Cash
	default:
		return Offer{}, false
	}
	if signed < 0 {
		debit, credit = credit, debit
	}
	o := Offer{Resolution: b, Amount: amount, Description: why,
		Legs: []postings.Leg{{Account: debit, Amount: amount, Currency: accounts.DefaultCurrency},
			{Account: credit, Amount: -amount, Currency: accounts.DefaultCurrency}}}
	if b == BookCreditRefund {
		o.Parameters = []string{ParamCreditDivergence}
	}
	return o, true
}

// lessFee is a payment's offer with the fee the PSP kept: the cash leg
// holds what the PSP left, expenses:psp-fees the fee. A fee that is
// absent, not positive, or not below the amount leaves the offer as it is
// (the PSP's figures do not make a payment then).
func (o Offer) lessFee(fee *int64) Offer {
	if fee == nil || *fee <= 0 || *fee >= o.Amount || len(o.Legs) != 2 || o.Legs[0].Account != accounts.Cash {
		return o
	}
	legs := []postings.Leg{
		{Account: accounts.Cash, Amount: o.Amount - *fee, Currency: o.Legs[0].Currency},
		{Account: accounts.PSPFees, Amount: *fee, Currency: o.Legs[0].Currency},
		o.Legs[1],
	}
	o.Legs = legs
	return o
}
