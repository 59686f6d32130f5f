// Package reads decides, in one place, which database serves a read that
// need not see its own writes: reports, lists, the console's pages, the
// on-demand exports. With a streaming standby configured
// (read_database_url) and fresh enough (read_max_lag), the standby;
// otherwise, and always for anything that writes or must see what it just
// wrote, the primary.
//
// What stays on the primary, and why, is said where it is wired
// (cmd/razao/serve.go): writes, authentication (a revoked token must stop
// at once), single objects fetched by id (a client reads back what it
// just created), the event stream (LISTEN is refused on a standby, and
// the stream's horizon reads pg_locks, which on a standby does not show
// the primary's transactions), the scheduled exports (a closed month's
// file is written once and kept) and every worker.
package reads

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/prometheus/client_golang/prometheus"
)

// DefaultMaxLag is read_max_lag's default.
const DefaultMaxLag = 5 * time.Second

// DefaultRecheck is how long a verdict on the standby holds before the
// next read checks it again.
const DefaultRecheck = time.Second

// checkTimeout bounds a check: a standby that does not answer in it is
// not used (the read goes to the primary, not to wait).
const checkTimeout = time.Second

// Pool chooses between the primary and the standby. A nil standby (no
// read_database_url) makes it the primary always.
type Pool struct {
	primary, standby *sqlx.DB
	maxLag           time.Duration
	// Recheck is how long a verdict holds; 0 checks before every read
	// (tests).
	Recheck time.Duration
	log     *slog.Logger

	mu      sync.Mutex // held by the one read that checks
	state   sync.Mutex // guards verdict
	verdict Verdict

	served    *prometheus.CounterVec
	lag       prometheus.Gauge
	standbyOK prometheus.Gauge
}

// Verdict is what the last check found.
type Verdict struct {
	At time.Time // zero: never checked
	// Use says reads may go to the standby.
	Use bool
	// Lag is how far the standby's data is behind the primary's, as
	// measured (0: it has replayed everything the primary had flushed
	// when checked); -1 when unknown.
	Lag time.Duration
	// Why, when not Use, says why (for the log).
	Why string
}

// New returns the pool over primary and standby (nil: none), using the
// standby while its lag is at most maxLag (0: DefaultMaxLag).
func New(primary, standby *sqlx.DB, maxLag time.Duration, log *slog.Logger) *Pool {
	if maxLag <= 0 {
		maxLag = DefaultMaxLag
	}
	return &Pool{primary: primary, standby: standby, maxLag: maxLag, Recheck: DefaultRecheck, log: log,
		verdict: Verdict{Lag: -1, Why: "not checked yet"},
		served: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "razao_reads_total",
			Help: "Reads that need not see their own writes (reports, lists, console pages, exports), by the database that served them: standby or primary."},
			[]string{"served_by"}),
		lag: prometheus.NewGauge(prometheus.GaugeOpts{Name: "razao_read_standby_lag_seconds",
			Help: "The standby's lag at its last check (0: it had replayed all the primary had flushed); -1: unknown (unreachable, not a standby, or never checked)."}),
		standbyOK: prometheus.NewGauge(prometheus.GaugeOpts{Name: "razao_read_standby_in_use",
			Help: "1 while reads go to the standby (read_database_url), 0 while they fall back to the primary."}),
	}
}

// Collectors are the pool's metrics, for the service's registry.
func (p *Pool) Collectors() []prometheus.Collector {
	return []prometheus.Collector{p.served, p.lag, p.standbyOK}
}

// Primary is the primary, for what must be read there.
func (p *Pool) Primary() *sqlx.DB { return p.primary }

// HasStandby says a standby is configured.
func (p *Pool) HasStandby() bool { return p.standby != nil }

// DB is the database a read that need not see its own writes goes to:
// the standby if configured and, at its last check, fresh enough; else
// the primary. A context marked by FromPrimary always gets the primary.
// The check runs at most once per Recheck, in the read that finds the
// verdict stale; reads meanwhile use the verdict before.
func (p *Pool) DB(ctx context.Context) *sqlx.DB {
	if p.standby == nil {
		return p.primary
	}
	if ctx.Value(primaryKey{}) != nil {
		p.served.WithLabelValues("primary").Inc()
		return p.primary
	}
	v := p.current()
	if time.Since(v.At) >= p.Recheck && p.mu.TryLock() {
		v = p.Check(ctx)
		p.mu.Unlock()
	}
	if v.Use {
		p.served.WithLabelValues("standby").Inc()
		return p.standby
	}
	p.served.WithLabelValues("primary").Inc()
	return p.primary
}

func (p *Pool) current() Verdict {
	p.state.Lock()
	defer p.state.Unlock()
	return p.verdict
}

