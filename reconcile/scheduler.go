package reconcile

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// MaxAttempts bounds how often a scheduled window that fails is tried.
const MaxAttempts = 5

// Run runs due slots and takes over abandoned runs every interval until
// ctx ends.
func (r *Reconciler) Run(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	next := map[string]time.Time{}
	for {
		if err := r.RunDue(ctx, next); err != nil && ctx.Err() == nil {
			r.log.Warn("reconciliation scheduler", "error", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// RunDue runs, for each scheduled endpoint, every slot of its schedule
// that has come since the one next holds (on start, the latest slot
// before now) and the day's refund sweep (Sweep), then takes over runs
// another replica abandoned and retries failed ones (ResumeDue). next is
// the caller's, one per process.
func (r *Reconciler) RunDue(ctx context.Context, next map[string]time.Time) error {
	now := r.now().In(r.ledger.Calendar().Location())
	var errs []error
	for _, name := range r.order {
		ep := r.eps[name]
		if ep.schedule == nil {
			continue
		}
		slot, ok := next[name]
		if !ok {
			slot = lastSlotBefore(ep, now)
		}
		for !slot.IsZero() && !slot.After(now) {
			if _, err := r.RunSlot(ctx, name, slot); err != nil {
				errs = append(errs, err)
			}
			slot = ep.schedule.Next(slot)
		}
		if slot.IsZero() {
			slot = ep.schedule.Next(now)
		}
		next[name] = slot
		if err := r.sweepDue(ctx, name, now, next); err != nil {
			errs = append(errs, err)
		}
	}
	errs = append(errs, r.ResumeDue(ctx))
	return errors.Join(errs...)
}

// lastSlotBefore is the schedule's latest slot at or before now within
// the last two days, or zero.
func lastSlotBefore(ep *endpoint, now time.Time) time.Time {
	var last time.Time
	for t := ep.schedule.Next(now.Add(-48 * time.Hour)); !t.IsZero() && !t.After(now); t = ep.schedule.Next(t) {
		last = t
	}
	return last
}

// Windows are the windows a slot runs: the one that just ended, and the
// one that just became final. Consecutive slots' windows overlap when the
// window is longer than the schedule's interval.
func (r *Reconciler) windows(ep *endpoint, slot time.Time) [][2]time.Time {
	w, f := ep.cfg.Window, ep.cfg.FinalAfter
	out := [][2]time.Time{{slot.Add(-w), slot}}
	if f > 0 {
		out = append(out, [2]time.Time{slot.Add(-f - w), slot.Add(-f)})
	}
	return out
}

// RunSlot claims and runs the windows of one slot of endpoint's schedule.
// A window another replica claimed (and still holds) or already ran is
// left to it: across replicas each window runs once. It returns the runs
// it ran.
func (r *Reconciler) RunSlot(ctx context.Context, endpoint string, slot time.Time) ([]Run, error) {
	ep, ok := r.eps[endpoint]
	if !ok || ep.api == nil {
		return nil, fmt.Errorf("%w: %q has no bcb-pix statement", ErrUnknownEndpoint, endpoint)
	}
	var runs []Run
	var errs []error
	for _, w := range r.windows(ep, slot) {
		run, claimed, err := r.claim(ctx, ep, w[0], w[1], r.isFinal(ep, w[1]))
		if err != nil || !claimed {
			errs = append(errs, err)
			continue
		}
		run, err = r.finish(ctx, run, ep, r.execute(ctx, &run, ep))
		runs = append(runs, run)
		errs = append(errs, err)
	}
	return runs, errors.Join(errs...)
}

// claim takes a scheduled window: a new run, or one whose claimant's
// lease ran out, or one that failed with attempts left.
func (r *Reconciler) claim(ctx context.Context, ep *endpoint, from, to time.Time, final bool) (Run, bool, error) {
	var run Run
	err := r.get(ctx, &run, `INSERT INTO reconciliation_runs
			(endpoint, source, window_from, window_to, final, scheduled, claimed_by, lease_until)
		VALUES ($1, $2, $3, $4, $5, true, $6, now() + $7 * interval '1 second')
		ON CONFLICT (endpoint, window_from, window_to, final) WHERE scheduled AND NOT sweep DO NOTHING
		RETURNING `+runColumns, ep.hook.Name, ep.cfg.Source, from, to, final, r.replica, r.lease.Seconds())
	if err == nil {
		return run, true, nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return run, false, fmt.Errorf("claim %s [%s, %s): %w", ep.hook.Name, from, to, err)
	}
	var id int64
	err = r.get(ctx, &id, `SELECT id FROM reconciliation_runs
		WHERE endpoint = $1 AND window_from = $2 AND window_to = $3 AND final = $4 AND scheduled AND NOT sweep`, ep.hook.Name, from, to, final)
	if err != nil {
		return run, false, fmt.Errorf("claim %s [%s, %s): %w", ep.hook.Name, from, to, err)
	}
	return r.takeOver(ctx, id)
}

// takeOverSQL claims a run whose claimant's lease ran out (it died, or
// its process stopped) or a scheduled run that failed with attempts
// left, for this replica.
const takeOverSQL = `UPDATE reconciliation_runs SET status = 'running', claimed_by = $2,
		lease_until = now() + $3 * interval '1 second', attempts = attempts + 1, finished_at = NULL
	WHERE id = $1 AND ((status = 'running' AND lease_until < now())
		OR (status = 'failed' AND scheduled AND attempts < $4))
	RETURNING ` + runColumns

func (r *Reconciler) takeOver(ctx context.Context, id int64) (Run, bool, error) {
	var run Run
	err := r.get(ctx, &run, takeOverSQL, id, r.replica, r.lease.Seconds(), MaxAttempts)
	if errors.Is(err, sql.ErrNoRows) {
		return run, false, nil
	}
	if err != nil {
		return run, false, fmt.Errorf("take over run %d: %w", id, err)
	}
	return run, true, nil
}

// ResumeDue continues every run whose claimant's lease ran out, from the
// pages or the statement file it kept, and retries scheduled runs that
// failed, a minute per attempt made after their failure.
func (r *Reconciler) ResumeDue(ctx context.Context) error {
	var ids []int64
	err := r.sel(ctx, &ids, `SELECT id FROM reconciliation_runs
		WHERE (status = 'running' AND lease_until < now())
		   OR (status = 'failed' AND scheduled AND attempts < $1 AND finished_at <= $2::timestamptz - attempts * interval '1 minute')
		ORDER BY id LIMIT 20`, MaxAttempts, r.now())
	if err != nil {
		return fmt.Errorf("list runs to resume: %w", err)
	}
	var errs []error
	for _, id := range ids {
		run, ok, err := r.takeOver(ctx, id)
		if err != nil || !ok {
			errs = append(errs, err)
			continue
		}
		ep, known := r.eps[run.Endpoint]
		if !known {
			_, err := r.exec(ctx, `UPDATE reconciliation_runs SET status = 'failed', finished_at = now(),
				last_error = 'the endpoint is no longer reconciled' WHERE id = $1`, id)
			errs = append(errs, err)
			continue
		}
		_, err = r.finish(ctx, run, ep, r.execute(ctx, &run, ep))
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
