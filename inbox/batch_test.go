package inbox_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/razao/razao/accounts"
	"github.com/razao/razao/charges"
	"github.com/razao/razao/inbox"
	"github.com/razao/razao/webhook/scheme"
)

// store puts a pending delivery in the inbox, due now, without processing
// it, as a request would leave it had it died right after its commit.
func (e *env) store(ev scheme.Event) int64 {
	e.T.Helper()
	raw, err := json.Marshal(ev)
	if err != nil {
		e.T.Fatal(err)
	}
	return e.storeRaw(ev.Type+"|"+ev.EventID, string(ev.Kind), ev.ChargeID, string(raw))
}

func (e *env) storeRaw(key, kind, chargeRef, event string) int64 {
	e.T.Helper()
	var id int64
	err := e.DB.Get(&id, `INSERT INTO inbox (delivery_key, endpoint, scheme, merchant, event_type, event_id, kind, charge_ref,
			event, body, status, next_attempt_at)
		VALUES ('std|' || $1, 'std', 'standard', 'loja-1', 'test', $1, $2, $3, $4::jsonb, '\x7b7d', 'pending', now())
		RETURNING id`, key, kind, chargeRef, event)
	if err != nil {
		e.T.Fatal(err)
	}
	return id
}

var batchAt = time.Date(2026, 8, 10, 15, 0, 0, 0, time.UTC)

func paidEvent(id, charge string, amount int64) scheme.Event {
	return scheme.Event{Kind: scheme.KindPaid, Type: "charge.paid", EventID: id, ChargeID: charge,
		Amount: amount, HasAmount: true, OccurredAt: batchAt}
}

// withRef gives a payment the PSP's reference: the same reference under
// another event id is the same payment again.
func withRef(ev scheme.Event, ref string) scheme.Event {
	ev.PSPRef = ref
	return ev
}

func refundEvent(id, charge, refund string, amount int64) scheme.Event {
	return scheme.Event{Kind: scheme.KindRefunded, Type: "charge.refunded", EventID: id, ChargeID: charge,
		RefundID: refund, Amount: amount, HasAmount: true, OccurredAt: batchAt.Add(time.Hour)}
}

// Deliveries for several charges, decided in one transaction: each sees
// what the ones before it did, a refund that came before its payment is
// applied once the payment in the same batch lands, a redelivery and a
// repeated refund do nothing, and the divergences are opened.
func TestBatchDecidesEachDeliveryAfterTheOnesBefore(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.Charge("order-a", 4990, "partner-42", 1000)
	e.Charge("order-b", 10000, "", 0)
	e.Charge("order-c", 3000, "", 0)
	ids := []int64{
		e.store(refundEvent("a-r1", "order-a", "rf-a1", 1000)), // before its payment: parked, then applied
		e.store(paidEvent("a-pay", "order-a", 4990)),
		e.store(withRef(paidEvent("b-pay", "order-b", 10000), "e2e-b")),
		e.store(refundEvent("b-r1", "order-b", "rf-b1", 4000)),
		e.store(withRef(paidEvent("b-pay-again", "order-b", 10000), "e2e-b")), // the same payment under a new id
		e.store(refundEvent("b-r1-again", "order-b", "rf-b1", 4000)),          // the same refund again
		e.store(refundEvent("b-r2", "order-b", "rf-b2", 7000)),                // more than is left
		e.store(paidEvent("c-pay", "order-c", 2999)),                          // amount mismatch
		e.store(paidEvent("x-pay", "order-x", 100)),                           // unknown charge
		e.store(scheme.Event{Kind: scheme.KindFailed, Type: "charge.failed", EventID: "c-fail", ChargeID: "order-c", OccurredAt: batchAt}),
	}
	w := inbox.NewWorker(e.Proc, time.Hour)
	if n, err := w.RunOnce(context.Background()); n != len(ids) || err != nil {
		t.Fatalf("worker picked %d (%v), want %d", n, err, len(ids))
	}
	if n := e.Count(`SELECT count(DISTINCT created_xid) FROM posting_sets`); n != 1 {
		t.Fatalf("posting sets written by %d transactions, want 1", n)
	}
	payable, _ := accounts.PartnerPayable("partner-42")
	// a: 4990 − 1000 refunded, commission 499 − floor(499·1000/4990) = 399;
	// b: 10000 − 4000.
	e.WantBalances(map[string]int64{accounts.Cash: 3990 + 6000, accounts.Revenue: -(3990 + 6000),
		accounts.CommissionExpense: 399, payable: -399})

	var statuses []string
	e.DB.Select(&statuses, `SELECT status FROM inbox ORDER BY id`)
	want := []string{"processed", "processed", "processed", "processed", "processed", "processed",
		"divergent", "divergent", "divergent", "processed"}
	if !slices.Equal(statuses, want) {
		t.Fatalf("statuses %v, want %v", statuses, want)
	}
	var reasons []string
	e.DB.Select(&reasons, `SELECT reason FROM divergences ORDER BY inbox_id`)
	if !slices.Equal(reasons, []string{"refund_exceeds_paid", "amount_mismatch", "unknown_charge"}) {
		t.Fatalf("divergences %v", reasons)
	}
	var states []string
	e.DB.Select(&states, `SELECT state || ':' || refunded_amount FROM charges ORDER BY id`)
	if !slices.Equal(states, []string{"partially_refunded:1000", "partially_refunded:4000", "failed:0"}) {
		t.Fatalf("charges %v", states)
	}
	// The events, in the order the deliveries were decided: a's refund
	// after its payment and grant; the unknown charge in its place (a
	// batch tells it from a charge held elsewhere by a plain read).
	var topics []string
	e.DB.Select(&topics, `SELECT topic || ' ' || coalesce(charge_id, '-') FROM outbox ORDER BY id`)
	wantTopics := []string{
		"charge.paid order-a", "access.granted order-a", "charge.refunded order-a",
		"charge.paid order-b", "access.granted order-b", "charge.refunded order-b",
		"divergence.opened order-b", "divergence.opened order-c", "divergence.opened order-x",
		"charge.failed order-c",
	}
	if !slices.Equal(topics, wantTopics) {
		t.Fatalf("events\n%s\nwant\n%s", strings.Join(topics, "\n"), strings.Join(wantTopics, "\n"))
	}
}

