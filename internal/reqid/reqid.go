// Package reqid gives every HTTP request an id that follows it into the
// logs: taken from X-Request-Id when the caller sent a sane one, else made
// up, and echoed in the response.
package reqid

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"net/http"
	"regexp"
)

type key struct{}

// Header is the request and response header that carries the id.
const Header = "X-Request-Id"

var saneRE = regexp.MustCompile(`^[A-Za-z0-9._:-]{8,64}$`)

// From returns the request id in ctx, or "".
func From(ctx context.Context) string {
	id, _ := ctx.Value(key{}).(string)
	return id
}

// Middleware attaches a request id to each request's context and response.
func Middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get(Header)
		if !saneRE.MatchString(id) {
			var b [8]byte
			rand.Read(b[:])
			id = hex.EncodeToString(b[:])
		}
		w.Header().Set(Header, id)
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), key{}, id)))
	})
}

// LogHandler adds the request id of the record's context to every log
// record written with a context (logger.InfoContext and friends).
type LogHandler struct{ slog.Handler }

// Handle adds request_id when the context has one.
func (h LogHandler) Handle(ctx context.Context, r slog.Record) error {
	if id := From(ctx); id != "" {
		r.AddAttrs(slog.String("request_id", id))
	}
	return h.Handler.Handle(ctx, r)
}

// WithAttrs keeps the wrapper around the derived handler.
func (h LogHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return LogHandler{h.Handler.WithAttrs(as)}
}

// WithGroup keeps the wrapper around the derived handler.
func (h LogHandler) WithGroup(name string) slog.Handler {
	return LogHandler{h.Handler.WithGroup(name)}
}
