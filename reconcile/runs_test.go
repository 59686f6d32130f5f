package reconcile_test

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/razao/razao/reconcile"
)

// resumeStatement is five payments, two lost, over three pages.
func resumeStatement(e *env) {
	for i := 1; i <= 5; i++ {
		id := "r" + string(rune('0'+i))
		e.charge(id, 100*int64(i), "")
		it := pixItem{E2E: e2e(i), Txid: id, Valor: []string{"", "1.00", "2.00", "3.00", "4.00", "5.01"}[i], Horario: at(10 * i)}
		if i%2 == 0 {
			if code, _ := e.postPix(it); code != 200 {
				e.t.Fatal(code)
			}
		}
		e.psp.add(it)
	}
}

// TestRunKilledMidwayResumes: a run that dies after its second page (a
// test hook) is taken over once its lease runs out, continues from the
// pages it kept without asking for them again, and ends as an
// uninterrupted run of the same statement does.
func TestRunKilledMidwayResumes(t *testing.T) {
	t.Parallel()
	whole := newEnv(t)
	resumeStatement(whole)
	want := whole.runPix(winFrom, winTo)

	e := newEnv(t)
	resumeStatement(e)
	e.rec.StopAfterPage(2)
	killed, err := e.rec.ReconcileWindow(context.Background(), "bcb", winFrom, winTo)
	if !errors.Is(err, reconcile.ErrStopped) {
		t.Fatalf("killed run: %v", err)
	}
	if r, _ := reconcile.GetRun(context.Background(), e.db, killed.ID); r.Status != "running" || r.Pages != 2 {
		t.Fatalf("after the kill: %+v", r)
	}
	// A replica finds nothing to take over while the lease holds.
	other := e.reconciler(fakeClientSecret)
	if err := other.ResumeDue(context.Background()); err != nil {
		t.Fatal(err)
	}
	if r, _ := reconcile.GetRun(context.Background(), e.db, killed.ID); r.Status != "running" {
		t.Fatalf("taken over under a live lease: %+v", r)
	}
	e.db.MustExec(`UPDATE reconciliation_runs SET lease_until = now() - interval '1 second' WHERE id = $1`, killed.ID)
	if err := other.ResumeDue(context.Background()); err != nil {
		t.Fatal(err)
	}
	got, err := reconcile.GetRun(context.Background(), e.db, killed.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != "succeeded" || got.Attempts != 2 || got.Lines != want.Lines || got.Matched != want.Matched ||
		got.Booked != want.Booked || got.Divergences != want.Divergences || got.Pages != want.Pages {
		t.Fatalf("resumed %+v\nwhole   %+v", got, want)
	}
	if a, b := e.outcomes(got.ID), whole.outcomes(want.ID); !slices.Equal(a, b) {
		t.Fatalf("resumed lines %q, whole %q", a, b)
	}
	e.psp.mu.Lock()
	served := append([]int(nil), e.psp.pagesServed...)
	e.psp.mu.Unlock()
	if !slices.Equal(served, []int{0, 1, 2}) {
		t.Fatalf("pages served %v: the resumed run asked again for pages it kept", served)
	}
	if e.sales() != whole.sales() || e.sales() != 4 { // r5 differs
		t.Fatalf("%d sales resumed, %d whole", e.sales(), whole.sales())
	}
}

// TestTwoReplicasRunAWindowOnce: two replicas run the same slot at the
// same time; each of its windows is claimed and run by one of them.
// Replica A is held inside its first window's first page until replica B
// has tried that window (and run the other one): B must leave it alone.
func TestTwoReplicasRunAWindowOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.cfgs[0].Schedule = "0 * * * *"
	a, b := e.reconciler(fakeClientSecret), e.reconciler(fakeClientSecret)
	slot := winTo
	e.charge("fresh", 100, "")
	e.charge("final", 200, "")
	e.psp.add(pixItem{E2E: e2e(1), Txid: "fresh", Valor: "1.00", Horario: slot.Add(-30 * time.Minute)},
		pixItem{E2E: e2e(2), Txid: "final", Valor: "2.00", Horario: slot.Add(-90 * time.Minute)})
	entered, release := make(chan struct{}), make(chan struct{})
	var first atomic.Bool
	e.psp.beforePage = func(int) {
		// Only the first fetch waits (a sync.Once would hold the others too).
		if first.CompareAndSwap(false, true) {
			close(entered)
			<-release
		}
	}
	var runsA []reconcile.Run
	var errA error
	done := make(chan struct{})
	go func() { runsA, errA = a.RunSlot(context.Background(), "bcb", slot); close(done) }()
	<-entered
	runsB, errB := b.RunSlot(context.Background(), "bcb", slot)
	close(release)
	<-done
	if errA != nil || errB != nil {
		t.Fatalf("replica errors: %v, %v", errA, errB)
	}
	if len(runsA) != 1 || len(runsB) != 1 || runsA[0].From.Equal(runsB[0].From) {
		t.Fatalf("replica A ran %+v\nreplica B ran %+v", runsA, runsB)
	}
	if n := e.count(`SELECT count(*) FROM reconciliation_runs WHERE scheduled`); n != 2 {
		t.Fatalf("%d scheduled runs, want one per window", n)
	}
	if e.sales() != 2 || e.count(`SELECT count(*) FROM reconciliation_runs WHERE attempts <> 1`) != 0 {
		t.Fatalf("%d sales", e.sales())
	}
	// The slot again, on either replica: nothing left to run.
	if again, err := b.RunSlot(context.Background(), "bcb", slot); err != nil || len(again) != 0 {
		t.Fatalf("slot run again: %+v %v", again, err)
	}
}

// TestRunDueRunsTheLatestSlotOnce: on start the scheduler runs the
// schedule's latest slot (its window that just ended and the one that just
// became final), and the next call, before the next slot, runs nothing.
func TestRunDueRunsTheLatestSlotOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.cfgs[0].Schedule = "0 * * * *"
	rec := e.reconciler(fakeClientSecret)
	next := map[string]time.Time{}
	if err := rec.RunDue(context.Background(), next); err != nil {
		t.Fatal(err)
	}
	var runs []struct {
		From  time.Time `db:"window_from"`
		To    time.Time `db:"window_to"`
		Final bool      `db:"final"`
	}
	if err := e.db.Select(&runs, `SELECT window_from, window_to, final FROM reconciliation_runs WHERE scheduled AND NOT sweep ORDER BY window_to`); err != nil {
		t.Fatal(err)
	}
	slot := now.Truncate(time.Hour)
	if len(runs) != 2 || !runs[1].To.Equal(slot) || runs[1].Final || !runs[0].To.Equal(slot.Add(-time.Hour)) || !runs[0].Final {
		t.Fatalf("runs %+v for the slot %s", runs, slot)
	}
	if !next["bcb"].Equal(slot.Add(time.Hour)) {
		t.Fatalf("next slot %s", next["bcb"])
	}
	if err := rec.RunDue(context.Background(), next); err != nil {
		t.Fatal(err)
	}
	if n := e.count(`SELECT count(*) FROM reconciliation_runs`); n != 3 { // and the day's refund sweep
		t.Fatalf("%d runs after a second call", n)
	}
}
