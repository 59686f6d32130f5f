package inbox_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/razao/razao/accounts"
)

// assertPaidOnce checks the exact effect of one confirmation of a 4990
// charge with a 10% commission to partner-42.
func (e *env) assertPaidOnce(charge string) {
	e.T.Helper()
	for _, c := range []struct {
		what  string
		query string
	}{
		{"sale", `SELECT count(*) FROM posting_sets WHERE kind = 'sale' AND charge_id = $1`},
		{"commission", `SELECT count(*) FROM posting_sets WHERE kind = 'commission' AND charge_id = $1`},
		{"access grant", `SELECT count(*) FROM access_grants WHERE charge_id = $1`},
		{"charge.paid event", `SELECT count(*) FROM outbox WHERE topic = 'charge.paid' AND charge_id = $1`},
		{"access.granted event", `SELECT count(*) FROM outbox WHERE topic = 'access.granted' AND charge_id = $1`},
	} {
		if n := e.Count(c.query, charge); n != 1 {
			e.T.Errorf("%d %s for %s, want exactly 1", n, c.what, charge)
		}
	}
	payable, _ := accounts.PartnerPayable("partner-42")
	e.WantBalances(map[string]int64{accounts.Cash: 4990, accounts.Revenue: -4990, accounts.CommissionExpense: 499, payable: -499})
}

// The gate: a separate connection holds the charge's row lock while n
// deliveries paying the same charge arrive (one message, or n messages);
// every delivery is answered once stored, while the charge is still
// locked, and only once each stored one has been claimed and snoozed (its
// charge held) is the lock released. Batched, the inbox's batcher and
// workers run as in razao serve; else the test drains the inbox itself.
func TestGateConcurrentConfirmationsApplyOnce(t *testing.T) {
	t.Parallel()
	for _, batched := range []bool{false, true} {
		for _, n := range []int{2, 20} {
			for _, sameID := range []bool{true, false} {
				t.Run(fmt.Sprintf("batched %v, %d deliveries, same event id %v", batched, n, sameID), func(t *testing.T) {
					t.Parallel()
					gateConcurrentConfirmations(t, n, sameID, batched)
				})
			}
		}
	}
}

func gateConcurrentConfirmations(t *testing.T, n int, sameID, batched bool) {
	e := newEnv(t)
	if batched {
		e.GroupCommit()
	}
	e.Charge("order-1", 4990, "partner-42", 1000)
	gate := e.HoldCharge("order-1")

	replies := make([]reply, n)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			msgID := "msg-1"
			if !sameID {
				msgID = fmt.Sprintf("msg-%d", i)
			}
			replies[i] = e.PostStandard(msgID, "charge.paid", map[string]any{"charge_id": "order-1", "amount": 4990})
		}()
	}
	// With one event id, one delivery is stored and waits on the charge;
	// the others are answered as duplicates at once.
	stored := n
	if sameID {
		stored = 1
	}
	wg.Wait()             // answered with the charge still locked
	e.WaitSnoozed(stored) // each claimed, and snoozed: its charge is held
	if e.Count(`SELECT count(*) FROM posting_sets`) != 0 {
		t.Fatal("a sale was written while the charge was locked")
	}
	gate.Rollback()
	wg.Wait()
	e.Settled()
	statuses := map[string]int{}
	for i, r := range replies {
		if r.Code != 200 {
			t.Fatalf("delivery %d: %d %+v", i, r.Code, r.Body)
		}
		statuses[r.Body.Status]++
	}
	if want := map[string]int{"accepted": stored, "duplicate": n - stored}; statuses["accepted"] != want["accepted"] || statuses["duplicate"] != want["duplicate"] {
		t.Errorf("statuses %v, want %v", statuses, want)
	}
	e.assertPaidOnce("order-1")
	// Under other webhook-ids they are other notifications of a payment:
	// one pays, each of the others is a second payment for finance.
	if n := e.Count(`SELECT count(*) FROM inbox WHERE status = 'processed'`); n != 1 {
		t.Fatalf("%d deliveries processed, want 1", n)
	}
	if n := e.Count(`SELECT count(*) FROM divergences WHERE reason = 'second_payment'`); n != int64(stored-1) {
		t.Fatalf("%d second payments, want %d", n, stored-1)
	}
	if n := e.Count(`SELECT count(*) FROM inbox WHERE status NOT IN ('processed', 'divergent')`); n != 0 {
		t.Fatalf("%d deliveries neither processed nor divergent", n)
	}
}

func TestCrashAfterSaleLeavesNothingThenRedeliveryAppliesOnce(t *testing.T) {
	t.Parallel()
	for _, batched := range []bool{false, true} {
		t.Run(fmt.Sprintf("batched %v", batched), func(t *testing.T) {
			t.Parallel()
			crashAfterSale(t, batched)
		})
	}
}

