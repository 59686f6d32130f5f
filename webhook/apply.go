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
// held: they wait for that lock one at a time, not in a batch. A failure
// is recorded (and logged) on its delivery, which the worker retries.
func (in *Inbox) apply(ctx context.Context, ids []int64, later func(int64)) {
	for len(ids) > 0 {
		n := min(len(ids), maxBatch)
		for i, err := range in.proc.processBatch(ctx, ids[:n], charges.SkipLocked) {
			if errors.Is(err, errBusy) {
				later(ids[i])
			}
		}
		ids = ids[n:]
	}
}

// applyAlone processes what a request stored outside the batch loops,
// before it is answered: its new deliveries, then its redeliveries. A
// redelivery whose follow-up failed fails the request (see redeliver).
func (in *Inbox) applyAlone(ctx context.Context, r *putRequest) {
	in.apply(ctx, newDeliveries([]*putRequest{r}), in.processWaiting)
	if r.err == nil {
		r.err = in.followRedeliveries(ctx, r, in.processWaiting)
	}
}

// followRedeliveries follows up the request's redeliveries (see
// redeliver) and hands later the ones still pending, for an early retry.
func (in *Inbox) followRedeliveries(ctx context.Context, r *putRequest, later func(int64)) error {
	for i, s := range r.stored {
		if !s.Duplicate || r.entries[i].status != "pending" {
			continue
		}
		id, err := in.redeliver(ctx, r.entries[i].key)
		if err != nil {
			return err
		}
		if id != 0 {
			later(id)
		}
	}
	return nil
}

// redeliver does, before the answer, what a PSP's redelivery asks
// (Processor.redelivered), and returns the id of a delivery still pending,
// worth an early retry. Its error is the PSP's to see (503): answered 200,
// the PSP would not send the delivery again, and a requeue or a grant
// repair that failed would be lost. Concurrent redeliveries of one key
// share one call: a storm of copies costs one.
func (in *Inbox) redeliver(ctx context.Context, key Key) (int64, error) {
	return in.redeliveries.do(ctx, key.String(), func() (int64, error) {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), in.proc.Timeout)
		defer cancel()
		return in.proc.redelivered(ctx, key)
	})
}

// flights runs one call per key at a time; callers of a key already in
// flight wait for that call and share its result instead of making their
// own. A caller that joins late shares a result read before it came: for
// a redelivery, what the original was a few milliseconds earlier, which
// a give-up racing a redelivery could make stale without flights as well.
type flights struct {
	mu     sync.Mutex
	flying map[string]*flight
}

type flight struct {
	done   chan struct{}
	id     int64
	err    error
	joined int // callers sharing it, under flights.mu
}

func (f *flights) do(ctx context.Context, key string, fn func() (int64, error)) (int64, error) {
	f.mu.Lock()
	if fl, ok := f.flying[key]; ok {
		fl.joined++
		f.mu.Unlock()
		select {
		case <-fl.done:
			return fl.id, fl.err
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
	if f.flying == nil {
		f.flying = map[string]*flight{}
	}
	fl := &flight{done: make(chan struct{})}
	f.flying[key] = fl
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		delete(f.flying, key)
		f.mu.Unlock()
		close(fl.done)
	}()
	fl.id, fl.err = fn()
	return fl.id, fl.err
}

// processWaiting applies one delivery in a transaction of its own,
// waiting for its charge's lock, within the processor's Timeout. A
// failure is recorded (and logged) on the delivery.
func (in *Inbox) processWaiting(id int64) {
	ctx, cancel := context.WithTimeout(context.Background(), in.proc.Timeout)
	defer cancel()
	in.proc.processAlone(ctx, id)
}

// runApplier applies what the batch loops committed, up to maxBatch
// deliveries per transaction, until the queue is closed and drained, or
// stop is closed and drain has passed: what is left then is due to the
// worker a few seconds after it was stored.
func (in *Inbox) runApplier(stop <-chan struct{}, drain time.Duration) {
	clock := drainClock{stop: stop, drain: drain}
	for id := range in.fresh {
		if clock.over() {
			return
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
	clock := drainClock{stop: stop, drain: drain}
	for {
		id, ok := in.slow.next()
		switch {
		case !ok && clock.stopping():
			return
		case !ok:
			select {
			case <-stop:
			case <-in.slow.wake:
			}
		case clock.over():
			return
		default:
			in.processWaiting(id)
		}
	}
}

// drainClock times a loop's drain: from the first time it sees stop
// closed, it has drain more to finish its work.
type drainClock struct {
	stop     <-chan struct{}
	drain    time.Duration
	deadline time.Time
}

// stopping reports whether stop is closed, starting the clock the first
// time it is.
func (c *drainClock) stopping() bool {
	if !closed(c.stop) {
		return false
	}
	if c.deadline.IsZero() {
		c.deadline = time.Now().Add(c.drain)
	}
	return true
}

// over reports whether stop is closed and the drain time has passed.
func (c *drainClock) over() bool { return c.stopping() && time.Now().After(c.deadline) }

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
