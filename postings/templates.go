package postings

import (
	"fmt"
	"math/bits"
	"strings"
	"time"

	"github.com/razao/razao/accounts"
	"github.com/razao/razao/money"
)

// The builders below turn business events into the posting sets of
// DESIGN.md's templates. Each derives its idempotency key from the business
// identity of the event, so a redelivered event maps to the same set.

// Sale books a confirmed payment of amount centavos, of which the PSP kept
// fee (0 when the PSP states none): D cash amount−fee, D psp-fees fee,
// C revenue amount. Cash then matches the PSP's statement.
func Sale(chargeID, currency string, amount, fee int64, at time.Time) (Set, error) {
	if amount <= 0 || fee < 0 || fee >= amount {
		return Set{}, fmt.Errorf("%w: sale of %d with fee %d", ErrInvalid, amount, fee)
	}
	legs := []Leg{{Account: accounts.Cash, Amount: amount - fee}}
	if fee > 0 {
		legs = append(legs, Leg{Account: accounts.PSPFees, Amount: fee})
	}
	legs = append(legs, Leg{Account: accounts.Revenue, Amount: -amount})
	return Set{
		Kind: KindSale, IdempotencyKey: "sale:" + chargeID, Amount: amount, Currency: currency,
		EventAt: at, ChargeID: chargeID, Legs: legs,
	}, nil
}

// SaleOf books a confirmed payment whose amount is made of parts (a Pix's
// componentesValor): the sale of parts.Original on income:revenue, and
// each other part on its own account, so that cash is what came in:
//
//	D cash        received − fee     C revenue          original
//	D psp-fees    fee                C interest         juros
//	D rebates     abatimento         C fines            multa
//	D discounts   desconto           C till:pix-withdrawals  saque
//	                                 C till:pix-change       troco
//
// where received = parts.Sum(). The set's amount is its debits (received
// plus the reductions). A part of zero books no leg; parts that say
// nothing book Sale's own legs.
func SaleOf(chargeID, currency string, parts money.Parts, fee int64, at time.Time) (Set, error) {
	if !parts.Stated() {
		return Set{}, fmt.Errorf("%w: sale of no parts", ErrInvalid)
	}
	received := parts.Sum()
	for _, v := range []int64{parts.Original, parts.Withdrawal, parts.Change, parts.Interest, parts.Fine, parts.Rebate, parts.Discount} {
		if v < 0 || v > money.Ceiling {
			return Set{}, fmt.Errorf("%w: sale of parts %s", ErrInvalid, parts)
		}
	}
	if parts.Original <= 0 || fee < 0 || fee >= received {
		return Set{}, fmt.Errorf("%w: sale of parts %s with fee %d", ErrInvalid, parts, fee)
	}
	legs := []Leg{{Account: accounts.Cash, Amount: received - fee}}
	for _, l := range []Leg{
		{accounts.PSPFees, fee, ""}, {accounts.Rebates, parts.Rebate, ""}, {accounts.Discounts, parts.Discount, ""},
		{accounts.Revenue, -parts.Original, ""}, {accounts.Interest, -parts.Interest, ""}, {accounts.Fines, -parts.Fine, ""},
		{accounts.TillWithdrawal, -parts.Withdrawal, ""}, {accounts.TillChange, -parts.Change, ""},
	} {
		if l.Amount != 0 {
			legs = append(legs, l)
		}
	}
	return Set{
		Kind: KindSale, IdempotencyKey: "sale:" + chargeID, Amount: received + parts.Rebate + parts.Discount, Currency: currency,
		EventAt: at, ChargeID: chargeID, Legs: legs,
	}, nil
}

// Commission returns floor(amount·rateBP/10000): the partner's commission
// on a charge, in centavos, never rounded up.
func Commission(amount int64, rateBP int64) int64 {
	return mulDiv(amount, rateBP, 10000)
}

// CommissionSet books the partner's commission on a sale: D commission
// expense C, C commission-payable:{partner} C. ok is false when the
// commission rounds to zero and there is nothing to book.
func CommissionSet(chargeID, partner, currency string, amount, rateBP int64, at time.Time) (s Set, ok bool, err error) {
	if rateBP < 0 || rateBP > 10000 {
		return Set{}, false, fmt.Errorf("%w: commission rate %d bp outside 0..10000", ErrInvalid, rateBP)
	}
	c := Commission(amount, rateBP)
	if c == 0 {
		return Set{}, false, nil
	}
	payable, err := accounts.PartnerPayable(partner)
	if err != nil {
		return Set{}, false, err
	}
	return Set{
		Kind: KindCommission, IdempotencyKey: "commission:" + chargeID, Amount: c, Currency: currency,
		EventAt: at, ChargeID: chargeID, Partner: partner,
		Legs: []Leg{{Account: accounts.CommissionExpense, Amount: c}, {Account: payable, Amount: -c}},
	}, true, nil
}

// Refund books one refund of amount centavos, identified by the PSP's
// refund id, in the competence of the refund: D revenue, C cash.
func Refund(chargeID, refundID, currency string, amount int64, at time.Time) (Set, error) {
	return RefundAs(chargeID, refundID, currency, amount, at, "", "")
}

