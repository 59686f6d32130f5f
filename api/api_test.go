package api_test

import (
	"crypto/sha256"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gorilla/mux"

	"github.com/razao/razao/api"
	"github.com/razao/razao/internal/pgtest"
)

const token = "test-token-0123456789abcdef"

func newAPI(t *testing.T) http.Handler {
	t.Helper()
	r := mux.NewRouter()
	(&api.API{DB: pgtest.New(t), Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Tokens: [][32]byte{sha256.Sum256([]byte(token))}}).Register(r)
	return r
}

func call(t *testing.T, h http.Handler, method, path, auth, body string) (int, map[string]any, http.Header) {
	t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if auth != "" {
		req.Header.Set("Authorization", "Bearer "+auth)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	var m map[string]any
	json.Unmarshal(rec.Body.Bytes(), &m)
	return rec.Code, m, rec.Header()
}

func TestRegisterChargeIsIdempotentOnID(t *testing.T) {
	t.Parallel()
	h := newAPI(t)
	body := `{"id":"order-1","amount":4990,"partner":"partner-42","commission_bp":1000,"access":"course:go","metadata":{"b":1,"a":2}}`
	if code, m, _ := call(t, h, "POST", "/v1/charges", token, body); code != 201 || m["state"] != "pending" {
		t.Fatalf("first: %d %v", code, m)
	}
	// Same content, other key order and spacing: the same charge.
	same := `{"metadata":{"a":2, "b":1},"id":"order-1","amount":4990,"partner":"partner-42","commission_bp":1000,"access":"course:go"}`
	if code, m, _ := call(t, h, "POST", "/v1/charges", token, same); code != 200 || m["id"] != "order-1" {
		t.Fatalf("same again: %d %v", code, m)
	}
	code, m, hdr := call(t, h, "POST", "/v1/charges", token, strings.Replace(body, "4990", "5000", 1))
	if code != 409 || hdr.Get("Content-Type") != "application/problem+json" || !strings.HasSuffix(m["type"].(string), "/charge-conflict") {
		t.Fatalf("different content: %d %v", code, m)
	}
	code, m, _ = call(t, h, "GET", "/v1/charges/order-1", token, "")
	if code != 200 || m["amount"].(float64) != 4990 || m["refunds"] == nil || m["posting_sets"] == nil {
		t.Fatalf("get: %d %v", code, m)
	}
	if code, _, _ := call(t, h, "GET", "/v1/charges/nope", token, ""); code != 404 {
		t.Fatalf("get unknown: %d", code)
	}
}

func TestRegisterChargeRefusesBadInput(t *testing.T) {
	t.Parallel()
	h := newAPI(t)
	for _, body := range []string{
		`{"id":"order-1","amount":0}`,
		`{"id":"order-1","amount":-5}`,
		`{"id":"order-1","amount":49.90}`,
		`{"id":"order-1","amount":99999999999999999999}`,
		`{"id":"","amount":100}`,
		`{"id":"../etc/passwd","amount":100}`,
		`{"id":"order-1","amount":100,"commission_bp":100}`,
		`{"id":"order-1","amount":100,"partner":"Partner 42","commission_bp":100}`,
		`{"id":"order-1","amount":100,"currency":"USD"}`,
		`{"id":"order-1","amount":100,"metadata":[1,2]}`,
		`{"id":"order-1","amount":100,"unknown":true}`,
		`{"id":"order-1","amount":100} {"id":"x"}`,
		`not json`,
	} {
		code, m, hdr := call(t, h, "POST", "/v1/charges", token, body)
		if code != 400 || hdr.Get("Content-Type") != "application/problem+json" {
			t.Errorf("%s: %d %v, want 400 problem", body, code, m)
		}
	}
	if code, _, _ := call(t, h, "POST", "/v1/charges", token, `{"id":"x","amount":1,"metadata":{"p":"`+strings.Repeat("a", 70<<10)+`"}}`); code != 413 {
		t.Errorf("huge body: %d, want 413", code)
	}
}

func TestAPIDemandsBearerToken(t *testing.T) {
	t.Parallel()
	h := newAPI(t)
	for _, auth := range []string{"", "wrong-token-0123456789abcdef"} {
		code, m, hdr := call(t, h, "GET", "/v1/charges/order-1", auth, "")
		if code != 401 || hdr.Get("WWW-Authenticate") == "" {
			t.Errorf("auth %q: %d %v, want 401", auth, code, m)
		}
	}
}
