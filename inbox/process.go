package inbox

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
	"go.opentelemetry.io/otel/trace"

	"github.com/razao/razao/charges"
	"github.com/razao/razao/divergences"
	"github.com/razao/razao/events"
	"github.com/razao/razao/internal/pgarray"
	"github.com/razao/razao/internal/sqlstmt"
	"github.com/razao/razao/money"
	"github.com/razao/razao/periods"
	"github.com/razao/razao/postings"
	"github.com/razao/razao/webhook/scheme"
)

// DefaultTimeout bounds one processing transaction by default.
const DefaultTimeout = 15 * time.Second

// DefaultMaxAttempts is how often a delivery is tried before it becomes a
// divergence instead of looping forever.
const DefaultMaxAttempts = 10

// Processor applies the inbox's due deliveries, a batch per locked
// transaction: it is the one path from the inbox to the ledger (see the
// package documentation). Workers (Worker) call it; so do tests, through
// Worker.RunOnce.
type Processor struct {
	db          *sqlx.DB
	claimDue    *sqlstmt.Stmt
	claimIDs    *sqlstmt.Stmt
	finishStmt  *sqlstmt.Stmt
	applier     *charges.Applier
	log         *slog.Logger
	bell        *doorbell
	MaxAttempts int
	// OnCommit runs after each commit that may have appended outbox
	// events: the service kicks its events.Notifier there.
	OnCommit func()
	// Metrics records processing time and failures; nil records nothing.
	Metrics Recorder
	// Timeout bounds one processing transaction: one stuck on a table
	// lock (an operator's session, say) fails that attempt and backs off.
	Timeout time.Duration
	// Tracer, when set, traces each transaction that claimed deliveries
	// and each delivery in it (trace.go); nil traces nothing.
	Tracer trace.Tracer
}

// Recorder is what the processor reports to: the service's
// *metrics.Metrics, named here by the methods it calls, since package
// metrics reads the inbox's gauges through this package (ReadBacklog).
type Recorder interface {
	// Processed records one delivery's processing transaction, by result.
	Processed(result string, d time.Duration)
	// Failure counts a failed processing attempt.
	Failure()
}

func (p *Processor) committed() {
	if p.OnCommit != nil {
		p.OnCommit()
	}
}

// NewProcessor returns a processor applying deliveries with applier.
func NewProcessor(db *sqlx.DB, applier *charges.Applier, log *slog.Logger) *Processor {
	return &Processor{db: db, applier: applier, log: log, MaxAttempts: DefaultMaxAttempts, Timeout: DefaultTimeout,
		bell: newDoorbell(), claimDue: sqlstmt.New(db, claimDueSQL), claimIDs: sqlstmt.New(db, claimIDsSQL),
		finishStmt: sqlstmt.New(db, finishSQL)}
}

// Ring wakes an idle worker of this process: deliveries are due now.
func (p *Processor) Ring() { p.bell.ring() }

// inboxRow is what processing reads of a pending delivery.
type inboxRow struct {
	ID         int64           `db:"id"`
	Event      json.RawMessage `db:"event"`
	ReceivedAt time.Time       `db:"received_at"`
	// Endpoint is the name of the endpoint the delivery came through (its
	// span's attribute); Merchant is that endpoint's merchant.
	Endpoint string `db:"endpoint"`
	Merchant string `db:"merchant"`
	// Scheme is that endpoint's scheme: payment references are per scheme.
	Scheme string `db:"scheme"`
	// LastClosed is the last closed month, the same in every row of a
	// claim (lastClosedColumn).
	LastClosed sql.NullTime `db:"last_closed"`
}

// SnoozedError is the last_error of a delivery a worker snoozed because
// another transaction held its charge: not an attempt, but what an
// operator looking at a delivery still pending wants to know.
const SnoozedError = "snoozed: its charge was held by another transaction"

// snoozeFor is how long a delivery whose charge another transaction holds
// waits before it is due again: it spends no attempt, and a worker rings
// its bell when the time is up. Short, because the holder is usually
// another batch, done within milliseconds.
const snoozeFor = 50 * time.Millisecond

