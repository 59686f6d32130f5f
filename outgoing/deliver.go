package outgoing

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	mrand "math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
	"github.com/prometheus/client_golang/prometheus"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"golang.org/x/time/rate"

	"github.com/razao/razao/events"
	"github.com/razao/razao/internal/pgarray"
)

// Tuning of the delivery loop. A holder writes its progress (cursor,
// attempts log, lease) after flushEvery events or flushAfter, whichever
// comes first: one write per event would be twenty thousand writes a
// second for ten endpoints at 1,000 payments (2,000 events) a second. A crash loses at most that
// much progress, and those events are sent again with the same
// webhook-id: delivery is at least once, and the app deduplicates.
const (
	batchSize  = 500
	flushEvery = 500
	flushAfter = time.Second
	// holdMax is the longest one claim keeps an endpoint: then it is
	// given back (due at once) so that, with more endpoints than
	// MaxConcurrent, every one gets its turn. Shortened to fit in the
	// lease with an attempt (Dispatcher.holdMax).
	holdMax = 30 * time.Second
	// leaseMargin is what must be left of a lease when an attempt
	// ends: an attempt begins only with Timeout+leaseMargin left, the
	// lease renewed first if less is.
	leaseMargin = time.Second
	// minReadGap spaces a holder's reads of the outbox when events trickle
	// in: one read per commit would be one per endpoint per commit, and
	// each read computes the outbox's horizon (pg_locks,
	// pg_stat_activity). 50 ms adds 25 ms to an event's way on average,
	// and bounds ten endpoints to 200 reads a second.
	minReadGap = 50 * time.Millisecond
)

// Dispatcher delivers the outbox to the endpoints, one goroutine per
// endpoint it holds a lease on, at most Config.MaxConcurrent at once: an
// endpoint that is slow or dead holds one goroutine (an attempt lasts at
// most Config.Timeout) and delays no other, and the webhook intake never
// waits for it (the outbox is written in the intake's transactions; the
// dispatcher only reads it). Every replica runs one; the leases keep two
// from delivering to one endpoint at once.
type Dispatcher struct {
	db     *sqlx.DB
	cfg    Config
	log    *slog.Logger
	now    func() time.Time
	client *http.Client
	lease  time.Duration
	// holdMax is the package's holdMax, shortened so that holdMax plus
	// one attempt ends within a lease even unrenewed.
	holdMax time.Duration
	dbURL   string

	// OnCommit, when set, is called after the dispatcher commits an
	// outbox event (an endpoint disabled), to announce it (events.Notifier).
	OnCommit func()

	tail    *tail
	cacheMu sync.Mutex
	bodies  map[int64][]byte // see body

	kick   chan struct{}
	wakeMu sync.Mutex
	wakeCh chan struct{}

	limiter *rate.Limiter // nil: Config.MaxPerSecond is 0

	attempts *prometheus.CounterVec
	lag      prometheus.Histogram
	disabled prometheus.Counter
}

