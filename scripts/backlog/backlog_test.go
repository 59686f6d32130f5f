package main

import (
	"context"
	"testing"
	"time"

	"github.com/razao/razao/internal/pgtest"
)

// The tool measures what it says on a small backlog: razao's workers,
// started after the backlog is stored, apply all of it, and the claims
// they send are the ones timed (a claim statement the timing connector no
// longer recognises fails the drain with "no claims timed", instead of
// reporting nothing as fast). Then a short steady stream, its intervals
// reported with the claim's plan probed.
func TestBacklogDrainsThroughTheTimedWorkers(t *testing.T) {
	t.Parallel()
	db, url := pgtest.NewWithURL(t)
	b := &bench{backlog: 300, history: 1000, steady: 2 * time.Second, rate: 50, sample: time.Second,
		workers: 2, autovac: "default", rec: &claims{}}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := b.measure(ctx, url); err != nil {
		t.Fatal(err)
	}
	var pending, processed int
	if err := db.Get(&pending, `SELECT count(*) FROM inbox WHERE status = 'pending'`); err != nil {
		t.Fatal(err)
	}
	if err := db.Get(&processed, `SELECT count(*) FROM inbox WHERE status = 'processed' AND charge_ref LIKE 'bl-%'`); err != nil {
		t.Fatal(err)
	}
	if stored := int(b.seq.Load()); processed+pending != stored || stored < b.backlog {
		t.Errorf("stored %d deliveries; %d processed, %d pending", stored, processed, pending)
	}
	if !isClaim(b.claim) {
		t.Errorf("the probe EXPLAINed %q, not the workers' claim", b.claim)
	}
}
