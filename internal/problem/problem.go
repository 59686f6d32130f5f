// Package problem writes RFC 9457 problem documents, the one error format
// of razao's HTTP API, for every package that answers HTTP (api, auth,
// events) without them importing each other.
package problem

import (
	"encoding/json"
	"net/http"
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
