package main

import (
	"bufio"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/razao/razao/auth"
	"github.com/razao/razao/internal/contract"
	"github.com/razao/razao/internal/pgtest"
	"github.com/razao/razao/webhook"
)

const e2eSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

// startServer runs the real wiring of `razao serve` on a loopback port.
func startServer(t *testing.T, tweak ...func(*serveConfig)) (base, token string, db *sqlx.DB, stop func()) {
	t.Helper()
	return startServerLogging(t, io.Discard, tweak...)
}

// startServerLogging is startServer with its log written to log.
func startServerLogging(t *testing.T, log io.Writer, tweak ...func(*serveConfig)) (base, token string, db *sqlx.DB, stop func()) {
	t.Helper()
	db, url := pgtest.NewWithURL(t)
	token, _, err := auth.Create(context.Background(), db, "e2e", []auth.Scope{auth.Admin})
	if err != nil {
		t.Fatal(err)
	}
	ep, err := webhook.NewEndpoint(webhook.EndpointConfig{Name: "psp", Scheme: "standard", Merchant: "loja", Secrets: []string{e2eSecret}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg := serveConfig{db: dbFlags{url: url}, timeZone: "America/Sao_Paulo", migrate: true,
		workerInterval: 50 * time.Millisecond, endpoints: []*webhook.Endpoint{ep}}
	for _, f := range tweak {
		f(&cfg)
	}
	ctx, cancel := context.WithCancel(context.Background())
	srv, err := newServer(ctx, cfg, slog.New(slog.NewJSONHandler(log, nil)), time.Now)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	// Every answer the end-to-end tests receive is held to the OpenAPI
	// document.
	srv.http.Handler = contract.Middleware(t, srv.http.Handler)
	base = "http://" + ln.Addr().String()
	listenAdmin(t, srv, base)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	return base, token, db, func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
		srv.Close()
	}
}

func signedStandard(t *testing.T, base, msgID string, body []byte) *http.Response {
	t.Helper()
	key, _ := base64.StdEncoding.DecodeString(strings.TrimPrefix(e2eSecret, "whsec_"))
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	mac := hmac.New(sha256.New, key)
	fmt.Fprintf(mac, "%s.%s.%s", msgID, ts, body)
	req, _ := http.NewRequest("POST", base+"/webhooks/psp", strings.NewReader(string(body)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("webhook-id", msgID)
	req.Header.Set("webhook-timestamp", ts)
	req.Header.Set("webhook-signature", "v1,"+base64.StdEncoding.EncodeToString(mac.Sum(nil)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

func apiCall(t *testing.T, token, method, url, body string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var m map[string]any
	json.NewDecoder(resp.Body).Decode(&m)
	return resp.StatusCode, m
}

func TestServeEndToEnd(t *testing.T) {
	t.Parallel()
	base, token, _, stop := startServer(t)
	defer stop()

	if code, m := apiCall(t, token, "POST", base+"/v1/charges", `{"id":"order-1","amount":4990,"partner":"p1","commission_bp":1000,"access":"course:go"}`); code != 201 {
		t.Fatalf("register: %d %v", code, m)
	}
	// Subscribe before paying: the app hears "paid" only after commit.
	req, _ := http.NewRequest("GET", base+"/v1/events", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	stream, err := http.DefaultClient.Do(req)
	if err != nil || stream.StatusCode != 200 {
		t.Fatalf("events: %v %v", err, stream)
	}
	defer stream.Body.Close()

	body := []byte(`{"type":"charge.paid","timestamp":"2026-08-31T22:30:00-03:00","data":{"charge_id":"order-1","amount":4990,"occurred_at":"2026-08-31T22:30:00-03:00"}}`)
	resp := signedStandard(t, base, "msg-1", body)
	var r webhook.Response
	json.NewDecoder(resp.Body).Decode(&r)
	resp.Body.Close()
	if resp.StatusCode != 200 || r.Status != "accepted" {
		t.Fatalf("webhook: %d %+v", resp.StatusCode, r)
	}

	topics := readTopics(t, stream.Body, 2)
	if topics[0] != "charge.paid" || topics[1] != "access.granted" {
		t.Fatalf("events %v, want charge.paid then access.granted", topics)
	}
	code, m := apiCall(t, token, "GET", base+"/v1/charges/order-1", "")
	if code != 200 || m["state"] != "paid" || len(m["posting_sets"].([]any)) != 2 {
		t.Fatalf("charge: %d %v", code, m)
	}
	sale := m["posting_sets"].([]any)[0].(map[string]any)
	if !strings.HasPrefix(sale["competence"].(string), "2026-08-31") {
		t.Fatalf("sale competence %v, want August 31 in São Paulo", sale["competence"])
	}
	for _, path := range []string{"/healthz", "/readyz"} {
		if resp, err := http.Get(base + path); err != nil || resp.StatusCode != 200 {
			t.Fatalf("%s: %v %v", path, err, resp)
		}
	}
	// /metrics is the admin listener's, never the public one's.
	if resp, err := http.Get(base + "/metrics"); err != nil || resp.StatusCode != http.StatusNotFound {
		t.Fatalf("public /metrics: %v %v, want 404", err, resp)
	}
	resp, err = http.Get(adminURL(t, base) + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	scrape, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{`razao_webhook_deliveries_total{endpoint="psp",outcome="accepted"} 1`,
		"razao_inbox_pending 0", "razao_divergences_open 0", "razao_delivery_processing_seconds_count",
		"razao_event_stream_wakes_total", "razao_event_stream_reads_total", "razao_event_stream_paced_reads_total"} {
		if !strings.Contains(string(scrape), want) {
			t.Errorf("metrics lack %q", want)
		}
	}
}

// readTopics reads n SSE events from a stream, within a bounded wait.
func readTopics(t *testing.T, r io.Reader, n int) []string {
	t.Helper()
	got := make(chan []string, 1)
	go func() {
		var topics []string
		sc := bufio.NewScanner(r)
		for sc.Scan() && len(topics) < n {
			if topic, ok := strings.CutPrefix(sc.Text(), "event: "); ok {
				topics = append(topics, topic)
			}
		}
		got <- topics
	}()
	select {
	case topics := <-got:
		return topics
	case <-time.After(20 * time.Second):
		t.Fatal("no events on the stream")
		return nil
	}
}

// adminURLs maps a test server's base URL to its admin listener's.
var adminURLs sync.Map

// listenAdmin gives srv an admin listener on a free loopback port, as
// cmdServe does from admin_listen, and notes its URL under base.
func listenAdmin(t *testing.T, srv *server, base string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv.adminLn = ln
	adminURLs.Store(base, "http://"+ln.Addr().String())
	t.Cleanup(func() { adminURLs.Delete(base) })
}

// adminURL is the admin listener's URL of the test server at base.
func adminURL(t *testing.T, base string) string {
	t.Helper()
	u, ok := adminURLs.Load(base)
	if !ok {
		t.Fatalf("no admin listener for %s", base)
	}
	return u.(string)
}
