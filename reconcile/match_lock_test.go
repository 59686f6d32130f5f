package reconcile

import (
	"context"
	"testing"
	"time"

	"github.com/razao/razao/internal/pgtest"
)

// TestMatchDoesNotWaitOnAnotherRunsMatch: run 1's match is held midway
// (a second connection holds its lines' rows, so its first update
// waits); run 2's match must still go through. ANALYZE inside the match
// would take a lock that conflicts with itself and hold it to commit: run
// 2 would queue behind the whole of run 1's match.
func TestMatchDoesNotWaitOnAnotherRunsMatch(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	ctx := context.Background()
	db.MustExec(`INSERT INTO reconciliation_runs (id, endpoint, source, window_from, window_to, final, scheduled, claimed_by, lease_until)
		SELECT i, 'bcb', 'bcb-pix', now() - interval '2 hours', now() - interval '1 hour', false, false, 'test', now() + interval '1 hour'
		FROM generate_series(1, 2) i`)
	db.MustExec(`INSERT INTO reconciliation_lines (run_id, line, kind, event_type, event_id, psp_id, charge_ref, amount, at)
		SELECT r, i, 'paid', 'pix', 'E' || r || '-' || i, 'E' || r || '-' || i, 'c' || i, 100, now() - interval '90 minutes'
		FROM generate_series(1, 2) r, generate_series(1, 3) i`)
	ep := endpointInfo{name: "bcb", scheme: "bcb-pix", merchant: "m"}

	gate := db.MustBegin()
	defer gate.Rollback()
	var gatePID int
	if err := gate.Get(&gatePID, `SELECT pg_backend_pid()`); err != nil {
		t.Fatal(err)
	}
	gate.MustExec(`SELECT 1 FROM reconciliation_lines WHERE run_id = 1 FOR UPDATE`)

	first := make(chan error, 1)
	go func() { first <- match(ctx, db, Run{ID: 1}, ep) }()
	// Run 1's match is midway once it waits on the gate's rows.
	waitFor(t, func() bool {
		var n int
		db.Get(&n, `SELECT count(*) FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))`, gatePID)
		return n > 0
	}, first)

	second := make(chan error, 1)
	go func() { second <- match(ctx, db, Run{ID: 2}, ep) }()
	for done := false; !done; {
		select {
		case err := <-second:
			if err != nil {
				t.Fatal(err)
			}
			done = true
		case <-time.After(10 * time.Millisecond):
			// Waiting on run 1's match (a backend blocked by one that
			// is itself blocked by the gate) is the failure.
			var n int
			db.Get(&n, `SELECT count(*) FROM pg_stat_activity a, pg_stat_activity b
				WHERE b.pid = ANY(pg_blocking_pids(a.pid)) AND $1 = ANY(pg_blocking_pids(b.pid))`, gatePID)
			if n > 0 {
				gate.Rollback()
				<-first
				<-second
				t.Fatal("run 2's match waits on run 1's")
			}
		}
	}
	gate.Rollback()
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	var undecided int
	db.Get(&undecided, `SELECT count(*) FROM reconciliation_lines WHERE outcome IS NULL`)
	if undecided != 0 {
		t.Fatalf("%d lines undecided", undecided)
	}
}

// waitFor polls cond until it holds; an error on failed first is fatal.
func waitFor(t *testing.T, cond func() bool, failed <-chan error) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		select {
		case err := <-failed:
			t.Fatalf("ended before the gate: %v", err)
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatal("condition not reached in 30s")
		}
	}
}
