package inbox

import (
	"context"
	"sync"
	"time"
)

// DefaultWorkers is how many workers claim deliveries per replica. A
// worker never waits on a charge's lock (it snoozes the delivery), so a
// few keep two cores busy; more only split the backlog into smaller
// batches.
const DefaultWorkers = 2

// Worker runs the claim loops of one replica: Workers loops, each
// claiming up to a batch of due deliveries (Processor.ProcessDue) and
// applying them in one transaction, then claiming again while deliveries
// are due. An idle loop sleeps until the doorbell rings (a delivery
// stored, a refund released, a snooze over, another replica's NOTIFY) or
// the poll interval passes (back-offs that came due, a lost ring). Every
// replica runs one; FOR UPDATE SKIP LOCKED on the claimed rows makes each
// delivery one worker's.
type Worker struct {
	proc     *Processor
	interval time.Duration
	batch    int
	url      string
	// Workers is how many claim loops Run starts.
	Workers int
	// ParkLimit is how long a refund may wait for its payment before it
	// becomes a divergence: money left the PSP and finance must see it.
	ParkLimit time.Duration
}

// DefaultParkLimit is how long a refund waits for its payment by default.
const DefaultParkLimit = 72 * time.Hour

// NewWorker returns a worker polling every interval.
func NewWorker(proc *Processor, interval time.Duration) *Worker {
	return &Worker{proc: proc, interval: interval, batch: MaxBatch, Workers: DefaultWorkers, ParkLimit: DefaultParkLimit}
}

// Listen makes Run ring the other replicas' doorbells and listen for
// theirs, on a connection of its own to the database at url.
func (w *Worker) Listen(url string) { w.url = url }

// Run works until ctx ends. Then the loops stop claiming, finish the
// transactions they are in (each bounded by the processor's Timeout) and
// return: whatever is still due stays in the inbox, for this replica's
// next start or another replica.
func (w *Worker) Run(ctx context.Context) {
	work := context.WithoutCancel(ctx) // a transaction at work is finished, not cut
	var wg sync.WaitGroup
	run := func(f func()) {
		wg.Add(1)
		go func() { defer wg.Done(); f() }()
	}
	if w.url != "" {
		w.proc.bell.notify.Store(true)
		run(func() { w.proc.listen(ctx, w.url) })
		run(func() { w.proc.announceLoop(ctx) })
	}
	for range max(w.Workers, 1) {
		run(func() { w.claimLoop(ctx, work) })
	}
	run(func() { w.expireLoop(ctx) })
	wg.Wait()
}

func (w *Worker) claimLoop(ctx, work context.Context) {
	t := time.NewTicker(w.interval)
	defer t.Stop()
	for ctx.Err() == nil {
		n, err := w.proc.ProcessDue(work, w.batch)
		if err != nil && ctx.Err() == nil {
			w.proc.log.Warn("worker claim failed", "error", err)
		}
		if n == w.batch {
			w.proc.bell.ring() // more may be due: wake another worker too
			continue
		}
		w.proc.bell.wait(ctx, t.C)
	}
}

// expireLoop turns refunds parked past ParkLimit into divergences, every
// poll interval.
func (w *Worker) expireLoop(ctx context.Context) {
	t := time.NewTicker(w.interval)
	defer t.Stop()
	for {
		if err := w.proc.expireParked(ctx, w.ParkLimit); err != nil && ctx.Err() == nil {
			w.proc.log.Warn("expire parked refunds failed", "error", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// RunOnce turns the refunds parked past ParkLimit into divergences, then
// claims and applies one batch of due deliveries, and returns how many it
// claimed: one round of one claim loop, for tests and tools.
func (w *Worker) RunOnce(ctx context.Context) (int, error) {
	if err := w.proc.expireParked(ctx, w.ParkLimit); err != nil {
		return 0, err
	}
	return w.proc.ProcessDue(ctx, w.batch)
}
