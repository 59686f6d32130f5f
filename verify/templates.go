package verify

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/razao/razao/accounts"
	"github.com/razao/razao/money"
	"github.com/razao/razao/postings"
)

// partnerPlaceholder stands for the set's own partner in a leg shape: a
// commission, its reversal and a payout move the payable account of the
// partner the set names, and no other partner's.
const partnerPlaceholder = "{partner}"

// templateShapes returns, for each kind postings' builders produce, the
// leg shapes they can produce: each shape is the sorted list of its legs,
// "D account" for a debit and "C account" for a credit, joined by ", ".
// It runs the builders themselves on sample values, so verify checks the
// ledger against the templates as written, not against a copy of them.
// Adjustments have no template: any balanced set is one.
func templateShapes() (shapes map[postings.Kind][]string, payablePrefix string) {
	const partner = "p"
	payable, err := accounts.PartnerPayable(partner)
	if err != nil {
		panic(err)
	}
	payablePrefix = payable[:len(payable)-len(partner)]
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var sets []postings.Set
	add := func(s postings.Set, err error) {
		if err != nil {
			panic(fmt.Sprintf("template shapes: %v", err))
		}
		sets = append(sets, s)
	}
	addOK := func(s postings.Set, ok bool, err error) {
		if !ok && err == nil {
			err = fmt.Errorf("%s: no set for the sample", s.Kind)
		}
		add(s, err)
	}
	add(postings.Sale("c", "BRL", 100, 0, at))
	add(postings.Sale("c", "BRL", 100, 1, at))
	// A sale of a Pix's parts: any of them beside the original, with or
	// without a fee.
	for mask := range 1 << 7 {
		on := func(bit int) int64 { return int64(mask >> bit & 1) }
		parts := money.Parts{Original: 100, Withdrawal: on(0), Change: on(1), Interest: on(2), Fine: on(3), Rebate: on(4), Discount: on(5)}
		add(postings.SaleOf("c", "BRL", parts, on(6), at))
	}
	addOK(postings.CommissionSet("c", partner, "BRL", 100, 1000, at))
	add(postings.Refund("c", "r", "BRL", 100, at))
	add(postings.RefundAs("c", "r", "BRL", 100, at, "D12345678202009091000abcde123456", "MED_FRAUDE"))
	addOK(postings.CommissionReversalSet("c", "r", partner, "BRL", 10, at))
	add(postings.Payout(partner, "k", "BRL", 100, at))
	shapes = map[postings.Kind][]string{}
	for _, s := range sets {
		legs := make([]string, len(s.Legs))
		for i, l := range s.Legs {
			code := l.Account
			if code == payable {
				code = payablePrefix + partnerPlaceholder
			}
			side := "D "
			if l.Amount < 0 {
				side = "C "
			}
			legs[i] = side + code
		}
		sort.Strings(legs)
		shape := strings.Join(legs, ", ")
		if !slices.Contains(shapes[s.Kind], shape) {
			shapes[s.Kind] = append(shapes[s.Kind], shape)
		}
	}
	return shapes, payablePrefix
}

// describeShapes spells a kind's shapes for a breach line: each shape
// ("[C income:revenue, D assets:cash] or [...]") when there are two at
// most, else the legs every shape has and the ones some have: a sale of a
// Pix's parts may have any of them, 130 shapes in all.
func describeShapes(shapes []string) string {
	sorted := slices.Clone(shapes)
	sort.Strings(sorted)
	if len(sorted) <= 2 {
		return "[" + strings.Join(sorted, "] or [") + "]"
	}
	count := map[string]int{}
	for _, s := range sorted {
		for _, leg := range strings.Split(s, ", ") {
			count[leg]++
		}
	}
	var every, some []string
	for leg, n := range count {
		if n == len(sorted) {
			every = append(every, leg)
		} else {
			some = append(some, leg)
		}
	}
	sort.Strings(every)
	sort.Strings(some)
	return "[" + strings.Join(every, ", ") + "] with any of [" + strings.Join(some, ", ") + "]"
}
