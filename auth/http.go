package auth

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"

	"github.com/jmoiron/sqlx"

	"github.com/razao/razao/internal/problem"
)

type ctxKey struct{}

// NewContext returns ctx carrying t, as Middleware does for a request.
func NewContext(ctx context.Context, t Token) context.Context {
	return context.WithValue(ctx, ctxKey{}, t)
}

// FromContext returns the token Middleware authenticated for the request.
func FromContext(ctx context.Context) (Token, bool) {
	t, ok := ctx.Value(ctxKey{}).(Token)
	return t, ok
}

// realm names the protection space in WWW-Authenticate challenges.
const realm = "razao"

// Middleware authenticates every request by its bearer token and puts the
// token in the request's context (FromContext). A request without a live
// token gets a 401 problem with a Bearer challenge; when the database
// cannot tell, a 503, since answering 401 would tell a valid client its
// token is bad. Scopes are checked per route by Require.
func Middleware(q sqlx.QueryerContext, log *slog.Logger) func(http.Handler) http.Handler {
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			bearer, ok := bearerToken(r.Header)
			if !ok {
				w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer realm=%q`, realm))
				problem.Write(w, http.StatusUnauthorized, "unauthorized", "Missing or invalid bearer token", "")
				return
			}
			t, err := Authenticate(r.Context(), q, bearer)
			switch {
			case errors.Is(err, ErrUnauthenticated):
				log.DebugContext(r.Context(), "api token refused", "reason", err, "path", r.URL.Path)
				w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer realm=%q, error="invalid_token"`, realm))
				problem.Write(w, http.StatusUnauthorized, "unauthorized", "Missing or invalid bearer token", "")
				return
			case err != nil:
				if r.Context().Err() == nil {
					log.ErrorContext(r.Context(), "api token check failed", "error", err)
				}
				problem.Write(w, http.StatusServiceUnavailable, "unavailable", "Could not check the bearer token", "")
				return
			}
			next.ServeHTTP(w, r.WithContext(NewContext(r.Context(), t)))
		})
	}
}

// Require lets through only requests whose token (put there by Middleware)
// grants scope; others get a 403 problem, or a 401 when no token was
// authenticated at all, so a route mounted without Middleware fails closed.
func Require(scope Scope) func(http.Handler) http.Handler {
	if !scope.Valid() {
		panic(fmt.Sprintf("auth.Require: unknown scope %q", scope))
	}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			t, ok := FromContext(r.Context())
			if !ok {
				w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer realm=%q`, realm))
				problem.Write(w, http.StatusUnauthorized, "unauthorized", "Missing or invalid bearer token", "")
				return
			}
			if !t.Has(scope) {
				w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer realm=%q, error="insufficient_scope", scope=%q`, realm, scope))
				problem.Write(w, http.StatusForbidden, "forbidden", "Token lacks the required scope",
					fmt.Sprintf("this endpoint needs the %s scope", scope))
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

// bearerToken extracts the token of an "Authorization: Bearer <token>"
// header. The scheme is case-insensitive (RFC 9110 §11.1); more than one
// Authorization header is ambiguous and refused.
func bearerToken(h http.Header) (string, bool) {
	vs := h.Values("Authorization")
	if len(vs) != 1 {
		return "", false
	}
	scheme, token, ok := strings.Cut(strings.TrimSpace(vs[0]), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token = strings.TrimLeft(token, " ")
	return token, token != ""
}
