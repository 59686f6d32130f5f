package inbox

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// The attributes of the inbox's spans. Never an amount, a charge id or a
// payload: the delivery's inbox id says where to read them.
const (
	attrDelivery   = attribute.Key("razao.delivery.id")
	attrEndpoint   = attribute.Key("razao.delivery.endpoint") // the configured endpoint's name, never the PSP's
	attrMerchant   = attribute.Key("razao.delivery.merchant") // the merchant of the endpoint it came through
	attrScheme     = attribute.Key("razao.delivery.scheme")
	attrOutcome    = attribute.Key("razao.delivery.outcome")
	attrDeliveries = attribute.Key("razao.inbox.claimed")
	attrRequests   = attribute.Key("razao.inbox.requests") // the requests one group commit stored
)

// Outcomes of a delivery span beyond its final status.
const (
	outcomeSnoozed = "snoozed" // its charge was held elsewhere: due again shortly
	outcomeFailed  = "failed"  // the attempt failed (its event did not decode, or the transaction failed): retried later
)

// applyTrace is the tracing of one processing transaction that claimed
// deliveries: a span "inbox.apply", parent of the transaction's steps
// ("inbox.begin", "inbox.claim", "inbox.commit"), of its other SQL
// statements (when the database driver is traced) and of one span
// "inbox.delivery" per delivery it claimed, with its outcome. Every
// statement of the transaction is the batch's, shared by its deliveries
// (one lock statement for all their charges, one write, one finish): none
// is one delivery's, so they hang under the transaction, the deliveries'
// common parent, rather than under one delivery.
type applyTrace struct {
	tracer trace.Tracer
	span   trace.Span
	ctx    context.Context
	start  time.Time
	rows   []inboxRow
}

// txSteps are the times of a processing transaction's first steps, taken
// whether or not it is traced (three clock reads): its span is started
// only once the claim returned rows, so that a poll that claims nothing
// leaves no trace, and these steps are then recorded back-dated.
type txSteps struct {
	start   time.Time // before BEGIN
	begun   time.Time // BEGIN and the transaction's settings done
	claimed time.Time // the claim returned
}

// traceApply starts the transaction's span, back-dated to the start of
// its BEGIN, with the spans of its BEGIN and its claim, back-dated too.
func (p *Processor) traceApply(ctx context.Context, steps txSteps, rows []inboxRow) (context.Context, *applyTrace) {
	ctx, span := p.Tracer.Start(ctx, "inbox.apply", trace.WithTimestamp(steps.start),
		trace.WithAttributes(attrDeliveries.Int(len(rows))))
	_, begin := p.Tracer.Start(ctx, "inbox.begin", trace.WithTimestamp(steps.start))
	begin.End(trace.WithTimestamp(steps.begun))
	_, claim := p.Tracer.Start(ctx, "inbox.claim", trace.WithTimestamp(steps.begun), trace.WithAttributes(attrDeliveries.Int(len(rows))))
	claim.End(trace.WithTimestamp(steps.claimed))
	return ctx, &applyTrace{tracer: p.Tracer, span: span, ctx: ctx, start: steps.start, rows: rows}
}

// commit commits tx, in a span "inbox.commit" when traced (t non-nil):
// the driver's own commit span would hang under the context of BEGIN,
// which has no span (see txSteps).
func (t *applyTrace) commit(commit func() error) error {
	if t == nil {
		return commit()
	}
	_, span := t.tracer.Start(t.ctx, "inbox.commit")
	err := commit()
	if err != nil {
		span.SetStatus(codes.Error, "commit failed")
	}
	span.End()
	return err
}

// end records each claimed delivery's span and ends the transaction's:
// ds are the deliveries decided (their status is their outcome), busy the
// ones snoozed, failed the ones whose event did not decode; err, the
// transaction's error, fails every one.
func (t *applyTrace) end(ds []*delivery, busy []int64, failed map[int64]error, err error) {
	outcome := make(map[int64]string, len(t.rows))
	for _, d := range ds {
		outcome[d.ID] = string(d.status)
	}
	for _, id := range busy {
		outcome[id] = outcomeSnoozed
	}
	for id := range failed {
		outcome[id] = outcomeFailed
	}
	for _, r := range t.rows {
		o := outcome[r.ID]
		if err != nil || o == "" {
			o = outcomeFailed
		}
		_, span := t.tracer.Start(t.ctx, "inbox.delivery", trace.WithTimestamp(t.start), trace.WithAttributes(
			attrDelivery.Int64(r.ID), attrEndpoint.String(r.Endpoint), attrMerchant.String(r.Merchant), attrScheme.String(r.Scheme), attrOutcome.String(o)))
		if o == outcomeFailed {
			span.SetStatus(codes.Error, o)
		}
		span.End()
	}
	if err != nil {
		// Not the error's text: a database error may quote a value. The
		// log's "delivery failed" line has it.
		t.span.SetStatus(codes.Error, "processing transaction failed")
	}
	t.span.End()
}
