package webhook

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/razao/razao/charges"
)

// newDeliveries lists the new pending deliveries a committed group commit
// stored: ignored events, duplicates and failed inserts leave nothing to
// apply.
func newDeliveries(batch []*putRequest) []int64 {
	var ids []int64
	for _, r := range batch {
		if r.err != nil {
			continue
		}
		for i, s := range r.stored {
			if !s.Duplicate && r.entries[i].status == "pending" {
				ids = append(ids, s.ID)
			}
		}
	}
	return ids
}

// freshQueue bounds the deliveries committed and answered but not yet
// taken by an applier. When it is full the batch loops wait, and so do
// the requests behind them: intake never runs ahead of processing by more
// than this queue, the appliers' transactions and one group commit per
// loop (64 each): about 512 deliveries with two loops.
const freshQueue = 4 * maxBatch

// apply processes new deliveries in one transaction (or more, past
// maxBatch) and hands later the ones whose charge another transaction
// held: they wait for that lock one at a time, not in a batch.
func (in *Inbox) apply(ctx context.Context, ids []int64, later func(int64)) {
	for len(ids) > 0 {
		n := min(len(ids), maxBatch)
		for i, err := range in.proc.processBatch(ctx, ids[:n], charges.SkipLocked) {
			switch {
			case errors.Is(err, errBusy):
				later(ids[i])
			case err != nil: // recorded on the delivery, with its back-off
				in.proc.log.Warn("delivery stored, processing deferred to the worker", "delivery", ids[i], "error", err)
			}
		}
		ids = ids[n:]
	}
}

// applyAlone processes what a request stored outside the batch loops,
// before it is answered: its new deliveries, then its redeliveries. A
// redelivery whose follow-up failed fails the request (see redeliver).
func (in *Inbox) applyAlone(ctx context.Context, r *putRequest) {
	in.apply(ctx, newDeliveries([]*putRequest{r}), in.processAlone)
	if r.err != nil {
		return
	}
	for i, s := range r.stored {
		if !s.Duplicate || r.entries[i].status != "pending" {
			continue
		}
		id, err := in.redeliver(ctx, s.Key)
		if err != nil {
			r.err = err
			return
		}
		if id != 0 {
			in.processAlone(id)
		}
	}
}

// processAlone applies one delivery in a transaction of its own, waiting
// for its charge's lock, within the processor's Timeout.
func (in *Inbox) processAlone(id int64) {
	ctx, cancel := context.WithTimeout(context.Background(), in.proc.Timeout)
	defer cancel()
	if err := in.proc.processAlone(ctx, id); err != nil {
		in.proc.log.Warn("delivery stored, processing deferred to the worker", "delivery", id, "error", err)
	}
}

// runApplier applies what the batch loops committed, up to maxBatch
// deliveries per transaction, until the queue is closed and drained, or
// stop is closed and drain has passed: what is left then is due to the
// worker a few seconds after it was stored.
func (in *Inbox) runApplier(stop <-chan struct{}, drain time.Duration) {
	var deadline time.Time
	for id := range in.fresh {
		if closed(stop) {
			if deadline.IsZero() {
				deadline = time.Now().Add(drain)
			} else if time.Now().After(deadline) {
				return
			}
		}
		ids := []int64{id}
	collect:
		for len(ids) < maxBatch {
			select {
			case id, ok := <-in.fresh:
				if !ok {
					break collect
				}
				ids = append(ids, id)
			default:
				break collect
			}
		}
		in.apply(context.Background(), ids, in.slow.add)
	}
}

// runSlowLane works through the slow lane until stop is closed; then it
// drains the lane for up to drain (a shutdown releases what it holds: the
// lock it waits on may be about to go) and leaves whatever remains to the
// worker.
func (in *Inbox) runSlowLane(stop <-chan struct{}, drain time.Duration) {
	var deadline time.Time
	for {
		id, ok := in.slow.next()
		stopping := closed(stop)
		if stopping && deadline.IsZero() {
			deadline = time.Now().Add(drain)
		}
		switch {
		case !ok && stopping:
			return
		case !ok:
			select {
			case <-stop:
			case <-in.slow.wake:
			}
		case stopping && time.Now().After(deadline):
			return
		default:
			in.processAlone(id)
		}
	}
}

func closed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// drainTime bounds how long a stopping inbox goes on applying what it has
// answered, beyond the transaction at work (itself bounded by the
// processor's Timeout); what is left is due to the worker.
const drainTime = 10 * time.Second

// slowLanes is how many deliveries may wait on charge locks at once, each
// for the processor's Timeout at most (then the attempt is recorded and
// the worker retries it with back-off): one charge held for long (an
// operator's session) holds a lane per delivery of its own that waits,
// never the appliers.
const slowLanes = 4

// slowLaneMax bounds the slow lane; past it, deliveries are left to the
// worker, due a few seconds after they were stored.
const slowLaneMax = 1024

// slowLane holds the deliveries that wait on a lock: ones a batch left out
// because another transaction held their charge, and redeliveries of ones
// still pending, tried early. A delivery already queued is not queued
// twice: a storm of copies costs one retry.
type slowLane struct {
	mu     sync.Mutex
	queue  []int64
	queued map[int64]bool
	wake   chan struct{}
	log    func(msg string, args ...any)
}

func newSlowLane(log func(msg string, args ...any)) *slowLane {
	return &slowLane{queued: map[int64]bool{}, wake: make(chan struct{}, slowLanes), log: log}
}

func (s *slowLane) add(id int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.queued[id] {
		return
	}
	if len(s.queue) >= slowLaneMax {
		s.log("slow lane full: delivery left to the worker", "delivery", id)
		return
	}
	s.queued[id] = true
	s.queue = append(s.queue, id)
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

func (s *slowLane) next() (int64, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.queue) == 0 {
		return 0, false
	}
	id := s.queue[0]
	s.queue = s.queue[1:]
	delete(s.queued, id)
	return id, true
}
