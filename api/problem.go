// Package api serves razao's JSON API under /v1 for the selling app and
// finance. Handlers parse, call one domain function and render; errors are
// mapped by their kind (internal/kind) to RFC 9457 problem documents in one
// place (internal/problem.WriteError, through writeError).
package api

import (
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strings"

	"github.com/gorilla/mux"

	"github.com/razao/razao/internal/problem"
	"github.com/razao/razao/postings"
)

// Problem is the application/problem+json body of every API error.
type Problem = problem.Problem

// writeProblem answers with a problem document of kind.
func writeProblem(w http.ResponseWriter, status int, kind, title, detail string) {
	problem.Write(w, status, kind, title, detail)
}

// writeError answers a domain error with the problem of its kind
// (problem.WriteError, the one map from kinds to statuses). An error of no
// kind is a generic 500, logged once with its cause and never shown to the
// client. r's context carries the request id onto the log line.
func writeError(w http.ResponseWriter, r *http.Request, log *slog.Logger, err error) {
	ctx := r.Context()
	if errors.Is(err, postings.ErrSumOverflow) {
		// Not the client's fault, but not an unknown failure either: a
		// figure that does not fit int64 is refused, never answered wrong.
		// Logged: the ledger holds sums no report can show.
		log.ErrorContext(ctx, "report figure overflows int64", "error", err)
	}
	if problem.WriteError(w, err) {
		return
	}
	log.ErrorContext(ctx, "request failed", "error", err)
	writeProblem(w, http.StatusInternalServerError, "internal", "Internal error", "")
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
