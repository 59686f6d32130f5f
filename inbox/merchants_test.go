package inbox_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/razao/razao/charges"
)

// merchantCharge registers a charge of merchant, with an optional PSP
// reference.
func (e *env) merchantCharge(id, merchant, pspRef string, amount int64) {
	e.T.Helper()
	_, _, err := charges.Register(context.Background(), e.DB, charges.NewCharge{
		ID: id, Merchant: merchant, PSPRef: pspRef, Amount: amount, Access: "course:" + id,
	})
	if err != nil {
		e.T.Fatal(err)
	}
}

// standardAt posts razao's own event, signed as Standard Webhooks, to the
// named endpoint.
func (e *env) standardAt(endpoint, msgID, typ string, data map[string]any) reply {
	e.T.Helper()
	body, _ := json.Marshal(map[string]any{"type": typ, "timestamp": clock.UTC().Format(time.RFC3339), "data": data})
	return e.Post("/webhooks/"+endpoint, standardHeaders(msgID, clock.Unix(), body), body)
}

// wantOK fails unless the delivery was answered 200 with status.
func wantOK(t *testing.T, what string, r reply, status string) {
	t.Helper()
	if r.Code != 200 || r.Body.Status != status {
		t.Fatalf("%s: %d %+v, want 200 %s", what, r.Code, r.Body, status)
	}
}

// divergences lists the reasons of the divergences opened, in order.
func (e *env) divergences() []string {
	e.T.Helper()
	var reasons []string
	if err := e.DB.Select(&reasons, `SELECT reason FROM divergences ORDER BY id`); err != nil {
		e.T.Fatal(err)
	}
	return reasons
}

func (e *env) wantDivergences(want ...string) {
	e.T.Helper()
	got := e.divergences()
	if len(got) != len(want) {
		e.T.Fatalf("divergences %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			e.T.Fatalf("divergences %v, want %v", got, want)
		}
	}
}

func (e *env) wantSets(kind string, want int64) {
	e.T.Helper()
	if n := e.Count(`SELECT count(*) FROM posting_sets WHERE kind = $1`, kind); n != want {
		e.T.Fatalf("%d %s sets, want %d", n, kind, want)
	}
}

func (e *env) wantCharge(id string, state charges.State, refunded int64) {
	e.T.Helper()
	c, err := charges.Get(context.Background(), e.DB, id)
	if err != nil {
		e.T.Fatal(err)
	}
	if c.State != state || c.RefundedAmount != refunded {
		e.T.Fatalf("charge %s: state %s refunded %d, want %s %d", id, c.State, c.RefundedAmount, state, refunded)
	}
}

func TestSecondStandardPaymentUnderAnotherWebhookIDIsSecondPayment(t *testing.T) {
	t.Parallel()
	e := newMerchantsEnv(t)
	e.merchantCharge("order-1", "loja-1", "", 4990)
	paid := map[string]any{"charge_id": "order-1", "amount": 4990}
	wantOK(t, "first payment", e.standardAt("std", "msg_1", "charge.paid", paid), "accepted")
	// Another message: another notification of a payment, not a retry of
	// the first one (a retry keeps its webhook-id).
	wantOK(t, "second payment", e.standardAt("std", "msg_2", "charge.paid", paid), "accepted")
	e.wantSets("sale", 1)
	e.wantDivergences("second_payment")
	if n := e.Count(`SELECT count(*) FROM inbox WHERE status = 'divergent' AND event_id = 'msg_2'`); n != 1 {
		t.Fatalf("the second payment's delivery is not divergent")
	}
	e.wantCharge("order-1", "paid", 0)
}

func TestSameStandardPaymentRedeliveredIsNoSecondPayment(t *testing.T) {
	t.Parallel()
	e := newMerchantsEnv(t)
	e.merchantCharge("order-1", "loja-1", "", 4990)
	paid := map[string]any{"charge_id": "order-1", "amount": 4990}
	wantOK(t, "payment", e.standardAt("std", "msg_1", "charge.paid", paid), "accepted")
	wantOK(t, "its retry", e.standardAt("std", "msg_1", "charge.paid", paid), "duplicate")
	// The same message through the merchant's other endpoint is the same
	// payment: stored (another endpoint's key), applied as a no-op.
	wantOK(t, "same message, other endpoint", e.standardAt("std-2", "msg_1", "charge.paid", paid), "accepted")
	e.wantSets("sale", 1)
	e.wantDivergences()
	if n := e.Count(`SELECT count(*) FROM inbox WHERE status = 'processed'`); n != 2 {
		t.Fatalf("%d deliveries processed, want 2", n)
	}
}

func TestPaymentThroughAnotherEndpointIsSecondPaymentUnlessSameRef(t *testing.T) {
	t.Parallel()
	e := newMerchantsEnv(t)
	e.merchantCharge("order-1", "loja-1", "", 4990)
	wantOK(t, "payment", e.HodleAt("hodle", hodlePaid("track-1", "order-1", "49.90")), "accepted")
	// Same trackId through the merchant's other Hodle endpoint: the same
	// payment.
	wantOK(t, "same payment, other endpoint", e.HodleAt("hodle-2", hodlePaid("track-1", "order-1", "49.90")), "accepted")
	e.wantDivergences()
	// Through another scheme: nothing proves it is the payment booked.
	wantOK(t, "standard payment", e.standardAt("std", "msg_1", "charge.paid", map[string]any{"charge_id": "order-1", "amount": 4990}), "accepted")
	// Another trackId through the other endpoint.
	wantOK(t, "another deposit", e.HodleAt("hodle-2", hodlePaid("track-2", "order-1", "49.90")), "accepted")
	e.wantSets("sale", 1)
	e.wantDivergences("second_payment", "second_payment")
	e.wantCharge("order-1", "paid", 0)

	// And the other way round: paid through standard, then through Hodle.
	e.merchantCharge("order-2", "loja-1", "", 4990)
	wantOK(t, "standard payment", e.standardAt("std", "msg_2", "charge.paid", map[string]any{"charge_id": "order-2", "amount": 4990}), "accepted")
	wantOK(t, "hodle payment", e.HodleAt("hodle", hodlePaid("track-3", "order-2", "49.90")), "accepted")
	e.wantSets("sale", 2)
	e.wantDivergences("second_payment", "second_payment", "second_payment")
}

