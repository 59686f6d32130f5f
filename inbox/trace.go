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
	attrMerchant   = attribute.Key("razao.delivery.merchant") // the merchant of the endpoint it came through
	attrScheme     = attribute.Key("razao.delivery.scheme")
	attrOutcome    = attribute.Key("razao.delivery.outcome")
	attrDeliveries = attribute.Key("razao.inbox.claimed")
)

// Outcomes of a delivery span beyond its final status.
const (
	outcomeSnoozed = "snoozed" // its charge was held elsewhere: due again shortly
	outcomeFailed  = "failed"  // the attempt failed (its event did not decode, or the transaction failed): retried later
)

// applyTrace is the tracing of one processing transaction that claimed
// deliveries: a span "inbox.apply", parent of the transaction's SQL
// statements (when the database driver is traced) and of one span
// "inbox.delivery" per delivery it claimed, with its outcome. The
// statements are the batch's, shared by its deliveries, so they hang
// under the transaction rather than under one delivery.
type applyTrace struct {
	tracer trace.Tracer
	span   trace.Span
	ctx    context.Context
	start  time.Time
	rows   []inboxRow
}

// traceApply starts the transaction's span, back-dated to start (the
// transaction's begin): it is started once the claim returned rows, so
// that a poll that claims nothing leaves no trace.
func (p *Processor) traceApply(ctx context.Context, start time.Time, rows []inboxRow) (context.Context, *applyTrace) {
	ctx, span := p.Tracer.Start(ctx, "inbox.apply", trace.WithTimestamp(start),
		trace.WithAttributes(attrDeliveries.Int(len(rows))))
	return ctx, &applyTrace{tracer: p.Tracer, span: span, ctx: ctx, start: start, rows: rows}
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
			attrDelivery.Int64(r.ID), attrMerchant.String(r.Merchant), attrScheme.String(r.Scheme), attrOutcome.String(o)))
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