// RefundAs is Refund with what the PSP stated of it: its return id
// (bcb-pix rtrId) and nature (natureza), kept with the set ("" when it
// stated none). A return made under the MED (nature MED_*, see
// MEDReturn) is not the merchant's own refund: D med-returns, C cash, an
// expense of its own rather than a sale undone.
func RefundAs(chargeID, refundID, currency string, amount int64, at time.Time, returnID, nature string) (Set, error) {
	if amount <= 0 {
		return Set{}, fmt.Errorf("%w: refund of %d", ErrInvalid, amount)
	}
	debit := accounts.Revenue
	if MEDReturn(nature) {
		debit = accounts.MEDReturns
	}
	return Set{
		Kind: KindRefund, IdempotencyKey: refundKey(chargeID, refundID), Amount: amount, Currency: currency,
		EventAt: at, ChargeID: chargeID, RefundID: refundID, ReturnID: returnID, Nature: nature,
		Legs: []Leg{{Account: debit, Amount: amount}, {Account: accounts.Cash, Amount: -amount}},
	}, nil
}

// MEDReturn reports whether a refund of nature was made under the MED
// (Mecanismo Especial de Devolução): the Pix API's MED_OPERACIONAL,
// MED_FRAUDE, MED_PIX_AUTOMATICO, and any MED_* it adds.
func MEDReturn(nature string) bool { return strings.HasPrefix(nature, "MED_") }

// ReversalAmount is the commission to reverse for a refund of refund
// centavos after alreadyRefunded, on a sale of sale centavos whose
// commission was commission: floor(C·(prev+R)/A) − floor(C·prev/A). The
// cumulative rounding makes the reversals of refunds that add up to the
// sale add up to exactly the commission.
func ReversalAmount(commission, sale, alreadyRefunded, refund int64) int64 {
	return mulDiv(commission, alreadyRefunded+refund, sale) - mulDiv(commission, alreadyRefunded, sale)
}

// CommissionReversalSet books the part of a partner's commission that a
// refund takes back: D commission-payable:{partner}, C commission expense.
// ok is false when the amount rounds to zero.
func CommissionReversalSet(chargeID, refundID, partner, currency string, amount int64, at time.Time) (s Set, ok bool, err error) {
	if amount == 0 {
		return Set{}, false, nil
	}
	payable, err := accounts.PartnerPayable(partner)
	if err != nil {
		return Set{}, false, err
	}
	return Set{
		Kind: KindCommissionReversal, IdempotencyKey: reversalKey(chargeID, refundID),
		Amount: amount, Currency: currency, EventAt: at, ChargeID: chargeID, RefundID: refundID, Partner: partner,
		Legs: []Leg{{Account: payable, Amount: amount}, {Account: accounts.CommissionExpense, Amount: -amount}},
	}, true, nil
}

// Payout books money paid out to a partner: D commission-payable:{partner},
// C cash. key is the caller's idempotency key for the payout.
func Payout(partner, key, currency string, amount int64, at time.Time) (Set, error) {
	if amount <= 0 {
		return Set{}, fmt.Errorf("%w: payout of %d", ErrInvalid, amount)
	}
	payable, err := accounts.PartnerPayable(partner)
	if err != nil {
		return Set{}, err
	}
	return Set{
		Kind: KindPayout, IdempotencyKey: "payout:" + partner + ":" + key, Amount: amount, Currency: currency,
		EventAt: at, Partner: partner,
		Legs: []Leg{{Account: payable, Amount: amount}, {Account: accounts.Cash, Amount: -amount}},
	}, nil
}

// RefundKeys returns the idempotency keys of the sets one refund books
// (the refund and its commission reversal), for intake to check that they
// fit MaxKeyLength before the refund is accepted. They name the charge and
// the PSP's refund id in full, rather than a hash of them, so that an
// auditor reads in the journal which refund a set books.
func RefundKeys(chargeID, refundID string) []string {
	return []string{refundKey(chargeID, refundID), reversalKey(chargeID, refundID)}
}

func refundKey(chargeID, refundID string) string {
	return "refund:" + chargeRefundKey(chargeID, refundID)
}

func reversalKey(chargeID, refundID string) string {
	return "commission_reversal:" + chargeRefundKey(chargeID, refundID)
}

// chargeRefundKey joins a charge id and a refund id unambiguously: both may
// contain ':', so the charge id is prefixed with its length ("7:order-1:rf-1");
// the refund id, last, may then hold any byte ('|', ':') without two pairs
// making one key.
func chargeRefundKey(chargeID, refundID string) string {
	return fmt.Sprintf("%d:%s:%s", len(chargeID), chargeID, refundID)
}

// mulDiv returns floor(a·b/c) for non-negative a, b and positive c without
// overflowing in the product; it panics if the quotient does not fit,
// which the callers' ranges (b ≤ c) rule out.
func mulDiv(a, b, c int64) int64 {
	if a < 0 || b < 0 || c <= 0 {
		panic(fmt.Sprintf("mulDiv(%d, %d, %d): negative operand", a, b, c))
	}
	hi, lo := bits.Mul64(uint64(a), uint64(b))
	if hi >= uint64(c) {
		panic(fmt.Sprintf("mulDiv(%d, %d, %d): overflow", a, b, c))
	}
	q, _ := bits.Div64(hi, lo, uint64(c))
	return int64(q)
}
