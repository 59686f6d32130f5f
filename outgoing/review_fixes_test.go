package outgoing_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/razao/razao/events"
	"github.com/razao/razao/internal/kind"
	"github.com/razao/razao/outgoing"
)

// An operator disables an endpoint while an attempt is in flight, and the
// attempt fails: the endpoint stays disabled by the operator, and no
// failure turns it on again.
func TestAnOperatorsDisableSurvivesAFailingAttemptInFlight(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *outgoing.Config) { c.Schedule = []time.Duration{time.Hour, time.Hour} })
	inFlight := make(chan struct{}, 10)
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		inFlight <- struct{}{}
		<-release
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	ep := b.create(t, srv.URL)
	b.run(t)
	b.appendEvents(t, events.TopicChargePaid)
	select {
	case <-inFlight:
	case <-time.After(waitFor):
		t.Fatal("no attempt")
	}
	off := false
	if _, err := b.svc.Update(context.Background(), ep.ID, outgoing.Patch{Enabled: &off}); err != nil {
		t.Fatal(err)
	}
	close(release)
	got := waitAttempts(t, b, ep.ID, 1)
	if got[0].Status == nil || *got[0].Status != http.StatusServiceUnavailable {
		t.Fatalf("attempt %+v, want the 503 logged", got[0])
	}
	e, err := b.svc.Get(context.Background(), ep.ID)
	if err != nil {
		t.Fatal(err)
	}
	if e.Enabled || e.DisabledReason != "operator" || e.DisabledAt == nil {
		t.Errorf("after the failure in flight: enabled %v, reason %q, at %v; want disabled by the operator", e.Enabled, e.DisabledReason, e.DisabledAt)
	}
}

// waitAttempts waits until the endpoint's attempts log has at least n
// attempts and returns them, newest first.
func waitAttempts(t *testing.T, b *bundle, id int64, n int) []outgoing.Attempt {
	t.Helper()
	return waitAttemptsUntil(t, b, id, func(as []outgoing.Attempt) bool { return len(as) >= n })
}

// waitAttemptsUntil waits until cond holds of the endpoint's attempts
// log (newest first) and returns it.
func waitAttemptsUntil(t *testing.T, b *bundle, id int64, cond func([]outgoing.Attempt) bool) []outgoing.Attempt {
	t.Helper()
	deadline := time.Now().Add(waitFor)
	for {
		as, err := b.svc.Attempts(context.Background(), id, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		if cond(as) {
			return as
		}
		if time.Now().After(deadline) {
			t.Fatalf("endpoint %d: attempts log %+v not as awaited after %s", id, as, waitFor)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Run returns soon after its context ends, however the holders' ends
// fall about it: a holder never blocks on telling Run it is done.
func TestShutdownNeverHangs(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *outgoing.Config) { c.MaxConcurrent = 3; c.Interval = time.Millisecond })
	rcv := newReceiver(t, nil)
	for range 40 {
		b.create(t, rcv.srv.URL)
	}
	for i := range 100 {
		d := outgoing.NewDispatcher(b.db, b.cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), nil)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { d.Run(ctx); close(done) }()
		// Shutdowns at every point of the holders' short lives.
		time.Sleep(time.Duration(rand.IntN(60)) * time.Millisecond)
		cancel()
		select {
		case <-done:
		case <-time.After(waitFor):
			t.Fatalf("cycle %d: Run did not return %s after its context ended", i, waitFor)
		}
	}
}

// A topic added to an endpoint while its holder is busy delivering gets
// every event of that topic committed after the change: the holder does
// not pass over them with the topics it read before.
func TestATopicAddedWhileDeliveringIsNotSkipped(t *testing.T) {
	t.Parallel()
	b := setup(t)
	rcv := newReceiver(t, nil)
	ep := b.create(t, rcv.srv.URL, string(events.TopicChargePaid))
	rcv.trust(ep.Secret)
	b.run(t)
	// A steady flow keeps the holder on its lease, with the topics it read.
	stop, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		for {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			b.appendEvents(t, events.TopicChargePaid)
		}
	}()
	defer func() { close(stop); <-stopped }()
	rcv.waitUntil(func(ds []delivery) bool { return len(ds) >= 5 })
	ts := []string{string(events.TopicChargePaid), string(events.TopicChargeRefunded)}
	if _, err := b.svc.Update(context.Background(), ep.ID, outgoing.Patch{Topics: &ts}); err != nil {
		t.Fatal(err)
	}
	b.appendEvents(t, events.TopicChargeRefunded)
	// Once the cursor is past the new event, it was delivered or skipped.
	deadline := time.Now().Add(waitFor)
	for passed := false; !passed; time.Sleep(20 * time.Millisecond) {
		if err := b.db.Get(&passed, `SELECT (e.after_xid, e.after_id) >= (o.xid, o.id) FROM webhook_endpoints e, outbox o
			WHERE e.id = $1 AND o.topic = 'charge.refunded'`, ep.ID); err != nil {
			t.Fatal(err)
		}
		if time.Now().After(deadline) {
			t.Fatal("the cursor never passed the charge.refunded")
		}
	}
	for _, d := range rcv.deliveries() {
		if d.Event.Topic == string(events.TopicChargeRefunded) {
			return
		}
	}
	t.Error("the charge.refunded committed after its topic was added was passed over")
}