// Check measures the standby now and records the verdict: reads go to it
// while it is a standby in recovery and its data is at most maxLag behind
// the primary's. A change of verdict is logged once.
//
// The lag is measured so that an idle primary does not make a caught-up
// standby look stale. now() − pg_last_xact_replay_timestamp() alone grows
// forever when nothing commits, though the standby misses nothing. So the
// primary is asked first for the WAL it has flushed (pg_current_wal_flush_lsn:
// every commit confirmed to a client is at or below it, with
// synchronous_commit on, and nothing beyond it has reached any standby);
// then the standby: if it has replayed up to there, it shows everything
// the primary had committed at that moment, and its lag is 0. If not, the
// data it shows is that of its last replayed commit, and the lag is that
// commit's age, now() − pg_last_xact_replay_timestamp() (the primary's
// clock against the standby's: a skew between the machines counts as
// lag). On a primary that writes now and then, a check that falls between
// a commit and its replay sees the age of the commit before, and sends
// reads to the primary until the next check: wrong only towards safety.
// A primary that cannot be asked leaves the time rule alone.
func (p *Pool) Check(ctx context.Context) Verdict {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), checkTimeout)
	defer cancel()
	v := p.measure(ctx)
	v.At = time.Now()
	p.state.Lock()
	before := p.verdict
	p.verdict = v
	p.state.Unlock()
	if v.Lag >= 0 {
		p.lag.Set(v.Lag.Seconds())
	} else {
		p.lag.Set(-1)
	}
	switch {
	case v.Use && !before.Use:
		p.standbyOK.Set(1)
		p.log.Info("reads: served by the standby (read_database_url)", "lag", v.Lag.String(), "read_max_lag", p.maxLag.String())
	case !v.Use && (before.Use || before.At.IsZero()):
		p.standbyOK.Set(0)
		p.log.Warn("reads: the standby is not used, reads fall back to the primary", "reason", v.Why, "read_max_lag", p.maxLag.String())
	}
	return v
}

func (p *Pool) measure(ctx context.Context) Verdict {
	var flushed sql.NullString
	if err := p.primary.GetContext(ctx, &flushed, `SELECT pg_current_wal_flush_lsn()::text`); err != nil {
		flushed = sql.NullString{} // the time rule alone
	}
	var st struct {
		Recovering bool            `db:"recovering"`
		CaughtUp   sql.NullBool    `db:"caught_up"`
		Age        sql.NullFloat64 `db:"age"`
	}
	err := p.standby.GetContext(ctx, &st, `SELECT pg_is_in_recovery() AS recovering,
		pg_last_wal_replay_lsn() >= $1::pg_lsn AS caught_up,
		extract(epoch FROM now() - pg_last_xact_replay_timestamp())::float8 AS age`, flushed)
	switch {
	case err != nil:
		return Verdict{Lag: -1, Why: "standby unreachable: " + oneLine(err)}
	case !st.Recovering:
		// Promoted, or not a standby at all: whether it is the primary
		// razao writes to cannot be told from here.
		return Verdict{Lag: -1, Why: "read_database_url is not a standby in recovery"}
	case st.CaughtUp.Valid && st.CaughtUp.Bool:
		return Verdict{Use: true, Lag: 0}
	case !st.Age.Valid:
		return Verdict{Lag: -1, Why: "the standby is behind and has replayed no transaction since it started: its lag is unknown"}
	}
	lag := time.Duration(math.Max(0, st.Age.Float64) * float64(time.Second))
	if lag > p.maxLag {
		return Verdict{Lag: lag, Why: fmt.Sprintf("the standby lags %s behind, beyond read_max_lag", lag.Round(time.Millisecond))}
	}
	return Verdict{Use: true, Lag: lag}
}

func oneLine(err error) string {
	s := err.Error()
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return s
}

type primaryKey struct{}

// FromPrimary marks ctx so that its reads go to the primary.
func FromPrimary(ctx context.Context) context.Context {
	return context.WithValue(ctx, primaryKey{}, true)
}

// wroteCookie marks a browser that has just written: for read_max_lag
// after, its reads go to the primary, so the page a form redirects to
// shows what the form did.
const wroteCookie = "razao_wrote"

// Middleware makes the reads of a request that must see its own writes
// go to the primary: those of a browser that wrote (a request other than
// GET, HEAD or OPTIONS) within read_max_lag, and those a client asks to
// be fresh with Cache-Control: no-cache. Only the paths with the given
// prefixes are marked (the API and the console: never the webhook front,
// whose answers a PSP reads, not a browser).
func (p *Pool) Middleware(next http.Handler, prefixes ...string) http.Handler {
	if p.standby == nil {
		return next
	}
	maxAge := int(math.Ceil(p.maxLag.Seconds())) + 1
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !hasPrefix(r.URL.Path, prefixes) {
			next.ServeHTTP(w, r)
			return
		}
		switch r.Method {
		case http.MethodGet, http.MethodHead, http.MethodOptions:
			if _, err := r.Cookie(wroteCookie); err == nil || strings.Contains(strings.ToLower(r.Header.Get("Cache-Control")), "no-cache") {
				r = r.WithContext(FromPrimary(r.Context()))
			}
		default:
			http.SetCookie(w, &http.Cookie{Name: wroteCookie, Value: "1", Path: "/", MaxAge: maxAge,
				HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: r.TLS != nil})
		}
		next.ServeHTTP(w, r)
	})
}

func hasPrefix(path string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(path, p) {
			return true
		}
	}
	return false
}