// claim runs one of the claim statements in tx.
type claim func(ctx context.Context, tx *sqlx.Tx) ([]inboxRow, error)

func (p *Processor) due(limit int) claim {
	return func(ctx context.Context, tx *sqlx.Tx) ([]inboxRow, error) {
		return selectRows(ctx, tx, p.claimDue, limit)
	}
}

func (p *Processor) byIDs(ids []int64) claim {
	return func(ctx context.Context, tx *sqlx.Tx) ([]inboxRow, error) {
		return selectRows(ctx, tx, p.claimIDs, pq.Array(ids))
	}
}

func selectRows(ctx context.Context, tx *sqlx.Tx, s *sqlstmt.Stmt, arg any) ([]inboxRow, error) {
	stmt, err := s.In(ctx, tx)
	if err != nil {
		return nil, err
	}
	var rows []inboxRow
	if err := stmt.SelectContext(ctx, &rows, arg); err != nil {
		return nil, fmt.Errorf("claim deliveries: %w", err)
	}
	return rows, nil
}

// ProcessDue claims up to limit due deliveries and applies them in one
// transaction, and returns how many it claimed. When that transaction
// fails, each of them is tried in a transaction of its own, so that the
// failure is counted against the delivery that caused it and the others
// are applied. The error is the claim's own (the database unreachable).
func (p *Processor) ProcessDue(ctx context.Context, limit int) (int, error) {
	res, err := p.processTx(ctx, p.due(limit))
	switch {
	case res.claimed == nil:
		return 0, err
	case err == nil:
		p.after(ctx, res)
	case len(res.claimed) == 1:
		p.recordFailure(ctx, res.claimed[0], err, res.span)
	default:
		for _, id := range res.claimed {
			one, err := p.processTx(ctx, p.byIDs([]int64{id}))
			if err != nil {
				p.recordFailure(ctx, id, err, one.span)
				continue
			}
			p.after(ctx, one)
		}
	}
	return len(res.claimed), nil
}

// after does what a committed batch leaves to do outside it: record the
// failures of the deliveries that did not decode, and ring the bell for
// the refunds it released (due now) and for the deliveries it snoozed
// (due shortly).
func (p *Processor) after(ctx context.Context, res txResult) {
	for id, cause := range res.failed {
		p.recordFailure(ctx, id, cause, res.span)
	}
	if res.released > 0 {
		p.bell.ring()
	}
	if res.snoozed > 0 {
		time.AfterFunc(snoozeFor, p.bell.ring)
	}
}

// repairGrants re-ensures the access grants of the paid charges whose
// applied payments (their stored events, raw) a batch of requests
// delivered again: it repairs a grant lost to a partial state without
// booking anything twice. Copies of one delivery share one repair.
func (p *Processor) repairGrants(ctx context.Context, paid []json.RawMessage) error {
	seen := map[string]bool{}
	for _, raw := range paid {
		if seen[string(raw)] {
			continue
		}
		seen[string(raw)] = true
		if err := p.repairGrant(ctx, raw); err != nil {
			return err
		}
	}
	return nil
}

