package webhook

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/razao/razao/charges"
)

// followUp is what is left to do for one stored entry once the inbox has
// committed it: apply a new delivery (id), or handle a PSP's redelivery
// of a stored one (key).
type followUp struct {
	id  int64
	key string
}

// followUps lists the work a committed group commit leaves: its new
// pending deliveries and its duplicates of pending ones. Ignored events
// and failed inserts leave nothing.
func followUps(batch []*putRequest) []followUp {
	var out []followUp
	for _, r := range batch {
		if r.err != nil {
			continue
		}
		for i, s := range r.stored {
			switch {
			case r.entries[i].status != "pending":
			case s.Duplicate:
				out = append(out, followUp{key: s.Key})
			default:
				out = append(out, followUp{id: s.ID})
			}
		}
	}
	return out
}

// freshQueue bounds the deliveries committed and answered but not yet
// taken by an applier. When it is full the batch loops wait, and so do
// the requests behind them: intake never runs ahead of processing by
// more than this.
const freshQueue = 4 * maxBatch

// apply processes new deliveries in one transaction (or more, past
// maxBatch) and hands later what may have to wait on a lock: deliveries
// whose charge another transaction held, and redeliveries.
func (in *Inbox) apply(ctx context.Context, work []followUp, later func(followUp)) {
	var ids []int64
	for _, f := range work {
		if f.key != "" {
			later(f)
			continue
		}
		ids = append(ids, f.id)
	}
	for len(ids) > 0 {
		n := min(len(ids), maxBatch)
		for i, err := range in.proc.processBatch(ctx, ids[:n], charges.SkipLocked) {
			switch {
			case errors.Is(err, errBusy):
				later(followUp{id: ids[i]})
			case err != nil: // recorded on the delivery, with its back-off
				in.proc.log.Warn("delivery stored, processing deferred to the worker", "delivery", ids[i], "error", err)
			}
		}
		ids = ids[n:]
	}
}

// followUpAlone does what apply handed later: a delivery whose charge was
// held waits for that lock in a transaction of its own; a redelivery
// repairs a missing grant, or retries its delivery now.
func (in *Inbox) followUpAlone(f followUp) {
	ctx, cancel := context.WithTimeout(context.Background(), in.proc.Timeout)
	defer cancel()
	var err error
	if f.key != "" {
		err = in.proc.Redelivered(ctx, f.key)
	} else {
		err = in.proc.processAlone(ctx, f.id)
	}
	if err != nil {
		in.proc.log.Warn("delivery stored, processing deferred to the worker", "delivery", f.id, "key", f.key, "error", err)
	}
}

// runApplier applies what the batch loops committed, up to maxBatch
// deliveries per transaction, until the queue is closed and drained.
func (in *Inbox) runApplier() {
	for f := range in.fresh {
		work := []followUp{f}
	collect:
		for len(work) < maxBatch {
			select {
			case f, ok := <-in.fresh:
				if !ok {
					break collect
				}
				work = append(work, f)
			default:
				break collect
			}
		}
		in.apply(context.Background(), work, in.slow.add)
	}
}

// runSlowLane works through the slow lane, one follow-up at a time, until
// stop is closed; then it drains the lane for up to drain (a shutdown
// releases what it holds: the lock it waits on may be about to go) and
// leaves whatever remains to the worker.
func (in *Inbox) runSlowLane(stop <-chan struct{}, drain time.Duration) {
	var deadline time.Time
	for {
		f, ok := in.slow.next()
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
			in.followUpAlone(f)
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

// slowLaneDrain bounds how long a stopping inbox spends on its slow lane,
// beyond the follow-up at work (itself bounded by the processor's Timeout).
const slowLaneDrain = 10 * time.Second

// slowLaneMax bounds the slow lane; past it, follow-ups are dropped and
// the worker takes the deliveries when they are due (a few seconds after
// they were stored). A dropped redelivery only loses its early retry.
const slowLaneMax = 1024

// slowLane is the set of follow-ups that may wait on a lock, kept apart so
// a held charge never stalls the appliers. A follow-up already queued is
// not queued twice: a storm of copies costs one redelivery.
type slowLane struct {
	mu     sync.Mutex
	queue  []followUp
	queued map[followUp]bool
	wake   chan struct{}
}

func newSlowLane() *slowLane {
	return &slowLane{queued: map[followUp]bool{}, wake: make(chan struct{}, 1)}
}

func (s *slowLane) add(f followUp) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.queued[f] || len(s.queue) >= slowLaneMax {
		return
	}
	s.queued[f] = true
	s.queue = append(s.queue, f)
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

func (s *slowLane) next() (followUp, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.queue) == 0 {
		return followUp{}, false
	}
	f := s.queue[0]
	s.queue = s.queue[1:]
	delete(s.queued, f)
	return f, true
}
