package contract

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// spy records what Middleware reports instead of failing the test.
type spy struct {
	testing.TB
	errs []string
}

func (s *spy) Errorf(format string, args ...any) {
	s.errs = append(s.errs, fmt.Sprintf(format, args...))
}

// TestMiddlewareRefusesWhatTheDocumentDoesNot: a documented answer passes;
// an undocumented status, a body off its schema, and an unmatched path
// answered otherwise than the router's problem are each reported.
func TestMiddlewareRefusesWhatTheDocumentDoesNot(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, method, path, ctype, body string
		status                          int
		fails                           bool
	}{
		{"documented", "GET", "/healthz", "application/json", `{"status":"ok"}`, 200, false},
		{"undocumented status", "GET", "/v1/periods", "application/json", `{"periods": []}`, 418, true},
		{"body off its schema", "GET", "/v1/charges/c1", "application/json", `{"id": 5}`, 200, true},
		{"unmatched path, router's problem", "GET", "/nowhere", "application/problem+json",
			`{"type":"https://razao.dev/problems/not-found","title":"Not found","status":404}`, 404, false},
		{"unmatched path, other answer", "GET", "/nowhere", "text/plain", "hello", 200, true},
	}
	for _, tt := range tests {
		s := &spy{TB: t}
		h := Middleware(s, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", tt.ctype)
			w.WriteHeader(tt.status)
			w.Write([]byte(tt.body))
		}))
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(tt.method, tt.path, nil))
		if got := len(s.errs) > 0; got != tt.fails {
			t.Errorf("%s: reported %v, want a report %v", tt.name, strings.Join(s.errs, "; "), tt.fails)
		}
	}
}
