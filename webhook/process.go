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
	"github.com/lib/pq"

	"github.com/razao/razao/charges"
	"github.com/razao/razao/events"
	"github.com/razao/razao/internal/sqlstmt"
	"github.com/razao/razao/metrics"
	"github.com/razao/razao/postings"
	"github.com/razao/razao/webhook/scheme"
)

// DefaultTimeout bounds one processing transaction by default.
const DefaultTimeout = 15 * time.Second

// DefaultMaxAttempts is how often a delivery is tried before it becomes a
// divergence instead of looping forever.
const DefaultMaxAttempts = 10

// Processor applies stored deliveries in locked transactions, several per
// transaction where it can: the inbox's appliers hand it the new
// deliveries of its group commits, the worker the due ones.
type Processor struct {
	db          *sqlx.DB
	lockStmt    *sqlstmt.Stmt
	finishStmt  *sqlstmt.Stmt
	applier     *charges.Applier
	log         *slog.Logger
	MaxAttempts int
	// OnCommit runs after each commit that may have appended outbox
	// events: the service kicks its events.Notifier there.
	OnCommit func()
	// Metrics records processing time and failures; nil records nothing.
	Metrics *metrics.Metrics
	// Timeout bounds one processing transaction: a delivery whose charge
	// stays locked longer (an operator's session, say) fails that attempt
	// and is left to the worker, rather than holding the one at work on
	// it indefinitely.
	Timeout time.Duration
}

func (p *Processor) committed() {
	if p.OnCommit != nil {
		p.OnCommit()
	}
}

// NewProcessor returns a processor applying deliveries with applier.
func NewProcessor(db *sqlx.DB, applier *charges.Applier, log *slog.Logger) *Processor {
	return &Processor{db: db, applier: applier, log: log, MaxAttempts: DefaultMaxAttempts, Timeout: DefaultTimeout,
		lockStmt: sqlstmt.New(db, lockPendingSQL), finishStmt: sqlstmt.New(db, finishSQL)}
}

// inboxRow is what processing reads of a pending delivery.
type inboxRow struct {
	ID         int64           `db:"id"`
	Event      json.RawMessage `db:"event"`
	ReceivedAt time.Time       `db:"received_at"`
	// Merchant is the merchant of the endpoint the delivery came through.
	Merchant string `db:"merchant"`
	// Scheme is that endpoint's scheme: payment references are per scheme.
	Scheme string `db:"scheme"`
}

// errBusy marks a delivery a batch left out because another transaction
// held its charge: it is to be processed on its own, waiting for the lock.
var errBusy = errors.New("charge held by another transaction")

// processAlone applies one delivery in a transaction of its own, waiting
// for its charge's lock if another transaction holds it.
func (p *Processor) processAlone(ctx context.Context, id int64) error {
	return p.processBatch(ctx, []int64{id}, charges.Wait)[0]
}

// processBatch applies the deliveries ids in one transaction and returns
// each one's error. Batches run skipLocked, so one slow lock does not
// hold them: a delivery whose charge another transaction holds is left
// out with errBusy, for the caller to process alone with Wait. If the
// transaction fails, each delivery is tried again in a transaction of its
// own, so a failure is recorded against the delivery that caused it and
// the others are applied.
func (p *Processor) processBatch(ctx context.Context, ids []int64, skipLocked bool) []error {
	if len(ids) == 0 {
		return nil
	}
	errs := make([]error, len(ids))
	res, err := p.processTx(ctx, ids, skipLocked)
	switch {
	case err == nil:
		for i, id := range ids {
			if res.busy[id] {
				errs[i] = errBusy
			}
			if cause, ok := res.failed[id]; ok {
				p.recordFailure(ctx, id, cause)
				errs[i] = cause
			}
		}
		// A released refund left out as busy is due now: the worker
		// takes it on its next round.
		for _, err := range p.processBatch(ctx, res.released, skipLocked) {
			if err != nil && !errors.Is(err, errBusy) {
				p.log.WarnContext(ctx, "released delivery failed; the worker will retry", "error", err)
			}
		}
	case len(ids) == 1:
		p.recordFailure(ctx, ids[0], err)
		errs[0] = err
	default:
		// Each in a transaction of its own, with its own Timeout: a batch
		// that ran out of time leaves its deliveries no expired context.
		for i, id := range ids {
			errs[i] = p.processBatch(ctx, []int64{id}, skipLocked)[0]
		}
	}
	return errs
}

// Redelivered handles a PSP's redelivery of a stored delivery (see
// redelivered) and retries one still pending now, waiting for its
// charge's lock if another transaction holds it.
func (p *Processor) Redelivered(ctx context.Context, key Key) error {
	id, err := p.redelivered(ctx, key)
	if err != nil || id == 0 {
		return err
	}
	return p.processAlone(ctx, id)
}

// redelivered does what a PSP's redelivery of a stored delivery asks,
// short of waiting on a charge's lock: a payment already applied
// re-ensures the charge's access grant, which repairs a grant lost to a
// partial state without booking anything twice; a delivery that gave up
// after its attempts is requeued, due to the worker at once. It returns
// the id of a delivery pending (or requeued), worth trying again now
// rather than at its back-off; the worker gets to it either way.
func (p *Processor) redelivered(ctx context.Context, key Key) (int64, error) {
	var row struct {
		ID     int64           `db:"id"`
		Status string          `db:"status"`
		Kind   string          `db:"kind"`
		Event  json.RawMessage `db:"event"`
	}
	if err := p.db.GetContext(ctx, &row, `SELECT id, status, kind, event FROM inbox
		WHERE endpoint = $1 AND event_type = $2 AND event_id = $3`, key.Endpoint, key.EventType, key.EventID); err != nil {
		return 0, fmt.Errorf("redelivery %s: %w", key, err)
	}
	switch {
	case row.Status == "pending":
		return row.ID, nil
	case row.Status == "processed" && row.Kind == string(scheme.KindPaid):
		return 0, p.repairGrant(ctx, row.ID, row.Event)
	case row.Status == "divergent":
		// A delivery that gave up after its attempts gets another chance
		// when the PSP sends it again.
		if requeued, err := p.Requeue(ctx, row.ID); err != nil || !requeued {
			return 0, err
		}
		return row.ID, nil
	}
	return 0, nil
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
	tx, err := p.db.BeginTxx(ctx, postings.WriteTx())
	if err != nil {
		return fmt.Errorf("repair grant for delivery %d: begin: %w", id, err)
	}
	defer tx.Rollback()
	drafts, err := p.applier.EnsureGrantTx(ctx, tx, ev.ChargeID, ev.PSPRef)
	if err == nil {
		err = events.AppendAll(ctx, tx, drafts...)
	}
	if err != nil {
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
	tx, err := p.db.BeginTxx(ctx, postings.WriteTx())
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
	tx, err := p.db.BeginTxx(ctx, postings.WriteTx())
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
		SELECT 1 FROM charges c WHERE (c.id = $1 OR ($1 = '' AND c.psp_ref = NULLIF($2, '')))
		  AND c.state IN ('paid', 'partially_refunded', 'refunded')
		  AND NOT EXISTS (SELECT 1 FROM access_grants g WHERE g.charge_id = c.id))`, ev.ChargeID, ev.PSPRef)
	return missing, err
}

// txResult is what a processing transaction leaves its caller to do.
type txResult struct {
	released []int64         // refunds released from parking by its payments
	busy     map[int64]bool  // left out: their charge was held elsewhere
	failed   map[int64]error // left out: their stored event does not decode
}

// delivery is one pending inbox row in a processing transaction, and what
// was decided for it.
type delivery struct {
	inboxRow
	ev         scheme.Event
	status     string // the inbox status it ends in
	paidCharge string // the charge it paid, if it did
	chargeID   string
	drafts     []events.Draft
	div        *divergence // the divergence it opens, if any
}

// processTx applies the pending deliveries among ids in one transaction:
// it locks their inbox rows (skipping any another worker holds), then
// every charge they name in id order, decides each delivery in order in
// memory, and writes the result in a few statements for all of them.
// skipLocked takes only the charges no other transaction holds and leaves
// the deliveries of the others out, returned as busy. It returns the
// deliveries released from parking by the payments it booked.
func (p *Processor) processTx(ctx context.Context, ids []int64, skipLocked bool) (res txResult, err error) {
	ctx, cancel := context.WithTimeout(ctx, p.Timeout)
	defer cancel()
	start := time.Now()
	tx, err := p.db.BeginTxx(ctx, postings.WriteTx())
	if err != nil {
		return res, fmt.Errorf("process deliveries %v: begin: %w", ids, err)
	}
	defer tx.Rollback()
	// This transaction's statements are prepared lookups and writes by key
	// over arrays of ids, and PostgreSQL would plan each on every call: its
	// generic estimate of "= ANY($1)" assumes ten elements and looks dearer
	// than a custom plan for two. Their generic plans are the right ones
	// and planning was a fifth of their time. Set for this transaction
	// only: queries elsewhere (reports) need their custom plans.
	if _, err := tx.ExecContext(ctx, `SET LOCAL plan_cache_mode = force_generic_plan`); err != nil {
		return res, fmt.Errorf("process deliveries %v: %w", ids, err)
	}
	var ds []*delivery
	if ds, res.failed, err = p.lockPending(ctx, tx, ids); err != nil || len(ds) == 0 {
		return res, err
	}
	var chargeEvents []charges.Event
	for _, d := range ds {
		if d.movesCharge() {
			chargeEvents = append(chargeEvents, d.chargeEvent())
		}
	}
	locked, err := p.applier.LockTx(ctx, tx, chargeEvents, skipLocked)
	if err != nil {
		return res, fmt.Errorf("process deliveries %v: %w", ids, err)
	}
	if skipLocked {
		if ds, res.busy = leaveOutBusy(locked, ds); len(ds) == 0 {
			return res, nil
		}
	}
	decided, err := decide(locked, ds)
	if err != nil {
		return res, fmt.Errorf("process deliveries %v: %w", ids, err)
	}
	if err := locked.WriteTx(ctx, tx); err != nil {
		return res, fmt.Errorf("process deliveries %v: %w", ids, err)
	}
	drafts, err := outcomeEvents(ctx, tx, decided)
	if err != nil {
		return res, fmt.Errorf("process deliveries %v: %w", ids, err)
	}
	res.released, err = p.finish(ctx, tx, ds, drafts)
	if err != nil {
		return res, fmt.Errorf("process deliveries %v: mark done: %w", ids, err)
	}
	if err := tx.Commit(); err != nil {
		return res, fmt.Errorf("process deliveries %v: commit: %w", ids, postings.MapError(err))
	}
	p.committed()
	for _, d := range ds {
		p.Metrics.Processed(d.status, time.Since(start))
	}
	return res, nil
}

// leaveOutBusy splits off the deliveries whose charge a batch could not
// lock (held elsewhere, or unknown: both are decided alone, waiting).
func leaveOutBusy(l *charges.Locked, ds []*delivery) ([]*delivery, map[int64]bool) {
	var kept []*delivery
	busy := map[int64]bool{}
	for _, d := range ds {
		if d.movesCharge() && !l.Has(d.chargeEvent()) {
			busy[d.ID] = true
			continue
		}
		kept = append(kept, d)
	}
	return kept, busy
}

// lockPendingSQL locks the pending inbox rows among ids, skipping rows
// another transaction holds; a row that is no longer pending is neither
// returned nor locked. "status || ”" keeps the planner on the primary
// key: with "status = 'pending'" it may pick the partial index of pending
// rows and read the whole backlog to find a few ids.
const lockPendingSQL = `SELECT id, event, received_at, merchant, scheme FROM inbox
	WHERE id = ANY($1) AND status || '' = 'pending' ORDER BY id FOR UPDATE SKIP LOCKED`

// lockPending locks the pending inbox rows of ids and returns them in id
// order, each with its decoded event, and apart the ones whose stored
// event does not decode: those fail alone rather than fail the batch. Lock
// order is always inbox rows, then charge rows: no deadlocks.
func (p *Processor) lockPending(ctx context.Context, tx *sqlx.Tx, ids []int64) ([]*delivery, map[int64]error, error) {
	stmt, err := p.lockStmt.In(ctx, tx)
	if err != nil {
		return nil, nil, err
	}
	var rows []inboxRow
	if err := stmt.SelectContext(ctx, &rows, pq.Array(ids)); err != nil {
		return nil, nil, fmt.Errorf("lock deliveries %v: %w", ids, err)
	}
	var ds []*delivery
	var failed map[int64]error
	for _, r := range rows {
		d := &delivery{inboxRow: r}
		if err := json.Unmarshal(r.Event, &d.ev); err != nil {
			if failed == nil {
				failed = map[int64]error{}
			}
			failed[r.ID] = fmt.Errorf("delivery %d: decode stored event: %w", r.ID, err)
			continue
		}
		ds = append(ds, d)
	}
	return ds, failed, nil
}

// movesCharge reports whether the delivery's event is one its charge
// reacts to, and so whether the charge must be locked to decide it.
func (d *delivery) movesCharge() bool {
	switch d.ev.Kind {
	case scheme.KindIgnored, scheme.KindTest, scheme.KindDisputed:
		return false
	}
	return true
}

// chargeEvent is the delivery's event as its charge sees it.
func (d *delivery) chargeEvent() charges.Event {
	at := d.ev.OccurredAt
	if at.IsZero() {
		at = d.ReceivedAt
	}
	return charges.Event{
		Kind: charges.Kind(d.ev.Kind), ChargeID: d.ev.ChargeID, PSPRef: d.ev.PSPRef, RefundID: d.ev.RefundID,
		PaymentRef: paymentRef(d.Scheme, d.ev), Merchant: d.Merchant,
		Amount: d.ev.Amount, HasAmount: d.ev.HasAmount, Fee: d.ev.Fee, HasFee: d.ev.HasFee,
		FullRefundIfNoAmount: d.ev.FullRefund, At: at, InboxID: d.ID,
	}
}

// paymentRef is the identity of the payment a paid event reports: what
// "provably the same payment" means, per scheme, when a charge already
// paid is paid again (see charges.Event.PaymentRef). It always starts with
// the scheme (hodle:track-1, standard:event:msg_1): a Hodle trackId
// spelled like a standard payment's reference is another payment. For a
// refund it is the payment the refund names (its PSP reference, in the
// same form), or "" when it names none.
//   - hodle: data.trackId, Hodle's deposit id (the payment's inbox key too);
//   - bcb-pix: the endToEndId, the Pix's own id across every PSP;
//   - abacatepay: the paid resource's id (data.transparent.id / the
//     checkout's id) when the payload has it, else the envelope id;
//   - standard: razao's body carries no payment reference, so the message
//     is the payment: webhook-id, the same on every retry of one message.
//     A charge.paid under another webhook-id is another notification, a
//     second payment for finance to look at, never absorbed.
//
// A payment whose scheme states no PSP reference is identified by its
// event id (charges.EventPaymentRef). Payments through two endpoints of
// one merchant are the same payment only if they name the same identity.
func paymentRef(schemeName string, ev scheme.Event) string {
	if ev.PSPRef != "" {
		return charges.SchemePaymentRef(schemeName, ev.PSPRef)
	}
	if ev.Kind != scheme.KindPaid {
		return ""
	}
	return charges.EventPaymentRef(schemeName, ev.EventID)
}

// decide applies the deliveries in order to the locked charges and returns
// them in the order they were decided, the order their events are
// appended in. A refund parked because its payment had not landed is
// decided again right after a later delivery of the batch pays the charge.
func decide(l *charges.Locked, ds []*delivery) ([]*delivery, error) {
	var decided []*delivery
	parked := map[string][]*delivery{}
	for _, d := range ds {
		if err := d.decide(l); err != nil {
			return nil, err
		}
		if d.status == "parked" {
			parked[d.chargeID] = append(parked[d.chargeID], d)
			continue
		}
		decided = append(decided, d)
		if d.paidCharge == "" {
			continue
		}
		for _, w := range parked[d.paidCharge] {
			if err := w.decide(l); err != nil {
				return nil, err
			}
			decided = append(decided, w)
		}
		delete(parked, d.paidCharge)
	}
	return decided, nil
}

// decide sets what the delivery does: its final status, and its events or
// divergence.
func (d *delivery) decide(l *charges.Locked) error {
	switch d.ev.Kind {
	case scheme.KindIgnored, scheme.KindTest:
		d.status = "ignored"
		return nil
	case scheme.KindDisputed:
		d.status = "divergent"
		d.div = &divergence{inboxID: d.ID, chargeID: d.ev.ChargeID, reason: "disputed",
			detail: "the PSP reports a dispute (" + d.ev.Type + ")"}
		return nil
	}
	out, err := l.Apply(d.chargeEvent())
	if err != nil {
		return fmt.Errorf("delivery %d: %w", d.ID, err)
	}
	d.chargeID = out.ChargeID
	switch out.Result {
	case charges.Parked:
		d.status = "parked"
	case charges.Divergence:
		d.status = "divergent"
		d.div = &divergence{inboxID: d.ID, chargeID: out.ChargeID, reason: out.Reason, detail: out.Detail}
	default:
		d.status, d.drafts = "processed", out.Events
		if d.ev.Kind == scheme.KindPaid && out.Result == charges.Applied {
			d.paidCharge = out.ChargeID
		}
	}
	return nil
}

// outcomeEvents opens the deliveries' divergences and returns every event
// to append, in the order the deliveries were decided.
func outcomeEvents(ctx context.Context, tx *sqlx.Tx, decided []*delivery) ([]events.Draft, error) {
	var divs []divergence
	for _, d := range decided {
		if d.div != nil {
			divs = append(divs, *d.div)
		}
	}
	opened, err := insertDivergences(ctx, tx, divs)
	if err != nil {
		return nil, err
	}
	var drafts []events.Draft
	for _, d := range decided {
		if d.div == nil {
			drafts = append(drafts, d.drafts...)
		} else if id, ok := opened[d.ID]; ok {
			drafts = append(drafts, d.div.event(id))
		}
	}
	return drafts, nil
}

// finishSQL appends the deliveries' events, marks the deliveries with
// their final status and makes the refunds parked before the given
// payments due again. The rows it marks are not the rows it releases: a
// delivery being marked was pending in the statement's snapshot, and one
// it parks waits for a payment not given.
var finishSQL = `
	WITH appended AS (` + events.AppendSQL(4) + `
	), done AS (
		UPDATE inbox i SET status = u.status, processed_at = now(), attempts = i.attempts + 1
		FROM unnest($1::bigint[], $2::text[]) AS u (id, status) WHERE i.id = u.id
	)
	UPDATE inbox SET status = 'pending', next_attempt_at = now()
	WHERE status = 'parked' AND charge_ref IN (
		SELECT unnest(ARRAY[c.id, c.psp_ref]) FROM charges c WHERE c.id = ANY($3))
	RETURNING id`

// finish appends the events, marks every delivery with its final status
// and releases the refunds parked before the payments they booked, in one
// statement. It returns the released deliveries.
func (p *Processor) finish(ctx context.Context, tx *sqlx.Tx, ds []*delivery, drafts []events.Draft) ([]int64, error) {
	ids, statuses := make([]int64, len(ds)), make([]string, len(ds))
	var paid []string
	for i, d := range ds {
		ids[i], statuses[i] = d.ID, d.status
		if d.paidCharge != "" {
			paid = append(paid, d.paidCharge)
		}
	}
	evArgs, err := events.AppendArgs(drafts...)
	if err != nil {
		return nil, err
	}
	stmt, err := p.finishStmt.In(ctx, tx)
	if err != nil {
		return nil, err
	}
	var released []int64
	err = stmt.SelectContext(ctx, &released, append([]any{pq.Array(ids), pq.Array(statuses), pq.Array(paid)}, evArgs...)...)
	return released, err
}

// recordFailure counts a failed attempt and schedules the next with
// exponential back-off (1 s doubling to 10 min, jittered so replicas do not
// retry in lockstep); past MaxAttempts the delivery becomes a divergence.
func (p *Processor) recordFailure(ctx context.Context, id int64, cause error) {
	// Its own time: the attempt that failed may have used all of its own.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), p.Timeout)
	defer cancel()
	p.Metrics.Failure()
	if err := p.recordFailureTx(ctx, id, cause); err != nil {
		p.log.ErrorContext(ctx, "record delivery failure", "delivery", id, "error", err, "cause", cause)
	}
}

func (p *Processor) recordFailureTx(ctx context.Context, id int64, cause error) error {
	tx, err := p.db.BeginTxx(ctx, postings.WriteTx())
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
	p.log.WarnContext(ctx, "delivery failed; will retry", "delivery", id, "attempts", attempts, "error", cause)
	return nil
}

func isNoRows(err error) bool { return errors.Is(err, sql.ErrNoRows) }
