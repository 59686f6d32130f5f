package webhook_test

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/razao/razao/webhook"
)

// Requests are answered once stored, but intake never runs ahead of
// processing by more than a bounded queue: while the appliers are stuck
// (here on a lock on the outbox, which every payment writes), the batch
// loops stop taking deliveries once the queue is full, and the requests
// behind them wait unanswered. Once the appliers move again, every
// delivery is answered and applied exactly once.
func TestIntakeWaitsForStuckAppliersAndLosesNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const queue, n = 2, 150
	// One loop and one applier: stuck, the applier holds one batch, the
	// queue holds two deliveries, the loop one batch it cannot hand over.
	const bound = webhook.MaxBatch + queue + webhook.MaxBatch
	e.inbox.SetFreshQueue(queue)
	e.groupCommitLoops(1)
	for i := range n {
		e.charge(fmt.Sprintf("order-%d", i), 1000, "", 0)
	}
	lock := e.db.MustBegin()
	lock.MustExec(`LOCK TABLE outbox IN SHARE MODE`)
	defer lock.Rollback()

	var answered atomic.Int64
	replies := make([]reply, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := fmt.Sprintf("order-%d", i)
			replies[i] = e.postStandard("msg-"+id, "charge.paid", map[string]any{"charge_id": id, "amount": 1000})
			answered.Add(1)
		}()
	}
	// Wait until intake has stalled: no answer for 300 ms.
	for last := int64(-1); ; {
		time.Sleep(300 * time.Millisecond)
		now := answered.Load()
		if now == last {
			break
		}
		last = now
	}
	// Answered: at least what fills the queue and what the applier holds;
	// at most that and one group commit.
	if got := answered.Load(); got <= queue || got > bound {
		t.Fatalf("%d of %d requests answered while the appliers were stuck, want %d to %d", got, n, queue+1, bound)
	}
	if got := e.count(`SELECT count(*) FROM posting_sets`); got != 0 {
		t.Fatalf("%d sets written while the outbox was locked", got)
	}
	lock.Rollback()
	wg.Wait()
	e.settled()
	for i, r := range replies {
		if r.Code != 200 || r.Body.Status != "accepted" {
			t.Fatalf("delivery %d: %d %+v", i, r.Code, r.Body)
		}
	}
	if got := e.count(`SELECT count(*) FROM posting_sets WHERE kind = 'sale'`); got != n {
		t.Fatalf("%d sales, want %d", got, n)
	}
	if got := e.count(`SELECT count(DISTINCT charge_id) FROM posting_sets WHERE kind = 'sale'`); got != n {
		t.Fatalf("sales over %d charges, want %d", got, n)
	}
	if got := e.count(`SELECT count(*) FROM inbox WHERE status <> 'processed'`); got != 0 {
		t.Fatalf("%d deliveries not processed", got)
	}
}