// NewDispatcher returns a dispatcher over db; now is the clock of
// signatures, schedules and logs.
func NewDispatcher(db *sqlx.DB, cfg Config, log *slog.Logger, now func() time.Time) *Dispatcher {
	cfg = cfg.withDefaults()
	if now == nil {
		now = time.Now
	}
	guard := Guard{AllowPrivate: cfg.AllowPrivateTargets, Resolve: cfg.Resolve, Timeout: cfg.Timeout}
	transport := &http.Transport{
		// Never a proxy from the environment: the dial to a proxy would
		// be the only one the guard sees.
		Proxy:                  nil,
		DialContext:            guard.DialContext,
		ForceAttemptHTTP2:      true,
		TLSHandshakeTimeout:    cfg.Timeout,
		ResponseHeaderTimeout:  cfg.Timeout,
		MaxIdleConnsPerHost:    2,
		IdleConnTimeout:        90 * time.Second,
		MaxResponseHeaderBytes: 64 << 10,
		TLSClientConfig:        &tls.Config{RootCAs: cfg.RootCAs, MinVersion: tls.VersionTLS12},
	}
	d := &Dispatcher{
		db: db, cfg: cfg, log: log, now: now,
		client: &http.Client{
			Transport: transport,
			Timeout:   cfg.Timeout,
			// A redirect is not followed: it would send the event
			// (and its signature) somewhere the operator did not name.
			// The 3xx is the answer, and a failed attempt.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
		// A holder writes at least every flushAfter, and an attempt lasts
		// at most Timeout: a lease of three times their sum is renewed
		// long before it runs out, and a crashed replica's endpoints are
		// taken over within it.
		lease:  3 * (cfg.Timeout + flushAfter),
		tail:   newTail(db),
		kick:   make(chan struct{}, 1),
		wakeCh: make(chan struct{}),
		attempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "razao_outgoing_webhook_attempts_total",
			Help: "Attempts to deliver an event to a webhook endpoint, by result (delivered, failed).",
		}, []string{"result"}),
		lag: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "razao_outgoing_webhook_delivery_lag_seconds",
			Help:    "From an event's creation in the outbox to the endpoint's 2xx.",
			Buckets: prometheus.ExponentialBuckets(0.005, 2, 20),
		}),
		disabled: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "razao_outgoing_webhook_endpoints_disabled_total",
			Help: "Webhook endpoints disabled after failing every attempt of the retry schedule.",
		}),
	}
	d.holdMax = min(holdMax, d.lease-cfg.Timeout-leaseMargin)
	if cfg.MaxPerSecond > 0 {
		d.limiter = rate.NewLimiter(rate.Limit(cfg.MaxPerSecond), max(1, cfg.MaxPerSecond/10))
	}
	return d
}

// Collectors are the dispatcher's metrics, for a registry.
func (d *Dispatcher) Collectors() []prometheus.Collector {
	return []prometheus.Collector{d.attempts, d.lag, d.disabled, d.tail.reads, statesCollector{db: d.db}}
}

// Listen makes Run wake on every outbox notification of the database at
// dbURL (events.Channel), not only every Config.Interval.
func (d *Dispatcher) Listen(dbURL string) { d.dbURL = dbURL }

// Kick wakes the dispatcher: events were committed. It never blocks.
func (d *Dispatcher) Kick() {
	select {
	case d.kick <- struct{}{}:
	default:
	}
	d.wakeMu.Lock()
	close(d.wakeCh)
	d.wakeCh = make(chan struct{})
	d.wakeMu.Unlock()
}

func (d *Dispatcher) woken() <-chan struct{} {
	d.wakeMu.Lock()
	defer d.wakeMu.Unlock()
	return d.wakeCh
}

