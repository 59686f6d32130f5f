package webhook

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/razao/razao/charges"
	"github.com/razao/razao/metrics"
	"github.com/razao/razao/postings"
	"github.com/razao/razao/webhook/scheme"
)

// DefaultMaxAttempts is how often a delivery is tried before it becomes a
// divergence instead of looping forever.
const DefaultMaxAttempts = 10

// Processor applies stored deliveries, one locked transaction each.
type Processor struct {
	db          *sqlx.DB
	applier     *charges.Applier
	log         *slog.Logger
	MaxAttempts int
	// OnCommit runs after each commit that may have appended outbox
	// events: the service kicks its events.Notifier there.
	OnCommit func()
	// Metrics records processing time and failures; nil records nothing.
	Metrics *metrics.Metrics
}

func (p *Processor) committed() {
	if p.OnCommit != nil {
		p.OnCommit()
	}
}

// NewProcessor returns a processor applying deliveries with applier.
func NewProcessor(db *sqlx.DB, applier *charges.Applier, log *slog.Logger) *Processor {
	return &Processor{db: db, applier: applier, log: log, MaxAttempts: DefaultMaxAttempts}
}

type inboxRow struct {
	ID         int64           `db:"id"`
	Scheme     string          `db:"scheme"`
	Kind       string          `db:"kind"`
	Status     string          `db:"status"`
	Event      json.RawMessage `db:"event"`
	Attempts   int             `db:"attempts"`
	ReceivedAt time.Time       `db:"received_at"`
}

// Process applies the pending delivery id. It returns nil without doing
// anything when the delivery is done or another worker holds it. On
// failure the transaction rolls back whole, the attempt is recorded with
// its error and a back-off, and the error is returned. Deliveries it
// released from parking (refunds whose payment just landed) are processed
// after the commit.
func (p *Processor) Process(ctx context.Context, id int64) error {
	released, err := p.processTx(ctx, id)
	if err != nil {
		p.recordFailure(ctx, id, err)
		return err
	}
	for _, rid := range released {
		if err := p.Process(ctx, rid); err != nil {
			p.log.Warn("released delivery failed; the worker will retry", "delivery", rid, "error", err)
		}
	}
	return nil
}

// Redelivered handles a PSP's redelivery of a stored delivery: one still
// pending is tried again now rather than at its back-off; a payment
// already applied re-ensures the charge's access grant, which repairs a
// grant lost to a partial state without booking anything twice.
func (p *Processor) Redelivered(ctx context.Context, key string) error {
	var row struct {
		ID     int64           `db:"id"`
		Status string          `db:"status"`
		Kind   string          `db:"kind"`
		Event  json.RawMessage `db:"event"`
	}
	if err := p.db.GetContext(ctx, &row, `SELECT id, status, kind, event FROM inbox WHERE delivery_key = $1`, key); err != nil {
		return fmt.Errorf("redelivery %s: %w", key, err)
	}
	switch {
	case row.Status == "pending":
		return p.Process(ctx, row.ID)
	case row.Status == "processed" && row.Kind == string(scheme.KindPaid):
		return p.repairGrant(ctx, row.ID, row.Event)
	case row.Status == "divergent":
		// A delivery that gave up after its attempts gets another chance
		// when the PSP sends it again.
		requeued, err := p.Requeue(ctx, row.ID)
		if err != nil || !requeued {
			return err
		}
		return p.Process(ctx, row.ID)
	}
	return nil
}

