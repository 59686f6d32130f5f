package api_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/mux"

	"github.com/razao/razao/api"
	"github.com/razao/razao/auth"
	"github.com/razao/razao/internal/contract"
	"github.com/razao/razao/internal/pgtest"
	"github.com/razao/razao/periods"
	"github.com/razao/razao/postings"
)

// The webhook endpoints' routes, end to end through the router, every
// answer validated against the OpenAPI document: the secret is shown on
// creation and rotation only, a private target is refused, and an
// endpoint is changed, replayed to, read with its attempts and deleted.
func TestWebhookEndpointsRoutes(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	admin, _, err := auth.Create(context.Background(), db, "ops", []auth.Scope{auth.Admin})
	if err != nil {
		t.Fatal(err)
	}
	reader, _, err := auth.Create(context.Background(), db, "app", []auth.Scope{auth.Write})
	if err != nil {
		t.Fatal(err)
	}
	cal, _ := periods.NewCalendar(periods.DefaultTimeZone)
	r := mux.NewRouter().SkipClean(true)
	r.NotFoundHandler, r.MethodNotAllowedHandler = api.NotFound(), api.MethodNotAllowed(r)
	(&api.API{DB: db, Ledger: postings.New(db, cal), Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Now: time.Now}).Register(r)
	h := contract.Middleware(t, r)
	call := func(token, method, path, body string) (int, map[string]any) {
		t.Helper()
		req := httptest.NewRequest(method, path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		var m map[string]any
		json.Unmarshal(rec.Body.Bytes(), &m)
		return rec.Code, m
	}

	if code, _ := call(reader, "GET", "/v1/webhook-endpoints", ""); code != http.StatusForbidden {
		t.Errorf("a write token lists endpoints: %d", code)
	}
	for _, u := range []string{"http://127.0.0.1:9/x", "http://169.254.169.254/latest", "http://localhost/"} {
		if code, m := call(admin, "POST", "/v1/webhook-endpoints", `{"url":"`+u+`"}`); code != http.StatusBadRequest || !strings.HasSuffix(m["type"].(string), "/refused-target") {
			t.Errorf("%s: %d %v", u, code, m)
		}
	}
	if code, m := call(admin, "POST", "/v1/webhook-endpoints", `{"url":"https://93.184.216.34/hook","topics":["charge.nope"]}`); code != http.StatusBadRequest {
		t.Errorf("unknown topic: %d %v", code, m)
	}
	code, created := call(admin, "POST", "/v1/webhook-endpoints", `{"url":"https://93.184.216.34/hook","topics":["charge.paid","charge.refunded"],"description":"loja"}`)
	if code != http.StatusCreated || !strings.HasPrefix(created["secret"].(string), "whsec_") {
		t.Fatalf("create: %d %v", code, created)
	}
	code, list := call(admin, "GET", "/v1/webhook-endpoints", "")
	if code != http.StatusOK || strings.Contains(mustJSON(t, list), "whsec_") {
		t.Fatalf("list: %d %v", code, list)
	}
	code, patched := call(admin, "PATCH", "/v1/webhook-endpoints/1", `{"enabled":false}`)
	if code != http.StatusOK || patched["enabled"] != false || patched["disabled_reason"] != "operator" {
		t.Errorf("disable: %d %v", code, patched)
	}
	code, rotated := call(admin, "POST", "/v1/webhook-endpoints/1/rotate-secret", "")
	if code != http.StatusOK || rotated["secret"] == created["secret"] || rotated["previous_secret_until"] == nil {
		t.Errorf("rotate: %d %v", code, rotated)
	}
	if code, m := call(admin, "POST", "/v1/webhook-endpoints/1/replay", `{"since":"2026-01-01T00:00:00Z","until":"2030-01-01T00:00:00Z"}`); code != http.StatusAccepted || m["queued"] != float64(0) {
		t.Errorf("replay: %d %v", code, m)
	}
	if code, m := call(admin, "POST", "/v1/webhook-endpoints/1/replay", `{}`); code != http.StatusBadRequest {
		t.Errorf("empty replay: %d %v", code, m)
	}
	if code, m := call(admin, "GET", "/v1/webhook-endpoints/1/attempts?limit=10", ""); code != http.StatusOK || len(m["attempts"].([]any)) != 0 {
		t.Errorf("attempts: %d %v", code, m)
	}
	if code, _ := call(admin, "DELETE", "/v1/webhook-endpoints/1", ""); code != http.StatusNoContent {
		t.Errorf("delete: %d", code)
	}
	if code, _ := call(admin, "GET", "/v1/webhook-endpoints/1", ""); code != http.StatusNotFound {
		t.Errorf("get after delete: %d", code)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