// Run delivers until ctx ends; then the holders finish the attempt they
// are making, write their progress and give their leases back, so that a
// restart or another replica goes on at once.
func (d *Dispatcher) Run(ctx context.Context) {
	if d.dbURL != "" {
		go d.listen(ctx)
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	held := make(chan struct{}, d.cfg.MaxConcurrent)
	done := make(chan struct{}, d.cfg.MaxConcurrent)
	tick := time.NewTicker(d.cfg.Interval)
	defer tick.Stop()
	for {
		if free := d.cfg.MaxConcurrent - len(held); free > 0 {
			// The leases run out lease after the claim's statement,
			// which began after this.
			claimed := time.Now()
			token, ids, err := d.claim(ctx, free)
			if err != nil && ctx.Err() == nil {
				d.log.Warn("webhooks: claim endpoints", "error", err)
			}
			for _, id := range ids {
				held <- struct{}{}
				wg.Add(1)
				go func() {
					defer wg.Done()
					d.hold(ctx, id, token, claimed.Add(d.lease))
					<-held
					// A wake-up, never waited on: after ctx ends Run no
					// longer reads done but waits for the holders, and
					// a holder blocked here would hang it.
					select {
					case done <- struct{}{}:
					default:
					}
				}()
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-d.kick:
		case <-tick.C:
		case <-done:
		}
	}
}

// listen turns the outbox's notifications into kicks.
func (d *Dispatcher) listen(ctx context.Context) {
	l := pq.NewListener(d.dbURL, time.Second, 30*time.Second, nil)
	defer l.Close()
	if err := l.Listen(events.Channel); err != nil {
		d.log.Warn("webhooks: listen for events; polling only", "error", err)
		return
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-l.Notify:
			d.Kick()
		case <-time.After(90 * time.Second):
			go l.Ping()
		}
	}
}

func (d *Dispatcher) claim(ctx context.Context, n int) (string, []int64, error) {
	b := make([]byte, 16)
	rand.Read(b)
	token := hex.EncodeToString(b)
	var ids []int64
	err := sqlx.SelectContext(ctx, d.db, &ids, claimSQL, token, d.now(), n, interval(d.lease))
	if err != nil {
		return "", nil, fmt.Errorf("claim webhook endpoints: %w", err)
	}
	return token, ids, nil
}

// interval is d as a PostgreSQL interval.
func interval(d time.Duration) string {
	return strconv.FormatInt(d.Microseconds(), 10) + " microseconds"
}

// errLeaseLost: the endpoint was deleted, or another replica took it
// over after this one stalled past its lease.
var errLeaseLost = errors.New("lease lost (endpoint deleted, or taken over after a stall)")

// leased is an endpoint as its holder sees it.
type leased struct {
	ID             int64          `db:"id"`
	URL            string         `db:"url"`
	Topics         pq.StringArray `db:"topics"`
	Enabled        bool           `db:"enabled"`
	Secret         []byte         `db:"secret"`
	PreviousSecret []byte         `db:"previous_secret"`
	PreviousUntil  sql.NullTime   `db:"previous_until"`
	AfterXID       string         `db:"after_xid"`
	AfterID        int64          `db:"after_id"`
	Attempt        int            `db:"attempt"`
	HeadEventID    sql.NullInt64  `db:"head_event_id"`
	FailingSince   sql.NullTime   `db:"failing_since"`
}

func (l leased) cursor() string { return l.AfterXID + "-" + strconv.FormatInt(l.AfterID, 10) }

func (l leased) wants(t events.Topic) bool {
	return len(l.Topics) == 0 || slices.Contains([]string(l.Topics), string(t))
}

// signers are the secrets a delivery is signed with now, kept while the
// endpoint's secrets and the overlap's state stay as they are.
func (h *holder) signers() ([]*standardwebhooks.Webhook, error) {
	now := h.d.now()
	overlap := h.ep.PreviousSecret != nil && h.ep.PreviousUntil.Valid && now.Before(h.ep.PreviousUntil.Time)
	key := string(h.ep.Secret) + "\x00" + string(h.ep.PreviousSecret) + "\x00" + strconv.FormatBool(overlap)
	if h.sigs != nil && key == h.sigKey {
		return h.sigs, nil
	}
	sigs, err := h.d.signers(h.ep, now)
	if err != nil {
		return nil, err
	}
	h.sigs, h.sigKey = sigs, key
	return sigs, nil
}

// maxBodies bounds the bodies body remembers: twice the tail, so that the
// endpoints keeping up find every body made.
const maxBodies = 2 * maxTail

// body is ev as sent: the same JSON as the event stream's data, encoded
// once for every endpoint.
func (d *Dispatcher) body(ev events.Event) []byte {
	d.cacheMu.Lock()
	b, ok := d.bodies[ev.ID]
	d.cacheMu.Unlock()
	if ok {
		return b
	}
	b, err := json.Marshal(ev)
	if err != nil {
		return nil
	}
	d.cacheMu.Lock()
	if d.bodies == nil || len(d.bodies) >= maxBodies {
		d.bodies = map[int64][]byte{}
	}
	d.bodies[ev.ID] = b
	d.cacheMu.Unlock()
	return b
}

// signers are the secrets a delivery is signed with now: the current
// one, and the previous one during a rotation's overlap.
func (d *Dispatcher) signers(l leased, now time.Time) ([]*standardwebhooks.Webhook, error) {
	stored := [][]byte{l.Secret}
	if l.PreviousSecret != nil && l.PreviousUntil.Valid && now.Before(l.PreviousUntil.Time) {
		stored = append(stored, l.PreviousSecret)
	}
	var out []*standardwebhooks.Webhook
	for _, s := range stored {
		secret, err := unseal(d.cfg.Key, s)
		if err != nil {
			return nil, err
		}
		wh, err := standardwebhooks.NewWebhook(secret)
		if err != nil {
			return nil, fmt.Errorf("webhook secret: %w", err)
		}
		out = append(out, wh)
	}
	return out, nil
}

// attemptLog is an attempt to write to webhook_attempts.
type attemptLog struct {
	eventID   int64
	topic     string
	attempt   int
	replay    bool
	status    int // 0: no answer
	err       string
	latencyMS int
	response  string
	nextAt    *time.Time
	at        time.Time
}

func (a attemptLog) ok() bool { return a.status >= 200 && a.status < 300 }

// holder is one endpoint's delivery while its lease lasts.
type holder struct {
	d        *Dispatcher
	token    string
	ep       leased
	cursor   string // delivered or skipped up to here, not yet written
	logs     []attemptLog
	unsaved  int
	lastSave time.Time
	// lastLogged is when a first-try success was last logged.
	lastLogged time.Time
	// leaseEnd is when the lease runs out at the latest, by this
	// process's monotonic clock: taken before the statement that
	// set it, whose now() is later.
	leaseEnd time.Time
	// sigs are the signers of sigKey's secrets (see signers).
	sigs   []*standardwebhooks.Webhook
	sigKey string
	// reads counts the batches taken from the outbox; settingsRead is
	// its value when the endpoint's settings were last read (see
	// refresh).
	reads, settingsRead int
}

// hold delivers to endpoint id until it has nothing due, fails, is
// disabled, loses its lease, holds it for holdMax, or ctx ends.
func (d *Dispatcher) hold(ctx context.Context, id int64, token string, leaseEnd time.Time) {
	h := &holder{d: d, token: token, lastSave: time.Now(), leaseEnd: leaseEnd}
	if err := sqlx.GetContext(ctx, d.db, &h.ep, leaseSQL, id, token); err != nil {
		if !errors.Is(err, sql.ErrNoRows) && ctx.Err() == nil {
			d.log.Warn("webhooks: read leased endpoint", "endpoint", id, "error", err)
		}
		return
	}
	h.cursor = h.ep.cursor()
	err := h.run(ctx)
	if err != nil && ctx.Err() != nil && !errors.Is(err, errLeaseLost) {
		// Stopped mid-read by the shutdown: give the lease back, so the
		// next start goes on at once rather than when it runs out.
		err = h.release(context.WithoutCancel(ctx))
	}
	if errors.Is(err, errLeaseLost) {
		var exists bool
		if sqlx.GetContext(context.WithoutCancel(ctx), d.db, &exists, endpointExistsSQL, id) == nil && !exists {
			return // deleted while delivered to: nothing to say
		}
	}
	if err != nil && ctx.Err() == nil {
		d.log.Warn("webhooks: delivery stopped; the endpoint is taken up again when its lease ends", "endpoint", id, "error", err)
	}
}

func (h *holder) run(ctx context.Context) error {
	d := h.d
	began := time.Now()
	var batch []events.Event
	replays := true // look for replays at the start and after every save
	idleSince := time.Time{}
	woken := d.woken()
	for {
		if !h.ep.Enabled {
			return h.release(ctx)
		}
		if ctx.Err() != nil || time.Since(began) > d.holdMax {
			return h.release(context.WithoutCancel(ctx))
		}
		if len(batch) == 0 {
			woken = d.woken()
			var err error
			var due bool
			batch, due, err = d.tail.next(ctx, h.ep.ID, h.cursor)
			if err != nil {
				return err
			}
			h.reads++
			// Replays go ahead of the next new event: looked for when the
			// tail read after the batch says one waits (so a replay asked
			// for before an event committed goes before it), not before
			// every event.
			replays = replays || due
		}
		var head events.Event
		isReplay := false
		if replays {
			ev, ok, err := h.nextReplay(ctx)
			if err != nil {
				return err
			}
			head, isReplay, replays = ev, ok, ok
		}
		if !isReplay {
			if len(batch) == 0 {
				if err := h.saveIfDue(ctx, true); err != nil {
					return err
				}
				if idleSince.IsZero() {
					idleSince = time.Now()
				} else if time.Since(idleSince) > 2*d.cfg.Interval {
					return h.release(context.WithoutCancel(ctx))
				}
				// Held-back events are not announced when they become
				// safe: a short poll finds them.
				select {
				case <-ctx.Done():
				case <-woken:
				case <-time.After(min(d.cfg.Interval/4, 250*time.Millisecond)):
				}
				continue
			}
			idleSince = time.Time{}
			head = batch[0]
			if !h.ep.Wants(head.Topic) && h.settingsRead < h.reads {
				// Topics read before this batch may predate a change
				// committed before some of its events: read them again
				// before passing any over (once a batch).
				if err := h.refresh(ctx); err != nil {
					return err
				}
				continue
			}
			if !h.ep.Wants(head.Topic) {
				h.cursor, batch = head.Cursor, batch[1:]
				h.unsaved++
				if err := h.saveIfDue(ctx, false); err != nil {
					return err
				}
				continue
			}
		}
		n := 1
		if h.ep.Attempt > 0 && h.ep.HeadEventID.Valid && h.ep.HeadEventID.Int64 == head.ID {
			n = h.ep.Attempt + 1
		}
		if stopped, err := h.waitLimiter(ctx); err != nil {
			return err
		} else if stopped {
			continue // the shutdown: released at the loop's top
		}
		// An attempt lasts at most Timeout: it begins only if it ends
		// within the lease, so no other holder can begin meanwhile.
		if err := h.renewIfShort(ctx); err != nil {
			return err
		}
		if !h.ep.Enabled {
			continue // disabled meanwhile (read by a renewal): released at the loop's top
		}
		var a attemptLog
		if signers, err := h.signers(); err != nil {
			// A secret razao cannot open (no key, another key) fails the
			// attempt like any other, so the operator sees it.
			a = attemptLog{eventID: head.ID, topic: string(head.Topic), attempt: n, replay: isReplay, at: d.now(), err: bounded(err.Error(), 1000)}
		} else {
			a = d.send(ctx, h.ep.ID, h.ep.URL, head, d.body(head), signers, n, isReplay)
		}
		if !a.ok() {
			d.attempts.WithLabelValues("failed").Inc()
			return h.fail(context.WithoutCancel(ctx), head, a)
		}
		d.attempts.WithLabelValues("delivered").Inc()
		if !isReplay {
			d.lag.Observe(time.Since(head.CreatedAt).Seconds())
		}
		// Every failed attempt is logged, and every success that ends
		// retries or a replay; a first-try success at most once a second
		// per endpoint (the latest answer, its latency): ten endpoints
		// at 2,000 events a second would otherwise write 20,000 rows a
		// second that say "200" (the counter above counts them all).
		if n > 1 || isReplay {
			h.logs = append(h.logs, a)
		} else if time.Since(h.lastLogged) >= time.Second {
			h.logs = append(h.logs, a)
			h.lastLogged = time.Now()
		}
		if isReplay {
			// The head's failures stand: a replay is not the head.
			res, err := d.db.ExecContext(context.WithoutCancel(ctx), doneReplaySQL, h.ep.ID, head.ID, h.token)
			if err != nil {
				return fmt.Errorf("replay of event %d done: %w", head.ID, err)
			}
			if n, err := res.RowsAffected(); err != nil || n == 0 {
				// Taken over: the replay is the new holder's now.
				return errLeaseLost
			}
			replays = true
			if err := h.saveIfDue(context.WithoutCancel(ctx), false); err != nil {
				return err
			}
			continue
		}
		h.ep.Attempt, h.ep.HeadEventID = 0, sql.NullInt64{}
		h.cursor, batch = head.Cursor, batch[1:]
		h.unsaved++
		saved := h.unsaved >= flushEvery || time.Since(h.lastSave) >= flushAfter
		if err := h.saveIfDue(context.WithoutCancel(ctx), false); err != nil {
			return err
		}
		if saved {
			replays = true
		}
	}
}

// Wants reports whether the endpoint takes events of topic t.
func (l leased) Wants(t events.Topic) bool { return l.wants(t) }

// nextReplay is the endpoint's oldest replay asked for, if any.
func (h *holder) nextReplay(ctx context.Context) (events.Event, bool, error) {
	var r struct {
		XID       string    `db:"xid"`
		ID        int64     `db:"id"`
		Topic     string    `db:"topic"`
		ChargeID  string    `db:"charge_id"`
		Payload   []byte    `db:"payload"`
		CreatedAt time.Time `db:"created_at"`
	}
	err := sqlx.GetContext(ctx, h.d.db, &r, nextReplaySQL, h.ep.ID)
	if errors.Is(err, sql.ErrNoRows) {
		return events.Event{}, false, nil
	}
	if err != nil {
		return events.Event{}, false, fmt.Errorf("next replay: %w", err)
	}
	return events.Event{Cursor: r.XID + "-" + strconv.FormatInt(r.ID, 10), ID: r.ID, Topic: events.Topic(r.Topic),
		ChargeID: r.ChargeID, Payload: r.Payload, CreatedAt: r.CreatedAt.UTC()}, true, nil
}

// saveIfDue writes the progress when enough has gathered (or force and
// anything has).
func (h *holder) saveIfDue(ctx context.Context, force bool) error {
	if h.unsaved == 0 && len(h.logs) == 0 {
		if time.Since(h.lastSave) < flushAfter {
			return nil
		}
	} else if !force && h.unsaved < flushEvery && time.Since(h.lastSave) < flushAfter {
		return nil
	}
	return h.save(ctx, nil)
}

// save writes the attempts log, the cursor and the lease in one
// transaction, then runs more (a failure's record) in it too, given the
// endpoint as it now is (its row locked until the commit). A lease that
// is no longer this holder's writes nothing and ends the hold.
func (h *holder) save(ctx context.Context, more func(*sqlx.Tx, leased) error) error {
	d := h.d
	began := time.Now()
	tx, err := d.db.BeginTxx(ctx, nil)
	if err != nil {
		return fmt.Errorf("save webhook progress: %w", err)
	}
	defer tx.Rollback()
	// The endpoint's row first: its lock holds off a DELETE until the
	// attempts are in.
	xid, id, _ := strings.Cut(h.cursor, "-")
	var ep leased
	if err := sqlx.GetContext(ctx, tx, &ep, progressSQL, h.ep.ID, h.token, xid, id, d.now(), interval(d.lease)); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return errLeaseLost
		}
		return fmt.Errorf("save webhook progress: %w", err)
	}
	if err := insertAttempts(ctx, tx, h.ep.ID, h.logs); err != nil {
		return err
	}
	if more != nil {
		if err := more(tx, ep); err != nil {
			return err
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("save webhook progress: %w", err)
	}
	h.ep, h.logs, h.unsaved, h.lastSave = ep, nil, 0, time.Now()
	h.settingsRead = h.reads
	h.leaseEnd = began.Add(d.lease)
	return nil
}

