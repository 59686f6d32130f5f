package charges

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/razao/razao/divergences"
	"github.com/razao/razao/events"
	"github.com/razao/razao/postings"
)

var decideAt = time.Date(2026, 8, 10, 15, 0, 0, 0, time.UTC)

// rules are a ledger's: a limit of 1,000,000 centavos, and events after
// 2026-12-31 outside its window.
var rules = Rules{Limit: 1_000_000, CheckTime: func(t time.Time) error {
	if t.Year() > 2026 {
		return errors.New("event time outside the window")
	}
	return nil
}}

func ptr[T any](v T) *T { return &v }

// pending is a charge of 4990 of merchant loja-1, 10% to partner-42.
func pending() ChargeState {
	return ChargeState{Charge: Charge{ID: "order-1", Merchant: ptr("loja-1"), Amount: 4990, Currency: "BRL",
		Partner: ptr("partner-42"), CommissionBP: 1000, Access: "course:1", State: StatePending}}
}

// paidBy is the charge paid 4990 (PSP fee 75) by payment ref, granted.
func paidBy(ref string) ChargeState {
	s := pending()
	s.State, s.PaidAmount, s.Fee, s.Commission, s.PaidAt, s.PaidRef = StatePaid, ptr(int64(4990)), ptr(int64(75)), 499, ptr(decideAt), ptr(ref)
	s.Granted = true
	return s
}

func withRefund(s ChargeState, id string, amount int64) ChargeState {
	s.Booked = []BookedRefund{{ID: id, Amount: amount, At: decideAt}}
	s.RefundedAmount += amount
	s.State = StatePartiallyRefunded
	return s
}

func pay(ref string, amount, fee int64) Event {
	return Event{Kind: Paid, ChargeID: "order-1", PaymentRef: ref, Merchant: "loja-1", Amount: amount, HasAmount: true,
		Fee: fee, HasFee: true, At: decideAt, InboxID: 7}
}

func refund(id string, amount int64) Event {
	return Event{Kind: Refunded, ChargeID: "order-1", RefundID: id, Merchant: "loja-1", Amount: amount, HasAmount: true,
		At: decideAt.Add(time.Hour), InboxID: 8}
}

func with(ev Event, f func(*Event)) Event { f(&ev); return ev }

func notGranted(s ChargeState) ChargeState { s.Granted = false; return s }

