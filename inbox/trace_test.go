package inbox_test

import (
	"context"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/razao/razao"
	"github.com/razao/razao/inbox"
	"github.com/razao/razao/internal/pgtest"
	"github.com/razao/razao/internal/tracing"
)

// A claim of two deliveries, one whose stored event no longer decodes,
// traced into memory on a traced pool: the transaction's BEGIN, claim and
// COMMIT are spans under its inbox.apply; each delivery's span carries
// its endpoint; the failure recorded for the bad one is a span of its
// own, linked to that transaction, with its statements (its alone) under
// it.
func TestTracedClaimSpansItsStepsDeliveriesAndAFailure(t *testing.T) {
	t.Parallel()
	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	defer tp.Shutdown(context.Background())
	_, url := pgtest.NewWithURL(t)
	db, err := razao.OpenTraced(context.Background(), url, tracing.SQLOptions(tp)...)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	e := newEnvWithDB(t, db, url)
	e.Proc.Tracer = tracing.Tracer(tp, "inbox")
	e.Charge("order-1", 4990, "partner-42", 1000)
	e.store(paidEvent("p1", "order-1", 4990))
	bad := e.storeRaw("bad", "paid", "order-2", `{"Kind": 7}`)
	if n, err := inbox.NewWorker(e.Proc, time.Hour).RunOnce(context.Background()); n != 2 || err != nil {
		t.Fatalf("worker picked %d (%v), want 2", n, err)
	}

	got := spans.GetSpans()
	attr := func(s tracetest.SpanStub, k string) attribute.Value {
		for _, kv := range s.Attributes {
			if string(kv.Key) == k {
				return kv.Value
			}
		}
		return attribute.Value{}
	}
	var apply *tracetest.SpanStub
	for _, s := range got {
		if s.Name == "inbox.apply" && attr(s, "razao.inbox.claimed").AsInt64() == 2 {
			apply = &s
		}
	}
	if apply == nil {
		t.Fatalf("no inbox.apply span of the claim of 2")
	}
	under := map[string]int{}
	var failure *tracetest.SpanStub
	for _, s := range got {
		if s.Parent.SpanID() == apply.SpanContext.SpanID() {
			under[s.Name]++
			if s.Name == "inbox.delivery" && attr(s, "razao.delivery.endpoint").AsString() != "std" {
				t.Errorf("delivery span without its endpoint: %v", s.Attributes)
			}
		}
		if s.Name == "inbox.record_failure" && attr(s, "razao.delivery.id").AsInt64() == bad {
			failure = &s
		}
	}
	for _, name := range []string{"inbox.begin", "inbox.claim", "inbox.commit"} {
		if under[name] != 1 {
			t.Errorf("%d %s spans under inbox.apply, want 1 (under it: %v)", under[name], name, under)
		}
	}
	if under["inbox.delivery"] != 2 {
		t.Errorf("%d inbox.delivery spans under inbox.apply, want 2", under["inbox.delivery"])
	}
	if failure == nil {
		t.Fatalf("no inbox.record_failure span for delivery %d", bad)
	}
	if len(failure.Links) != 1 || failure.Links[0].SpanContext.SpanID() != apply.SpanContext.SpanID() {
		t.Errorf("the failure's span is not linked to the transaction that failed it: %v", failure.Links)
	}
	var statements int
	for _, s := range got {
		if s.Parent.SpanID() == failure.SpanContext.SpanID() && attr(s, "db.query.text").AsString() != "" {
			statements++
		}
	}
	if statements == 0 {
		t.Error("no statement span under the failure's span")
	}
}