func crashAfterSale(t *testing.T, batched bool) {
	e := newEnv(t)
	e.Charge("order-1", 4990, "partner-42", 1000)
	crash := e.FailAfterSale("simulated crash after the sale")
	if batched {
		e.GroupCommit()
	}
	body := hodlePaid("track-1", "order-1", "49.90")
	if r := e.PostHodle(body); r.Code != 200 || r.Body.Status != "accepted" {
		t.Fatalf("first delivery: %d %+v (stored, so 200)", r.Code, r.Body)
	}
	e.Eventually("the failed attempt recorded", `SELECT count(*) FROM inbox WHERE attempts = 1 AND last_error <> ''`, 1)
	for _, table := range []string{"posting_sets", "postings", "access_grants", "outbox"} {
		if n := e.Count(`SELECT count(*) FROM ` + table); n != 0 {
			t.Errorf("%d rows in %s after the crash, want 0", n, table)
		}
	}

	crash.Store(false)
	if r := e.PostHodle(body); r.Code != 200 || r.Body.Status != "duplicate" {
		t.Fatalf("redelivery: %d %+v", r.Code, r.Body)
	}
	e.Eventually("the redelivery applied", `SELECT count(*) FROM inbox WHERE status = 'processed'`, 1)
	e.assertPaidOnce("order-1")

	// Repair: the grant is not ledger data; losing it must be repairable
	// by a redelivery without crediting the commission again. The repair
	// is done before the answer: answered, the PSP will not ask again.
	e.DB.MustExec(`DELETE FROM access_grants`)
	if r := e.PostHodle(body); r.Code != 200 {
		t.Fatalf("repair redelivery: %d", r.Code)
	}
	if n := e.Count(`SELECT count(*) FROM access_grants WHERE charge_id = 'order-1'`); n != 1 {
		t.Fatalf("grant not repaired: %d", n)
	}
	if n := e.Count(`SELECT count(*) FROM posting_sets WHERE kind = 'commission'`); n != 1 {
		t.Fatalf("%d commissions after repair, want 1", n)
	}
}

// With group commit, concurrent deliveries share one INSERT and one
// commit, then one processing transaction: distinct ones are each
// accepted once, copies of one are accepted once and duplicates after,
// and everything is applied once.
func TestGroupCommitKeepsExactlyOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.GroupCommit()
	const charges, copies = 20, 5
	for i := 0; i < charges; i++ {
		e.Charge(fmt.Sprintf("order-%d", i), 4990, "partner-42", 1000)
	}
	replies := make([]reply, charges*copies)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range replies {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			id := fmt.Sprintf("order-%d", i%charges)
			replies[i] = e.PostStandard("msg-"+id, "charge.paid", map[string]any{"charge_id": id, "amount": 4990})
		}()
	}
	close(start)
	wg.Wait()
	e.Settled()
	// The group commits were processed as batches: some transaction
	// wrote the sales of several charges.
	if n := e.Count(`SELECT count(DISTINCT created_xid) FROM posting_sets WHERE kind = 'sale'`); n >= charges {
		t.Errorf("%d transactions wrote %d sales: no batch held two", n, charges)
	}
	statuses := map[string]int{}
	for _, r := range replies {
		if r.Code != 200 {
			t.Fatalf("reply %d %+v", r.Code, r.Body)
		}
		statuses[r.Body.Status]++
	}
	if statuses["accepted"] != charges || statuses["duplicate"] != charges*(copies-1) {
		t.Fatalf("statuses %v, want %d accepted and %d duplicate", statuses, charges, charges*(copies-1))
	}
	if n := e.Count(`SELECT count(*) FROM inbox`); n != charges {
		t.Fatalf("%d inbox rows, want %d", n, charges)
	}
	if n := e.Count(`SELECT count(*) FROM posting_sets WHERE kind = 'sale'`); n != charges {
		t.Fatalf("%d sales, want %d", n, charges)
	}
	if n := e.Count(`SELECT count(*) FROM inbox WHERE status <> 'processed'`); n != 0 {
		t.Fatalf("%d deliveries not processed", n)
	}
}

// A storm of copies of a payment already applied must drain: each copy
// reads, none holds a connection while asking the pool for another (with
// a small pool that would be a deadlock until the request timed out).
func TestDuplicateStormOfAppliedPaymentDrainsWithASmallPool(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.DB.SetMaxOpenConns(4)
	e.Charge("order-1", 4990, "partner-42", 1000)
	body := hodlePaid("track-1", "order-1", "49.90")
	e.PostHodle(body)
	const n = 100
	replies := make([]reply, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range replies {
		wg.Add(1)
		go func() { defer wg.Done(); <-start; replies[i] = e.PostHodle(body) }()
	}
	close(start)
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the duplicate storm did not drain")
	}
	for i, r := range replies {
		if r.Code != 200 || r.Body.Status != "duplicate" {
			t.Fatalf("copy %d: %d %+v", i, r.Code, r.Body)
		}
	}
	e.assertPaidOnce("order-1")
}

