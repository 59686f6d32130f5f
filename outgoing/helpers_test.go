package outgoing_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/razao/razao/events"
	"github.com/razao/razao/internal/pgtest"
	"github.com/razao/razao/outgoing"
)

// waitFor bounds every wait for something to happen: a deadline for a
// test that would otherwise hang, never a claim about speed.
const waitFor = 30 * time.Second

// fastSchedule keeps retries inside a test's time without changing their
// logic: three attempts, a few milliseconds apart.
var fastSchedule = []time.Duration{5 * time.Millisecond, 5 * time.Millisecond}

type bundle struct {
	db  *sqlx.DB
	url string
	svc outgoing.Service
	cfg outgoing.Config
}

// setup returns a fresh database and a service allowed to reach the
// tests' receivers on 127.0.0.1.
func setup(t *testing.T, mod ...func(*outgoing.Config)) *bundle {
	t.Helper()
	db, url := pgtest.NewWithURL(t)
	cfg := outgoing.Config{AllowPrivateTargets: true, AllowHTTPTargets: true, Schedule: fastSchedule, Jitter: -1, Interval: 50 * time.Millisecond,
		Timeout: 10 * time.Second}
	for _, m := range mod {
		m(&cfg)
	}
	return &bundle{db: db, url: url, svc: outgoing.Service{DB: db, Config: cfg}, cfg: cfg}
}

// run starts a dispatcher until the test ends.
func (b *bundle) run(t *testing.T) *outgoing.Dispatcher {
	t.Helper()
	d := outgoing.NewDispatcher(b.db, b.cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), nil)
	d.Listen(b.url)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { d.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return d
}

func (b *bundle) create(t *testing.T, url string, topics ...string) outgoing.Endpoint {
	t.Helper()
	e, err := b.svc.Create(context.Background(), outgoing.NewEndpoint{URL: url, Topics: topics})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// appendEvents commits one transaction of events, one per topic given.
func (b *bundle) appendEvents(t *testing.T, topics ...events.Topic) {
	t.Helper()
	tx := b.db.MustBeginTx(context.Background(), nil)
	defer tx.Rollback()
	var ds []events.Draft
	for i, tp := range topics {
		ds = append(ds, events.Draft{Topic: tp, ChargeID: "c" + string(rune('a'+i%26)), Payload: map[string]int{"n": i}})
	}
	if err := events.AppendAll(context.Background(), tx, ds...); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
}

// allEvents is the outbox in its order, read as a stream would.
func (b *bundle) allEvents(t *testing.T, n int) []events.Event {
	t.Helper()
	var out []events.Event
	deadline := time.Now().Add(waitFor)
	for len(out) < n && time.Now().Before(deadline) {
		cur := ""
		if len(out) > 0 {
			cur = out[len(out)-1].Cursor
		}
		evs, err := events.Since(context.Background(), b.db, cur, 0)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, evs...)
		if len(evs) == 0 {
			time.Sleep(10 * time.Millisecond)
		}
	}
	if len(out) < n {
		t.Fatalf("outbox: %d events, want %d", len(out), n)
	}
	return out
}

// delivery is one request a receiver got.
type delivery struct {
	ID     string
	Header http.Header
	Body   []byte
	Event  struct {
		ID    int64  `json:"id"`
		Topic string `json:"topic"`
	}
	Answer int
	At     time.Time // when it arrived
}

// receiver is an app's webhook handler: it verifies every request with
// the official library under each of its secrets and records it;
// answer decides the status of the n-th request (from 1).
type receiver struct {
	t       *testing.T
	srv     *httptest.Server
	mu      sync.Mutex
	secrets []string
	got     []delivery
	bad     []string
	answer  func(n int) int
	changed chan struct{}
}

func newReceiver(t *testing.T, answer func(n int) int) *receiver {
	t.Helper()
	r := &receiver{t: t, answer: answer, changed: make(chan struct{}, 1)}
	if r.answer == nil {
		r.answer = func(int) int { return http.StatusOK }
	}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.srv.Close)
	return r
}

// newTLSReceiver is newReceiver over https, with a certificate of
// httptest's own authority (r.srv.Certificate()).
func newTLSReceiver(t *testing.T, answer func(n int) int) *receiver {
	t.Helper()
	r := &receiver{t: t, answer: answer, changed: make(chan struct{}, 1)}
	if r.answer == nil {
		r.answer = func(int) int { return http.StatusOK }
	}
	r.srv = httptest.NewTLSServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.srv.Close)
	return r
}

// trust sets the secrets the receiver verifies with (each must verify).
func (r *receiver) trust(secrets ...string) {
	r.mu.Lock()
	r.secrets = secrets
	r.mu.Unlock()
}

func (r *receiver) serve(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	for _, s := range r.secrets {
		wh, err := standardwebhooks.NewWebhook(s)
		if err != nil {
			r.bad = append(r.bad, err.Error())
			continue
		}
		if err := wh.Verify(body, req.Header); err != nil {
			r.bad = append(r.bad, "verify: "+err.Error())
		}
	}
	d := delivery{ID: req.Header.Get("webhook-id"), Header: req.Header.Clone(), Body: body, At: time.Now()}
	json.Unmarshal(body, &d.Event)
	d.Answer = r.answer(len(r.got) + 1)
	r.got = append(r.got, d)
	r.mu.Unlock()
	select {
	case r.changed <- struct{}{}:
	default:
	}
	w.WriteHeader(d.Answer)
	io.WriteString(w, `{"ok":true}`)
}

func (r *receiver) deliveries() []delivery {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]delivery(nil), r.got...)
}

// waitUntil waits until cond holds of the deliveries so far.
func (r *receiver) waitUntil(cond func([]delivery) bool) []delivery {
	r.t.Helper()
	deadline := time.After(waitFor)
	for {
		got := r.deliveries()
		if cond(got) {
			return got
		}
		select {
		case <-r.changed:
		case <-time.After(20 * time.Millisecond):
		case <-deadline:
			r.t.Fatalf("receiver: condition not met after %s; %d deliveries", waitFor, len(got))
		}
	}
}

func (r *receiver) checkVerified() {
	r.t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.bad) > 0 {
		r.t.Fatalf("deliveries that did not verify: %v", r.bad)
	}
}

// accepted is the deliveries answered 2xx.
func accepted(ds []delivery) []delivery {
	var out []delivery
	for _, d := range ds {
		if d.Answer/100 == 2 {
			out = append(out, d)
		}
	}
	return out
}