// A delivery whose stored event no longer decodes is left out of its batch
// and its failure recorded against it alone; the others are applied.
func TestUndecodableDeliveryFailsAloneAndSparesItsBatch(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.Charge("order-1", 4990, "partner-42", 1000)
	e.Charge("order-2", 2000, "", 0)
	e.store(paidEvent("p1", "order-1", 4990))
	bad := e.storeRaw("bad", "paid", "order-2", `{"Kind": 7}`) // a stored event that no longer decodes
	e.store(paidEvent("p2", "order-2", 2000))
	w := inbox.NewWorker(e.Proc, time.Hour)
	if n, err := w.RunOnce(context.Background()); n != 3 || err != nil {
		t.Fatalf("worker picked %d (%v), want 3", n, err)
	}
	payable, _ := accounts.PartnerPayable("partner-42")
	e.WantBalances(map[string]int64{accounts.Cash: 4990 + 2000, accounts.Revenue: -(4990 + 2000),
		accounts.CommissionExpense: 499, payable: -499})
	var row struct {
		Status   string `db:"status"`
		Attempts int    `db:"attempts"`
		Err      string `db:"last_error"`
	}
	if err := e.DB.Get(&row, `SELECT status, attempts, coalesce(last_error, '') AS last_error FROM inbox WHERE id = $1`, bad); err != nil {
		t.Fatal(err)
	}
	if row.Status != "pending" || row.Attempts != 1 || !strings.Contains(row.Err, "decode stored event") {
		t.Fatalf("bad delivery %+v, want pending after 1 attempt with its decode error", row)
	}
	if n := e.Count(`SELECT count(*) FROM inbox WHERE status = 'processed'`); n != 2 {
		t.Fatalf("%d processed, want 2", n)
	}
}

// A batch stuck on a lock (an operator's session holding the outbox,
// which every payment writes) gives up: the request is answered, the
// attempt recorded, and the worker applies the delivery once the lock is
// gone.
//
// The batch's statement is cancelled once it waits on the lock, as the
// processor's timeout cancels it; the timeout itself stays the default, a
// safety net. A short timeout would also cut the claim before the lock,
// the failure's record after it and the worker's retry on a loaded
// machine, and the delivery would never be applied (docs/performance.md,
// "Timeouts in tests").
func TestBatchStuckOnALockGivesUpAndTheWorkerFinishes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.Charge("order-1", 4990, "partner-42", 1000)
	lock := e.DB.MustBegin()
	lock.MustExec(`LOCK TABLE outbox IN SHARE MODE`)

	stop := e.cancelWaitsOn(lock)
	r := e.PostStandard("msg-1", "charge.paid", map[string]any{"charge_id": "order-1", "amount": 4990})
	stop()
	if r.Code != 200 || r.Body.Status != "accepted" {
		t.Fatalf("delivery: %d %+v", r.Code, r.Body)
	}
	if n := e.Count(`SELECT count(*) FROM inbox WHERE status = 'pending' AND attempts >= 1 AND last_error LIKE '%canceling statement%'`); n != 1 {
		t.Fatal("the attempt given up was not recorded")
	}
	if n := e.Count(`SELECT count(*) FROM posting_sets`); n != 0 {
		t.Fatalf("%d sets written while the outbox was locked", n)
	}
	lock.Rollback()
	e.makeDue()
	if n, err := inbox.NewWorker(e.Proc, time.Hour).RunOnce(context.Background()); n != 1 || err != nil {
		t.Fatalf("worker picked %d (%v), want 1", n, err)
	}
	e.assertPaidOnce("order-1")
}