// repairGrant re-ensures the access grant of a paid charge whose payment
// is delivered again. It first checks with a plain read, on no transaction:
// a storm of duplicates then neither queues on the charge's row lock nor
// holds a connection while asking for another.
func (p *Processor) repairGrant(ctx context.Context, id int64, raw json.RawMessage) error {
	var ev scheme.Event
	if err := json.Unmarshal(raw, &ev); err != nil {
		return fmt.Errorf("repair grant for delivery %d: decode: %w", id, err)
	}
	if missing, err := p.grantMissing(ctx, ev); err != nil || !missing {
		return err
	}
	tx, err := p.db.BeginTxx(ctx, nil)
	if err != nil {
		return fmt.Errorf("repair grant for delivery %d: begin: %w", id, err)
	}
	defer tx.Rollback()
	if err := charges.EnsureGrantTx(ctx, tx, ev.ChargeID, ev.PSPRef); err != nil {
		return fmt.Errorf("repair grant for delivery %d: %w", id, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("repair grant for delivery %d: commit: %w", id, err)
	}
	p.committed()
	return nil
}

// expireParked makes every refund parked longer than limit a divergence:
// its payment never came (or was itself a divergence), yet money left.
func (p *Processor) expireParked(ctx context.Context, limit time.Duration) error {
	tx, err := p.db.BeginTxx(ctx, nil)
	if err != nil {
		return fmt.Errorf("expire parked refunds: %w", err)
	}
	defer tx.Rollback()
	var expired []struct {
		ID  int64  `db:"id"`
		Ref string `db:"charge_ref"`
	}
	err = tx.SelectContext(ctx, &expired, `UPDATE inbox SET status = 'divergent', processed_at = now()
		WHERE id IN (SELECT id FROM inbox WHERE status = 'parked' AND received_at < now() - $1 * interval '1 second'
			ORDER BY id LIMIT 100 FOR UPDATE SKIP LOCKED)
		RETURNING id, coalesce(charge_ref, '') AS charge_ref`, limit.Seconds())
	if err != nil {
		return fmt.Errorf("expire parked refunds: %w", err)
	}
	for _, e := range expired {
		if err := openDivergence(ctx, tx, e.ID, "", "refund_without_payment",
			fmt.Sprintf("refund parked for over %s waiting for the payment of %s", limit, e.Ref)); err != nil {
			return err
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("expire parked refunds: %w", err)
	}
	if len(expired) > 0 {
		p.committed()
	}
	return nil
}

// Requeue makes a delivery that gave up (a processing_failed divergence)
// due again with its attempts reset, and resolves that divergence with a
// note: for after the cause (an outage, a bad deploy) is fixed. A PSP's
// redelivery does the same.
func (p *Processor) Requeue(ctx context.Context, id int64) (bool, error) {
	tx, err := p.db.BeginTxx(ctx, nil)
	if err != nil {
		return false, fmt.Errorf("requeue delivery %d: %w", id, err)
	}
	defer tx.Rollback()
	res, err := tx.ExecContext(ctx, `UPDATE inbox SET status = 'pending', attempts = 0, next_attempt_at = now(), processed_at = NULL
		WHERE id = $1 AND status = 'divergent'
		  AND EXISTS (SELECT 1 FROM divergences d WHERE d.inbox_id = $1 AND d.reason = 'processing_failed' AND d.status = 'open')`, id)
	if err != nil {
		return false, fmt.Errorf("requeue delivery %d: %w", id, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return false, nil
	}
	if _, err := tx.ExecContext(ctx, `UPDATE divergences SET status = 'resolved', resolved_at = now(),
		resolution_note = 'requeued for processing' WHERE inbox_id = $1 AND reason = 'processing_failed'`, id); err != nil {
		return false, fmt.Errorf("requeue delivery %d: %w", id, err)
	}
	if err := tx.Commit(); err != nil {
		return false, fmt.Errorf("requeue delivery %d: %w", id, err)
	}
	return true, nil
}

// grantMissing reports whether the paid charge a delivery names lacks its
// grant: a plain read, so a storm of duplicates of a processed payment
// does not queue on the charge's row lock only to find the grant there.
func (p *Processor) grantMissing(ctx context.Context, ev scheme.Event) (bool, error) {
	var missing bool
	err := p.db.GetContext(ctx, &missing, `SELECT EXISTS (
		SELECT 1 FROM charges c WHERE (c.id = $1 OR c.psp_ref = NULLIF($2, ''))
		  AND c.state IN ('paid', 'partially_refunded', 'refunded')
		  AND NOT EXISTS (SELECT 1 FROM access_grants g WHERE g.charge_id = c.id))`, ev.ChargeID, ev.PSPRef)
	return missing, err
}

func (p *Processor) processTx(ctx context.Context, id int64) ([]int64, error) {
	start := time.Now()
	tx, err := p.db.BeginTxx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("process delivery %d: begin: %w", id, err)
	}
	defer tx.Rollback()
	// Lock order is always inbox row, then charge row: no deadlocks. The
	// row is found by its primary key alone and its status checked after:
	// with "AND status = 'pending'" the planner may pick the partial index
	// of pending rows and read the whole backlog to find one id.
	var row inboxRow
	err = tx.GetContext(ctx, &row, `SELECT id, scheme, kind, status, event, attempts, received_at FROM inbox
		WHERE id = $1 FOR UPDATE SKIP LOCKED`, id)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil // another worker holds it
	}
	if err != nil {
		return nil, fmt.Errorf("process delivery %d: lock: %w", id, err)
	}
	if row.Status != "pending" {
		return nil, nil // done meanwhile
	}
	status, paidCharge, err := p.apply(ctx, tx, row)
	if err != nil {
		return nil, fmt.Errorf("process delivery %d: %w", id, err)
	}
	released, err := finish(ctx, tx, id, status, paidCharge)
	if err != nil {
		return nil, fmt.Errorf("process delivery %d: mark %s: %w", id, status, err)
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("process delivery %d: commit: %w", id, postings.MapError(err))
	}
	p.committed()
	p.Metrics.Processed(status, time.Since(start))
	return released, nil
}

// apply decides what the delivery does and returns the inbox status it
// ends in and, when it confirmed a payment, the charge it paid.
func (p *Processor) apply(ctx context.Context, tx *sqlx.Tx, row inboxRow) (string, string, error) {
	var ev scheme.Event
	if err := json.Unmarshal(row.Event, &ev); err != nil {
		return "", "", fmt.Errorf("decode stored event: %w", err)
	}
	switch ev.Kind {
	case scheme.KindIgnored, scheme.KindTest:
		return "ignored", "", nil
	case scheme.KindDisputed:
		return "divergent", "", openDivergence(ctx, tx, row.ID, ev.ChargeID, "disputed", "the PSP reports a dispute ("+ev.Type+")")
	}
	at := ev.OccurredAt
	if at.IsZero() {
		at = row.ReceivedAt
	}
	out, err := p.applier.ApplyTx(ctx, tx, charges.Event{
		Kind: charges.Kind(ev.Kind), ChargeID: ev.ChargeID, PSPRef: ev.PSPRef, RefundID: ev.RefundID,
		Amount: ev.Amount, HasAmount: ev.HasAmount, Fee: ev.Fee, HasFee: ev.HasFee,
		FullRefundIfNoAmount: ev.FullRefund, At: at, InboxID: row.ID,
	})
	if err != nil {
		return "", "", err
	}
	switch out.Result {
	case charges.Parked:
		return "parked", "", nil
	case charges.Divergence:
		return "divergent", "", openDivergence(ctx, tx, row.ID, out.ChargeID, out.Reason, out.Detail)
	}
	if ev.Kind != scheme.KindPaid || out.Result != charges.Applied {
		return "processed", "", nil
	}
	return "processed", out.ChargeID, nil
}

// finish marks the delivery with its final status and, when it paid a
// charge, makes the refunds parked before that payment due again; one
// statement for both. It returns the released deliveries.
func finish(ctx context.Context, tx *sqlx.Tx, id int64, status, paidCharge string) ([]int64, error) {
	var ids []int64
	err := tx.SelectContext(ctx, &ids, `
		WITH done AS (
			UPDATE inbox SET status = $2, processed_at = now(), attempts = attempts + 1 WHERE id = $1
		)
		UPDATE inbox SET status = 'pending', next_attempt_at = now()
		WHERE $3 <> '' AND status = 'parked' AND charge_ref IN (
			SELECT unnest(ARRAY[c.id, c.psp_ref, c.paid_ref]) FROM charges c WHERE c.id = $3)
		RETURNING id`, id, status, paidCharge)
	return ids, err
}

// recordFailure counts a failed attempt and schedules the next with
// exponential back-off (1 s doubling to 10 min, jittered so replicas do not
// retry in lockstep); past MaxAttempts the delivery becomes a divergence.
func (p *Processor) recordFailure(ctx context.Context, id int64, cause error) {
	ctx = context.WithoutCancel(ctx)
	p.Metrics.Failure()
	if err := p.recordFailureTx(ctx, id, cause); err != nil {
		p.log.Error("record delivery failure", "delivery", id, "error", err, "cause", cause)
	}
}

func (p *Processor) recordFailureTx(ctx context.Context, id int64, cause error) error {
	tx, err := p.db.BeginTxx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	var attempts int
	err = tx.GetContext(ctx, &attempts, `UPDATE inbox SET attempts = attempts + 1, last_error = left($2, 2000),
		next_attempt_at = now() + least(600, power(2, least(attempts, 10))) * (0.5 + random() / 2) * interval '1 second'
		WHERE id = $1 AND status = 'pending' RETURNING attempts`, id, cause.Error())
	if isNoRows(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if attempts >= p.MaxAttempts {
		if _, err := tx.ExecContext(ctx, `UPDATE inbox SET status = 'divergent', processed_at = now() WHERE id = $1`, id); err != nil {
			return err
		}
		if err := openDivergence(ctx, tx, id, "", "processing_failed", fmt.Sprintf("gave up after %d attempts: %v", attempts, cause)); err != nil {
			return err
		}
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	p.committed()
	p.log.Warn("delivery failed; will retry", "delivery", id, "attempts", attempts, "error", cause)
	return nil
}

func isNoRows(err error) bool { return errors.Is(err, sql.ErrNoRows) }
