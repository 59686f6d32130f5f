package webhook_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// Large unauthenticated bodies are read and authenticated two at a time.
// Two forged 100 KB bodies are held mid-upload (the gate); a third one,
// complete, waits for a slot, while a genuine small delivery sent after
// it is answered at once. Released, the held ones and the third are
// refused, and nothing is stored for them.
func TestLargeUnauthenticatedBodiesWaitForOneOfTwoSlots(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.Charge("order-1", 4990, "partner-42", 1000)
	srv := httptest.NewServer(e.Router)
	defer srv.Close()
	const size = 100 << 10
	forged := func(body io.Reader) *http.Request {
		r, _ := http.NewRequest(http.MethodPost, srv.URL+"/webhooks/std", body)
		r.ContentLength = size
		r.Header = standardHeaders("forged", clock.Unix(), []byte("not this body"))
		return r
	}
	type answer struct {
		code int
		err  error
	}
	send := func(r *http.Request) chan answer {
		c := make(chan answer, 1)
		go func() {
			resp, err := http.DefaultClient.Do(r)
			if err != nil {
				c <- answer{err: err}
				return
			}
			resp.Body.Close()
			c <- answer{code: resp.StatusCode}
		}()
		return c
	}
	var held []*io.PipeWriter
	var heldAnswers []chan answer
	defer func() { // before the server closes: it waits for these uploads
		for _, pw := range held {
			pw.CloseWithError(io.ErrUnexpectedEOF)
		}
	}()
	for i := 0; i < 2; i++ {
		pr, pw := io.Pipe()
		held, heldAnswers = append(held, pw), append(heldAnswers, send(forged(pr)))
		pw.Write(bytes.Repeat([]byte("x"), 1024))
	}
	// The pipe's writes return once the client has taken the bytes, not
	// once the server has: wait until both bodies hold their slots.
	for deadline := time.Now().Add(30 * time.Second); e.Handler.LargeSlotsTaken() < 2; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the two held bodies never took the gate's slots (%d taken)", e.Handler.LargeSlotsTaken())
		}
	}
	third := send(forged(bytes.NewReader(bytes.Repeat([]byte("y"), size))))

	if r := e.PostStandard("msg-1", "charge.paid", map[string]any{"charge_id": "order-1", "amount": 4990}); r.Code != 200 {
		t.Fatalf("a genuine delivery during the flood: %d %+v", r.Code, r.Body)
	}
	select {
	case a := <-third:
		t.Fatalf("a third large body was answered (%d, %v) while two others held the slots", a.code, a.err)
	default:
	}
	for _, pw := range held {
		pw.Write(bytes.Repeat([]byte("x"), size-1024))
		pw.Close()
	}
	for i, c := range append(heldAnswers, third) {
		select {
		case a := <-c:
			if a.err != nil || a.code != http.StatusUnauthorized {
				t.Errorf("forged body %d: %d %v, want 401", i, a.code, a.err)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("forged body %d never answered", i)
		}
	}
	if n := e.Count(`SELECT count(*) FROM inbox`); n != 1 {
		t.Fatalf("%d inbox rows, want the genuine delivery's only", n)
	}
}
