package verify

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/razao/razao/accounts"
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