// repairGrant re-ensures the access grant of a paid charge whose payment
// is delivered again. It first checks with a plain read, on no transaction:
// a storm of duplicates then neither queues on the charge's row lock nor
// holds a connection while asking for another.
func (p *Processor) repairGrant(ctx context.Context, raw json.RawMessage) error {
	var ev scheme.Event
	if err := json.Unmarshal(raw, &ev); err != nil {
		return fmt.Errorf("repair grant: decode: %w", err)
	}
	if missing, err := charges.GrantMissing(ctx, p.db, ev.ChargeID, ev.PSPRef); err != nil || !missing {
		return err
	}
	tx, err := p.db.BeginTxx(ctx, periods.WriteTx())
	if err != nil {
		return fmt.Errorf("repair grant of %s: begin: %w", ev.ChargeID, err)
	}
	defer tx.Rollback()
	drafts, err := p.applier.EnsureGrantTx(ctx, tx, ev.ChargeID, ev.PSPRef)
	if err == nil {
		err = events.AppendAll(ctx, tx, drafts...)
	}
	if err != nil {
		return fmt.Errorf("repair grant of %s: %w", ev.ChargeID, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("repair grant of %s: commit: %w", ev.ChargeID, err)
	}
	p.committed()
	return nil
}

// expireParked makes every refund parked longer than limit a divergence:
// its payment never came (or was itself a divergence), yet money left.
func (p *Processor) expireParked(ctx context.Context, limit time.Duration) error {
	tx, err := p.db.BeginTxx(ctx, periods.WriteTx())
	if err != nil {
		return fmt.Errorf("expire parked refunds: %w", err)
	}
	defer tx.Rollback()
	var expired []struct {
		ID  int64  `db:"id"`
		Ref string `db:"charge_ref"`
	}
	err = tx.SelectContext(ctx, &expired, expireParkedSQL, limit.Seconds())
	if err != nil {
		return fmt.Errorf("expire parked refunds: %w", err)
	}
	for _, e := range expired {
		if err := divergences.OpenForDelivery(ctx, tx, divergences.Delivery{InboxID: e.ID, Reason: divergences.ReasonRefundWithoutPayment,
			Detail: divergences.RefundParkedTooLong(limit, e.Ref)}); err != nil {
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

// Requeue resolves, with note, the divergence of a delivery that gave up
// after its attempts and makes the delivery due again (see
// divergences.Requeue, the one home of the rule, which razao inbox retry
// and a PSP's redelivery share), then rings every replica's workers.
func (p *Processor) Requeue(ctx context.Context, id int64, note string, now time.Time) (divergences.Divergence, error) {
	d, err := divergences.Requeue(ctx, p.db, Requeues{}, id, note, now)
	if err != nil {
		return d, err
	}
	// After the commit (see doorbell): a running service's workers take
	// it now rather than at their next poll.
	p.announce(ctx)
	return d, nil
}

// txResult is what a processing transaction leaves its caller to do.
type txResult struct {
	claimed  []int64           // the deliveries it claimed; nil if the claim failed
	failed   map[int64]error   // left out: their stored event does not decode
	released int64             // refunds its payments released from parking, due now
	snoozed  int               // deliveries left for later: their charge was held elsewhere
	span     trace.SpanContext // its inbox.apply span, when traced
}

// delivery is one pending inbox row in a processing transaction, and what
// was decided for it.
type delivery struct {
	inboxRow
	ev         scheme.Event
	status     Status // the inbox status it ends in
	paidCharge string // the charge it paid, if it did
	chargeID   string
	drafts     []events.Draft
	div        *divergences.Delivery // the divergence it opens, if any
}

// processTx is the one path: in one transaction it claims deliveries,
// locks every charge they name in id order (skipping the ones another
// transaction holds), decides each delivery in order in memory, and
// writes the whole batch in a few statements. A delivery whose charge is
// held elsewhere is snoozed, due again shortly, without spending an
// attempt.
func (p *Processor) processTx(ctx context.Context, claim claim) (res txResult, err error) {
	ctx, cancel := context.WithTimeout(ctx, p.Timeout)
	defer cancel()
	steps := txSteps{start: time.Now()}
	start := steps.start
	tx, err := p.db.BeginTxx(ctx, periods.WriteTx())
	if err != nil {
		return res, fmt.Errorf("process deliveries: begin: %w", err)
	}
	defer tx.Rollback()
	// This transaction's statements are prepared lookups and writes by key
	// over arrays of ids, and PostgreSQL would plan each on every call: its
	// generic estimate of "= ANY($1)" assumes ten elements and looks dearer
	// than a custom plan for two. Their generic plans are the right ones,
	// and planning is a large share of their time (docs/performance.md,
	// "Prepared statements"). Set for this transaction only: queries
	// elsewhere (reports) need their custom plans.
	if _, err := tx.ExecContext(ctx, `SET LOCAL plan_cache_mode = force_generic_plan`); err != nil {
		return res, fmt.Errorf("process deliveries: %w", err)
	}
	steps.begun = time.Now()
	rows, err := claim(ctx, tx)
	if err != nil {
		return res, err
	}
	steps.claimed = time.Now()
	res.claimed = make([]int64, len(rows))
	for i, r := range rows {
		res.claimed[i] = r.ID
	}
	// Every row carries the last closed month, read with the claim under
	// the close lock (lastClosedColumn).
	var last periods.Month
	if len(rows) > 0 {
		last = periods.MonthOrZero(rows[0].LastClosed)
	}
	ds, failed := decodeRows(rows)
	res.failed = failed
	var busy []int64
	var t *applyTrace // nil: not traced
	if p.Tracer != nil && len(rows) > 0 {
		ctx, t = p.traceApply(ctx, steps, rows)
		res.span = t.span.SpanContext()
		defer func() { t.end(ds, busy, failed, err) }()
	}
	if len(ds) == 0 {
		return res, nil // nothing to write; the rollback releases the claim
	}
	ids := res.claimed
	var chargeEvents []charges.Event
	for _, d := range ds {
		if d.movesCharge() {
			chargeEvents = append(chargeEvents, d.chargeEvent())
		}
	}
	locked, err := p.applier.LockTx(ctx, tx, chargeEvents, charges.SkipLocked)
	if err != nil {
		return res, fmt.Errorf("process deliveries %v: %w", ids, err)
	}
	ds, busy = leaveOutBusy(locked, ds)
	decided, err := decide(locked, ds)
	if err != nil {
		return res, fmt.Errorf("process deliveries %v: %w", ids, err)
	}
	if err := locked.WriteTx(ctx, tx, last); err != nil {
		return res, fmt.Errorf("process deliveries %v: %w", ids, err)
	}
	drafts, err := outcomeEvents(ctx, tx, decided)
	if err != nil {
		return res, fmt.Errorf("process deliveries %v: %w", ids, err)
	}
	if res.released, err = p.finish(ctx, tx, ds, busy, drafts); err != nil {
		return res, fmt.Errorf("process deliveries %v: mark done: %w", ids, err)
	}
	if err := t.commit(tx.Commit); err != nil {
		return res, fmt.Errorf("process deliveries %v: commit: %w", ids, postings.MapError(err))
	}
	res.snoozed = len(busy)
	p.committed()
	if p.Metrics != nil {
		for _, d := range ds {
			p.Metrics.Processed(string(d.status), time.Since(start))
		}
	}
	return res, nil
}

// leaveOutBusy splits off the deliveries whose charge another transaction
// holds: they are snoozed. A charge that does not exist is not busy: its
// delivery is decided (an unknown_charge divergence).
func leaveOutBusy(l *charges.Locked, ds []*delivery) ([]*delivery, []int64) {
	var kept []*delivery
	var busy []int64
	for _, d := range ds {
		if d.movesCharge() && l.Busy(d.chargeEvent()) {
			busy = append(busy, d.ID)
			continue
		}
		kept = append(kept, d)
	}
	return kept, busy
}

// decodeRows decodes the claimed rows' events, and sets apart the ones
// whose stored event does not decode: those fail alone rather than fail
// the batch.
func decodeRows(rows []inboxRow) ([]*delivery, map[int64]error) {
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
	return ds, failed
}

// movesCharge reports whether the delivery's event is one its charge
// reacts to, and so whether the charge must be locked to decide it.
func (d *delivery) movesCharge() bool {
	switch d.ev.Kind {
	case scheme.KindIgnored, scheme.KindTest, scheme.KindDisputed, scheme.KindUnbookable:
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
		FullRefundIfNoAmount: d.ev.FullRefund, At: at, InboxID: d.ID, Parts: d.ev.Parts(), OfCashOut: d.ev.OfCashOut(),
		StatementRefund: d.ev.Kind == scheme.KindRefunded && d.ev.Type == charges.StatementRefundType,
		ReturnID:        d.ev.ReturnID, Nature: d.ev.Nature,
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
		if d.status == StatusParked {
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
		d.status = StatusIgnored
		return nil
	case scheme.KindDisputed:
		d.status = StatusDivergent
		d.div = &divergences.Delivery{InboxID: d.ID, ChargeID: d.ev.ChargeID, Reason: divergences.ReasonDisputed,
			Detail: divergences.Disputed(d.ev.Type)}
		return nil
	case scheme.KindUnbookable:
		d.status = StatusDivergent
		d.div = unbookableDivergence(d.ID, d.ev)
		return nil
	}
	out, err := l.Apply(d.chargeEvent())
	if err != nil {
		return fmt.Errorf("delivery %d: %w", d.ID, err)
	}
	d.chargeID = out.ChargeID
	switch out.Result {
	case charges.Parked:
		d.status = StatusParked
	case charges.Divergence:
		d.status = StatusDivergent
		d.div = &divergences.Delivery{InboxID: d.ID, ChargeID: out.ChargeID, Reason: out.Reason, Detail: out.Said}
	default:
		d.status, d.drafts = StatusProcessed, out.Events
		if d.ev.Kind == scheme.KindPaid && out.Result == charges.Applied {
			d.paidCharge = out.ChargeID
		}
	}
	return nil
}

// outcomeEvents opens the deliveries' divergences and returns every event
// to append, in the order the deliveries were decided.
func outcomeEvents(ctx context.Context, tx *sqlx.Tx, decided []*delivery) ([]events.Draft, error) {
	if err := addLedgerSides(ctx, tx, decided); err != nil {
		return nil, err
	}
	var divs []divergences.Delivery
	for _, d := range decided {
		if d.div != nil {
			divs = append(divs, *d.div)
		}
	}
	opened, err := divergences.OpenForDeliveries(ctx, tx, divs)
	if err != nil {
		return nil, err
	}
	var drafts []events.Draft
	for _, d := range decided {
		if d.div == nil {
			drafts = append(drafts, d.drafts...)
		} else if id, ok := opened[d.ID]; ok {
			drafts = append(drafts, d.div.Event(id))
		}
	}
	return drafts, nil
}

// finish appends the events, marks every delivery with its final status,
// snoozes the busy ones and releases the refunds parked before the
// payments they booked, in one statement. It returns how many it released.
func (p *Processor) finish(ctx context.Context, tx *sqlx.Tx, ds []*delivery, busy []int64, drafts []events.Draft) (int64, error) {
	ids, statuses := make([]int64, len(ds)), make([]string, len(ds))
	var paid []string
	for i, d := range ds {
		ids[i], statuses[i] = d.ID, string(d.status)
		if d.paidCharge != "" {
			paid = append(paid, d.paidCharge)
		}
	}
	evArgs, err := events.AppendArgs(drafts...)
	if err != nil {
		return 0, err
	}
	stmt, err := p.finishStmt.In(ctx, tx)
	if err != nil {
		return 0, err
	}
	var released int64
	args := append([]any{pq.Array(ids), pgarray.Text(statuses), pgarray.Text(paid), pq.Array(busy)}, evArgs...)
	err = stmt.GetContext(ctx, &released, args...)
	return released, err
}

// recordFailure counts a failed attempt and schedules the next with
// exponential back-off (1 s doubling to 10 min, jittered so replicas do not
// retry in lockstep); past MaxAttempts the delivery becomes a divergence.
func (p *Processor) recordFailure(ctx context.Context, id int64, cause error, attempt trace.SpanContext) {
	if p.Tracer != nil {
		// The failure's statements are this delivery's alone: under a
		// span of its own, linked to the transaction that failed it.
		var span trace.Span
		opts := []trace.SpanStartOption{trace.WithAttributes(attrDelivery.Int64(id))}
		if attempt.IsValid() {
			opts = append(opts, trace.WithLinks(trace.Link{SpanContext: attempt}))
		}
		ctx, span = p.Tracer.Start(ctx, "inbox.record_failure", opts...)
		defer span.End()
	}
	// Its own time: the attempt that failed may have used all of its own.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), p.Timeout)
	defer cancel()
	if p.Metrics != nil {
		p.Metrics.Failure()
	}
	if err := p.recordFailureTx(ctx, id, cause); err != nil {
		p.log.ErrorContext(ctx, "record delivery failure", "delivery", id, "error", err, "cause", cause)
	}
}

func (p *Processor) recordFailureTx(ctx context.Context, id int64, cause error) error {
	tx, err := p.db.BeginTxx(ctx, periods.WriteTx())
	if err != nil {
		return err
	}
	defer tx.Rollback()
	var attempts int
	err = tx.GetContext(ctx, &attempts, recordFailureSQL, id, cause.Error())
	if isNoRows(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if attempts >= p.MaxAttempts {
		if _, err := tx.ExecContext(ctx, giveUpSQL, id); err != nil {
			return err
		}
		if err := divergences.OpenForDelivery(ctx, tx, divergences.Delivery{InboxID: id, Reason: divergences.ReasonProcessingFailed,
			Detail: divergences.GaveUp(attempts, cause)}); err != nil {
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

// judgeEach makes each event of a delivery whose events are judged one by
// one (a bcb-pix callback: each Pix and each devolução, PSP-SCHEMES.md)
// that is dated outside the ledger's window, or states an amount or fee
// over its limit, unbookable: a malformed divergence of its own, while
// the rest of the callback is booked, where a delivery of one event is
// refused whole (checkTimes, checkAmounts). An amount over the limit is
// kept in the divergence's detail only: no figure beyond the limit is
// stored where sums are taken.
func judgeEach(evs []scheme.Event, cal periods.Calendar, limit money.Limit, now time.Time) []scheme.Event {
	for i, ev := range evs {
		one := []scheme.Event{ev}
		err := checkTimes(one, cal, now)
		if err == nil {
			if err = checkAmounts(one, limit); err != nil {
				ev.Amount, ev.HasAmount, ev.Fee, ev.HasFee = 0, false, 0, false
			}
		}
		if err == nil {
			continue
		}
		ev.Kind, ev.OccurredAt = scheme.KindUnbookable, time.Time{}
		ev.Problem = &scheme.Problem{Reason: scheme.ProblemMalformed, Detail: fmt.Sprintf("%s %s: %v", ev.Type, ev.EventID, err)}
		evs[i] = ev
	}
	return evs
}

// unbookableDivergence is the divergence of an event razao read but cannot
// book (scheme.KindUnbookable), with what the PSP said of it; the ledger's
// side is added before it is opened (addLedgerSides).
func unbookableDivergence(inboxID int64, ev scheme.Event) *divergences.Delivery {
	reason, detail := divergences.ReasonMalformed, divergences.Unbookable(ev.Type)
	if ev.Problem != nil {
		// The scheme's words, as it wrote them (scheme.Problem).
		reason, detail = divergences.Reason(ev.Problem.Reason), divergences.PSPProblem(ev.Problem.Detail)
	}
	if !slices.Contains(divergences.Reasons, reason) {
		// A reason of a newer scheme than this database knows.
		reason = divergences.ReasonMalformed
	}
	side := &divergences.StatementSide{PSPID: ev.PSPRef, ChargeRef: ev.ChargeID, RefundID: ev.RefundID}
	if ev.HasAmount {
		side.Amount = ev.Amount
	}
	return &divergences.Delivery{InboxID: inboxID, ChargeID: ev.ChargeID, Reason: reason, Detail: detail, PSP: side}
}

// addLedgerSides sets on the divergences of unbookable events what the
// ledger has of them, in one statement (charges.BookedFor).
func addLedgerSides(ctx context.Context, tx *sqlx.Tx, decided []*delivery) error {
	var which []*delivery
	var refs []charges.BookingRef
	for _, d := range decided {
		if d.div == nil || d.ev.Kind != scheme.KindUnbookable {
			continue
		}
		which = append(which, d)
		refs = append(refs, charges.BookingRef{ChargeID: d.ev.ChargeID, RefundID: d.ev.RefundID,
			PaymentRef: paymentRef(d.Scheme, scheme.Event{Kind: scheme.KindPaid, PSPRef: d.ev.PSPRef, EventID: d.ev.EventID})})
	}
	if len(which) == 0 {
		return nil
	}
	booked, err := charges.BookedFor(ctx, tx, refs)
	if err != nil {
		return fmt.Errorf("the ledger's side of %d unbookable events: %w", len(which), err)
	}
	for _, b := range booked {
		amount := b.Amount
		which[b.Index].div.Ledger = &divergences.LedgerSide{RefundID: b.RefundID, Amount: &amount}
	}
	return nil
}
