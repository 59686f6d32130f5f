package inbox

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lib/pq"
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

// inboxChannel is the NOTIFY channel on which replicas ring each other's
// doorbells.
const inboxChannel = "razao_inbox"

// notifyInterval spaces the NOTIFYs a replica sends: rings in between
// share the next one. Each NOTIFY is a transaction of its own, sent after
// the commit it announces (inside it, NOTIFY would serialise every
// writer's commit on one lock: see migration 0006), and wakes a worker of
// every replica. A replica only asks for help while its own workers are
// all busy, and they take what it stored within a batch or two anyway.
const notifyInterval = 100 * time.Millisecond

// doorbell wakes idle workers when deliveries become due, so that a
// delivery is applied within milliseconds of its commit rather than at the
// next poll. A ring wakes one idle worker of this process; a worker that
// claims a full batch rings again, waking the next. When every worker of
// this process is busy, a ring also asks the other replicas for help,
// with a NOTIFY. The bell is only a hint: the inbox says what is due, and
// every worker polls it anyway.
type doorbell struct {
	self   string        // this process's NOTIFY payload: its own are not rung again
	wake   chan struct{} // one token: rings while no one waits are not lost
	remote chan struct{} // one token: a NOTIFY is due
	idle   atomic.Int32  // workers waiting on wake
	notify atomic.Bool   // the NOTIFY side runs (Worker.Listen)
}

func newDoorbell() *doorbell {
	var id [8]byte
	rand.Read(id[:])
	return &doorbell{self: hex.EncodeToString(id[:]), wake: make(chan struct{}, 1), remote: make(chan struct{}, 1)}
}

// ring wakes an idle worker here, or, when none is idle, the replicas.
func (d *doorbell) ring() {
	select {
	case d.wake <- struct{}{}:
	default:
	}
	if d.notify.Load() && d.idle.Load() == 0 {
		select {
		case d.remote <- struct{}{}:
		default:
		}
	}
}

// wait blocks until the bell rings, tick fires or ctx ends.
func (d *doorbell) wait(ctx context.Context, tick <-chan time.Time) {
	d.idle.Add(1)
	defer d.idle.Add(-1)
	select {
	case <-ctx.Done():
	case <-d.wake:
	case <-tick:
	}
}

// announce sends the replicas' NOTIFYs, one per notifyInterval at most,
// until ctx ends.
func (p *Processor) announceLoop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-p.bell.remote:
		}
		p.announce(ctx)
		select {
		case <-ctx.Done():
			return
		case <-time.After(notifyInterval):
		}
	}
}

// announce rings the doorbells of every other replica listening.
func (p *Processor) announce(ctx context.Context) {
	if _, err := p.db.ExecContext(ctx, `SELECT pg_notify($1, $2)`, inboxChannel, p.bell.self); err != nil && ctx.Err() == nil {
		// The workers' poll finds the deliveries anyway, a little later.
		p.log.Warn("inbox notify failed", "error", err)
	}
}

// listen rings this process's doorbell on every other replica's NOTIFY,
// and after each reconnection (notifications may have been lost), until
// ctx ends.
func (p *Processor) listen(ctx context.Context, url string) {
	l := pq.NewListener(url, time.Second, 30*time.Second, func(ev pq.ListenerEventType, err error) {
		if ev != pq.ListenerEventConnected && ev != pq.ListenerEventReconnected {
			p.log.Warn("inbox: listener connection problem", "event", ev.String(), "err", err)
		}
	})
	stop := context.AfterFunc(ctx, func() { l.Close() })
	defer stop()
	if err := l.Listen(inboxChannel); err != nil {
		if ctx.Err() == nil {
			p.log.Warn("inbox: listen failed; workers poll", "error", err)
		}
		l.Close()
		return
	}
	for n := range l.Notify {
		if n != nil && n.Extra == p.bell.self {
			continue // its own workers were busy: that is why it asked
		}
		select {
		case p.bell.wake <- struct{}{}:
		default:
		}
	}
}
