package webhook

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/razao/razao/charges"
)

// Worker retries deliveries that are due: ones whose processing failed,
// ones a crashed process stored but never applied, and refunds released
// from parking. Several replicas may run workers on one database: each
// delivery is applied under FOR UPDATE SKIP LOCKED and status 'pending',
// so exactly one of them applies it.
type Worker struct {
	proc     *Processor
	interval time.Duration
	batch    int
	// ParkLimit is how long a refund may wait for its payment before it
	// becomes a divergence: money left the PSP and finance must see it.
	ParkLimit time.Duration
}

// DefaultParkLimit is how long a refund waits for its payment by default.
const DefaultParkLimit = 72 * time.Hour

// NewWorker returns a worker polling every interval.
func NewWorker(proc *Processor, interval time.Duration) *Worker {
	return &Worker{proc: proc, interval: interval, batch: 100, ParkLimit: DefaultParkLimit}
}

// Run works until ctx ends; a delivery in flight then finishes, as
// processing runs on a context that outlives ctx by a bounded time.
func (w *Worker) Run(ctx context.Context) error {
	t := time.NewTicker(w.interval)
	defer t.Stop()
	for {
		n, err := w.RunOnce(ctx)
		if err != nil && ctx.Err() == nil {
			w.proc.log.Warn("worker poll failed", "error", err)
		}
		if n == w.batch {
			continue // more may be due right now
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// RunOnce processes the deliveries due now, up to one batch, and returns
// how many it picked. It also turns refunds parked past ParkLimit into
// divergences.
func (w *Worker) RunOnce(ctx context.Context) (int, error) {
	if err := w.proc.expireParked(ctx, w.ParkLimit); err != nil {
		return 0, err
	}
	var ids []int64
	err := w.proc.db.SelectContext(ctx, &ids, `SELECT id FROM inbox
		WHERE status = 'pending' AND next_attempt_at <= now()
		ORDER BY next_attempt_at LIMIT $1`, w.batch)
	if err != nil {
		return 0, fmt.Errorf("poll inbox: %w", err)
	}
	n := len(ids)
	// Several deliveries per transaction; a batch that fails is retried
	// one delivery at a time, and failures are recorded on the delivery.
	for len(ids) > 0 && ctx.Err() == nil {
		chunk := ids[:min(len(ids), maxBatch)]
		ids = ids[len(chunk):]
		w.process(ctx, chunk)
	}
	return n, nil
}

// process applies a batch, then, one at a time, the deliveries it left out
// because another transaction held their charge.
func (w *Worker) process(ctx context.Context, ids []int64) {
	// A delivery in flight finishes when ctx ends; each transaction is
	// bounded by the processor's Timeout.
	pctx := context.WithoutCancel(ctx)
	for i, err := range w.proc.processBatch(pctx, ids, charges.SkipLocked) {
		if errors.Is(err, errBusy) && ctx.Err() == nil {
			w.proc.processAlone(pctx, ids[i])
		}
	}
}