// cancelWaitsOn cancels, until stop is called, the statement of every
// session that waits on a lock tx holds: what the processor's timeout
// does to a batch stuck there, but once it surely waits rather than after
// a time.
func (e *env) cancelWaitsOn(tx *sqlx.Tx) (stop func()) {
	e.T.Helper()
	var pid int
	if err := tx.Get(&pid, `SELECT pg_backend_pid()`); err != nil {
		e.T.Fatal(err)
	}
	done, finished := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		for {
			e.DB.Exec(`SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))`, pid)
			select {
			case <-done:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()
	return func() { close(done); <-finished }
}

// A batch takes only the charges no one else holds: a delivery whose charge
// is locked elsewhere is snoozed, and the deliveries behind it are applied
// meanwhile rather than queueing behind that lock. Every request is
// answered once its delivery is stored.
func TestDeliveryForALockedChargeDoesNotHoldTheOthers(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.GroupCommit()
	e.Charge("order-a", 4990, "partner-42", 1000)
	gate := e.HoldCharge("order-a")
	defer gate.Rollback()

	if r := e.PostStandard("msg-a", "charge.paid", map[string]any{"charge_id": "order-a", "amount": 4990}); r.Code != 200 || r.Body.Status != "accepted" {
		t.Fatalf("held delivery: %d %+v", r.Code, r.Body)
	}
	e.WaitSnoozed(1)
	for i := 0; i < 3; i++ {
		id := fmt.Sprintf("order-b%d", i)
		e.Charge(id, 2000, "", 0)
		if r := e.PostStandard("msg-"+id, "charge.paid", map[string]any{"charge_id": id, "amount": 2000}); r.Code != 200 || r.Body.Status != "accepted" {
			t.Fatalf("%s: %d %+v", id, r.Code, r.Body)
		}
	}
	e.Eventually("3 payments applied while another charge is held",
		`SELECT count(*) FROM posting_sets WHERE kind = 'sale' AND charge_id LIKE 'order-b%'`, 3)
	if n := e.Count(`SELECT count(*) FROM posting_sets WHERE charge_id = 'order-a'`); n != 0 {
		t.Fatalf("%d sets of order-a written while it was held", n)
	}
	gate.Rollback()
	e.Settled()
	e.Eventually("order-a paid once its lock is gone",
		`SELECT count(*) FROM posting_sets WHERE kind = 'sale' AND charge_id = 'order-a'`, 1)
}

// A batch that fails is retried one delivery at a time, so the deliveries
// the failure did not belong to are applied, each exactly once.
func TestBatchFailureFallsBackToOneDeliveryAtATime(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for i := 1; i <= 3; i++ {
		e.Charge(fmt.Sprintf("order-%d", i), 1000, "", 0)
		e.store(paidEvent(fmt.Sprintf("p%d", i), fmt.Sprintf("order-%d", i), 1000))
	}
	failures := 0
	e.Applier.AfterSale = func() error {
		if failures++; failures == 1 {
			return errors.New("the batch's transaction fails once")
		}
		return nil
	}
	if n, err := inbox.NewWorker(e.Proc, time.Hour).RunOnce(context.Background()); n != 3 || err != nil {
		t.Fatalf("worker picked %d (%v), want 3", n, err)
	}
	if failures != 4 {
		t.Fatalf("%d transactions wrote sales, want the batch and then 3 on their own", failures)
	}
	if n := e.Count(`SELECT count(DISTINCT created_xid) FROM posting_sets`); n != 3 {
		t.Fatalf("sales written by %d transactions, want 3", n)
	}
	e.WantBalances(map[string]int64{accounts.Cash: 3000, accounts.Revenue: -3000})
	if n := e.Count(`SELECT count(*) FROM inbox WHERE status = 'processed' AND attempts = 1`); n != 3 {
		t.Fatalf("%d processed at the first attempt, want 3: the batch's failure is no one's attempt", n)
	}
}

// A batch leaves out a delivery whose charge, named by id, is held
// elsewhere, even when the PSP's reference it also carries is another
// charge's: it is applied to the charge its id names, once that is free.
func TestBatchNeverAppliesADeliveryToAnotherChargeByReference(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.GroupCommit()
	e.Charge("order-a", 4990, "", 0)
	if _, _, err := charges.Register(context.Background(), e.DB, charges.NewCharge{
		ID: "order-b", PSPRef: "track-b", Amount: 4990, Access: "course:order-b",
	}); err != nil {
		t.Fatal(err)
	}
	gate := e.HoldCharge("order-a")
	done := make(chan reply, 1)
	go func() { done <- e.PostHodle(hodlePaid("track-b", "order-a", "49.90")) }()
	e.WaitSnoozed(1)
	if n := e.Count(`SELECT count(*) FROM posting_sets`); n != 0 {
		t.Fatalf("%d sets written while order-a was held: the payment went to another charge", n)
	}
	gate.Rollback()
	if r := <-done; r.Code != 200 {
		t.Fatalf("delivery: %d %+v", r.Code, r.Body)
	}
	e.Settled()
	var states []string
	e.DB.Select(&states, `SELECT id || ':' || state FROM charges ORDER BY id`)
	if !slices.Equal(states, []string{"order-a:paid", "order-b:pending"}) {
		t.Fatalf("charges %v", states)
	}
}
