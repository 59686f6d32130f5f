package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/razao/razao/webhook"
)

// closedWithin is the safety net of the tests below: a connection still
// open this long after its request began was never cut. The server's read
// timeout is 1 s; the verdict does not depend on how much sooner it closes.
const closedWithin = 30 * time.Second

// startShortReadServer runs the real wiring of `razao serve` with a read
// timeout of one second.
func startShortReadServer(t *testing.T) (addr string) {
	t.Helper()
	base, _, _, stop := startServer(t, func(c *serveConfig) {
		c.timeouts = serverTimeouts{ReadHeader: time.Second, Read: time.Second, Write: 5 * time.Second, Idle: 5 * time.Second}
	})
	t.Cleanup(stop)
	return strings.TrimPrefix(base, "http://")
}

// readUntilClosed reads c until the server closes it (EOF or a reset) and
// returns what it read; it fails the test if c is still open at deadline.
func readUntilClosed(t *testing.T, c net.Conn, deadline time.Time) []byte {
	t.Helper()
	if err := c.SetReadDeadline(deadline); err != nil {
		t.Fatal(err)
	}
	var got []byte
	buf := make([]byte, 4096)
	for {
		n, err := c.Read(buf)
		got = append(got, buf[:n]...)
		if err == nil {
			continue
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("the connection is still open %s after its request began (read timeout 1 s); read so far: %q", closedWithin, got)
		}
		return got // EOF, or reset: closed by the server either way
	}
}

// A webhook body trickled one byte every half second is cut by the server
// itself: the large-body gate keeps the read deadline after it gives the
// body up: without it net/http would read the rest (up to 256 KiB) with
// no deadline at all, so one unsigned client could hold a connection for
// as long as it kept trickling. Whatever answer comes before the close is a
// refusal that says the connection closes.
func TestSlowWebhookBodyIsCutByTheServer(t *testing.T) {
	t.Parallel()
	addr := startShortReadServer(t)
	for _, tc := range []struct {
		name string
		head string // after the request line and Host
		lead string // sent at once, before the trickle
	}{
		{"stated length over the small body", "Content-Length: 100000\r\n", ""},
		{"chunked", "Transfer-Encoding: chunked\r\n", "186a0\r\n"},
		{"stated length of a small body", "Content-Length: 1000\r\n", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			start := time.Now()
			if _, err := fmt.Fprintf(c, "POST /webhooks/psp HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n%s\r\n%s{", tc.head, tc.lead); err != nil {
				t.Fatal(err)
			}
			stop := make(chan struct{})
			trickled := make(chan struct{})
			go func() { // the sender's pace, not a wait for a condition
				defer close(trickled)
				tick := time.NewTicker(500 * time.Millisecond)
				defer tick.Stop()
				for {
					select {
					case <-stop:
						return
					case <-tick.C:
						if _, err := c.Write([]byte(" ")); err != nil {
							return
						}
					}
				}
			}()
			got := readUntilClosed(t, c, start.Add(closedWithin))
			close(stop)
			<-trickled
			t.Logf("closed after %s, %d bytes of answer", time.Since(start).Round(10*time.Millisecond), len(got))
			if len(got) == 0 {
				return // closed without an answer: cut all the same
			}
			resp, err := http.ReadResponse(bufio.NewReader(strings.NewReader(string(got))), nil)
			if err != nil {
				t.Fatalf("unreadable answer %q: %v", got, err)
			}
			if resp.StatusCode != http.StatusBadRequest && resp.StatusCode != http.StatusRequestTimeout {
				t.Fatalf("a body cut mid-way answered %d, want 400 or 408", resp.StatusCode)
			}
			if !resp.Close {
				t.Fatalf("a body cut mid-way answered %d without Connection: close", resp.StatusCode)
			}
		})
	}
}

// A body over the endpoint's max_body_bytes is answered 413 with
// Connection: close, and the connection is closed, even though its sender
// has not sent the rest it announced: the rest is not waited for. Before,
// net/http read up to 256 KiB more of it, without a deadline, before
// writing the answer at all.
func TestWebhookBodyOverTheLimitIsAnsweredAndClosed(t *testing.T) {
	t.Parallel()
	addr := startShortReadServer(t)
	for _, tc := range []struct {
		name   string
		stated int64 // Content-Length; the sender sends max_body_bytes + 1 of it
	}{
		{"rest within what net/http drains", webhook.DefaultMaxBody + 50_000},
		{"rest beyond it", webhook.DefaultMaxBody + 1<<20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			start := time.Now()
			// Exactly max_body_bytes + 1: the server reads all of it, so
			// nothing is left unread in its socket when it closes.
			body := `{"pad":"` + strings.Repeat("a", webhook.DefaultMaxBody+1-len(`{"pad":"`))
			head := fmt.Sprintf("POST /webhooks/psp HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", tc.stated)
			if _, err := io.WriteString(c, head+body); err != nil {
				t.Fatal(err)
			}
			got := readUntilClosed(t, c, start.Add(closedWithin))
			if len(got) == 0 {
				t.Fatal("the connection was closed without an answer")
			}
			resp, err := http.ReadResponse(bufio.NewReader(strings.NewReader(string(got))), nil)
			if err != nil {
				t.Fatalf("unreadable answer %q: %v", got, err)
			}
			if resp.StatusCode != http.StatusRequestEntityTooLarge {
				t.Fatalf("a body over max_body_bytes answered %d, want 413", resp.StatusCode)
			}
			if !resp.Close {
				t.Fatalf("413 without Connection: close: %q", got)
			}
		})
	}
}
