package tracing

import (
	"net/http"

	"github.com/gorilla/mux"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/razao/razao/internal/httplog"
)

// Middleware opens a server span per request: named by its method until
// Route names it by the route template, with the method, route and status
// code as attributes. Never the raw path or query, which hold ids, nor a
// header, which may hold a token or a signature. A traceparent header is
// not followed: the PSPs and clients calling razao are not part of its
// traces.
func Middleware(tp trace.TracerProvider) func(http.Handler) http.Handler {
	tracer := Tracer(tp, "http")
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			method := httplog.Method(r.Method)
			ctx, span := tracer.Start(r.Context(), method, trace.WithSpanKind(trace.SpanKindServer),
				trace.WithAttributes(semconv.HTTPRequestMethodKey.String(method)))
			defer span.End()
			rec := &status{ResponseWriter: w}
			next.ServeHTTP(rec, r.WithContext(ctx))
			code := rec.code
			if code == 0 {
				code = http.StatusOK // nothing written: net/http answers 200
			}
			span.SetAttributes(semconv.HTTPResponseStatusCode(code))
			if code >= 500 {
				span.SetStatus(codes.Error, http.StatusText(code))
			}
		})
	}
}

// Route is a mux middleware (router.Use) that names the request's span by
// its method and route template ("POST /webhooks/{endpoint}"). A request
// no route matched keeps its method alone as its name.
func Route(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if rt := mux.CurrentRoute(r); rt != nil {
			if tmpl, err := rt.GetPathTemplate(); err == nil {
				span := trace.SpanFromContext(r.Context())
				span.SetName(httplog.Method(r.Method) + " " + tmpl)
				span.SetAttributes(attribute.String(string(semconv.HTTPRouteKey), tmpl))
			}
		}
		next.ServeHTTP(w, r)
	})
}

// status remembers the status code. Unwrap lets http.ResponseController
// reach the connection (the event stream's flushes and deadlines).
type status struct {
	http.ResponseWriter
	code int
}

func (s *status) WriteHeader(code int) {
	if s.code == 0 {
		s.code = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *status) Write(p []byte) (int, error) {
	if s.code == 0 {
		s.code = http.StatusOK
	}
	return s.ResponseWriter.Write(p)
}

// Flush implements http.Flusher for handlers that assert it directly.
func (s *status) Flush() {
	if s.code == 0 {
		s.code = http.StatusOK
	}
	http.NewResponseController(s.ResponseWriter).Flush()
}

func (s *status) Unwrap() http.ResponseWriter { return s.ResponseWriter }
