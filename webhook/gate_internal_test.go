package webhook

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/gorilla/mux"
	"golang.org/x/time/rate"
)

// countingReader counts the bytes taken from it.
type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

// Large unauthenticated bodies share one read budget: once it is spent, a
// large body is answered busy without being read (its bytes stay with the
// sender, whom TCP then slows down), while a small body, a genuine single
// delivery's size, never waits for the budget. The budget here refills at
// nothing, so whatever is read beyond its burst shows up as read bytes.
func TestLargeUnauthenticatedBodiesShareOneReadBudget(t *testing.T) {
	t.Parallel()
	g := &gate{slots: make(chan struct{}, largeSlots), budget: rate.NewLimiter(0, 300<<10), wait: time.Second}
	const size = 256 << 10
	post := func(size int) (*countingReader, []byte, error) {
		src := &countingReader{r: bytes.NewReader(bytes.Repeat([]byte("x"), size))}
		r := httptest.NewRequest("POST", "/webhooks/hodle", src)
		r.ContentLength = int64(size)
		in, leave, ok := g.enter(httptest.NewRecorder(), r, DefaultMaxBody)
		if !ok {
			t.Fatal("no slot, with every slot free")
		}
		defer leave()
		body, err := readBody(httptest.NewRecorder(), r, in, DefaultMaxBody)
		return src, body, err
	}
	if src, body, err := post(size); err != nil || len(body) != size {
		t.Fatalf("first large body, within the budget: %d bytes, %v", len(body), err)
	} else if src.n != size {
		t.Fatalf("read %d bytes of the first body, want %d", src.n, size)
	}
	src, _, err := post(size)
	if !errors.Is(err, errGateBusy) {
		t.Fatalf("second large body with the budget spent: %v, want errGateBusy", err)
	}
	if src.n > 300<<10-size {
		t.Fatalf("read %d bytes of a body the budget had no room for (at most the %d left)", src.n, 300<<10-size)
	}
	if _, body, err := post(smallBody); err != nil || len(body) != smallBody {
		t.Fatalf("a small body with the budget spent: %d bytes, %v; small bodies do not wait for it", len(body), err)
	}
	if len(g.slots) != 0 {
		t.Fatalf("%d slots still taken after every body was answered", len(g.slots))
	}
}

// A sender that stalls mid-body loses its slot once readWithin has passed,
// instead of holding it until the server's read timeout: otherwise two
// idle connections reopened every so often would turn away every large
// delivery with 503 (docs/performance.md, "Unauthenticated bodies").
// Here both slots are taken by stalled senders, and a large body sent
// after them still reaches authentication (401: it is forged).
func TestStalledLargeBodiesGiveUpTheirSlots(t *testing.T) {
	t.Parallel()
	ep, err := NewEndpoint(EndpointConfig{Name: "hodle", Scheme: "hodle", Merchant: "m",
		Secrets: []string{"example-secret-for-local-tests-only"}}, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	h := NewHandler([]*Endpoint{ep}, nil, time.Now, slog.New(slog.NewTextHandler(io.Discard, nil)))
	h.large.readWithin = 100 * time.Millisecond
	h.large.wait = 30 * time.Second // far beyond readWithin: only a freed slot lets the third in
	r := mux.NewRouter()
	r.Handle("/webhooks/{endpoint}", h)
	srv := httptest.NewUnstartedServer(r)
	srv.Config.ReadTimeout = time.Minute
	srv.Start()
	defer srv.Close()
	for i := 0; i < largeSlots; i++ {
		c, err := net.Dial("tcp", srv.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		fmt.Fprintf(c, "POST /webhooks/hodle HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{")
	}
	for deadline := time.Now().Add(30 * time.Second); h.LargeSlotsTaken() < largeSlots; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the stalled senders never took the slots (%d taken)", h.LargeSlotsTaken())
		}
	}
	resp, err := http.Post(srv.URL+"/webhooks/hodle", "application/json", bytes.NewReader(bytes.Repeat([]byte("x"), 40<<10)))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("a large body after two stalled senders: %d, want 401 (it reached authentication)", resp.StatusCode)
	}
}

// The read deadline of a large body leaves room for the largest body an
// endpoint may take (16 MiB) to come in at the budget while every slot
// reads: a fixed 2 s would have refused every body over about 16 MiB/s ×
// 2 s ÷ 2 slots, whatever its sender's speed.
func TestReadDeadlineLeavesRoomForTheLargestBody(t *testing.T) {
	g := newGate()
	const largest = 16 << 20
	need := time.Duration(float64(largest*largeSlots) / largeRate * float64(time.Second))
	for _, n := range []int64{largest, -1} {
		if d := g.readDeadline(n, largest); d < need+largeReadWithin {
			t.Errorf("a body of %d bytes (max 16 MiB) has %s to arrive, want at least %s", n, d, need+largeReadWithin)
		}
	}
	if d := g.readDeadline(1<<40, DefaultMaxBody); d > largeReadWithin+time.Second {
		t.Errorf("a stated length beyond max_body_bytes buys %s: the deadline must follow max_body_bytes", d)
	}
}
