package inbox_test

import (
	"os"
	"path/filepath"
	"testing"
)

// A payment reference already booked names the same payment only with the
// same amount and fee: track-1 for R$ 49,90 through one Hodle endpoint and
// track-1 for R$ 499,00 through the merchant's other one is not a
// redelivery, nor is an AbacatePay checkout paid again with another fee.
func TestSameRefWithOtherAmountOrFeeIsNoRedelivery(t *testing.T) {
	t.Parallel()
	e := newMerchantsEnv(t)
	e.merchantCharge("order-1", "loja-1", "", 4990)
	wantOK(t, "payment", e.HodleAt("hodle", hodlePaid("track-1", "order-1", "49.90")), "accepted")
	wantOK(t, "same ref, ten times the amount", e.HodleAt("hodle-2", hodlePaid("track-1", "order-1", "499.00")), "accepted")
	e.wantDivergences("amount_mismatch")
	// Through hodle-2 the PSP stated 499.00 first: 49.90 under the same
	// key now states other figures, a divergence of its own with both.
	wantOK(t, "same ref, the charge's amount", e.HodleAt("hodle-2", hodlePaid("track-1", "order-1", "49.90")), "accepted")
	e.wantDivergences("amount_mismatch", "amount_mismatch")
	wantOK(t, "same ref, same amount", e.HodleAt("hodle-2", hodlePaid("track-1", "order-1", "49.90")), "duplicate")
	e.wantSets("sale", 1)
	e.wantCharge("order-1", "paid", 0)

	a := newEnv(t)
	a.Charge("order-ab", 10000, "", 0)
	paid := func(logID, fee string) string {
		return `{"id":"` + logID + `","event":"checkout.completed","apiVersion":2,"devMode":false,
		"data":{"checkout":{"id":"bill_1","externalId":"order-ab","paidAmount":10000,"platformFee":` + fee + `,"status":"PAID"}}}`
	}
	wantOK(t, "checkout paid", a.PostAbacate(paid("log_p1", "0")), "accepted")
	wantOK(t, "same checkout, same figures", a.PostAbacate(paid("log_p2", "0")), "accepted")
	a.wantDivergences()
	wantOK(t, "same checkout, another fee", a.PostAbacate(paid("log_p3", "80")), "accepted")
	a.wantDivergences("amount_mismatch")
	a.wantSets("sale", 1)
	a.WantBalances(map[string]int64{"assets:cash": 10000, "income:revenue": -10000})
}

// References are per scheme: a Hodle deposit whose trackId is literally
// the reference a standard delivery's payment was kept under is another
// payment, not a redelivery of the standard one.
func TestPaymentRefsOfTwoSchemesNeverCollide(t *testing.T) {
	t.Parallel()
	e := newMerchantsEnv(t)
	e.merchantCharge("order-1", "loja-1", "", 4990)
	wantOK(t, "standard payment", e.standardAt("std", "msg_1", "charge.paid", map[string]any{"charge_id": "order-1", "amount": 4990}), "accepted")
	wantOK(t, "hodle deposit named like it", e.HodleAt("hodle", hodlePaid("event:msg_1", "order-1", "49.90")), "accepted")
	e.wantDivergences("second_payment")
	e.wantSets("sale", 1)
	var ref string
	if err := e.DB.Get(&ref, `SELECT paid_ref FROM charges WHERE id = 'order-1'`); err != nil {
		t.Fatal(err)
	}
	if ref != "standard:event:msg_1" {
		t.Fatalf("paid_ref %q, want standard:event:msg_1", ref)
	}
}

// A charge paid before references carried their scheme (paid_ref
// "track-1") is brought to the scheme's form by migration 0019, from the
// inbox row that paid it: its redelivery through the merchant's other
// endpoint is still a no-op, a refund naming its trackId is still booked,
// and one naming another deposit is still the refund of another payment.
func TestOldUnprefixedPaidRefStillMatchesItsRedeliveryAndRefund(t *testing.T) {
	t.Parallel()
	e := newMerchantsEnv(t)
	e.merchantCharge("order-1", "loja-1", "", 4990)
	e.merchantCharge("order-2", "loja-1", "", 4990)
	wantOK(t, "payment", e.HodleAt("hodle", hodlePaid("track-1", "order-1", "49.90")), "accepted")
	wantOK(t, "standard payment", e.standardAt("std", "msg_1", "charge.paid", map[string]any{"charge_id": "order-2", "amount": 4990}), "accepted")
	// What the code before 0019 stored.
	if _, err := e.DB.Exec(`UPDATE charges SET paid_ref = CASE id WHEN 'order-1' THEN 'track-1' ELSE 'event:msg_1' END`); err != nil {
		t.Fatal(err)
	}
	matches, err := filepath.Glob("../sql/0019_*.sql")
	if err != nil || len(matches) != 1 {
		t.Fatalf("migration 0019: %v %v", matches, err)
	}
	migration, err := os.ReadFile(matches[0])
	if err != nil {
		t.Fatal(err)
	}
	// Twice: the migration leaves a reference already in the new form alone.
	for range 2 {
		if _, err := e.DB.Exec(string(migration)); err != nil {
			t.Fatal(err)
		}
	}
	var refs []string
	if err := e.DB.Select(&refs, `SELECT paid_ref FROM charges ORDER BY id`); err != nil {
		t.Fatal(err)
	}
	if len(refs) != 2 || refs[0] != "hodle:track-1" || refs[1] != "standard:event:msg_1" {
		t.Fatalf("paid_refs %v, want [hodle:track-1 standard:event:msg_1]", refs)
	}
	wantOK(t, "redelivery, other endpoint", e.HodleAt("hodle-2", hodlePaid("track-1", "order-1", "49.90")), "accepted")
	wantOK(t, "standard redelivery, other endpoint", e.standardAt("std-2", "msg_1", "charge.paid", map[string]any{"charge_id": "order-2", "amount": 4990}), "accepted")
	e.wantDivergences()
	other := `{"event":"DEPOSIT_ASSET_REFUNDED","data":{"eventId":"rf-b","externalId":"order-1","trackId":"track-2","valueInBrl":"10.00"}}`
	wantOK(t, "refund of another deposit", e.HodleAt("hodle", other), "accepted")
	e.wantDivergences("refund_of_other_payment")
	own := `{"event":"DEPOSIT_ASSET_REFUNDED","data":{"eventId":"rf-1","externalId":"order-1","trackId":"track-1","valueInBrl":"10.00"}}`
	wantOK(t, "refund of its payment", e.HodleAt("hodle", own), "accepted")
	e.wantCharge("order-1", "partially_refunded", 1000)
	e.wantDivergences("refund_of_other_payment")
}