// Every rule of what a PSP event does to a charge, decided without the
// database: the result, the reason of a divergence, the charge's state
// after, the posting sets, the outbox events and the grant.
func TestDecide(t *testing.T) {
	t.Parallel()
	type want struct {
		result   Result
		reason   divergences.Reason
		state    State
		refunded int64
		sets     []postings.Kind
		topics   []events.Topic
		grant    bool
	}
	sale := []postings.Kind{postings.KindSale, postings.KindCommission}
	for _, c := range []struct {
		name  string
		state ChargeState
		ev    Event
		want  want
	}{
		{"paid once: sale, commission, grant", pending(), pay("hodle:t1", 4990, 75),
			want{Applied, "", StatePaid, 0, sale, []events.Topic{events.TopicChargePaid, events.TopicAccessGranted}, true}},
		{"paid without a partner: the sale alone", func() ChargeState { s := pending(); s.Partner, s.CommissionBP = nil, 0; return s }(),
			pay("hodle:t1", 4990, 0), want{Applied, "", StatePaid, 0, []postings.Kind{postings.KindSale},
				[]events.Topic{events.TopicChargePaid, events.TopicAccessGranted}, true}},
		{"the same payment again: nothing", paidBy("hodle:t1"), pay("hodle:t1", 4990, 75),
			want{NoOp, "", StatePaid, 0, nil, nil, false}},
		{"the same payment again, grant lost: repaired", notGranted(paidBy("hodle:t1")), pay("hodle:t1", 4990, 75),
			want{NoOp, "", StatePaid, 0, nil, []events.Topic{events.TopicAccessGranted}, true}},
		{"another payment: second_payment", paidBy("hodle:t1"), pay("hodle:t2", 4990, 75),
			want{Divergence, divergences.ReasonSecondPayment, StatePaid, 0, nil, nil, false}},
		{"paid before payments had a reference: second_payment", func() ChargeState { s := paidBy(""); s.PaidRef = nil; return s }(),
			pay("hodle:t1", 4990, 75), want{Divergence, divergences.ReasonSecondPayment, StatePaid, 0, nil, nil, false}},
		{"the same payment with another fee: amount_mismatch", paidBy("hodle:t1"), pay("hodle:t1", 4990, 80),
			want{Divergence, divergences.ReasonAmountMismatch, StatePaid, 0, nil, nil, false}},
		{"paid another amount: amount_mismatch", pending(), pay("hodle:t1", 4000, 0),
			want{Divergence, divergences.ReasonAmountMismatch, StatePending, 0, nil, nil, false}},
		{"paid stating no amount: amount_mismatch", pending(), with(pay("hodle:t1", 0, 0), func(e *Event) { e.HasAmount = false }),
			want{Divergence, divergences.ReasonAmountMismatch, StatePending, 0, nil, nil, false}},
		{"a fee of the whole payment: amount_mismatch", pending(), pay("hodle:t1", 4990, 4990),
			want{Divergence, divergences.ReasonAmountMismatch, StatePending, 0, nil, nil, false}},
		{"paid above the limit: malformed", func() ChargeState { s := pending(); s.Amount = 2_000_000; return s }(),
			pay("hodle:t1", 2_000_000, 0), want{Divergence, divergences.ReasonMalformed, StatePending, 0, nil, nil, false}},
		{"through another merchant's endpoint: merchant_mismatch", pending(), with(pay("hodle:t1", 4990, 0), func(e *Event) { e.Merchant = "loja-2" }),
			want{Divergence, divergences.ReasonMerchantMismatch, StatePending, 0, nil, nil, false}},
		{"a charge of no merchant: any endpoint's", func() ChargeState { s := pending(); s.Merchant = nil; return s }(),
			with(pay("hodle:t1", 4990, 0), func(e *Event) { e.Merchant = "loja-2" }),
			want{Applied, "", StatePaid, 0, sale, []events.Topic{events.TopicChargePaid, events.TopicAccessGranted}, true}},
		{"dated outside the window: malformed", pending(), with(pay("hodle:t1", 4990, 0), func(e *Event) { e.At = time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC) }),
			want{Divergence, divergences.ReasonMalformed, StatePending, 0, nil, nil, false}},
		{"refund before its payment: parked", pending(), refund("rf-1", 1000),
			want{Parked, "", StatePending, 0, nil, nil, false}},
		{"partial refund: refund and commission reversal", paidBy("hodle:t1"), refund("rf-1", 1000),
			want{Applied, "", StatePartiallyRefunded, 1000, []postings.Kind{postings.KindRefund, postings.KindCommissionReversal},
				[]events.Topic{events.TopicChargeRefunded}, false}},
		{"a second partial refund of the rest: refunded", withRefund(paidBy("hodle:t1"), "rf-1", 1000), refund("rf-2", 3990),
			want{Applied, "", StateRefunded, 4990, []postings.Kind{postings.KindRefund, postings.KindCommissionReversal},
				[]events.Topic{events.TopicChargeRefunded}, false}},
		{"the same refund again: nothing", withRefund(paidBy("hodle:t1"), "rf-1", 1000), refund("rf-1", 1000),
			want{NoOp, "", StatePartiallyRefunded, 1000, nil, nil, false}},
		{"the same refund, another amount: refund_amount_changed", withRefund(paidBy("hodle:t1"), "rf-1", 1000), refund("rf-1", 1500),
			want{Divergence, divergences.ReasonRefundAmountChanged, StatePartiallyRefunded, 1000, nil, nil, false}},
		{"more than is left: refund_exceeds_paid", withRefund(paidBy("hodle:t1"), "rf-1", 1000), refund("rf-2", 4000),
			want{Divergence, divergences.ReasonRefundExceedsPaid, StatePartiallyRefunded, 1000, nil, nil, false}},
		{"no amount, read as everything left", withRefund(paidBy("hodle:t1"), "rf-1", 1000),
			with(refund("rf-2", 0), func(e *Event) { e.HasAmount, e.FullRefundIfNoAmount = false, true }),
			want{Applied, "", StateRefunded, 4990, []postings.Kind{postings.KindRefund, postings.KindCommissionReversal},
				[]events.Topic{events.TopicChargeRefunded}, false}},
		{"no amount, and the scheme says nothing: refund_amount_missing", paidBy("hodle:t1"),
			with(refund("rf-1", 0), func(e *Event) { e.HasAmount = false }),
			want{Divergence, divergences.ReasonRefundAmountMissing, StatePaid, 0, nil, nil, false}},
		{"no refund id: malformed", paidBy("hodle:t1"), refund("", 1000),
			want{Divergence, divergences.ReasonMalformed, StatePaid, 0, nil, nil, false}},
		{"refund of another payment: refund_of_other_payment", paidBy("hodle:t1"),
			with(refund("rf-1", 1000), func(e *Event) { e.PaymentRef = "hodle:t2" }),
			want{Divergence, divergences.ReasonRefundOfOtherPayment, StatePaid, 0, nil, nil, false}},
		{"refund naming the payment booked", paidBy("hodle:t1"), with(refund("rf-1", 1000), func(e *Event) { e.PaymentRef = "hodle:t1" }),
			want{Applied, "", StatePartiallyRefunded, 1000, []postings.Kind{postings.KindRefund, postings.KindCommissionReversal},
				[]events.Topic{events.TopicChargeRefunded}, false}},
		{"refund naming a reference, payment identified by its event", paidBy("standard:event:msg_1"),
			with(refund("rf-1", 1000), func(e *Event) { e.PaymentRef = "standard:pay-9" }),
			want{Applied, "", StatePartiallyRefunded, 1000, []postings.Kind{postings.KindRefund, postings.KindCommissionReversal},
				[]events.Topic{events.TopicChargeRefunded}, false}},
		{"failure of a pending charge: failed, no money", pending(), Event{Kind: Failed, ChargeID: "order-1", Merchant: "loja-1", At: decideAt},
			want{Applied, "", StateFailed, 0, nil, []events.Topic{events.TopicChargeFailed}, false}},
		{"failure of a paid charge: it stays paid", paidBy("hodle:t1"), Event{Kind: Failed, ChargeID: "order-1", Merchant: "loja-1", At: decideAt},
			want{Applied, "", StatePaid, 0, nil, []events.Topic{events.TopicChargeFailed}, false}},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := slices.Clone(c.state.Booked)
			d, err := Decide(c.state, c.ev, rules)
			if err != nil {
				t.Fatal(err)
			}
			var kinds []postings.Kind
			for _, s := range d.Sets {
				kinds = append(kinds, s.Kind)
				if s.InboxID != c.ev.InboxID {
					t.Errorf("set %s of delivery %d, want %d", s.Kind, s.InboxID, c.ev.InboxID)
				}
			}
			var topics []events.Topic
			for _, e := range d.Events {
				topics = append(topics, e.Topic)
			}
			got := want{d.Result, d.Reason, d.State.State, d.State.RefundedAmount, kinds, topics, d.Grant}
			if got.result != c.want.result || got.reason != c.want.reason || got.state != c.want.state ||
				got.refunded != c.want.refunded || !slices.Equal(got.sets, c.want.sets) ||
				!slices.Equal(got.topics, c.want.topics) || got.grant != c.want.grant {
				t.Errorf("decided %+v (%s)\nwant    %+v", got, d.Detail, c.want)
			}
			if changed := d.Result == Applied; d.Changed != changed {
				t.Errorf("Changed %v for a result %s", d.Changed, d.Result)
			}
			if d.Result == Divergence && d.Detail == "" {
				t.Error("a divergence without a detail")
			}
			if !slices.Equal(c.state.Booked, before) {
				t.Errorf("Decide changed the refunds it was given: %v, was %v", c.state.Booked, before)
			}
		})
	}
}

