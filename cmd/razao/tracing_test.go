package main

import (
	"context"
	"encoding/base64"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lib/pq"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/razao/razao/internal/pgtest"
)

// One signed delivery, traced into memory: the webhook's request span is
// named by its route template, the delivery has its span with its inbox
// id, endpoint and outcome, the statements of its transaction (its BEGIN,
// claim and COMMIT included) are spans under that transaction's span (the
// delivery span's parent), the request's insert is a statement under its
// group commit's span, linked both ways with the request's, and no span
// carries a secret, the API token or a query's argument.
func TestTracingSpansARequestADeliveryAndItsStatements(t *testing.T) {
	t.Parallel()
	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	defer tp.Shutdown(context.Background())
	base, token, db, stop := startServer(t, func(c *serveConfig) { c.tracer = tp })
	stopped := false
	defer func() {
		if !stopped {
			stop()
		}
	}()

	if code, m := apiCall(t, token, "POST", base+"/v1/charges", `{"id":"order-7731","amount":4990,"partner":"p1","commission_bp":1000,"access":"course:go"}`); code != 201 {
		t.Fatalf("register: %d %v", code, m)
	}
	body := []byte(`{"type":"charge.paid","timestamp":"2026-08-31T22:30:00-03:00","data":{"charge_id":"order-7731","amount":4990,"occurred_at":"2026-08-31T22:30:00-03:00"}}`)
	resp := signedStandard(t, base, "msg-trace-1", body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("webhook: %d", resp.StatusCode)
	}
	var inboxID int64
	deadline := time.Now().Add(30 * time.Second)
	for {
		var status string
		if err := db.QueryRowx(`SELECT id, status FROM inbox`).Scan(&inboxID, &status); err != nil {
			t.Fatal(err)
		}
		if status == "processed" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("delivery %d still %s", inboxID, status)
		}
		time.Sleep(20 * time.Millisecond)
	}
	stop() // the drain ends every span
	stopped = true

	got := spans.GetSpans()
	byName := map[string][]tracetest.SpanStub{}
	for _, s := range got {
		byName[s.Name] = append(byName[s.Name], s)
	}
	attrs := func(s tracetest.SpanStub) map[attribute.Key]attribute.Value {
		m := map[attribute.Key]attribute.Value{}
		for _, kv := range s.Attributes {
			m[kv.Key] = kv.Value
		}
		return m
	}

	hooks := byName["POST /webhooks/{endpoint}"]
	if len(hooks) != 1 {
		t.Fatalf("want one span POST /webhooks/{endpoint}, got %d; spans: %v", len(hooks), names(got))
	}
	if a := attrs(hooks[0]); a["http.request.method"].AsString() != "POST" || a["http.response.status_code"].AsInt64() != 200 ||
		a["http.route"].AsString() != "/webhooks/{endpoint}" {
		t.Errorf("webhook span attributes %v", hooks[0].Attributes)
	}
	if len(byName["POST /v1/charges"]) != 1 {
		t.Errorf("want one span POST /v1/charges; spans: %v", names(got))
	}

	var delivery *tracetest.SpanStub
	for _, s := range byName["inbox.delivery"] {
		if attrs(s)["razao.delivery.id"].AsInt64() == inboxID {
			delivery = &s
		}
	}
	if delivery == nil {
		t.Fatalf("no inbox.delivery span for delivery %d; spans: %v", inboxID, names(got))
	}
	if a := attrs(*delivery); a["razao.delivery.outcome"].AsString() != "processed" || a["razao.delivery.scheme"].AsString() != "standard" ||
		a["razao.delivery.merchant"].AsString() != "loja" || a["razao.delivery.endpoint"].AsString() != "psp" {
		t.Errorf("delivery span attributes %v", delivery.Attributes)
	}
	apply := delivery.Parent.SpanID()
	var applySpan *tracetest.SpanStub
	for _, s := range byName["inbox.apply"] {
		if s.SpanContext.SpanID() == apply {
			applySpan = &s
		}
	}
	if applySpan == nil {
		t.Fatalf("the delivery span's parent is not an inbox.apply span")
	}
	var statements []string
	for _, s := range got {
		if strings.HasPrefix(s.Name, "sql.") && s.Parent.SpanID() == apply {
			statements = append(statements, attrs(s)["db.statement"].AsString()+attrs(s)["db.query.text"].AsString())
		}
	}
	t.Logf("statements under inbox.apply: %q", statements)
	// The charge's lock and the batch's write (finish) at least.
	if len(statements) < 2 || !strings.Contains(strings.Join(statements, "\n"), "inbox") {
		t.Errorf("statements under the delivery's transaction: %q", statements)
	}

	// The transaction's BEGIN, claim and COMMIT, each a span under it, in
	// that order: BEGIN from the transaction's start, the claim after it.
	steps := map[string]tracetest.SpanStub{}
	for _, name := range []string{"inbox.begin", "inbox.claim", "inbox.commit"} {
		for _, s := range byName[name] {
			if s.Parent.SpanID() == apply {
				steps[name] = s
			}
		}
		if _, ok := steps[name]; !ok {
			t.Errorf("no %s span under the delivery's inbox.apply; spans: %v", name, names(got))
		}
	}
	if b, c, m := steps["inbox.begin"], steps["inbox.claim"], steps["inbox.commit"]; len(steps) == 3 &&
		(!b.StartTime.Equal(applySpan.StartTime) || c.StartTime.Before(b.EndTime) || m.StartTime.Before(c.EndTime) || m.EndTime.After(applySpan.EndTime)) {
		t.Errorf("steps out of order: apply %v–%v, begin %v–%v, claim %v–%v, commit %v–%v", applySpan.StartTime, applySpan.EndTime,
			b.StartTime, b.EndTime, c.StartTime, c.EndTime, m.StartTime, m.EndTime)
	}
	if a := attrs(steps["inbox.claim"]); a["razao.inbox.claimed"].AsInt64() < 1 {
		t.Errorf("claim span attributes %v", steps["inbox.claim"].Attributes)
	}

	// The webhook's insert ran in a group commit: a span of its own trace
	// (it serves several requests), parent of the INSERT's span, linked to
	// the request's span and the request's span to it.
	hook := hooks[0]
	var commit *tracetest.SpanStub
	for _, s := range byName["inbox.group_commit"] {
		for _, l := range s.Links {
			if l.SpanContext.SpanID() == hook.SpanContext.SpanID() {
				commit = &s
			}
		}
	}
	if commit == nil {
		t.Fatalf("no inbox.group_commit span linked to the webhook's request span; spans: %v", names(got))
	}
	if commit.Parent.IsValid() || commit.SpanContext.TraceID() == hook.SpanContext.TraceID() {
		t.Errorf("the group commit's span is not the root of a trace of its own: parent %v", commit.Parent)
	}
	linked := false
	for _, l := range hook.Links {
		linked = linked || l.SpanContext.SpanID() == commit.SpanContext.SpanID()
	}
	if !linked {
		t.Errorf("the webhook's request span has no link to its group commit: %v", hook.Links)
	}
	var inserts int
	for _, s := range got {
		a := attrs(s)
		if strings.HasPrefix(s.Name, "sql.") && s.Parent.SpanID() == commit.SpanContext.SpanID() &&
			strings.Contains(a["db.statement"].AsString()+a["db.query.text"].AsString(), "INSERT INTO inbox") {
			inserts++
		}
	}
	if inserts == 0 {
		t.Errorf("no INSERT INTO inbox statement span under the group commit")
	}

	// Nothing secret, and no argument: the amount, the charge's id and the
	// message id travel only as query arguments or in the body.
	key := strings.TrimPrefix(e2eSecret, "whsec_")
	raw, _ := base64.StdEncoding.DecodeString(key)
	for _, s := range got {
		for _, kv := range s.Attributes {
			v := kv.Value.Emit()
			for _, bad := range []string{e2eSecret, key, string(raw), token, "order-7731", "4990", "msg-trace-1", "course:go"} {
				if strings.Contains(v, bad) {
					t.Errorf("span %s attribute %s holds %q: %s", s.Name, kv.Key, bad, v)
				}
			}
		}
		for _, ev := range s.Events {
			for _, kv := range ev.Attributes {
				if strings.Contains(kv.Value.Emit(), "4990") || strings.Contains(kv.Value.Emit(), token) {
					t.Errorf("span %s event %s holds an argument or the token", s.Name, ev.Name)
				}
			}
		}
	}
}

