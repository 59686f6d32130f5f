package standby_test

import (
	"context"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/razao/razao/internal/standby"
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

// TestPairReplaysPausesAndSurvivesLosingThePrimary walks the pair through
// what the tests above it rely on: a row written on the primary is read
// on the standby once replayed; paused, the standby falls behind by
// bytes the lag counts; a synchronous standby holds every confirmed
// commit when the primary is killed with SIGKILL, and once promoted it
// takes writes.
func TestPairReplaysPausesAndSurvivesLosingThePrimary(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	p := standby.Start(t, standby.Options{Sync: true})
	primary, replica := open(t, p.Primary.URL), open(t, p.Standby.URL)

	if _, err := primary.ExecContext(ctx, `CREATE TABLE t (n int)`); err != nil {
		t.Fatal(err)
	}
	if _, err := primary.ExecContext(ctx, `INSERT INTO t VALUES (1)`); err != nil {
		t.Fatal(err)
	}
	if err := p.WaitReplay(ctx); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := replica.GetContext(ctx, &n, `SELECT count(*) FROM t`); err != nil || n != 1 {
		t.Fatalf("standby sees %d rows (%v), want 1", n, err)
	}
	if _, err := replica.ExecContext(ctx, `INSERT INTO t VALUES (2)`); err == nil {
		t.Fatal("the standby took a write")
	}

	if err := p.PauseReplay(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := primary.ExecContext(ctx, `INSERT INTO t SELECT generate_series(1, 1000)`); err != nil {
		t.Fatal(err)
	}
	lag, err := p.Lag(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if lag.Bytes <= 0 || lag.Replayed.IsZero() {
		t.Fatalf("paused standby: lag %+v, want bytes behind and a last replayed commit", lag)
	}
	if err := replica.GetContext(ctx, &n, `SELECT count(*) FROM t`); err != nil || n != 1 {
		t.Fatalf("paused standby sees %d rows (%v), want still 1", n, err)
	}
	if err := p.ResumeReplay(ctx); err != nil {
		t.Fatal(err)
	}
	if err := p.WaitReplay(ctx); err != nil {
		t.Fatal(err)
	}

	// Synchronous: the commit below returns only once the standby has
	// flushed it, so the kill cannot lose it.
	if _, err := primary.ExecContext(ctx, `INSERT INTO t VALUES (100042)`); err != nil {
		t.Fatal(err)
	}
	if err := p.KillPrimary(); err != nil {
		t.Fatal(err)
	}
	if err := p.Promote(ctx); err != nil {
		t.Fatal(err)
	}
	if err := replica.GetContext(ctx, &n, `SELECT count(*) FROM t WHERE n = 100042`); err != nil || n != 1 {
		t.Fatalf("promoted standby has %d rows of the last confirmed commit (%v), want 1", n, err)
	}
	if _, err := replica.ExecContext(ctx, `INSERT INTO t VALUES (100043)`); err != nil {
		t.Fatalf("promoted standby refuses a write: %v", err)
	}
}
