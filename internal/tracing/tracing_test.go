package tracing

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/gorilla/mux"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/razao/razao"
	"github.com/razao/razao/internal/pgtest"
)

// A span is named by the route template, never the path: the id in the
// path is in no span.
func TestRequestSpansAreNamedByTheRouteTemplate(t *testing.T) {
	t.Parallel()
	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	r := mux.NewRouter()
	r.Use(Route)
	r.HandleFunc("/v1/charges/{id}", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusTeapot) }).Methods(http.MethodGet)
	h := Middleware(tp)(r)
	for _, path := range []string{"/v1/charges/order-secret-42", "/nowhere/order-secret-43"} {
		req := httptest.NewRequest("GET", path+"?token=tok-99", nil)
		req.Header.Set("Authorization", "Bearer tok-99")
		h.ServeHTTP(httptest.NewRecorder(), req)
	}
	got := spans.GetSpans()
	if len(got) != 2 || got[0].Name != "GET /v1/charges/{id}" || got[1].Name != "GET" {
		t.Fatalf("spans %v", got)
	}
	want := map[string]string{"http.request.method": "GET", "http.route": "/v1/charges/{id}", "http.response.status_code": "418"}
	for _, kv := range got[0].Attributes {
		if w, ok := want[string(kv.Key)]; ok && w == kv.Value.Emit() {
			delete(want, string(kv.Key))
		}
	}
	if len(want) != 0 {
		t.Errorf("attributes %v lack %v", got[0].Attributes, want)
	}
	for _, s := range got {
		for _, kv := range s.Attributes {
			if v := kv.Value.Emit(); strings.Contains(v, "order-secret") || strings.Contains(v, "tok-99") {
				t.Errorf("span %s attribute %s = %s", s.Name, kv.Key, v)
			}
		}
	}
}

// The provider built from the config exports over OTLP/HTTP to the
// endpoint's /v1/traces, and Shutdown flushes what is buffered.
func TestShutdownFlushesToTheOTLPEndpoint(t *testing.T) {
	t.Parallel()
	var posts atomic.Int64
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		if r.Method == http.MethodPost && r.URL.Path == "/v1/traces" {
			posts.Add(1)
		}
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	defer collector.Close()
	c := Config{Endpoint: collector.URL}
	if on, err := c.Resolve(func(string) string { return "" }); !on || err != nil || c.ServiceName != DefaultServiceName {
		t.Fatalf("resolve: %v %v %+v", on, err, c)
	}
	tp, err := NewProvider(context.Background(), c, "test")
	if err != nil {
		t.Fatal(err)
	}
	_, span := Tracer(tp, "test").Start(context.Background(), "one")
	span.End()
	if err := Shutdown(tp); err != nil {
		t.Fatal(err)
	}
	if posts.Load() == 0 {
		t.Fatal("no spans posted to /v1/traces at shutdown")
	}
}

func TestResolveRefusesBadValuesNamingTheKey(t *testing.T) {
	t.Parallel()
	ratio := func(f float64) *float64 { return &f }
	none := func(string) string { return "" }
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{Endpoint: "http://c:4318", SampleRatio: ratio(2)}, "sample_ratio"},
		{Config{Endpoint: "c:4318"}, "otlp_endpoint"},
		{Config{Endpoint: "http://"}, "otlp_endpoint"},
		{Config{SampleRatio: ratio(0.5)}, "sample_ratio needs otlp_endpoint"},
	} {
		if _, err := c.cfg.Resolve(none); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: got %v, want %q", c.cfg, err, c.want)
		}
	}
	off := Config{}
	if on, err := off.Resolve(none); on || err != nil {
		t.Fatalf("empty: on %v, %v", on, err)
	}
}

// A statement under a span gets its span, with its text and never its
// arguments; a failed one carries its SQLSTATE, not the error's text
// (which may quote a value); a statement outside any span gets none.
func TestStatementSpansCarryTextNotArguments(t *testing.T) {
	t.Parallel()
	_, url := pgtest.NewWithURL(t)
	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	db, err := razao.OpenTraced(context.Background(), url, SQLOptions(tp)...)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.GetContext(context.Background(), &n, `SELECT $1::int + 1`, 4990); err != nil {
		t.Fatal(err)
	}
	if got := spans.GetSpans(); len(got) != 0 {
		t.Fatalf("statements outside a span made spans: %v", got)
	}
	ctx, parent := Tracer(tp, "test").Start(context.Background(), "parent")
	if err := db.GetContext(ctx, &n, `SELECT $1::int + 1`, 4990); err != nil {
		t.Fatal(err)
	}
	// PostgreSQL's message quotes the value: invalid input syntax for
	// type integer: "4990x".
	_, err = db.ExecContext(ctx, `SELECT $1::text::int`, "4990x")
	if err == nil || !strings.Contains(err.Error(), "4990x") {
		t.Fatalf("got %v, want an error quoting the argument", err)
	}
	parent.End()
	var texts []string
	var codes []string
	for _, s := range spans.GetSpans() {
		if s.Name == "parent" {
			continue
		}
		if s.Parent.SpanID() != parent.SpanContext().SpanID() {
			t.Errorf("span %s is not under its context's span", s.Name)
		}
		for _, kv := range s.Attributes {
			v := kv.Value.Emit()
			if strings.Contains(v, "4990") {
				t.Errorf("span %s attribute %s holds an argument: %s", s.Name, kv.Key, v)
			}
			switch kv.Key {
			case "db.statement", "db.query.text":
				texts = append(texts, v)
			case "db.response.status_code":
				codes = append(codes, v)
			}
		}
		for _, ev := range s.Events {
			for _, kv := range ev.Attributes {
				if strings.Contains(kv.Value.Emit(), "4990") || strings.Contains(kv.Value.Emit(), "syntax") {
					t.Errorf("span %s event %s holds the error's text: %s", s.Name, ev.Name, kv.Value.Emit())
				}
			}
		}
	}
	if !slices.Contains(texts, `SELECT $1::int + 1`) || !slices.Contains(codes, "22P02") {
		t.Fatalf("statement texts %q, error codes %q", texts, codes)
	}
}