func names(spans tracetest.SpanStubs) []string {
	var ns []string
	for _, s := range spans {
		ns = append(ns, s.Name+"("+strconv.Itoa(len(s.Attributes))+")")
	}
	return ns
}

// Off by default: no tracer, no middleware, the driver not wrapped (the
// pool's driver is lib/pq's own); with a tracer the driver is wrapped.
func TestTracingOffWrapsNothing(t *testing.T) {
	t.Parallel()
	_, url := pgtest.NewWithURL(t)
	cfg, err := parseServeConfig([]string{"-database-url", url}, newFlagSet("serve", io.Discard), func(string) string { return "" }, true)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.tracing != nil {
		t.Fatalf("tracing on by default: %+v", cfg.tracing)
	}
	for _, traced := range []bool{false, true} {
		c := cfg
		if traced {
			c.tracer = sdktrace.NewTracerProvider(sdktrace.WithSyncer(tracetest.NewInMemoryExporter()))
		}
		srv, err := newServer(context.Background(), c, slog.New(slog.DiscardHandler), time.Now)
		if err != nil {
			t.Fatal(err)
		}
		_, plain := srv.db.Driver().(*pq.Driver)
		if plain == traced || (srv.tracer != nil) != traced || (srv.proc.Tracer != nil) != traced {
			t.Errorf("traced %v: plain driver %v, tracer %v, inbox tracer %v", traced, plain, srv.tracer, srv.proc.Tracer)
		}
		srv.Close()
	}
}

