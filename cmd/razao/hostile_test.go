package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"
)

// ledgerRows counts every row the service could write, so a test can show
// that a hostile request wrote nothing.
func ledgerRows(t *testing.T, db *sqlx.DB) int64 {
	t.Helper()
	var n int64
	err := db.Get(&n, `SELECT (SELECT count(*) FROM inbox) + (SELECT count(*) FROM charges) + (SELECT count(*) FROM posting_sets)
		+ (SELECT count(*) FROM outbox) + (SELECT count(*) FROM divergences) + (SELECT count(*) FROM access_grants)`)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// rawRequest sends bytes on a fresh connection and returns the status line
// (or "" if the server hung up without one).
func rawRequest(t *testing.T, addr, head string, body []byte, closeWrite bool) string {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	io.WriteString(conn, head)
	conn.Write(body)
	if closeWrite {
		conn.(*net.TCPConn).CloseWrite()
	}
	line, _ := bufio.NewReader(conn).ReadString('\n')
	return strings.TrimSpace(line)
}

// A table of hostile requests against every kind of route: each gets a
// clear 4xx, writes nothing, and leaks no secret nor stack trace.
func TestHostileRequestsGet4xxAndWriteNothing(t *testing.T) {
	t.Parallel()
	base, token, db, stop := startServer(t, func(c *serveConfig) {
		c.timeouts = serverTimeouts{ReadHeader: 300 * time.Millisecond, Read: time.Second, Write: 5 * time.Second, Idle: 5 * time.Second}
	})
	defer stop()
	before := ledgerRows(t, db)
	auth := "Bearer " + token
	big := strings.Repeat("a", 300<<10)
	tests := []struct {
		name, method, path, body string
		header                   map[string]string
		want                     int
	}{
		{"huge header", "GET", "/v1/balances", "", map[string]string{"X-Pad": strings.Repeat("x", 40<<10)}, 431},
		{"huge webhook body", "POST", "/webhooks/psp", `{"pad":"` + big + `"}`, nil, 413},
		{"huge API body", "POST", "/v1/charges", `{"id":"x","metadata":{"pad":"` + big + `"}}`, map[string]string{"Authorization": auth}, 413},
		{"invalid UTF-8", "POST", "/v1/charges", "{\"id\":\"o1\",\"amount\":100,\"access\":\"\xff\xfe\"}", map[string]string{"Authorization": auth}, 400},
		{"duplicate JSON keys", "POST", "/v1/charges", `{"id":"o1","amount":100,"amount":1}`, map[string]string{"Authorization": auth}, 400},
		{"number with exponent", "POST", "/v1/charges", `{"id":"o1","amount":4.99e3}`, map[string]string{"Authorization": auth}, 400},
		{"negative amount", "POST", "/v1/charges", `{"id":"o1","amount":-4990}`, map[string]string{"Authorization": auth}, 400},
		{"amount over int64", "POST", "/v1/charges", `{"id":"o1","amount":9223372036854775808}`, map[string]string{"Authorization": auth}, 400},
		{"SQL in an id", "POST", "/v1/charges", `{"id":"o1'; DROP TABLE postings;--","amount":100}`, map[string]string{"Authorization": auth}, 400},
		{"SQL in a path", "GET", "/v1/charges/" + url.PathEscape("x' OR '1'='1"), "", map[string]string{"Authorization": auth}, 404},
		{"path traversal in an export name", "GET", "/v1/exports/..%2f..%2fetc%2fpasswd.csv?month=2026-08", "", map[string]string{"Authorization": auth}, 404},
		{"export of an unknown kind", "GET", "/v1/exports/passwd.csv?month=2026-08", "", map[string]string{"Authorization": auth}, 404},
		{"bad month", "GET", "/v1/reports/trial-balance/2026-8'--", "", map[string]string{"Authorization": auth}, 400},
		{"forged webhook", "POST", "/webhooks/psp", `{"type":"charge.paid","data":{"charge_id":"o1","amount":1}}`, map[string]string{"webhook-id": "m1", "webhook-timestamp": fmt.Sprint(time.Now().Unix()), "webhook-signature": "v1,AAAA"}, 401},
		{"webhook to an unknown endpoint", "POST", "/webhooks/..%2fv1%2fcharges", `{}`, nil, 404},
		{"token in a query string", "GET", "/v1/balances?access_token=" + token, "", nil, 401},
		{"wrong method", "DELETE", "/v1/charges/o1", "", map[string]string{"Authorization": auth}, 405},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(tc.method, base+tc.path, strings.NewReader(tc.body))
			req.Header.Set("Content-Type", "application/json")
			for k, v := range tc.header {
				req.Header.Set(k, v)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.want {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.want, body)
			}
			assertNoLeak(t, string(body), token)
		})
	}

	addr := strings.TrimPrefix(base, "http://")
	t.Run("truncated body", func(t *testing.T) {
		head := "POST /webhooks/psp HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n"
		if line := rawRequest(t, addr, head, []byte(`{"type":"charge.paid"`), true); line != "" && !strings.Contains(line, " 400 ") {
			t.Fatalf("got %q, want 400 or a closed connection", line)
		}
	})
	t.Run("slow-loris headers", func(t *testing.T) {
		start := time.Now()
		line := rawRequest(t, addr, "GET /v1/balances HTTP/1.1\r\nHost: x\r\nX-Slow: ", nil, false)
		if d := time.Since(start); d > 5*time.Second {
			t.Fatalf("server held a half-sent request for %v", d)
		}
		if line != "" && !strings.Contains(line, " 408 ") && !strings.Contains(line, " 400 ") {
			t.Fatalf("got %q, want the connection closed", line)
		}
	})
	t.Run("slow body", func(t *testing.T) {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		io.WriteString(conn, "POST /webhooks/psp HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n")
		cut := false
		for i := 0; i < 40 && !cut; i++ { // one byte every 100 ms: 4 s for a body the server gives 1 s
			if _, err := conn.Write([]byte("{")); err != nil {
				cut = true
			}
			time.Sleep(100 * time.Millisecond)
		}
		conn.SetReadDeadline(time.Now().Add(2 * time.Second))
		line, _ := bufio.NewReader(conn).ReadString('\n')
		if !cut && line != "" && !strings.Contains(line, " 400 ") && !strings.Contains(line, " 408 ") {
			t.Fatalf("slow body got %q", line)
		}
	})
	if after := ledgerRows(t, db); after != before {
		t.Fatalf("hostile requests wrote %d rows", after-before)
	}
}

func assertNoLeak(t *testing.T, body, token string) {
	t.Helper()
	for _, bad := range []string{e2eSecret, strings.TrimPrefix(e2eSecret, "whsec_"), token, "goroutine ", "panic", ".go:", "pq: "} {
		if strings.Contains(body, bad) {
			t.Fatalf("response leaks %q: %s", bad, body)
		}
	}
}
