// Package httplog writes one access log line per HTTP request and counts
// it in the per-route metrics. The route is the router's path template
// (/v1/charges/{id}), never the raw path, so neither log queries nor
// metric labels grow with the ids clients send.
package httplog

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/gorilla/mux"
)

// Unmatched is the route label of a request no route matched (404), or
// whose path matched only with another method (405).
const Unmatched = "unmatched"

// note is what the inner layers learn about a request, filled in as the
// request goes down: the outer middleware cannot see the contexts they
// derive.
type note struct {
	route string
	token string
}

type key struct{}

func from(ctx context.Context) *note {
	n, _ := ctx.Value(key{}).(*note)
	return n
}

// Route is a mux middleware (router.Use) that records the matched route's
// path template for the access log.
func Route(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n := from(r.Context()); n != nil {
			if rt := mux.CurrentRoute(r); rt != nil {
				if tmpl, err := rt.GetPathTemplate(); err == nil {
					n.route = tmpl
				}
			}
		}
		next.ServeHTTP(w, r)
	})
}

// SetToken records the name of the request's authenticated API token (its
// name only: the token itself is never logged).
func SetToken(ctx context.Context, name string) {
	if n := from(ctx); n != nil {
		n.token = name
	}
}

// Observer counts a finished request; route is a template or Unmatched.
type Observer func(route, method string, code int, d time.Duration)

// Middleware logs one line per request on log (with the request id of the
// context, through reqid.LogHandler, when it runs inside reqid.Middleware)
// and calls observe. The line is written when the handler returns, panics
// included (an aborted export still leaves its line).
func Middleware(log *slog.Logger, observe Observer, now func() time.Time) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			start := now()
			n := &note{}
			rec := &recorder{ResponseWriter: w}
			ctx := context.WithValue(r.Context(), key{}, n)
			defer func() {
				d := now().Sub(start)
				code := rec.code
				if code == 0 {
					code = http.StatusOK // nothing written: net/http answers 200
				}
				route := n.route
				if route == "" {
					route = Unmatched
				}
				method := Method(r.Method)
				if observe != nil {
					observe(route, method, code, d)
				}
				attrs := []slog.Attr{
					slog.String("method", method), slog.String("route", route), slog.Int("status", code),
					slog.Int64("bytes", rec.bytes), slog.Float64("duration_ms", float64(d.Microseconds())/1000),
				}
				if n.token != "" {
					attrs = append(attrs, slog.String("token", n.token))
				}
				// The record is built here rather than by log.LogAttrs,
				// which walks the stack for a source position that the
				// JSON handler never prints, on every request
				// (docs/performance.md, "The access line").
				if h := log.Handler(); h.Enabled(ctx, slog.LevelInfo) {
					line := slog.NewRecord(time.Now(), slog.LevelInfo, "request", 0)
					line.AddAttrs(attrs...)
					h.Handle(ctx, line)
				}
			}()
			next.ServeHTTP(rec, r.WithContext(ctx))
		})
	}
}

// Method returns m when it is a method of RFC 9110 (or PATCH), else
// "OTHER": a client's made-up method must not become a label value.
func Method(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodConnect, http.MethodOptions, http.MethodTrace:
		return m
	}
	return "OTHER"
}

// recorder remembers the status and counts the body bytes. Unwrap lets
// http.ResponseController reach the connection (flushes and write
// deadlines of the event stream).
type recorder struct {
	http.ResponseWriter
	code  int
	bytes int64
}

func (r *recorder) WriteHeader(code int) {
	if r.code == 0 {
		r.code = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(p []byte) (int, error) {
	if r.code == 0 {
		r.code = http.StatusOK
	}
	n, err := r.ResponseWriter.Write(p)
	r.bytes += int64(n)
	return n, err
}

// Flush implements http.Flusher for handlers that assert it directly.
func (r *recorder) Flush() {
	if r.code == 0 {
		r.code = http.StatusOK
	}
	http.NewResponseController(r.ResponseWriter).Flush()
}

func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }
