package outgoing_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/razao/razao/events"
	"github.com/razao/razao/internal/pgtest"
	"github.com/razao/razao/outgoing"
)

// Every delivery verifies with the official library under the endpoint's
// secret; the same request with its body changed by one byte does not;
// the endpoint receives its events in the outbox's order, each once,
// including events of transactions that committed out of their order.
func TestDeliveriesAreSignedAndInCommitOrder(t *testing.T) {
	t.Parallel()
	b := setup(t)
	rcv := newReceiver(t, nil)
	ep := b.create(t, rcv.srv.URL)
	rcv.trust(ep.Secret)
	b.run(t)

	// A transaction that began first commits last: its events sort first
	// ((xid, id) order) and are held back, never skipped.
	early := b.db.MustBeginTx(context.Background(), nil)
	defer early.Rollback()
	if err := events.AppendAll(context.Background(), early, events.Draft{Topic: events.TopicChargePaid, ChargeID: "early"}); err != nil {
		t.Fatal(err)
	}
	for range 10 {
		b.appendEvents(t, events.TopicChargePaid, events.TopicAccessGranted, events.TopicChargeRefunded)
	}
	if err := early.Commit(); err != nil {
		t.Fatal(err)
	}
	want := b.allEvents(t, 31)
	got := rcv.waitUntil(func(ds []delivery) bool { return len(ds) >= 31 })
	rcv.checkVerified()
	for i, e := range want {
		if got[i].Event.ID != e.ID || got[i].ID != outgoing.MessageID(ep.ID, e.ID) {
			t.Fatalf("delivery %d: event %d (%s), want %d", i, got[i].Event.ID, got[i].ID, e.ID)
		}
	}

	wh, err := standardwebhooks.NewWebhook(ep.Secret)
	if err != nil {
		t.Fatal(err)
	}
	tampered := slices.Clone(got[0].Body)
	tampered[len(tampered)-2] ^= 1
	if err := wh.Verify(tampered, got[0].Header); err == nil {
		t.Error("a tampered body verified")
	}
	if err := wh.Verify(got[0].Body, got[0].Header); err != nil {
		t.Errorf("the untouched body no longer verifies: %v", err)
	}
}

// A receiver that answers 500 twice and then 200 gets the event three
// times with the same webhook-id, and the next event only after; the
// attempts log has the three, the failed ones with their next try.
func TestRetriedWithTheSameIDUntilAccepted(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *outgoing.Config) {
		c.Schedule = []time.Duration{5 * time.Millisecond, 5 * time.Millisecond, 5 * time.Millisecond}
	})
	rcv := newReceiver(t, func(n int) int {
		if n <= 2 {
			return http.StatusInternalServerError
		}
		return http.StatusOK
	})
	ep := b.create(t, rcv.srv.URL)
	rcv.trust(ep.Secret)
	b.run(t)
	b.appendEvents(t, events.TopicChargePaid)
	b.appendEvents(t, events.TopicChargeRefunded)
	got := rcv.waitUntil(func(ds []delivery) bool { return len(ds) >= 4 })
	rcv.checkVerified()
	if got[0].ID != got[1].ID || got[1].ID != got[2].ID || got[3].ID == got[0].ID {
		t.Fatalf("webhook-ids %s %s %s %s: want the first three equal, the fourth another", got[0].ID, got[1].ID, got[2].ID, got[3].ID)
	}
	if got[3].Event.Topic != string(events.TopicChargeRefunded) {
		t.Errorf("fourth delivery %s, want the second event", got[3].Event.Topic)
	}
	var attempts []outgoing.Attempt
	deadline := time.Now().Add(waitFor)
	for len(attempts) < 4 && time.Now().Before(deadline) {
		var err error
		if attempts, err = b.svc.Attempts(context.Background(), ep.ID, 0, 0); err != nil {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if len(attempts) != 4 {
		t.Fatalf("%d attempts logged, want 4", len(attempts))
	}
	slices.Reverse(attempts)
	for i, wantStatus := range []int{500, 500, 200, 200} {
		a := attempts[i]
		if a.Status == nil || *a.Status != wantStatus {
			t.Errorf("attempt %d: status %v, want %d", i, a.Status, wantStatus)
		}
		if (a.NextAt != nil) != (wantStatus == 500) {
			t.Errorf("attempt %d: next try %v", i, a.NextAt)
		}
	}
	if attempts[2].Attempt != 3 || attempts[3].Attempt != 1 {
		t.Errorf("attempt numbers %d, %d: want 3, 1", attempts[2].Attempt, attempts[3].Attempt)
	}
	if !strings.Contains(attempts[0].Response, `"ok"`) {
		t.Errorf("response excerpt %q", attempts[0].Response)
	}
}

// A receiver that never answers holds one delivery of its own endpoint;
// another endpoint receives every event meanwhile.
func TestADeadReceiverDoesNotDelayALiveOne(t *testing.T) {
	t.Parallel()
	b := setup(t)
	release := make(chan struct{})
	blocked := make(chan struct{}, 100)
	dead := newReceiver(t, nil)
	dead.srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		blocked <- struct{}{}
		<-release
	})
	live := newReceiver(t, nil)
	b.create(t, dead.srv.URL)
	lep := b.create(t, live.srv.URL)
	live.trust(lep.Secret)
	b.run(t)
	// Registered after run's, so it runs first: the hanging attempt ends
	// before the dispatcher is waited for.
	t.Cleanup(func() { close(release) })
	for range 20 {
		b.appendEvents(t, events.TopicChargePaid)
	}
	select {
	case <-blocked:
	case <-time.After(waitFor):
		t.Fatal("the dead receiver was never called")
	}
	live.waitUntil(func(ds []delivery) bool { return len(ds) >= 20 })
	live.checkVerified()
	if len(blocked) != 0 {
		t.Errorf("the dead receiver got a second request while its first hangs")
	}
}

// During a rotation's overlap every delivery carries two signatures, one
// valid under the old secret and one under the new; after it, only the
// new one signs.
func TestRotationSignsWithBothSecrets(t *testing.T) {
	t.Parallel()
	b := setup(t)
	rcv := newReceiver(t, nil)
	ep := b.create(t, rcv.srv.URL)
	rotated, err := b.svc.Rotate(context.Background(), ep.ID, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if rotated.Secret == ep.Secret || !strings.HasPrefix(rotated.Secret, "whsec_") || rotated.PreviousSecretUntil == nil {
		t.Fatalf("rotation: %+v", rotated)
	}
	rcv.trust(ep.Secret, rotated.Secret) // each must verify alone
	b.run(t)
	b.appendEvents(t, events.TopicChargePaid)
	got := rcv.waitUntil(func(ds []delivery) bool { return len(ds) >= 1 })
	rcv.checkVerified()
	if n := len(strings.Fields(got[0].Header.Get("webhook-signature"))); n != 2 {
		t.Errorf("%d signatures, want 2", n)
	}
	if again, err := b.svc.Get(context.Background(), ep.ID); err != nil || again.Secret != "" {
		t.Errorf("GET shows the secret (%v)", err)
	}
}

// A replay of one event, and of a time range, sends those events again
// with their webhook-ids, and the stream goes on after.
func TestReplay(t *testing.T) {
	t.Parallel()
	b := setup(t)
	rcv := newReceiver(t, nil)
	ep := b.create(t, rcv.srv.URL)
	rcv.trust(ep.Secret)
	b.run(t)
	b.appendEvents(t, events.TopicChargePaid, events.TopicAccessGranted, events.TopicChargeRefunded)
	first := rcv.waitUntil(func(ds []delivery) bool { return len(ds) >= 3 })
	// The cursor is saved within a second of the last delivery.
	deadline := time.Now().Add(waitFor)
	var n int
	for n == 0 && time.Now().Before(deadline) {
		var err error
		if n, err = b.svc.Replay(context.Background(), ep.ID, outgoing.Replay{EventID: first[1].Event.ID}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	got := rcv.waitUntil(func(ds []delivery) bool { return len(ds) >= 4 })
	if got[3].ID != first[1].ID {
		t.Errorf("replayed %s, want %s", got[3].ID, first[1].ID)
	}
	// A replay is queued once: wait until the first is done.
	for pending := 1; pending > 0 && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		b.db.Get(&pending, `SELECT count(*) FROM webhook_replays`)
	}
	since, until := time.Now().Add(-time.Hour), time.Now().Add(time.Hour)
	if n, err := b.svc.Replay(context.Background(), ep.ID, outgoing.Replay{Since: &since, Until: &until}); err != nil || n != 3 {
		t.Fatalf("range replay: %d queued, %v; want 3", n, err)
	}
	b.appendEvents(t, events.TopicChargeFailed)
	got = rcv.waitUntil(func(ds []delivery) bool { return len(ds) >= 8 })
	rcv.checkVerified()
	for i, d := range got[4:7] {
		if d.ID != first[i].ID {
			t.Errorf("range replay %d: %s, want %s", i, d.ID, first[i].ID)
		}
	}
	if got[7].Event.Topic != string(events.TopicChargeFailed) {
		t.Errorf("after the replays: %s", got[7].Event.Topic)
	}
	if _, err := b.svc.Replay(context.Background(), ep.ID, outgoing.Replay{EventID: 1 << 40}); err == nil {
		t.Error("a replay of an event that does not exist was taken")
	}
}

// An endpoint that fails every attempt of the schedule is disabled, says
// so in GET, and the outbox carries webhook_endpoint.disabled; enabling
// it again resumes at the event it stopped on.
func TestDisabledAfterTheWholeSchedule(t *testing.T) {
	t.Parallel()
	b := setup(t)
	failing := true
	rcv := newReceiver(t, func(int) int {
		if failing {
			return http.StatusServiceUnavailable
		}
		return http.StatusOK
	})
	ep := b.create(t, rcv.srv.URL, string(events.TopicChargePaid))
	rcv.trust(ep.Secret)
	b.run(t)
	b.appendEvents(t, events.TopicChargePaid)
	rcv.waitUntil(func(ds []delivery) bool { return len(ds) >= 3 })
	var got outgoing.Endpoint
	deadline := time.Now().Add(waitFor)
	for time.Now().Before(deadline) {
		var err error
		if got, err = b.svc.Get(context.Background(), ep.ID); err != nil {
			t.Fatal(err)
		}
		if !got.Enabled {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if got.Enabled || got.DisabledReason != "failing" || got.FailedAttempts != 3 || got.FailingSince == nil {
		t.Fatalf("after 3 failed attempts: %+v", got)
	}
	var n int
	b.db.Get(&n, `SELECT count(*) FROM outbox WHERE topic = 'webhook_endpoint.disabled' AND (payload->>'endpoint_id')::bigint = $1`, ep.ID)
	if n != 1 {
		t.Errorf("%d webhook_endpoint.disabled events, want 1", n)
	}
	if len(rcv.deliveries()) != 3 {
		t.Errorf("%d deliveries to a disabled endpoint, want 3", len(rcv.deliveries()))
	}
	rcv.mu.Lock()
	failing = false
	rcv.mu.Unlock()
	on := true
	if _, err := b.svc.Update(context.Background(), ep.ID, outgoing.Patch{Enabled: &on}); err != nil {
		t.Fatal(err)
	}
	again := rcv.waitUntil(func(ds []delivery) bool { return len(ds) >= 4 })
	if again[3].ID != again[0].ID || again[3].Answer != 200 {
		t.Errorf("after enabling: %s answered %d, want %s accepted", again[3].ID, again[3].Answer, again[0].ID)
	}
}

// Secrets sealed under the configured key are not in the database in the
// clear, and deliveries still verify.
func TestSecretsSealedUnderTheKey(t *testing.T) {
	t.Parallel()
	key := make([]byte, 32)
	for i := range key {
		key[i] = byte(i)
	}
	b := setup(t, func(c *outgoing.Config) { c.Key = key })
	rcv := newReceiver(t, nil)
	ep := b.create(t, rcv.srv.URL)
	rcv.trust(ep.Secret)
	var stored []byte
	if err := b.db.Get(&stored, `SELECT secret FROM webhook_endpoints WHERE id = $1`, ep.ID); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(stored), strings.TrimPrefix(ep.Secret, "whsec_")) {
		t.Fatal("the secret is stored in the clear")
	}
	b.run(t)
	b.appendEvents(t, events.TopicChargePaid)
	rcv.waitUntil(func(ds []delivery) bool { return len(ds) >= 1 })
	rcv.checkVerified()
}

// A redirect is not followed: the 3xx is a failed attempt, and the
// address it names is never called.
func TestRedirectsAreNotFollowed(t *testing.T) {
	t.Parallel()
	b := setup(t)
	elsewhere := newReceiver(t, nil)
	rcv := newReceiver(t, nil)
	rcv.srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rcv.serve(&redirector{ResponseWriter: w, to: elsewhere.srv.URL}, r)
	})
	rcv.answer = func(int) int { return http.StatusFound }
	ep := b.create(t, rcv.srv.URL)
	rcv.trust(ep.Secret)
	b.run(t)
	b.appendEvents(t, events.TopicChargePaid)
	// Every attempt of the schedule fails on the 302 itself.
	deadline := time.Now().Add(waitFor)
	for {
		e, err := b.svc.Get(context.Background(), ep.ID)
		if err != nil {
			t.Fatal(err)
		}
		if !e.Enabled {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not disabled after %s: %+v", waitFor, e)
		}
		time.Sleep(20 * time.Millisecond)
	}
	as, err := b.svc.Attempts(context.Background(), ep.ID, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(as) != 3 {
		t.Errorf("%d attempts logged, want 3", len(as))
	}
	for _, a := range as {
		if a.Status == nil || *a.Status != http.StatusFound {
			t.Errorf("attempt %d: status %v, want the 302", a.Attempt, a.Status)
		}
	}
	if n := len(elsewhere.deliveries()); n != 0 {
		t.Errorf("the redirect's target got %d requests", n)
	}
}

type redirector struct {
	http.ResponseWriter
	to string
}

func (r *redirector) WriteHeader(code int) {
	r.Header().Set("Location", r.to)
	r.ResponseWriter.WriteHeader(code)
}

// A new endpoint receives what is committed from its creation on, not
// the outbox's past, even while a transaction of another database is
// open (which holds back the snapshot's xmin, not this database's
// horizon).
func TestANewEndpointStartsNow(t *testing.T) {
	t.Parallel()
	b := setup(t)
	other := pgtest.New(t)
	long := other.MustBeginTx(context.Background(), nil)
	defer long.Rollback()
	long.MustExec(`SELECT pg_current_xact_id()`)
	b.appendEvents(t, events.TopicChargePaid, events.TopicChargeRefunded)
	b.allEvents(t, 2)
	rcv := newReceiver(t, nil)
	ep := b.create(t, rcv.srv.URL)
	rcv.trust(ep.Secret)
	b.run(t)
	b.appendEvents(t, events.TopicChargeFailed)
	got := rcv.waitUntil(func(ds []delivery) bool { return len(ds) >= 1 })
	if got[0].Event.Topic != string(events.TopicChargeFailed) {
		t.Errorf("first delivery %s, want the event committed after the creation", got[0].Event.Topic)
	}
	b.appendEvents(t, events.TopicChargePaid)
	got = rcv.waitUntil(func(ds []delivery) bool { return len(ds) >= 2 })
	if len(got) != 2 {
		t.Errorf("%d deliveries, want 2", len(got))
	}
}

// A secret sealed under a key the dispatcher lacks fails each attempt,
// logged with its reason, rather than stalling the endpoint unseen.
func TestASecretThatCannotBeOpenedFailsTheAttempt(t *testing.T) {
	t.Parallel()
	key := make([]byte, 32)
	b := setup(t, func(c *outgoing.Config) { c.Key = key })
	rcv := newReceiver(t, nil)
	ep := b.create(t, rcv.srv.URL)
	b.cfg.Key = nil // the dispatcher runs without the key
	b.run(t)
	b.appendEvents(t, events.TopicChargePaid)
	deadline := time.Now().Add(waitFor)
	var as []outgoing.Attempt
	for len(as) == 0 && time.Now().Before(deadline) {
		as, _ = b.svc.Attempts(context.Background(), ep.ID, 0, 0)
		time.Sleep(10 * time.Millisecond)
	}
	if len(as) == 0 || as[0].Error == nil || !strings.Contains(*as[0].Error, "no webhooks key") {
		t.Fatalf("attempts %+v, want the missing key named", as)
	}
	if n := len(rcv.deliveries()); n != 0 {
		t.Errorf("%d unsigned deliveries", n)
	}
}

// At shutdown a delivery in flight finishes, its success is saved and
// the lease given back: a restart goes on after it at once.
func TestShutdownFinishesTheDeliveryInFlight(t *testing.T) {
	t.Parallel()
	b := setup(t)
	called, release := make(chan struct{}, 10), make(chan struct{})
	rcv := newReceiver(t, nil)
	rcv.srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		called <- struct{}{}
		<-release
		w.WriteHeader(http.StatusNoContent)
	})
	ep := b.create(t, rcv.srv.URL)
	d := outgoing.NewDispatcher(b.db, b.cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { d.Run(ctx); close(done) }()
	b.appendEvents(t, events.TopicChargePaid)
	select {
	case <-called:
	case <-time.After(waitFor):
		t.Fatal("never delivered")
	}
	cancel()
	select {
	case <-done:
		t.Fatal("Run returned with a delivery in flight")
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	<-done
	var row struct {
		Leased  bool  `db:"leased"`
		AfterID int64 `db:"after_id"`
	}
	if err := b.db.Get(&row, `SELECT lease_token IS NOT NULL AS leased, after_id FROM webhook_endpoints WHERE id = $1`, ep.ID); err != nil {
		t.Fatal(err)
	}
	evs := b.allEvents(t, 1)
	if row.Leased || row.AfterID != evs[0].ID {
		t.Errorf("after shutdown: leased %v, cursor at event %d; want released, at %d", row.Leased, row.AfterID, evs[0].ID)
	}
}

// The metrics count the attempts and show an endpoint disabled after
// its schedule.
func TestMetricsShowADisabledEndpoint(t *testing.T) {
	t.Parallel()
	b := setup(t)
	rcv := newReceiver(t, func(int) int { return http.StatusBadGateway })
	ep := b.create(t, rcv.srv.URL)
	d := b.run(t)
	b.appendEvents(t, events.TopicChargePaid)
	deadline := time.Now().Add(waitFor)
	for {
		if e, _ := b.svc.Get(context.Background(), ep.ID); !e.Enabled {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("never disabled")
		}
		time.Sleep(10 * time.Millisecond)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(d.Collectors()...)
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			key := f.GetName()
			for _, l := range m.GetLabel() {
				key += "{" + l.GetName() + "=" + l.GetValue() + "}"
			}
			got[key] = m.GetGauge().GetValue() + m.GetCounter().GetValue()
		}
	}
	for key, v := range map[string]float64{
		"razao_outgoing_webhook_endpoints{state=disabled_failing}": 1, "razao_outgoing_webhook_endpoints{state=ok}": 0,
		"razao_outgoing_webhook_endpoints_disabled_total": 1, "razao_outgoing_webhook_attempts_total{result=failed}": 3,
	} {
		if got[key] != v {
			t.Errorf("%s = %v, want %v", key, got[key], v)
		}
	}
}

// Under a bound on attempts a second every event still arrives, in order,
// and never faster than the bound: no second of arrivals holds more than
// the bound, its burst and one for the network's jitter. (A slow machine
// only spreads them more; without the bound they all come at once.)
func TestABoundOnDeliveriesPerSecondDelaysNothingAway(t *testing.T) {
	t.Parallel()
	const perSecond, n = 10, 30
	b := setup(t, func(c *outgoing.Config) { c.MaxPerSecond = perSecond })
	rcv := newReceiver(t, nil)
	ep := b.create(t, rcv.srv.URL)
	rcv.trust(ep.Secret)
	b.run(t)
	for range n / 5 {
		b.appendEvents(t, events.TopicChargePaid, events.TopicAccessGranted, events.TopicChargeRefunded, events.TopicChargeFailed, events.TopicChargePaid)
	}
	want := b.allEvents(t, n)
	got := rcv.waitUntil(func(ds []delivery) bool { return len(ds) >= n })
	rcv.checkVerified()
	for i := range want {
		if got[i].Event.ID != want[i].ID {
			t.Fatalf("delivery %d: event %d, want %d", i, got[i].Event.ID, want[i].ID)
		}
	}
	const most = perSecond + max(1, perSecond/10) + 1
	for i := range got {
		in := 0
		for _, d := range got[i:] {
			if d.At.Sub(got[i].At) < time.Second {
				in++
			}
		}
		if in > most {
			t.Fatalf("%d deliveries arrived within a second of delivery %d, want at most %d (%d a second)", in, i, most, perSecond)
		}
	}
}
