package money

import (
	"fmt"
	"strings"
)

// Parts is what an amount received is made of, when the payer's PSP says
// so (the Pix API's componentesValor), in centavos, each ≥ 0:
//
//	received = Original + Withdrawal + Change + Interest + Fine − Rebate − Discount
//
// Original is the sale; Withdrawal (Pix Saque) and Change (Pix Troco) are
// cash the merchant handed over the counter, never revenue; Interest
// (juros) and Fine (multa) are income of their own, Rebate (abatimento)
// and Discount (desconto) reductions of their own, on a charge with a due
// date (cobv). The zero Parts says nothing: all of the amount is the sale.
type Parts struct {
	Original   int64
	Withdrawal int64
	Change     int64
	Interest   int64
	Fine       int64
	Rebate     int64
	Discount   int64
}

// Stated reports whether p says anything.
func (p Parts) Stated() bool { return p != Parts{} }

// Sum is what the parts add up to: Original + Withdrawal + Change +
// Interest + Fine − Rebate − Discount. Each part of a Pix is below 10¹²
// centavos (\d{1,10}\.\d{2}), so the sum cannot overflow.
func (p Parts) Sum() int64 {
	return p.Original + p.Withdrawal + p.Change + p.Interest + p.Fine - p.Rebate - p.Discount
}

// CashOut is the cash handed over the counter: Withdrawal + Change.
func (p Parts) CashOut() int64 { return p.Withdrawal + p.Change }

// String spells p out in reais, the parts present only: "original 80.00 +
// troco 20.00", in the Pix API's own words, for a divergence's detail.
func (p Parts) String() string {
	return p.Spell(func(c int64) string { return FormatReais(c, '.') })
}

// Spell writes the parts present, in the Pix API's words and order, each
// amount as amount writes it: original first (always), then saque, troco,
// juros and multa added, abatimento and desconto taken off.
func (p Parts) Spell(amount func(int64) string) string {
	var b strings.Builder
	for _, t := range []struct {
		name string
		v    int64
		sign string
	}{
		{"original", p.Original, "+"}, {"saque", p.Withdrawal, "+"}, {"troco", p.Change, "+"},
		{"juros", p.Interest, "+"}, {"multa", p.Fine, "+"},
		{"abatimento", p.Rebate, "−"}, {"desconto", p.Discount, "−"},
	} {
		if t.v == 0 && t.name != "original" {
			continue
		}
		switch {
		case b.Len() > 0:
			fmt.Fprintf(&b, " %s ", t.sign)
		case t.sign == "−":
			b.WriteString("− ")
		}
		fmt.Fprintf(&b, "%s %s", t.name, amount(t.v))
	}
	return b.String()
}