func TestOtherMerchantsEndpointActsOnNoCharge(t *testing.T) {
	t.Parallel()
	e := newMerchantsEnv(t)
	e.merchantCharge("order-1", "loja-1", "", 4990)
	wantOK(t, "payment", e.HodleAt("hodle", hodlePaid("track-1", "order-1", "49.90")), "accepted")
	before := e.Balances()

	// Merchant B's endpoints refund, fail and pay merchant A's charges.
	wantOK(t, "B's hodle refund", e.HodleAt("hodle-b", hodleRefund("rf-1", "order-1", "49.90")), "accepted")
	wantOK(t, "B's standard refund", e.standardAt("std-b", "msg_r", "charge.refunded",
		map[string]any{"charge_id": "order-1", "amount": 1000, "refund_id": "rf-2"}), "accepted")
	wantOK(t, "B's standard failure", e.standardAt("std-b", "msg_f", "charge.failed", map[string]any{"charge_id": "order-1"}), "accepted")
	e.merchantCharge("order-2", "loja-1", "", 4990)
	wantOK(t, "B's payment of A's pending charge", e.HodleAt("hodle-b", hodlePaid("track-2", "order-2", "49.90")), "accepted")
	// A refund by B before A's charge is paid is not parked for later.
	wantOK(t, "B's refund of A's pending charge", e.HodleAt("hodle-b", hodleRefund("rf-3", "order-2", "10.00")), "accepted")

	e.wantDivergences("merchant_mismatch", "merchant_mismatch", "merchant_mismatch", "merchant_mismatch", "merchant_mismatch")
	e.wantSets("refund", 0)
	e.wantSets("sale", 1)
	e.wantCharge("order-1", "paid", 0)
	e.wantCharge("order-2", "pending", 0)
	if n := e.Count(`SELECT count(*) FROM charges WHERE failed_at IS NOT NULL`); n != 0 {
		t.Fatalf("%d charges marked failed by another merchant", n)
	}
	if n := e.Count(`SELECT count(*) FROM inbox WHERE status = 'parked'`); n != 0 {
		t.Fatalf("%d deliveries parked", n)
	}
	after := e.Balances()
	for code, v := range before {
		if after[code] != v {
			t.Fatalf("balance %s moved from %d to %d", code, v, after[code])
		}
	}

	// A's own endpoint still refunds it; a legacy charge (no merchant)
	// stays open to every endpoint, as before charges had one.
	wantOK(t, "A's refund", e.HodleAt("hodle", hodleRefund("rf-4", "order-1", "10.00")), "accepted")
	e.wantCharge("order-1", "partially_refunded", 1000)
	e.Charge("legacy-1", 4990, "", 0)
	wantOK(t, "B pays a legacy charge", e.HodleAt("hodle-b", hodlePaid("track-9", "legacy-1", "49.90")), "accepted")
	e.wantCharge("legacy-1", "paid", 0)
}

func TestHodleUnknownExternalIDDoesNotFallBackToTrackID(t *testing.T) {
	t.Parallel()
	e := newMerchantsEnv(t)
	e.merchantCharge("order-1", "loja-1", "track-1", 4990)
	wantOK(t, "deposit for an order we do not know", e.HodleAt("hodle", hodlePaid("track-1", "order-nope", "49.90")), "accepted")
	e.wantDivergences("unknown_charge")
	e.wantSets("sale", 0)
	e.wantCharge("order-1", "pending", 0)
	var chargeID *string
	e.DB.Get(&chargeID, `SELECT charge_id FROM divergences`)
	if chargeID == nil || *chargeID != "order-nope" {
		t.Fatalf("divergence names charge %v, want order-nope", chargeID)
	}

	// Without externalId, the trackId the app registered finds the charge
	// (another deposit: track-1's key is taken by the delivery above).
	e.merchantCharge("order-2", "loja-1", "track-2", 4990)
	wantOK(t, "deposit by trackId", e.HodleAt("hodle", `{"event":"DEPOSIT_ASSET_SUCCESS","data":{"trackId":"track-2","valueInBrl":"49.90"}}`), "accepted")
	e.wantSets("sale", 1)
	e.wantCharge("order-2", "paid", 0)

	// A refund naming an unknown order with the paid charge's trackId.
	wantOK(t, "refund for an order we do not know",
		e.HodleAt("hodle", `{"event":"DEPOSIT_ASSET_REFUNDED","data":{"eventId":"rf-1","externalId":"order-nope","trackId":"track-2","valueInBrl":"10.00"}}`), "accepted")
	e.wantDivergences("unknown_charge", "unknown_charge")
	e.wantSets("refund", 0)
	e.wantCharge("order-2", "paid", 0)
}
