package inbox_test

import (
	"strings"
	"testing"

	"github.com/razao/razao/accounts"
)

func TestRefundBeforePaymentIsParkedThenApplied(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.Charge("order-1", 4990, "partner-42", 1000)
	if r := e.PostHodle(hodleRefund("rf-1", "order-1", "10.00")); r.Code != 200 {
		t.Fatalf("refund: %d %+v", r.Code, r.Body)
	}
	if n := e.Count(`SELECT count(*) FROM inbox WHERE status = 'parked'`); n != 1 {
		t.Fatalf("%d parked, want 1", n)
	}
	if n := e.Count(`SELECT count(*) FROM posting_sets`); n != 0 {
		t.Fatalf("%d sets before the payment, want 0", n)
	}
	if r := e.PostHodle(hodlePaid("track-1", "order-1", "49.90")); r.Code != 200 {
		t.Fatalf("payment: %d %+v", r.Code, r.Body)
	}
	payable, _ := accounts.PartnerPayable("partner-42")
	// Commission 499; reversal floor(499·1000/4990) = 100.
	e.WantBalances(map[string]int64{accounts.Cash: 3990, accounts.Revenue: -3990, accounts.CommissionExpense: 399, payable: -399})
	if n := e.Count(`SELECT count(*) FROM inbox WHERE status = 'processed'`); n != 2 {
		t.Fatalf("%d processed, want 2", n)
	}
}

func TestThreePartialRefundsReverseExactlyTheCommission(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.Charge("order-1", 4990, "partner-42", 1000)
	e.PostHodle(hodlePaid("track-1", "order-1", "49.90"))
	for i, v := range []string{"10.00", "20.00", "19.90"} {
		if r := e.PostHodle(hodleRefund("rf-"+v, "order-1", v)); r.Code != 200 || r.Body.Status != "accepted" {
			t.Fatalf("refund %d: %d %+v", i, r.Code, r.Body)
		}
	}
	var reversals []int64
	e.DB.Select(&reversals, `SELECT amount FROM posting_sets WHERE kind = 'commission_reversal' ORDER BY id`)
	// floor(499·1000/4990)=100; floor(499·3000/4990)−100=300−100=200; 499−300=199.
	if len(reversals) != 3 || reversals[0] != 100 || reversals[1] != 200 || reversals[2] != 199 {
		t.Fatalf("reversals %v, want [100 200 199]", reversals)
	}
	payable, _ := accounts.PartnerPayable("partner-42")
	e.WantBalances(map[string]int64{accounts.Cash: 0, accounts.Revenue: 0, accounts.CommissionExpense: 0, payable: 0})
	var state string
	e.DB.Get(&state, `SELECT state FROM charges WHERE id = 'order-1'`)
	if state != "refunded" {
		t.Fatalf("state %s, want refunded", state)
	}
}

func TestRefundAboveWhatIsLeftIsDivergence(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.Charge("order-1", 4990, "", 0)
	e.PostHodle(hodlePaid("track-1", "order-1", "49.90"))
	e.PostHodle(hodleRefund("rf-1", "order-1", "40.00"))
	if r := e.PostHodle(hodleRefund("rf-2", "order-1", "10.00")); r.Code != 200 {
		t.Fatalf("over-refund: %d %+v, want 200 so the PSP stops", r.Code, r.Body)
	}
	var reason string
	e.DB.Get(&reason, `SELECT reason FROM divergences`)
	if reason != "refund_exceeds_paid" {
		t.Fatalf("divergence %q, want refund_exceeds_paid", reason)
	}
	e.WantBalances(map[string]int64{accounts.Cash: 990, accounts.Revenue: -990})
	if n := e.Count(`SELECT count(*) FROM outbox WHERE topic = 'divergence.opened'`); n != 1 {
		t.Fatalf("%d divergence.opened events, want 1", n)
	}
}

func TestFailureMovesNoMoneyAndRefundStillApplies(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.Charge("order-1", 4990, "", 0)
	e.PostHodle(hodlePaid("track-1", "order-1", "49.90"))
	if r := e.PostHodle(failedBody); r.Code != 200 || r.Body.Status != "accepted" {
		t.Fatalf("failure: %d %+v", r.Code, r.Body)
	}
	e.WantBalances(map[string]int64{accounts.Cash: 4990, accounts.Revenue: -4990})
	if r := e.PostHodle(hodleRefund("rf-1", "order-1", "49.90")); r.Code != 200 {
		t.Fatalf("refund: %d", r.Code)
	}
	e.WantBalances(map[string]int64{accounts.Cash: 0, accounts.Revenue: 0})
	if n := e.Count(`SELECT count(*) FROM posting_sets WHERE kind = 'refund'`); n != 1 {
		t.Fatalf("%d refunds, want 1 (the failure is not one)", n)
	}
}

func TestUnknownChargeAndAmountMismatchAreDivergences(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.Charge("order-1", 4990, "", 0)
	for _, body := range []string{hodlePaid("track-x", "order-x", "49.90"), hodlePaid("track-1", "order-1", "49.00")} {
		if r := e.PostHodle(body); r.Code != 200 {
			t.Fatalf("%s: %d", body, r.Code)
		}
	}
	var reasons []string
	e.DB.Select(&reasons, `SELECT reason FROM divergences ORDER BY id`)
	if len(reasons) != 2 || reasons[0] != "unknown_charge" || reasons[1] != "amount_mismatch" {
		t.Fatalf("divergences %v", reasons)
	}
	if n := e.Count(`SELECT count(*) FROM posting_sets`); n != 0 {
		t.Fatalf("%d sets, want 0", n)
	}
	if n := e.Count(`SELECT count(*) FROM inbox WHERE status <> 'divergent'`); n != 0 {
		t.Fatalf("divergent deliveries must not stay pending")
	}
}

// A refund of a payment that is not the one booked must not cancel the
// sale; the same refund id again with another amount must not pass as a
// redelivery.
func TestRefundOfAnotherPaymentAndChangedRefundAreDivergences(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.Charge("order-1", 4990, "partner-42", 1000)
	e.PostHodle(hodlePaid("track-1", "order-1", "49.90"))
	e.PostHodle(hodlePaid("track-2", "order-1", "49.90")) // a second payment
	other := `{"event":"DEPOSIT_ASSET_REFUNDED","data":{"eventId":"rf-b","externalId":"order-1","trackId":"track-2","valueInBrl":"49.90"}}`
	if r := e.PostHodle(other); r.Code != 200 {
		t.Fatalf("refund of the second payment: %d %+v", r.Code, r.Body)
	}
	e.PostStandard("m-1", "charge.refunded", map[string]any{"charge_id": "order-1", "amount": 1000, "refund_id": "r1"})
	e.PostStandard("m-2", "charge.refunded", map[string]any{"charge_id": "order-1", "amount": 3000, "refund_id": "r1"})
	var reasons []string
	e.DB.Select(&reasons, `SELECT reason FROM divergences ORDER BY id`)
	want := []string{"second_payment", "refund_of_other_payment", "refund_amount_changed"}
	if strings.Join(reasons, ",") != strings.Join(want, ",") {
		t.Fatalf("divergences %v, want %v", reasons, want)
	}
	payable, _ := accounts.PartnerPayable("partner-42")
	// One sale of 4990 and the one refund of 1000 with its reversal of 100.
	e.WantBalances(map[string]int64{accounts.Cash: 3990, accounts.Revenue: -3990, accounts.CommissionExpense: 399, payable: -399})
}
