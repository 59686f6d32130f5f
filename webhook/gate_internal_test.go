package webhook

import (
	"bytes"
	"errors"
	"io"
	"net/http/httptest"
	"testing"
	"time"

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
		in, leave, ok := g.enter(r)
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