// A PSP that hangs up while its delivery's batch is held loses nothing:
// it gets no 2xx, the batch stores and applies the delivery when it can,
// and the redelivery is answered "duplicate". Here the batch is held by
// a test transaction inserting the same delivery key, uncommitted.
func TestPSPHangingUpMidBatchLosesNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.GroupCommit()
	e.Charge("order-1", 4990, "partner-42", 1000)
	holder := e.DB.MustBegin()
	holder.MustExec(`INSERT INTO inbox (delivery_key, endpoint, scheme, merchant, event_type, event_id, kind, event, body)
		VALUES ('std|charge.paid|msg-1', 'std', 'standard', 'loja-1', 'charge.paid', 'msg-1', 'paid', '{}', '')`)

	body, _ := json.Marshal(map[string]any{"type": "charge.paid", "timestamp": clock.UTC().Format(time.RFC3339),
		"data": map[string]any{"charge_id": "order-1", "amount": 4990}})
	ctx, hangUp := context.WithCancel(context.Background())
	answered := make(chan reply, 1)
	go func() {
		answered <- e.DoContext(ctx, "POST", "/webhooks/std", standardHeaders("msg-1", clock.Unix(), body), body)
	}()
	e.WaitHeld(0, 1) // the batch's INSERT waits on the holder's key
	hangUp()
	if r := <-answered; r.Code != 503 {
		t.Fatalf("the PSP that hung up was answered %d %+v, want 503", r.Code, r.Body)
	}
	holder.Rollback()

	deadline := time.Now().Add(30 * time.Second) // a safety net
	for e.Count(`SELECT count(*) FROM inbox WHERE status = 'processed'`) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the held batch never applied the delivery")
		}
		time.Sleep(5 * time.Millisecond)
	}
	e.assertPaidOnce("order-1")
	if r := e.Post("/webhooks/std", standardHeaders("msg-1", clock.Unix(), body), body); r.Code != 200 || r.Body.Status != "duplicate" {
		t.Fatalf("redelivery: %d %+v, want 200 duplicate", r.Code, r.Body)
	}
	e.assertPaidOnce("order-1")
}

// A redelivery whose follow-up fails (here the grant repair, stuck behind
// a lock past the processor's timeout) is answered 503, not 200: answered
// 200, the PSP would never send it again and the grant would stay lost.
// Its next redelivery repairs the grant.
//
// Only the stuck redelivery goes through a processor with a short
// timeout: its repair cannot end before the lock is released, which is
// after its answer, so it fails whatever the timeout and however loaded
// the machine. The rest goes through the default timeout: a short one
// would cut the next redelivery's repair too on a loaded machine
// (docs/performance.md, "Timeouts in tests").
func TestFailedRedeliveryFollowUpIsNot2xx(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.GroupCommit()
	e.Charge("order-1", 4990, "partner-42", 1000)
	body := hodlePaid("track-1", "order-1", "49.90")
	if r := e.PostHodle(body); r.Code != 200 || r.Body.Status != "accepted" {
		t.Fatalf("delivery: %d %+v", r.Code, r.Body)
	}
	e.Eventually("the payment applied", `SELECT count(*) FROM inbox WHERE status = 'processed'`, 1)
	e.DB.MustExec(`DELETE FROM access_grants`)

	// Another replica of the same service, whose processor gives up soon.
	stuck := newEnvWithDB(t, e.DB, e.URL)
	stuck.Proc.Timeout = 300 * time.Millisecond
	stuck.GroupCommit()
	lock := e.DB.MustBegin()
	lock.MustExec(`LOCK TABLE access_grants IN ACCESS EXCLUSIVE MODE`)
	r := stuck.PostHodle(body)
	lock.Rollback()
	if r.Code != 503 {
		t.Fatalf("redelivery whose grant repair failed: %d %+v, want 503", r.Code, r.Body)
	}
	if r := e.PostHodle(body); r.Code != 200 || r.Body.Status != "duplicate" {
		t.Fatalf("next redelivery: %d %+v", r.Code, r.Body)
	}
	if n := e.Count(`SELECT count(*) FROM access_grants WHERE charge_id = 'order-1'`); n != 1 {
		t.Fatalf("grant not repaired: %d", n)
	}
	if n := e.Count(`SELECT count(*) FROM posting_sets WHERE kind = 'commission'`); n != 1 {
		t.Fatalf("%d commissions after the repair, want 1", n)
	}
}