// waitLimiter waits for the rate limiter's turn (Config.MaxPerSecond),
// in steps that each end while an attempt still fits in the lease,
// renewed between them: a long queue for the limiter never lets the lease
// lapse, nor spins. stopped: ctx ended first, the turn given back.
func (h *holder) waitLimiter(ctx context.Context) (stopped bool, err error) {
	if h.d.limiter == nil {
		return false, nil
	}
	r := h.d.limiter.Reserve() // the burst is at least 1: always OK
	for wait := r.Delay(); wait > 0; wait = r.Delay() {
		if err := h.renewIfShort(ctx); err != nil {
			r.Cancel()
			return false, err
		}
		step := min(wait, time.Until(h.leaseEnd)-h.d.cfg.Timeout-leaseMargin)
		select {
		case <-ctx.Done():
			r.Cancel()
			return true, nil
		case <-time.After(max(step, time.Millisecond)):
		}
	}
	return false, nil
}

// renewIfShort renews the lease when less than an attempt and
// leaseMargin is left of it.
func (h *holder) renewIfShort(ctx context.Context) error {
	if time.Until(h.leaseEnd) >= h.d.cfg.Timeout+leaseMargin {
		return nil
	}
	return h.renew(ctx)
}

// renew renews the lease and reads the endpoint's settings again; a
// lease no longer this holder's ends the hold.
func (h *holder) renew(ctx context.Context) error {
	began := time.Now()
	if err := h.readSettings(ctx, renewSQL, h.ep.ID, h.token, interval(h.d.lease)); err != nil {
		return err
	}
	h.leaseEnd = began.Add(h.d.lease)
	return nil
}

