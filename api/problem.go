// Package api serves razao's JSON API under /v1 for the selling app and
// finance. Handlers parse, call one domain function and render; errors are
// mapped to RFC 9457 problem documents in one place (writeError).
package api

import (
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strings"

	"github.com/gorilla/mux"

	"github.com/razao/razao/charges"
	"github.com/razao/razao/internal/problem"
	"github.com/razao/razao/money"
	"github.com/razao/razao/partners"
	"github.com/razao/razao/periods"
	"github.com/razao/razao/postings"
	"github.com/razao/razao/reports"
)

// Problem is the application/problem+json body of every API error.
type Problem = problem.Problem

// writeProblem answers with a problem document of kind.
func writeProblem(w http.ResponseWriter, status int, kind, title, detail string) {
	problem.Write(w, status, kind, title, detail)
}

// writeError maps a domain error to its problem. An unknown error is a
// generic 500, logged once with its cause and never shown to the client.
// r's context carries the request id onto the log line.
func writeError(w http.ResponseWriter, r *http.Request, log *slog.Logger, err error) {
	ctx := r.Context()
	switch {
	case errors.Is(err, money.ErrAboveMax):
		// Before the invalid-* cases that wrap it: the client learns which
		// field was too large and the limit.
		writeProblem(w, http.StatusBadRequest, "amount-above-max", "Amount above the maximum", err.Error())
	case errors.Is(err, postings.ErrSumOverflow):
		// Not the client's fault, but not an unknown failure either: a
		// figure that does not fit int64 is refused, never answered wrong.
		// Logged: the ledger holds sums no report can show.
		log.ErrorContext(ctx, "report figure overflows int64", "error", err)
		writeProblem(w, http.StatusUnprocessableEntity, "sum-overflow", "A figure does not fit int64 centavos", err.Error())
	case errors.Is(err, partners.ErrInvalid):
		writeProblem(w, http.StatusBadRequest, "invalid-payout", "Invalid payout", err.Error())
	case errors.Is(err, partners.ErrNotFound):
		writeProblem(w, http.StatusNotFound, "not-found", "Not found", err.Error())
	case errors.Is(err, partners.ErrOverOwed):
		writeProblem(w, http.StatusUnprocessableEntity, "over-owed", "Payout above what is owed", err.Error())
	case errors.Is(err, postings.ErrOutsideWindow):
		writeProblem(w, http.StatusBadRequest, "outside-window", "Time outside the ledger's window", err.Error())
	case errors.Is(err, postings.ErrIdempotencyConflict):
		writeProblem(w, http.StatusUnprocessableEntity, "idempotency-conflict", "Idempotency key reused with other content", err.Error())
	case errors.Is(err, postings.ErrClosedMonth):
		writeProblem(w, http.StatusConflict, "closed-month", "Competence month is closed", err.Error())
	case errors.Is(err, postings.ErrInvalidMonth), errors.Is(err, reports.ErrInvalidRange),
		errors.Is(err, reports.ErrInvalidCursor), errors.Is(err, reports.ErrInvalidStatus),
		errors.Is(err, reports.ErrInvalidNote):
		writeProblem(w, http.StatusBadRequest, "invalid-parameter", "Invalid parameter", err.Error())
	case errors.Is(err, reports.ErrUnknownKind), errors.Is(err, reports.ErrUnknownDialect):
		writeProblem(w, http.StatusNotFound, "unknown-export", "No such export", err.Error())
	case errors.Is(err, reports.ErrUnknownAccount), errors.Is(err, reports.ErrNotFound):
		writeProblem(w, http.StatusNotFound, "not-found", "Not found", err.Error())
	case errors.Is(err, reports.ErrAlreadyResolved):
		writeProblem(w, http.StatusConflict, "already-resolved", "Divergence already resolved", err.Error())
	case errors.Is(err, periods.ErrMonthNotOver):
		writeProblem(w, http.StatusConflict, "month-not-over", "Month has not ended", err.Error())
	case errors.Is(err, periods.ErrEarlierMonthOpen):
		writeProblem(w, http.StatusConflict, "earlier-month-open", "An earlier month is still open", err.Error())
	case errors.Is(err, periods.ErrCloseBusy):
		w.Header().Set("Retry-After", "5")
		writeProblem(w, http.StatusServiceUnavailable, "close-busy", "Postings in flight held the close lock", err.Error())
	case errors.Is(err, periods.ErrAlreadyClosed):
		writeProblem(w, http.StatusConflict, "already-closed", "Month already closed", err.Error())
	case errors.Is(err, charges.ErrInvalid):
		writeProblem(w, http.StatusBadRequest, "invalid-charge", "Invalid charge", err.Error())
	case errors.Is(err, charges.ErrConflict):
		writeProblem(w, http.StatusConflict, "charge-conflict", "Charge id already registered with other content", err.Error())
	case errors.Is(err, charges.ErrNotFound):
		writeProblem(w, http.StatusNotFound, "not-found", "Not found", err.Error())
	default:
		log.ErrorContext(ctx, "request failed", "error", err)
		writeProblem(w, http.StatusInternalServerError, "internal", "Internal error", "")
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// NotFound answers unknown paths with a problem document.
func NotFound() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		writeProblem(w, http.StatusNotFound, "not-found", "Not found", "")
	})
}

// MethodNotAllowed answers a known path with the wrong method, listing in
// Allow (RFC 9110 §15.5.6) the methods router serves on that path.
func MethodNotAllowed(router *mux.Router) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		allowed := AllowedMethods(router, r)
		w.Header().Set("Allow", strings.Join(allowed, ", "))
		writeProblem(w, http.StatusMethodNotAllowed, "method-not-allowed", "Method not allowed",
			"this path answers "+strings.Join(allowed, ", "))
	})
}

// candidateMethods are the methods a 405 may list.
var candidateMethods = []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut,
	http.MethodPatch, http.MethodDelete, http.MethodOptions}

// AllowedMethods returns the methods for which router has a route matching
// r's path, by asking the router itself, so the list cannot drift from the
// routes.
func AllowedMethods(router *mux.Router, r *http.Request) []string {
	var out []string
	for _, m := range candidateMethods {
		probe := r.Clone(r.Context())
		probe.Method = m
		var match mux.RouteMatch
		if router.Match(probe, &match) && match.MatchErr == nil {
			out = append(out, m)
		}
	}
	return out
}