func TestTracingConfig(t *testing.T) {
	t.Parallel()
	parse := func(yaml string, env map[string]string) (serveConfig, error) {
		args := []string{}
		if yaml != "" {
			args = []string{"-config", writeConfig(t, yaml)}
		}
		return parseServeConfig(args, newFlagSet("serve", os.Stderr), func(k string) string { return env[k] }, true)
	}
	for _, tc := range []struct{ name, yaml, want string }{
		{"ratio above 1", "tracing: {otlp_endpoint: 'http://127.0.0.1:4318', sample_ratio: 1.5}", "sample_ratio 1.5"},
		{"negative ratio", "tracing: {otlp_endpoint: 'http://127.0.0.1:4318', sample_ratio: -0.1}", "sample_ratio"},
		{"ratio NaN", "tracing: {otlp_endpoint: 'http://127.0.0.1:4318', sample_ratio: .nan}", "sample_ratio"},
		{"ratio without endpoint", "tracing: {sample_ratio: 0.5}", "sample_ratio needs otlp_endpoint"},
		{"not a URL", "tracing: {otlp_endpoint: '127.0.0.1:4318'}", "tracing: otlp_endpoint"},
		{"not http", "tracing: {otlp_endpoint: 'grpc://collector:4317'}", "tracing: otlp_endpoint"},
		{"credentials in the URL", "tracing: {otlp_endpoint: 'https://u:hunter2@collector:4318'}", "credentials"},
		{"unknown key", "tracing: {endpoint: 'http://127.0.0.1:4318'}", `unknown key "endpoint" in tracing (known: otlp_endpoint, service_name, sample_ratio)`},
	} {
		_, err := parse(tc.yaml, nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want an error mentioning %q", tc.name, err, tc.want)
		} else if strings.Contains(err.Error(), "hunter2") {
			t.Errorf("%s: the error shows the password: %v", tc.name, err)
		}
	}
	cfg, err := parse("tracing: {otlp_endpoint: 'http://collector:4318', sample_ratio: 0.25}", nil)
	if err != nil || cfg.tracing == nil || cfg.tracing.ServiceName != "razao" || *cfg.tracing.SampleRatio != 0.25 {
		t.Fatalf("got %+v, %v", cfg.tracing, err)
	}
	cfg, err = parse("", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"})
	if err != nil || cfg.tracing == nil || cfg.tracing.Endpoint != "http://collector:4318" {
		t.Fatalf("the standard variable: got %+v, %v", cfg.tracing, err)
	}
}
