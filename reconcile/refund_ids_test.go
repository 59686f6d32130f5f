package reconcile_test

import (
	"fmt"
	"testing"
	"time"
)

// postHodleRefund sends a signed Hodle DEPOSIT_ASSET_REFUNDED: keyed and
// identified by data.eventId, an id the statement file never shows.
func (e *env) postHodleRefund(eventID, trackID, externalID, valueBRL string) (int, string) {
	e.t.Helper()
	return e.postHodleBody([]byte(fmt.Sprintf(`{"event":"DEPOSIT_ASSET_REFUNDED","data":{"eventId":%q,"trackId":%q,"externalId":%q,"valueInBrl":%q}}`,
		eventID, trackID, externalID, valueBRL)))
}

// hodleRefundFile is a Hodle statement with charge h1's payment and one
// line per refund id given, each of 3.00, under the file's own ids.
func hodleRefundFile(refundIDs ...string) string {
	ts := at(1).Format(time.RFC3339)
	f := "trackId,externalId,type,amount,date,refundId\n" + "trk-h1,h1,DEPOSIT,10.00," + ts + ",\n"
	for i, id := range refundIDs {
		f += "trk-h1,h1,REFUND,3.00," + at(20+i).Format(time.RFC3339) + "," + id + "\n"
	}
	return f
}

func (e *env) refunds(charge string) int {
	e.t.Helper()
	return e.count(`SELECT count(*) FROM posting_sets WHERE kind = 'refund' AND charge_id = $1`, charge)
}

// A refund whose webhook (data.eventId "evt-r1") was booked, listed by the
// statement file under another id ("HR-77"), is the same refund: the
// file's line books nothing, now or on a second run.
func TestCSVRefundUnderAnotherIDAfterItsWebhookBooksNothing(t *testing.T) {
	e := newEnv(t)
	e.charge("h1", 1000, "")
	if code, _ := e.postHodle("trk-h1", "h1", "10.00"); code != 200 {
		t.Fatal(code)
	}
	if code, _ := e.postHodleRefund("evt-r1", "trk-h1", "h1", "3.00"); code != 200 {
		t.Fatal(code)
	}
	if n := e.refunds("h1"); n != 1 {
		t.Fatalf("the webhook booked %d refunds, want 1", n)
	}
	run1 := e.runCSV("hodle", hodleRefundFile("HR-77"))
	if n := e.refunds("h1"); n != 1 {
		t.Fatalf("%d refunds after the statement, want 1; outcomes %q", n, e.outcomes(run1.ID))
	}
	run2 := e.runCSV("hodle", hodleRefundFile("HR-77"))
	if n := e.refunds("h1"); n != 1 {
		t.Fatalf("%d refunds after a second run, want 1", n)
	}
	// The second run knows the file's id for what the webhook booked.
	want := []string{"paid matched  h1", "refunded matched  h1"}
	if got := e.outcomes(run2.ID); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("second run's lines %q, want %q", got, want)
	}
	if n := e.count(`SELECT count(*) FROM refund_aliases WHERE charge_id = 'h1' AND alias_id = 'HR-77'`); n != 1 {
		t.Errorf("%d pairs of HR-77, want 1", n)
	}
}

// The other order: the statement file books the refund its webhook never
// brought (yet); the webhook arriving later, under its own id, books
// nothing, nor does its redelivery or a second run of the file.
func TestWebhookRefundUnderAnotherIDAfterTheStatementBooksNothing(t *testing.T) {
	e := newEnv(t)
	e.charge("h1", 1000, "")
	if code, _ := e.postHodle("trk-h1", "h1", "10.00"); code != 200 {
		t.Fatal(code)
	}
	run := e.runCSV("hodle", hodleRefundFile("HR-77"))
	if n := e.refunds("h1"); n != 1 {
		t.Fatalf("the statement booked %d refunds, want 1; outcomes %q", n, e.outcomes(run.ID))
	}
	for i := 0; i < 2; i++ {
		if code, _ := e.postHodleRefund("evt-r1", "trk-h1", "h1", "3.00"); code != 200 {
			t.Fatal(code)
		}
	}
	if n := e.refunds("h1"); n != 1 {
		t.Fatalf("%d refunds after the webhook, want 1", n)
	}
	e.runCSV("hodle", hodleRefundFile("HR-77"))
	if n := e.refunds("h1"); n != 1 {
		t.Fatalf("%d refunds after a second run, want 1", n)
	}
	var refunded int64
	if err := e.db.Get(&refunded, `SELECT refunded_amount FROM charges WHERE id = 'h1'`); err != nil {
		t.Fatal(err)
	}
	if refunded != 300 {
		t.Errorf("h1 refunded %d, want 300", refunded)
	}
}

// Pairs are one to one: a second refund of the same amount is booked,
// whichever side brings it, not absorbed by the first one's pair.
func TestSecondRefundOfTheSameAmountIsBooked(t *testing.T) {
	e := newEnv(t)
	e.charge("h1", 1000, "")
	if code, _ := e.postHodle("trk-h1", "h1", "10.00"); code != 200 {
		t.Fatal(code)
	}
	// Statement first for refund 1; both webhooks after.
	e.runCSV("hodle", hodleRefundFile("HR-1"))
	e.postHodleRefund("evt-r1", "trk-h1", "h1", "3.00")
	if n := e.refunds("h1"); n != 1 {
		t.Fatalf("%d refunds after refund 1's two ids, want 1", n)
	}
	e.postHodleRefund("evt-r2", "trk-h1", "h1", "3.00")
	if n := e.refunds("h1"); n != 2 {
		t.Fatalf("%d refunds after refund 2's webhook, want 2", n)
	}
	// The statement then lists both: nothing more to book.
	run := e.runCSV("hodle", hodleRefundFile("HR-1", "HR-2"))
	if n := e.refunds("h1"); n != 2 {
		t.Fatalf("%d refunds after the statement lists both, want 2; outcomes %q", n, e.outcomes(run.ID))
	}
	// And a third, only on the statement (its webhook lost), is booked.
	e.runCSV("hodle", hodleRefundFile("HR-1", "HR-2", "HR-3"))
	if n := e.refunds("h1"); n != 3 {
		t.Fatalf("%d refunds after a third on the statement, want 3", n)
	}
}