// refresh reads the endpoint's settings again (renewing the lease). An
// event is passed over only by settings read after the batch that
// carries it was read, and so after it committed: a topic added by a
// change committed before the event is known, and no event it wants is
// passed over.
func (h *holder) refresh(ctx context.Context) error { return h.renew(ctx) }

// readSettings runs query, which answers the endpoint's settings while
// the lease is this holder's, and keeps them.
func (h *holder) readSettings(ctx context.Context, query string, args ...any) error {
	var s struct {
		URL            string         `db:"url"`
		Topics         pq.StringArray `db:"topics"`
		Enabled        bool           `db:"enabled"`
		Secret         []byte         `db:"secret"`
		PreviousSecret []byte         `db:"previous_secret"`
		PreviousUntil  sql.NullTime   `db:"previous_until"`
	}
	reads := h.reads
	if err := sqlx.GetContext(ctx, h.d.db, &s, query, args...); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return errLeaseLost
		}
		return fmt.Errorf("read webhook endpoint %d: %w", h.ep.ID, err)
	}
	h.ep.URL, h.ep.Topics, h.ep.Enabled = s.URL, s.Topics, s.Enabled
	h.ep.Secret, h.ep.PreviousSecret, h.ep.PreviousUntil = s.Secret, s.PreviousSecret, s.PreviousUntil
	h.settingsRead = reads
	return nil
}

