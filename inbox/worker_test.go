package inbox_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/razao/razao/inbox"
)

// makeDue stands in for the passing of back-off time.
func (e *env) makeDue() {
	e.T.Helper()
	e.DB.MustExec(`UPDATE inbox SET next_attempt_at = now() WHERE status = 'pending'`)
}

func TestWorkerRetriesAFailedDeliveryUntilApplied(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.Charge("order-1", 4990, "partner-42", 1000)
	e.Applier.AfterSale = func() error { return errors.New("database hiccup") }
	e.PostHodle(hodlePaid("track-1", "order-1", "49.90"))
	w := inbox.NewWorker(e.Proc, time.Hour)
	if n, _ := w.RunOnce(context.Background()); n != 0 {
		t.Fatalf("worker picked %d deliveries still in back-off", n)
	}
	e.Applier.AfterSale = nil
	e.makeDue()
	if n, err := w.RunOnce(context.Background()); n != 1 || err != nil {
		t.Fatalf("worker picked %d (%v), want 1", n, err)
	}
	e.assertPaidOnce("order-1")
	var attempts int
	e.DB.Get(&attempts, `SELECT attempts FROM inbox`)
	if attempts != 2 {
		t.Fatalf("attempts %d, want 2", attempts)
	}
}

func TestDeliveryFailingPastTheLimitBecomesDivergence(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.Charge("order-1", 4990, "", 0)
	e.Proc.MaxAttempts = 3
	e.Applier.AfterSale = func() error { return errors.New("always failing") }
	e.PostHodle(hodlePaid("track-1", "order-1", "49.90"))
	w := inbox.NewWorker(e.Proc, time.Hour)
	for i := 0; i < 5; i++ {
		e.makeDue()
		w.RunOnce(context.Background())
	}
	var status string
	var attempts int
	e.DB.QueryRow(`SELECT status, attempts FROM inbox`).Scan(&status, &attempts)
	if status != "divergent" || attempts != 3 {
		t.Fatalf("status %s after %d attempts, want divergent after 3", status, attempts)
	}
	var reason string
	e.DB.Get(&reason, `SELECT reason FROM divergences`)
	if reason != "processing_failed" {
		t.Fatalf("divergence %q, want processing_failed", reason)
	}
	if n := e.Count(`SELECT count(*) FROM posting_sets`); n != 0 {
		t.Fatalf("%d sets from a delivery that never applied", n)
	}
}

// Three workers, as three replicas would run them, drain the same due
// deliveries: each is applied exactly once.
func TestConcurrentWorkersApplyEachDeliveryOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const n = 30
	e.Applier.AfterSale = func() error { return errors.New("first attempt fails") }
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("order-%d", i)
		e.Charge(id, 1000, "partner-42", 1000)
		e.PostHodle(hodlePaid("track-"+id, id, "10.00"))
	}
	e.Applier.AfterSale = nil
	e.makeDue()
	var wg sync.WaitGroup
	for i := 0; i < 3; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			inbox.NewWorker(e.Proc, time.Hour).RunOnce(context.Background())
		}()
	}
	wg.Wait()
	if got := e.Count(`SELECT count(*) FROM posting_sets WHERE kind = 'sale'`); got != n {
		t.Fatalf("%d sales, want %d", got, n)
	}
	if got := e.Count(`SELECT count(*) FROM posting_sets WHERE kind = 'commission'`); got != n {
		t.Fatalf("%d commissions, want %d", got, n)
	}
	if got := e.Count(`SELECT count(*) FROM inbox WHERE status = 'processed'`); got != n {
		t.Fatalf("%d processed, want %d", got, n)
	}
}

func TestGivenUpDeliveryIsRetriedWhenThePSPSendsItAgain(t *testing.T) {
	t.Parallel()
	for _, batched := range []bool{false, true} {
		t.Run(fmt.Sprintf("batched %v", batched), func(t *testing.T) {
			t.Parallel()
			givenUpRetriedOnRedelivery(t, batched)
		})
	}
}

func givenUpRetriedOnRedelivery(t *testing.T, batched bool) {
	e := newEnv(t)
	e.Charge("order-1", 4990, "partner-42", 1000)
	e.Proc.MaxAttempts = 1
	outage := e.FailAfterSale("outage")
	if batched {
		e.GroupCommit()
	}
	body := hodlePaid("track-1", "order-1", "49.90")
	e.PostHodle(body)
	e.Eventually("divergent after its one attempt", `SELECT count(*) FROM inbox WHERE status = 'divergent'`, 1)
	outage.Store(false) // the outage is over
	if r := e.PostHodle(body); r.Code != 200 || r.Body.Status != "duplicate" {
		t.Fatalf("redelivery: %d %+v", r.Code, r.Body)
	}
	// Requeued before the answer: answered, the PSP will not send it again.
	if n := e.Count(`SELECT count(*) FROM inbox WHERE status = 'divergent'`); n != 0 {
		t.Fatal("the redelivery was answered before its delivery was requeued")
	}
	e.Eventually("the requeued delivery applied", `SELECT count(*) FROM inbox WHERE status = 'processed'`, 1)
	e.assertPaidOnce("order-1")
	var divStatus string
	e.DB.Get(&divStatus, `SELECT status FROM divergences WHERE reason = 'processing_failed'`)
	if divStatus != "resolved" {
		t.Fatalf("divergence %s, want resolved by the requeue", divStatus)
	}
}

func TestRefundParkedTooLongBecomesDivergence(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.Charge("order-1", 4990, "", 0)
	e.PostHodle(hodleRefund("rf-1", "order-1", "10.00"))
	e.DB.MustExec(`UPDATE inbox SET received_at = now() - interval '73 hours'`)
	if _, err := inbox.NewWorker(e.Proc, time.Hour).RunOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	var reason string
	e.DB.Get(&reason, `SELECT reason FROM divergences`)
	if reason != "refund_without_payment" {
		t.Fatalf("divergence %q, want refund_without_payment", reason)
	}
	if n := e.Count(`SELECT count(*) FROM inbox WHERE status = 'parked'`); n != 0 {
		t.Fatalf("%d still parked", n)
	}
}
