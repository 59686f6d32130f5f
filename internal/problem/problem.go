// Package problem writes RFC 9457 problem documents, the one error format
// of razao's HTTP API, for every package that answers HTTP (api, auth,
// events) without them importing each other.
package problem

import (
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/razao/razao/internal/kind"
)

// Base prefixes every problem type: a stable identifier clients can switch
// on, not a page that must resolve.
const Base = "https://razao.dev/problems/"

// Problem is an application/problem+json body.
type Problem struct {
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Detail string `json:"detail,omitempty"`
}

// Write answers status with the problem of the given kind.
func Write(w http.ResponseWriter, status int, kind, title, detail string) {
	w.Header().Set("Content-Type", "application/problem+json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(Problem{Type: Base + kind, Title: title, Status: status, Detail: detail})
}

// statusOf is the one map from an error's kind to its HTTP status.
var statusOf = map[kind.Kind]int{
	kind.Invalid:     http.StatusBadRequest,
	kind.NotFound:    http.StatusNotFound,
	kind.Conflict:    http.StatusConflict,
	kind.Refused:     http.StatusUnprocessableEntity,
	kind.Forbidden:   http.StatusForbidden,
	kind.Unavailable: http.StatusServiceUnavailable,
}

// StatusOf is the HTTP status of err's kind, 500 for an error of no kind.
func StatusOf(err error) int {
	if e, ok := kind.Of(err); ok {
		if status, ok := statusOf[e.Kind]; ok {
			return status
		}
	}
	return http.StatusInternalServerError
}

// WriteError answers with the problem of err's kind (kind.Of), its detail
// err's text, and reports true; an error of no kind is left to the caller
// (a generic 500, logged with its cause) and reports false.
func WriteError(w http.ResponseWriter, err error) bool {
	e, ok := kind.Of(err)
	if !ok {
		return false
	}
	status, ok := statusOf[e.Kind]
	if !ok {
		return false
	}
	if e.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int(e.RetryAfter.Seconds())))
	}
	Write(w, status, e.Slug, e.Title, err.Error())
	return true
}
