package reads_test

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/razao/razao/internal/standby"
	"github.com/razao/razao/reads"
)

func open(t *testing.T, url string) *sqlx.DB {
	t.Helper()
	db, err := sqlx.Open("postgres", url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// pool is a Pool that checks before every read.
func pool(primary, stby *sqlx.DB, maxLag time.Duration) *reads.Pool {
	p := reads.New(primary, stby, maxLag, slog.New(slog.DiscardHandler))
	p.Recheck = 0
	return p
}

// eventually polls cond until it holds or ctx ends; a wait for a state,
// never a verdict on how long it took.
func eventually(ctx context.Context, t *testing.T, what string, cond func() bool) {
	t.Helper()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("never: %s", what)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func exec(ctx context.Context, t *testing.T, db *sqlx.DB, q string) {
	t.Helper()
	if _, err := db.ExecContext(ctx, q); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

// TestPoolReadsFromAFreshStandbyAndFromThePrimaryOtherwise pins the rule:
// a standby that has replayed all the primary flushed serves the reads,
// even when its last replayed commit is far older than read_max_lag (an
// idle primary is not a lagging standby); one whose replay is paused
// while the primary writes serves them only while its last replayed
// commit is within read_max_lag; one that is down, or no longer a standby
// (promoted), serves none.
func TestPoolReadsFromAFreshStandbyAndFromThePrimaryOtherwise(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	p := standby.Start(t, standby.Options{})
	primary, stby := open(t, p.Primary.URL), open(t, p.Standby.URL)
	exec(ctx, t, primary, `CREATE TABLE t (n int)`)
	exec(ctx, t, primary, `INSERT INTO t VALUES (1)`)
	if err := p.WaitReplay(ctx); err != nil {
		t.Fatal(err)
	}

	// Idle primary, caught-up standby, a bound far shorter than the age
	// of its last replayed commit: still fresh. (Background WAL of an
	// idle primary, between its flush and its replay, can make a check
	// see it behind for a moment: hence eventually.)
	strict := pool(primary, stby, time.Millisecond)
	eventually(ctx, t, "the last replayed commit is older than read_max_lag", func() bool {
		lag, err := p.Lag(ctx)
		return err == nil && time.Since(lag.Replayed) > 20*time.Millisecond
	})
	eventually(ctx, t, "a caught-up standby of an idle primary serves the reads", func() bool {
		return strict.DB(ctx) == stby
	})
	if v := strict.Check(ctx); v.Use && v.Lag != 0 {
		t.Errorf("caught-up standby: lag %s, want 0", v.Lag)
	}

	// Paused while the primary writes: behind. Within a generous bound
	// the standby still serves (and shows the old data); beyond a strict
	// one the primary does.
	if err := p.PauseReplay(ctx); err != nil {
		t.Fatal(err)
	}
	exec(ctx, t, primary, `INSERT INTO t VALUES (2)`)
	generous := pool(primary, stby, time.Hour)
	db := generous.DB(ctx)
	if db != stby {
		t.Fatalf("a standby behind by less than read_max_lag is not used (verdict %+v)", generous.Check(ctx))
	}
	var n int
	if err := db.GetContext(ctx, &n, `SELECT count(*) FROM t`); err != nil || n != 1 {
		t.Fatalf("paused standby shows %d rows (%v), want 1: then it was not the standby", n, err)
	}
	eventually(ctx, t, "a standby lagging beyond read_max_lag gives the reads to the primary", func() bool {
		return strict.DB(ctx) == primary
	})
	if v := strict.Check(ctx); v.Use || v.Lag <= time.Millisecond || v.Why == "" {
		t.Errorf("lagging standby: verdict %+v, want not used, its lag and why", v)
	}
	if err := p.ResumeReplay(ctx); err != nil {
		t.Fatal(err)
	}
	if err := p.WaitReplay(ctx); err != nil {
		t.Fatal(err)
	}
	eventually(ctx, t, "the standby, caught up again, serves the reads again", func() bool {
		return strict.DB(ctx) == stby
	})

	// Down: the primary, at the first read after.
	if err := p.StopStandby(); err != nil {
		t.Fatal(err)
	}
	if strict.DB(ctx) != primary {
		t.Fatalf("a standby that is down still gets reads (verdict %+v)", strict.Check(ctx))
	}
	if err := p.StartStandby(); err != nil {
		t.Fatal(err)
	}
	eventually(ctx, t, "the standby, started again, serves the reads again", func() bool {
		return strict.DB(ctx) == stby
	})

	// Promoted: no longer a standby; whether it is the primary razao
	// writes to cannot be told, so it is not read.
	if err := p.KillPrimary(); err != nil {
		t.Fatal(err)
	}
	if err := p.Promote(ctx); err != nil {
		t.Fatal(err)
	}
	if v := generous.Check(ctx); v.Use {
		t.Fatalf("a promoted standby still gets reads: %+v", v)
	}
}

// TestMiddlewareSendsReadsThatMustSeeTheirWritesToThePrimary: a browser
// that has just posted, and a client asking Cache-Control: no-cache, read
// from the primary whatever the standby's freshness; other reads, and
// paths outside the given prefixes, are left to the pool.
func TestMiddlewareSendsReadsThatMustSeeTheirWritesToThePrimary(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	p := standby.Start(t, standby.Options{})
	primary, stby := open(t, p.Primary.URL), open(t, p.Standby.URL)
	exec(ctx, t, primary, `SELECT 1`)
	if err := p.WaitReplay(ctx); err != nil {
		t.Fatal(err)
	}
	rp := pool(primary, stby, time.Hour)
	var got *sqlx.DB
	h := rp.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { got = rp.DB(r.Context()) }), "/v1/", "/console")

	serve := func(method, path string, setup func(*http.Request)) *httptest.ResponseRecorder {
		r := httptest.NewRequest(method, path, nil)
		if setup != nil {
			setup(r)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	if serve("GET", "/v1/charges", nil); got != stby {
		t.Fatal("a plain read does not go to the fresh standby")
	}
	w := serve("POST", "/console/divergences/1/resolve", nil)
	cookies := w.Result().Cookies()
	if len(cookies) != 1 || cookies[0].MaxAge < 3600 || !cookies[0].HttpOnly {
		t.Fatalf("a write sets %v, want one HttpOnly cookie lasting read_max_lag", cookies)
	}
	if serve("GET", "/console/divergences", func(r *http.Request) { r.AddCookie(cookies[0]) }); got != primary {
		t.Error("the page a form redirects to is read from the standby")
	}
	if serve("GET", "/v1/charges", func(r *http.Request) { r.Header.Set("Cache-Control", "no-cache") }); got != primary {
		t.Error("a read asking no-cache is read from the standby")
	}
	if w := serve("POST", "/webhooks/psp", nil); len(w.Result().Cookies()) != 0 {
		t.Error("the webhook front is given a cookie")
	}
}