// release saves and gives the lease back, due again at once.
func (h *holder) release(ctx context.Context) error {
	return h.save(ctx, func(tx *sqlx.Tx, _ leased) error {
		_, err := tx.ExecContext(ctx, releaseSQL, h.ep.ID, h.token, h.d.now())
		return err
	})
}

// fail records a failed attempt on head: the next try is scheduled, or,
// after the last attempt of the schedule, the endpoint is disabled and
// webhook_endpoint.disabled is appended to the outbox in the same
// transaction. Either way the lease is given back.
func (h *holder) fail(ctx context.Context, head events.Event, a attemptLog) error {
	d := h.d
	now := d.now()
	disable := a.attempt > len(d.cfg.Schedule)
	next := now
	if !disable {
		next = now.Add(d.jitter(d.cfg.Schedule[a.attempt-1]))
		a.nextAt = &next
	}
	h.logs = append(h.logs, a)
	failingSince := now
	epID := h.ep.ID
	err := h.save(ctx, func(tx *sqlx.Tx, ep leased) error {
		if ep.FailingSince.Valid {
			failingSince = ep.FailingSince.Time // the streak's first failure
		}
		// Disabled meanwhile by an operator: it stays so, for the
		// operator's reason, and no event says it failed.
		disable = disable && ep.Enabled
		if _, err := tx.ExecContext(ctx, failSQL, h.ep.ID, h.token, a.attempt, head.ID, next, disable, now); err != nil {
			return fmt.Errorf("record failed attempt: %w", err)
		}
		if !disable {
			return nil
		}
		// No URL: the event goes to every stream and subscriber of the
		// topic, read scope included, and a URL may carry a token.
		return events.AppendAll(ctx, tx, events.Draft{Topic: events.TopicWebhookEndpointDisabled, Payload: map[string]any{
			"endpoint_id": h.ep.ID, "reason": "failing", "event_id": head.ID, "attempts": a.attempt,
			"failing_since": failingSince.UTC(), "disabled_at": now.UTC(),
		}})
	})
	if err != nil {
		return err
	}
	if disable {
		if d.OnCommit != nil {
			d.OnCommit()
		}
		d.disabled.Inc()
		d.log.Warn("webhooks: endpoint disabled after failing every attempt", "endpoint", epID, "event_id", head.ID,
			"attempts", a.attempt, "failing_since", failingSince.UTC())
	}
	return nil
}