// The fee and the commission are what the sale books: cash is the amount
// less the PSP's fee, the commission a floor of the rate.
func TestDecidePaidBooksFeeAndCommission(t *testing.T) {
	t.Parallel()
	d, err := Decide(pending(), pay("hodle:t1", 4990, 75), rules)
	if err != nil {
		t.Fatal(err)
	}
	if *d.State.PaidAmount != 4990 || *d.State.Fee != 75 || d.State.Commission != 499 || *d.State.PaidRef != "hodle:t1" {
		t.Fatalf("state %+v", d.State.Charge)
	}
	legs := map[string]int64{}
	for _, l := range d.Sets[0].Legs {
		legs[l.Account] = l.Amount
	}
	if legs["assets:cash"] != 4915 || legs["expenses:psp-fees"] != 75 || legs["income:revenue"] != -4990 {
		t.Fatalf("sale legs %v", legs)
	}
	if d.Sets[1].Amount != 499 {
		t.Fatalf("commission %d, want 499", d.Sets[1].Amount)
	}
}

// A refund under an id not booked is paired with a refund the other side
// booked for the same amount (a statement file's id and its webhook's),
// one to one, the nearest in time: nothing is booked, the pair is. A
// refund of the same side, of another amount, or with the booked refund
// already paired, is another refund and is booked.
func TestRefundUnderTheOtherSidesIDIsPairedOnce(t *testing.T) {
	booked := func(s ChargeState, bs ...BookedRefund) ChargeState {
		for _, b := range bs {
			s.RefundedAmount += b.Amount
		}
		s.Booked, s.State = bs, StatePartiallyRefunded
		return s
	}
	at := decideAt.Add(time.Hour)
	fromFile := func(ev Event) Event { ev.StatementRefund = true; return ev }
	for _, tc := range []struct {
		name   string
		state  ChargeState
		ev     Event
		pairs  string // the booked refund paired, "" for none
		result Result
	}{
		{"webhook after the file's line", booked(paidBy("hodle:t1"), BookedRefund{ID: "HR-1", Amount: 300, At: at, Statement: true}),
			refund("evt-1", 300), "HR-1", NoOp},
		{"file's line after the webhook", booked(paidBy("hodle:t1"), BookedRefund{ID: "evt-1", Amount: 300, At: at}),
			fromFile(refund("HR-1", 300)), "evt-1", NoOp},
		{"nearest of two", booked(paidBy("hodle:t1"), BookedRefund{ID: "HR-1", Amount: 300, At: at.Add(-5 * time.Hour), Statement: true},
			BookedRefund{ID: "HR-2", Amount: 300, At: at.Add(time.Minute), Statement: true}), refund("evt-2", 300), "HR-2", NoOp},
		{"same side is another refund", booked(paidBy("hodle:t1"), BookedRefund{ID: "evt-1", Amount: 300, At: at}),
			refund("evt-2", 300), "", Applied},
		{"another amount is another refund", booked(paidBy("hodle:t1"), BookedRefund{ID: "HR-1", Amount: 300, At: at, Statement: true}),
			refund("evt-1", 200), "", Applied},
		{"already paired", booked(paidBy("hodle:t1"), BookedRefund{ID: "HR-1", Amount: 300, At: at, Statement: true, Alias: "evt-1"}),
			refund("evt-2", 300), "", Applied},
		{"its own other id again", booked(paidBy("hodle:t1"), BookedRefund{ID: "HR-1", Amount: 300, At: at, Statement: true, Alias: "evt-1"}),
			refund("evt-1", 300), "", NoOp},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := slices.Clone(tc.state.Booked)
			d, err := Decide(tc.state, tc.ev, rules)
			if err != nil {
				t.Fatal(err)
			}
			if d.Result != tc.result {
				t.Fatalf("result %s (%s %s), want %s", d.Result, d.Reason, d.Detail, tc.result)
			}
			paired := ""
			if d.Alias != nil {
				paired = d.Alias.RefundID
				if d.Alias.AliasID != tc.ev.RefundID {
					t.Errorf("pair names %q, want %q", d.Alias.AliasID, tc.ev.RefundID)
				}
			}
			if paired != tc.pairs {
				t.Errorf("paired with %q, want %q", paired, tc.pairs)
			}
			if paired != "" && len(d.Sets) != 0 {
				t.Errorf("a paired refund booked %d sets", len(d.Sets))
			}
			if !slices.Equal(tc.state.Booked, before) {
				t.Errorf("Decide changed the state it was given")
			}
		})
	}
}
