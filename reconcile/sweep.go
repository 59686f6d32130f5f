package reconcile

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/razao/razao/reconcile/bcbpix"
	"github.com/razao/razao/webhook/scheme"
)

// The refund sweep. A devolução may settle up to 90 days after its Pix,
// and GET /pix lists a Pix by its own horario, with its devoluções as they
// stand when it is read: the windows the schedule reads (the one that just
// ended, the one that just became final) find a refund that settles later
// only if its Pix's window is read again. Once a day each scheduled
// bcb-pix endpoint reads instead every Pix of the refund horizon that
// carries a devolução (devolucaoPresente=true): a sweep run. It is a run
// like a window's, paged, kept and resumed the same way, claimed once a
// day across replicas; it keeps only the devoluções of what it reads
// (each credit is its own window's) and books them through the inbox
// under the webhook's own keys, so the refund is booked once, in the
// competence of its settlement (the first open month when that one is
// closed: periods.Competence), whichever of
// the sweep, a window run and the webhook comes first.

// sweepInvalidType is the event type a sweep's unreadable Pix is keyed
// by, with its SHA-256 as the id: a sweep's window moves every day, so a
// line without a key (keyed by its window and place) would open the same
// divergence again each day the Pix stays in the horizon.
const sweepInvalidType = "sweep:invalid"

// query is what GET /pix is asked for the run's pages: a window's Pix, or
// a sweep's Pix that carry a devolução.
func (run *Run) query() bcbpix.Query {
	return bcbpix.Query{Inicio: run.From, Fim: run.To, RefundsOnly: run.Sweep}
}

// linesOf is the lines the run keeps of one Pix of its statement (see
// pixLines), of an item dated in its window (see inWindow): a sweep keeps
// only its devoluções, and keys a line nothing keys by the item's bytes.
func (run *Run) linesOf(sc scheme.Scheme, item json.RawMessage) []Line {
	lines := inWindow(pixLines(sc, item), run.To)
	if !run.Sweep {
		return lines
	}
	kept := lines[:0]
	for _, l := range lines {
		switch {
		case l.EventID == "":
			sum := sha256.Sum256(item)
			l.EventType, l.EventID = sweepInvalidType, hex.EncodeToString(sum[:])
		case !scheme.IsBCBRefund(l.EventType):
			continue // the credit, read or not: its window's runs judge it
		}
		kept = append(kept, l)
	}
	return kept
}

// sweepKey is where RunDue's next map holds the day an endpoint's sweep
// was last claimed or found (endpoint names have no ':').
func sweepKey(endpoint string) string { return "sweep:" + endpoint }

// dayOf is the start of at's day in the ledger's time zone.
func (r *Reconciler) dayOf(at time.Time) time.Time {
	y, m, d := at.In(r.ledger.Calendar().Location()).Date()
	return time.Date(y, m, d, 0, 0, 0, 0, r.ledger.Calendar().Location())
}

// sweepWindow is the window of ep's sweep of the day that starts at to:
// the Pix whose refunds may have settled since the last sweep that
// succeeded (the day before, at the least) up to the refund horizon after
// them, and a day more for what the PSP lists late; never longer than a
// window may be (the sweeps a long outage missed are caught up as far as
// that).
func (r *Reconciler) sweepWindow(ctx context.Context, ep *endpoint, to time.Time) (time.Time, time.Time, error) {
	since := to.AddDate(0, 0, -1)
	var last sql.NullTime
	if err := r.get(ctx, &last, `SELECT max(window_to) FROM reconciliation_runs
		WHERE endpoint = $1 AND sweep AND status = 'succeeded' AND window_to < $2`, ep.hook.Name, to); err != nil {
		return time.Time{}, time.Time{}, fmt.Errorf("sweep of %s: the last sweep: %w", ep.hook.Name, err)
	}
	if last.Valid && last.Time.Before(since) {
		since = last.Time
	}
	from := since.AddDate(0, 0, -1).Add(-ep.cfg.RefundHorizon)
	if earliest := to.Add(-maxWindow); from.Before(earliest) {
		from = earliest
	}
	return from, to, nil
}

// Sweep claims and runs endpoint's refund sweep of the day at falls on
// (in the ledger's time zone), which reads the Pix of the refund horizon
// up to the start of that day. Across replicas a day is swept once: a
// sweep another replica claimed (and still holds) or already ran is left
// to it, and Sweep says it ran nothing (false, and that run). A day not
// yet begun is not swept: its sweep would be found done when it comes.
func (r *Reconciler) Sweep(ctx context.Context, endpoint string, at time.Time) (Run, bool, error) {
	ep, ok := r.eps[endpoint]
	if !ok || ep.api == nil {
		return Run{}, false, fmt.Errorf("%w: %q has no bcb-pix statement", ErrUnknownEndpoint, endpoint)
	}
	to := r.dayOf(at)
	if to.After(r.now()) {
		return Run{}, false, fmt.Errorf("%w: the sweep of %s has not begun", ErrInput, to.Format(time.DateOnly))
	}
	from, to, err := r.sweepWindow(ctx, ep, to)
	if err != nil {
		return Run{}, false, err
	}
	run, claimed, err := r.claimSweep(ctx, ep, from, to)
	if err != nil || !claimed {
		return run, false, err
	}
	run, err = r.finish(ctx, run, ep, r.execute(ctx, &run, ep))
	return run, true, err
}

// claimSweep takes the sweep ending at to: a new run, or one whose
// claimant's lease ran out, or one that failed with attempts left. It
// returns the day's run, taken or not.
func (r *Reconciler) claimSweep(ctx context.Context, ep *endpoint, from, to time.Time) (Run, bool, error) {
	var run Run
	err := r.get(ctx, &run, `INSERT INTO reconciliation_runs
			(endpoint, source, window_from, window_to, final, scheduled, sweep, claimed_by, lease_until)
		VALUES ($1, 'bcb-pix', $2, $3, false, true, true, $4, now() + $5 * interval '1 second')
		ON CONFLICT (endpoint, window_to) WHERE sweep DO NOTHING
		RETURNING `+runColumns, ep.hook.Name, from, to, r.replica, r.lease.Seconds())
	if err == nil {
		return run, true, nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return run, false, fmt.Errorf("claim the sweep of %s to %s: %w", ep.hook.Name, to, err)
	}
	err = r.get(ctx, &run, `SELECT `+runColumns+` FROM reconciliation_runs
		WHERE endpoint = $1 AND window_to = $2 AND sweep`, ep.hook.Name, to)
	if err != nil {
		return run, false, fmt.Errorf("claim the sweep of %s to %s: %w", ep.hook.Name, to, err)
	}
	taken, ok, err := r.takeOver(ctx, run.ID)
	if err != nil || !ok {
		return run, false, err
	}
	return taken, true, nil
}

// sweepDue runs the sweep of today of a scheduled endpoint, once: when
// next shows it claimed or found today, it asks nothing. A sweep that
// failed or died is ResumeDue's, as a window's run is.
func (r *Reconciler) sweepDue(ctx context.Context, endpoint string, now time.Time, next map[string]time.Time) error {
	day := r.dayOf(now)
	if next[sweepKey(endpoint)].Equal(day) {
		return nil
	}
	run, _, err := r.Sweep(ctx, endpoint, now)
	if run.ID == 0 && err != nil {
		return err
	}
	next[sweepKey(endpoint)] = day
	return err
}