// Two dispatchers, a short timeout (so a short lease) and replays that
// take longer than the lease: the holder renews its lease as it goes,
// so the endpoint never has two requests in flight at once and no
// replay is sent twice.
func TestALeaseOutlastsLongReplaysAcrossDispatchers(t *testing.T) {
	t.Parallel()
	// A lease of 3 × (200 ms + 1 s); 60 replays of 100 ms take twice it.
	b := setup(t, func(c *outgoing.Config) { c.Timeout = 200 * time.Millisecond })
	var mu sync.Mutex
	inFlight, most := 0, 0
	slow := false
	seen := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		inFlight++
		most = max(most, inFlight)
		s := slow
		if s {
			seen[r.Header.Get("webhook-id")]++
		}
		mu.Unlock()
		if s {
			time.Sleep(100 * time.Millisecond)
		}
		mu.Lock()
		inFlight--
		mu.Unlock()
	}))
	defer srv.Close()
	ep := b.create(t, srv.URL)
	b.run(t)
	b.run(t)
	const n = 60
	for range n {
		b.appendEvents(t, events.TopicChargePaid)
	}
	// Replays are of events behind the cursor: wait until it passed all.
	deadline := time.Now().Add(waitFor)
	for passed := false; !passed; time.Sleep(20 * time.Millisecond) {
		if err := b.db.Get(&passed, `SELECT NOT EXISTS (SELECT 1 FROM webhook_endpoints e JOIN outbox o
			ON (o.xid, o.id) > (e.after_xid, e.after_id) WHERE e.id = $1)`, ep.ID); err != nil {
			t.Fatal(err)
		}
		if time.Now().After(deadline) {
			t.Fatal("the cursor never passed the events")
		}
	}
	mu.Lock()
	slow, most = true, 0
	mu.Unlock()
	since, until := time.Now().Add(-time.Hour), time.Now().Add(time.Hour)
	if q, err := b.svc.Replay(context.Background(), ep.ID, outgoing.Replay{Since: &since, Until: &until}); err != nil || q != n {
		t.Fatalf("replay: %d queued, %v; want %d", q, err, n)
	}
	for pending := 1; pending > 0; time.Sleep(20 * time.Millisecond) {
		if err := b.db.Get(&pending, `SELECT count(*) FROM webhook_replays`); err != nil {
			t.Fatal(err)
		}
		if time.Now().After(deadline.Add(waitFor)) {
			t.Fatalf("%d replays still pending", pending)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if most > 1 {
		t.Errorf("%d requests to the endpoint in flight at once, want 1", most)
	}
	for id, c := range seen {
		if c > 1 {
			t.Errorf("replay %s sent %d times", id, c)
		}
	}
	if len(seen) != n {
		t.Errorf("%d replays received, want %d", len(seen), n)
	}
}

// The webhook_endpoint.disabled event names the endpoint and why, never
// its URL: it reaches read-scope streams and every other subscriber.
func TestTheDisabledEventCarriesNoURL(t *testing.T) {
	t.Parallel()
	b := setup(t)
	rcv := newReceiver(t, func(int) int { return http.StatusServiceUnavailable })
	ep := b.create(t, rcv.srv.URL+"/hook?token=s3cret", string(events.TopicChargePaid))
	b.run(t)
	b.appendEvents(t, events.TopicChargePaid)
	deadline := time.Now().Add(waitFor)
	var payload []byte
	for {
		err := b.db.Get(&payload, `SELECT payload FROM outbox WHERE topic = 'webhook_endpoint.disabled'`)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no webhook_endpoint.disabled event: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	var got map[string]any
	if err := json.Unmarshal(payload, &got); err != nil {
		t.Fatal(err)
	}
	if _, ok := got["url"]; ok || strings.Contains(string(payload), "s3cret") {
		t.Errorf("payload %s carries the URL", payload)
	}
	if got["endpoint_id"] != float64(ep.ID) || got["reason"] != "failing" {
		t.Errorf("payload %s, want endpoint_id %d and reason failing", payload, ep.ID)
	}
}

// failing_since is the streak's first failure, not the latest.
func TestFailingSinceIsTheFirstFailure(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *outgoing.Config) {
		c.Schedule = []time.Duration{50 * time.Millisecond, 50 * time.Millisecond, time.Hour}
	})
	rcv := newReceiver(t, func(int) int { return http.StatusServiceUnavailable })
	ep := b.create(t, rcv.srv.URL)
	b.run(t)
	b.appendEvents(t, events.TopicChargePaid)
	first := waitAttempts(t, b, ep.ID, 1)
	as := waitAttempts(t, b, ep.ID, 3)
	got, err := b.svc.Get(context.Background(), ep.ID)
	if err != nil {
		t.Fatal(err)
	}
	// Recorded when the first attempt ended: before the second began.
	oldest, second := first[len(first)-1].At, as[len(as)-2].At
	if got.FailingSince == nil || got.FailingSince.Before(oldest) || !got.FailingSince.Before(second) || got.FailedAttempts != 3 {
		t.Errorf("after 3 failures (at %s, %s, %s): failing since %v, %d failed attempts; want since the first, 3",
			oldest, second, as[0].At, got.FailingSince, got.FailedAttempts)
	}
}