// jitter moves d by up to Config.Jitter of itself, either way.
func (d *Dispatcher) jitter(w time.Duration) time.Duration {
	if d.cfg.Jitter == 0 {
		return w
	}
	return time.Duration(float64(w) * (1 + d.cfg.Jitter*(2*mrand.Float64()-1)))
}

// MessageID is an event's webhook-id at an endpoint: the same on every
// attempt and replay, so the app can deduplicate, and different per
// endpoint.
func MessageID(endpointID, eventID int64) string {
	return "msg_" + strconv.FormatInt(endpointID, 10) + "_" + strconv.FormatInt(eventID, 10)
}

// send makes one attempt. Its body is the event as GET /v1/events sends
// it in a frame's data (one schema per topic for both; api/openapi.yaml).
// The attempt is not cut by ctx: at shutdown it finishes (within
// Config.Timeout), and its outcome is recorded.
func (d *Dispatcher) send(ctx context.Context, epID int64, url string, ev events.Event, body []byte, signers []*standardwebhooks.Webhook,
	n int, replay bool) attemptLog {
	now := d.now()
	a := attemptLog{eventID: ev.ID, topic: string(ev.Topic), attempt: n, replay: replay, at: now}
	if body == nil {
		a.err = "encode event"
		return a
	}
	msgID := MessageID(epID, ev.ID)
	sigs := make([]string, 0, len(signers))
	for _, wh := range signers {
		s, err := wh.Sign(msgID, now, body)
		if err != nil {
			a.err = "sign: " + err.Error()
			return a
		}
		sigs = append(sigs, s)
	}
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), d.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(actx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		a.err = "request: " + err.Error()
		return a
	}
	if err := d.cfg.checkScheme(req.URL.Scheme); err != nil {
		a.err = err.Error()
		return a
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "razao-webhooks/1")
	req.Header.Set(standardwebhooks.HeaderWebhookID, msgID)
	req.Header.Set(standardwebhooks.HeaderWebhookTimestamp, strconv.FormatInt(now.Unix(), 10))
	req.Header.Set(standardwebhooks.HeaderWebhookSignature, strings.Join(sigs, " "))
	start := time.Now()
	resp, err := d.client.Do(req)
	if err != nil {
		a.latencyMS = int(time.Since(start).Milliseconds())
		a.err = bounded(err.Error(), 1000)
		return a
	}
	excerpt, _ := io.ReadAll(io.LimitReader(resp.Body, excerptBytes))
	resp.Body.Close()
	a.latencyMS = int(time.Since(start).Milliseconds())
	a.status = resp.StatusCode
	a.response = bounded(string(excerpt), excerptBytes)
	return a
}