// A replay delivered while the head event is being retried leaves the
// head's count of attempts as it was: its next attempt is numbered on.
func TestAReplayDeliveredKeepsTheHeadsAttemptCount(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *outgoing.Config) { c.Schedule = []time.Duration{time.Second, time.Hour} })
	rcv := newReceiver(t, nil)
	rcv.srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The head (a refund) fails; the replayed payment is accepted.
		if body, _ := io.ReadAll(r.Body); strings.Contains(string(body), string(events.TopicChargeRefunded)) {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	})
	ep := b.create(t, rcv.srv.URL)
	b.run(t)
	b.appendEvents(t, events.TopicChargePaid)
	paid := b.allEvents(t, 1)[0]
	deadline := time.Now().Add(waitFor)
	for passed := false; !passed; time.Sleep(20 * time.Millisecond) {
		if err := b.db.Get(&passed, `SELECT after_id >= $2 FROM webhook_endpoints WHERE id = $1`, ep.ID, paid.ID); err != nil {
			t.Fatal(err)
		}
		if time.Now().After(deadline) {
			t.Fatal("the cursor never passed the payment")
		}
	}
	b.appendEvents(t, events.TopicChargeRefunded)
	// The refund's first attempt failed; the next is in a second.
	waitAttemptsUntil(t, b, ep.ID, func(as []outgoing.Attempt) bool {
		return len(as) > 0 && as[0].Topic == string(events.TopicChargeRefunded)
	})
	if n, err := b.svc.Replay(context.Background(), ep.ID, outgoing.Replay{EventID: paid.ID}); err != nil || n != 1 {
		t.Fatalf("replay: %d queued, %v", n, err)
	}
	as := waitAttemptsUntil(t, b, ep.ID, func(as []outgoing.Attempt) bool {
		return len(as) > 0 && as[0].Topic == string(events.TopicChargeRefunded) && as[0].Attempt > 1 || len(as) > 1 && as[1].Replay
	})
	if !as[1].Replay || as[0].Replay || as[0].Topic != string(events.TopicChargeRefunded) {
		t.Fatalf("attempts %+v: want the refund, the replay, then the refund again", as)
	}
	got, err := b.svc.Get(context.Background(), ep.ID)
	if err != nil {
		t.Fatal(err)
	}
	if as[0].Attempt != 2 || got.FailedAttempts != 2 {
		t.Errorf("the refund's attempt after the replay is numbered %d, %d failed attempts; want 2, 2", as[0].Attempt, got.FailedAttempts)
	}
}

// Once a secret is stored sealed, a process without the key (the CLI run
// without the config) refuses to create or rotate a secret in the clear.
func TestNoSecretStoredInTheClearOnceOneIsSealed(t *testing.T) {
	t.Parallel()
	key := make([]byte, 32)
	b := setup(t, func(c *outgoing.Config) { c.Key = key })
	sealed := b.create(t, "http://127.0.0.1:9/sealed")
	keyless := b.svc
	keyless.Config.Key = nil
	if _, err := keyless.Create(context.Background(), outgoing.NewEndpoint{URL: "http://127.0.0.1:9/clear"}); !errors.Is(err, outgoing.ErrKeyRequired) {
		t.Errorf("create without the key: %v, want ErrKeyRequired", err)
	} else if k, ok := kind.Of(err); !ok || k.Kind != kind.Unavailable {
		t.Errorf("create without the key: %v is not an Unavailable refusal (the API would answer 500)", err)
	}
	if _, err := keyless.Rotate(context.Background(), sealed.ID, 0); !errors.Is(err, outgoing.ErrKeyRequired) {
		t.Errorf("rotate without the key: %v, want ErrKeyRequired", err)
	}
	var clear int
	if err := b.db.Get(&clear, `SELECT count(*) FROM webhook_endpoints WHERE substring(secret FROM 1 FOR 1) <> '\x01'::bytea`); err != nil {
		t.Fatal(err)
	}
	if clear != 0 {
		t.Errorf("%d secrets stored in the clear", clear)
	}
	if _, err := b.svc.Rotate(context.Background(), sealed.ID, 0); err != nil {
		t.Errorf("rotate with the key: %v", err)
	}
}