// bounded is s as valid text without NULs (PostgreSQL's text refuses
// them), of at most n bytes.
func bounded(s string, n int) string {
	s = strings.ToValidUTF8(strings.ReplaceAll(s, "\x00", ""), "\uFFFD")
	for len(s) > n {
		_, size := utf8.DecodeLastRuneInString(s)
		s = s[:len(s)-size]
	}
	return s
}

func insertAttempts(ctx context.Context, tx *sqlx.Tx, endpoint int64, logs []attemptLog) error {
	if len(logs) == 0 {
		return nil
	}
	n := len(logs)
	eps, evs, attempts, latencies, statuses := make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n), make([]*int64, n)
	topics, responses, errs := make([]string, n), make([]string, n), make([]*string, n)
	replays := make([]bool, n)
	nexts, ats := make([]*time.Time, n), make([]*time.Time, n)
	for i, a := range logs {
		eps[i], evs[i], attempts[i], latencies[i] = endpoint, a.eventID, int64(a.attempt), int64(a.latencyMS)
		topics[i], responses[i], replays[i] = a.topic, a.response, a.replay
		if a.status != 0 {
			s := int64(a.status)
			statuses[i] = &s
		} else {
			e := a.err
			errs[i] = &e
		}
		nexts[i] = a.nextAt
		at := a.at
		ats[i] = &at
	}
	_, err := tx.ExecContext(ctx, insertAttemptsSQL, pq.Array(eps), pq.Array(evs), pgarray.Text(topics), pq.Array(attempts),
		pq.Array(replays), pgarray.NullInt64(statuses), pgarray.NullText(errs), pq.Array(latencies), pgarray.Text(responses),
		pgarray.NullTime(nexts), pgarray.NullTime(ats))
	if err != nil {
		return fmt.Errorf("log %d webhook attempt(s): %w", n, err)
	}
	return nil
}
