package reconcile_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/razao/razao/internal/pgtest"
	"github.com/razao/razao/monthsums"
	"github.com/razao/razao/periods"
	"github.com/razao/razao/reconcile"
	"github.com/razao/razao/webhook"
)

// today is the start of now's day in the ledger's time zone: the end of
// the window of the day's refund sweep.
var today = func() time.Time {
	loc, _ := time.LoadLocation(periods.DefaultTimeZone)
	y, m, d := now.In(loc).Date()
	return time.Date(y, m, d, 0, 0, 0, 0, loc)
}()

// newSweepEnv is newEnv with the ledger's go-live on since and the bcb
// endpoint scheduled every hour (the sweep runs with its schedule).
func newSweepEnv(t *testing.T, since time.Time) *env {
	t.Helper()
	db, url := pgtest.NewWithURL(t)
	e := newEnvSince(t, db, url, since)
	e.cfgs[0].Schedule = "0 * * * *"
	e.rec = e.reconciler(fakeClientSecret)
	return e
}

// reconcilerAt is a reconciler of the env's config whose clock reads
// clock.
func (e *env) reconcilerAt(clock time.Time) (*reconcile.Reconciler, error) {
	return reconcile.New(reconcile.Options{DB: e.db, DatabaseURL: e.url, Inbox: e.inbox, Ledger: e.ledger, Hooks: webhook.InboxEndpoints(e.hooks),
		Endpoints: e.cfgs, Getenv: func(k string) string {
			if k == secretEnv {
				return fakeClientSecret
			}
			return ""
		}, Now: func() time.Time { return clock }, Wait: e.waits.wait})
}

// paid books item's credit as its webhook does (the refund comes later).
func (e *env) paid(charge string, amount int64, it pixItem) {
	e.t.Helper()
	e.charge(charge, amount, "")
	credit := it
	credit.Devolucoes = nil
	if code, st := e.postPix(credit); code != 200 || st != "accepted" {
		e.t.Fatalf("credit of %s: %d %s", charge, code, st)
	}
}

// TestSchedulerBooksLateRefundsOnceInTheirSettlementMonth: two refunds
// settled 3 and 80 days after their Pix, whose webhooks were lost, are
// found by the day's sweep (the windows the scheduler reads are hours
// long, and GET /pix lists by the Pix's horario), each booked once, at its
// settlement and in its month; the sweep asks only for Pix with a
// devolução and judges no credit; the day's sweep runs once, across
// processes; the next day's books nothing; the late webhook is a
// duplicate.
func TestSchedulerBooksLateRefundsOnceInTheirSettlementMonth(t *testing.T) {
	t.Parallel()
	loc := today.Location()
	since := time.Date(now.In(loc).Year(), now.In(loc).Month()-4, 1, 0, 0, 0, 0, time.UTC)
	e := newSweepEnv(t, since)
	p3 := pixItem{E2E: e2e(3), Txid: "late3", Valor: "5.00", Horario: today.AddDate(0, 0, -6).Add(10 * time.Hour)}
	p3.Devolucoes = []devolucao{{ID: "R3", Valor: "2.00", Status: "DEVOLVIDO", Liquidacao: p3.Horario.AddDate(0, 0, 3)}}
	p80 := pixItem{E2E: e2e(80), Txid: "late80", Valor: "7.00", Horario: today.AddDate(0, 0, -82).Add(15 * time.Hour)}
	p80.Devolucoes = []devolucao{{ID: "R80", Valor: "7.00", Status: "DEVOLVIDO", Liquidacao: p80.Horario.AddDate(0, 0, 80)}}
	open := pixItem{E2E: e2e(4), Txid: "open4", Valor: "3.00", Horario: today.AddDate(0, 0, -9)}
	open.Devolucoes = []devolucao{{ID: "R4", Valor: "1.00", Status: "EM_PROCESSAMENTO"}}
	plain := pixItem{E2E: e2e(5), Txid: "plain5", Valor: "4.00", Horario: today.AddDate(0, 0, -8)}
	e.paid("late3", 500, p3)
	e.paid("late80", 700, p80)
	e.paid("open4", 300, open)
	e.paid("plain5", 400, plain)
	e.psp.add(p3, p80, open, plain)

	ctx := context.Background()
	next := map[string]time.Time{}
	if err := e.rec.RunDue(ctx, next); err != nil {
		t.Fatal(err)
	}
	got := e.refundSets()
	if len(got) != 2 {
		t.Fatalf("refunds booked %+v, want R3 and R80", got)
	}
	cal := e.ledger.Calendar()
	for i, want := range []struct {
		charge, refund string
		amount         int64
		at             time.Time
	}{{"late3", "R3", 200, p3.Devolucoes[0].Liquidacao}, {"late80", "R80", 700, p80.Devolucoes[0].Liquidacao}} {
		r := got[i]
		if r.Charge != want.charge || r.Refund != want.refund || r.Amount != want.amount || !r.EventAt.Equal(want.at) ||
			periods.MonthOf(r.Month) != cal.Month(want.at) {
			t.Fatalf("refund %+v, want %s %s of %d at %s in %s", r, want.charge, want.refund, want.amount, want.at, cal.Month(want.at))
		}
	}
	var sweep reconcile.Run
	if err := e.db.Get(&sweep, `SELECT id, window_from, window_to, booked, matched, divergences, status FROM reconciliation_runs
		WHERE sweep`); err != nil {
		t.Fatal(err)
	}
	if !sweep.To.Equal(today) || !sweep.From.Equal(today.AddDate(0, 0, -2).Add(-reconcile.DefaultRefundHorizon)) ||
		sweep.Status != "succeeded" || sweep.Booked != 2 || sweep.Matched != 1 || sweep.Divergences != 0 {
		t.Fatalf("sweep %+v", sweep)
	}
	// Only the devoluções were read, and only Pix with one were asked for.
	if n := e.count(`SELECT count(*) FROM reconciliation_lines WHERE run_id = $1 AND kind NOT IN ('refunded', 'refund_open')`, sweep.ID); n != 0 {
		t.Fatalf("the sweep kept %d lines that are not devoluções", n)
	}
	e.psp.mu.Lock()
	asked := slices.Clone(e.psp.refundsOnly)
	e.psp.mu.Unlock()
	if !slices.Contains(asked, true) {
		t.Fatalf("no page was asked with devolucaoPresente=true: %v", asked)
	}

	// The same day again, in this process and in another: nothing.
	if err := e.rec.RunDue(ctx, next); err != nil {
		t.Fatal(err)
	}
	if err := e.reconciler(fakeClientSecret).RunDue(ctx, map[string]time.Time{}); err != nil {
		t.Fatal(err)
	}
	if n := e.count(`SELECT count(*) FROM reconciliation_runs WHERE sweep`); n != 1 {
		t.Fatalf("%d sweeps of one day", n)
	}
	// The next day's sweep reads them again, and books nothing.
	tomorrow, err := e.reconcilerAt(now.Add(24 * time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if err := tomorrow.RunDue(ctx, map[string]time.Time{}); err != nil {
		t.Fatal(err)
	}
	var again reconcile.Run
	if err := e.db.Get(&again, `SELECT booked, matched, divergences FROM reconciliation_runs WHERE sweep AND window_to > $1`, today); err != nil {
		t.Fatal(err)
	}
	if again.Booked != 0 || again.Matched != 3 || again.Divergences != 0 || len(e.refundSets()) != 2 {
		t.Fatalf("the next day's sweep %+v; refunds %+v", again, e.refundSets())
	}
	// The lost webhook, at last: a duplicate.
	if code, st := e.postPix(p3); code != 200 || st != "duplicate" {
		t.Fatalf("late webhook: %d %s", code, st)
	}
	if len(e.refundSets()) != 2 {
		t.Fatalf("refunds %+v", e.refundSets())
	}
}

// TestSweepBooksARefundOfAClosedMonthInTheFirstOpenMonth: a refund
// settled in a month closed since is booked by the sweep in the first
// open month, keeping its settlement as its time.
func TestSweepBooksARefundOfAClosedMonthInTheFirstOpenMonth(t *testing.T) {
	t.Parallel()
	e := newSweepEnv(t, goLive)
	it := pixItem{E2E: e2e(6), Txid: "closed6", Valor: "9.00", Horario: goLive.Add(36 * time.Hour)}
	it.Devolucoes = []devolucao{{ID: "R6", Valor: "9.00", Status: "DEVOLVIDO", Liquidacao: it.Horario.AddDate(0, 0, 3)}}
	e.paid("closed6", 900, it)
	e.psp.add(it)
	lastMonth := periods.MonthOf(goLive)
	if err := periods.Close(context.Background(), e.db, e.ledger.Calendar(), lastMonth, now, "", monthsums.Closing); err != nil {
		t.Fatal(err)
	}
	if err := e.rec.RunDue(context.Background(), map[string]time.Time{}); err != nil {
		t.Fatal(err)
	}
	got := e.refundSets()
	if len(got) != 1 || got[0].Refund != "R6" || !got[0].EventAt.Equal(it.Devolucoes[0].Liquidacao) ||
		periods.MonthOf(got[0].Month) != lastMonth.Next() {
		t.Fatalf("refunds %+v; want R6 at %s in %s", got, it.Devolucoes[0].Liquidacao, lastMonth.Next())
	}
}

// sweepStatement is five Pix refunded over three pages of devolucaoPresente
// (two of the refunds' webhooks came), and three Pix with none.
func sweepStatement(e *env) {
	for i := 1; i <= 8; i++ {
		id := "s" + string(rune('0'+i))
		it := pixItem{E2E: e2e(i), Txid: id, Valor: "6.00", Horario: today.AddDate(0, 0, -10-i)}
		if i <= 5 {
			it.Devolucoes = []devolucao{{ID: "R" + id, Valor: "2.00", Status: "DEVOLVIDO", Liquidacao: it.Horario.AddDate(0, 0, i)}}
		}
		e.paid(id, 600, it)
		if i%2 == 0 && i <= 5 {
			if code, st := e.postPix(it); code != 200 || st != "accepted" {
				e.t.Fatalf("refund webhook of %s: %d %s", id, code, st)
			}
		}
		e.psp.add(it)
	}
}

// TestSweepKilledMidwayResumes: a sweep that dies after its second page
// is taken over once its lease runs out, goes on from the pages it kept
// (still asking only for Pix with a devolução), and ends as a sweep that
// did not die.
func TestSweepKilledMidwayResumes(t *testing.T) {
	t.Parallel()
	whole := newSweepEnv(t, goLive)
	sweepStatement(whole)
	want, claimed, err := whole.rec.Sweep(context.Background(), "bcb", now)
	if err != nil || !claimed || want.Booked != 3 || want.Matched != 2 || want.Pages != 3 {
		t.Fatalf("whole sweep %+v (claimed %v): %v", want, claimed, err)
	}

	e := newSweepEnv(t, goLive)
	sweepStatement(e)
	e.rec.StopAfterPage(2)
	killed, _, err := e.rec.Sweep(context.Background(), "bcb", now)
	if !errors.Is(err, reconcile.ErrStopped) {
		t.Fatalf("killed sweep: %v", err)
	}
	if r, _ := reconcile.GetRun(context.Background(), e.db, killed.ID); r.Status != "running" || r.Pages != 2 || !r.Sweep {
		t.Fatalf("after the kill: %+v", r)
	}
	other := e.reconciler(fakeClientSecret)
	// The day is claimed: another replica's sweep of it does nothing.
	if r, claimed, err := other.Sweep(context.Background(), "bcb", now); err != nil || claimed || r.ID != killed.ID {
		t.Fatalf("the day swept again under a live lease: %+v %v %v", r, claimed, err)
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
	served, asked := slices.Clone(e.psp.pagesServed), slices.Clone(e.psp.refundsOnly)
	e.psp.mu.Unlock()
	if !slices.Equal(served, []int{0, 1, 2}) || slices.Contains(asked, false) {
		t.Fatalf("pages served %v, devolucaoPresente %v: the resumed sweep asked again, or for every Pix", served, asked)
	}
	if n := len(e.refundSets()); n != 5 || n != len(whole.refundSets()) {
		t.Fatalf("%d refunds resumed, %d whole", n, len(whole.refundSets()))
	}
}

// TestSweepIsClaimedOnceByTwoReplicas: replica A is held inside the day's
// sweep's first page while replica B runs its scheduler (its windows and
// the day's sweep): B leaves the sweep to A, and each refund is booked
// once.
func TestSweepIsClaimedOnceByTwoReplicas(t *testing.T) {
	t.Parallel()
	e := newSweepEnv(t, goLive)
	sweepStatement(e)
	a, b := e.reconciler(fakeClientSecret), e.reconciler(fakeClientSecret)
	entered, release := make(chan struct{}), make(chan struct{})
	var first atomic.Bool
	e.psp.beforePage = func(int) {
		if first.CompareAndSwap(false, true) {
			close(entered)
			<-release
		}
	}
	var runA reconcile.Run
	var claimedA bool
	var errA error
	done := make(chan struct{})
	go func() { runA, claimedA, errA = a.Sweep(context.Background(), "bcb", now); close(done) }()
	<-entered
	errB := b.RunDue(context.Background(), map[string]time.Time{})
	close(release)
	<-done
	if errA != nil || errB != nil || !claimedA {
		t.Fatalf("replica errors: %v, %v (A claimed %v)", errA, errB, claimedA)
	}
	if runA.Status != "succeeded" || runA.Booked != 3 || runA.Attempts != 1 {
		t.Fatalf("replica A's sweep %+v", runA)
	}
	if n := e.count(`SELECT count(*) FROM reconciliation_runs WHERE sweep`); n != 1 {
		t.Fatalf("%d sweeps of one day", n)
	}
	if n := e.count(`SELECT count(*) FROM reconciliation_runs WHERE scheduled AND NOT sweep`); n != 2 {
		t.Fatalf("replica B ran %d windows, want its slot's two", n)
	}
	if n := len(e.refundSets()); n != 5 {
		t.Fatalf("%d refunds booked, want 5", n)
	}
}

// TestRefundHorizonIsChecked: refund_horizon is 90 days when unset, 1 day
// to 364 days when set (a sweep's window, two days more, stays within a
// window's bound); a sweep after days without one reaches back to the
// refunds settled since the last that succeeded.
func TestRefundHorizonIsChecked(t *testing.T) {
	t.Parallel()
	e := newSweepEnv(t, goLive)
	day := 24 * time.Hour
	for _, c := range []struct {
		horizon time.Duration
		ok      bool
	}{{0, true}, {-day, false}, {-1, false}, {time.Hour, false}, {day, true}, {364 * day, true},
		{365 * day, false}, {10 * 365 * day, false}} {
		e.cfgs[0].RefundHorizon = c.horizon
		_, err := e.reconcilerAt(now)
		if (err == nil) != c.ok || err != nil && !strings.Contains(err.Error(), "refund_horizon must be 1 day..364 days") {
			t.Errorf("refund_horizon %s: %v", c.horizon, err)
		}
	}
	e.cfgs[0].RefundHorizon = 0
	rec, err := e.reconcilerAt(now)
	if err != nil {
		t.Fatal(err)
	}
	// The last sweep that succeeded ended five days ago.
	e.db.MustExec(`INSERT INTO reconciliation_runs (endpoint, source, window_from, window_to, final, scheduled, sweep,
		status, claimed_by, lease_until) VALUES ('bcb', 'bcb-pix', $1, $2, false, true, true, 'succeeded', 'r', now())`,
		today.AddDate(0, 0, -100), today.AddDate(0, 0, -5))
	run, claimed, err := rec.Sweep(context.Background(), "bcb", now)
	if err != nil || !claimed {
		t.Fatalf("sweep %+v: %v", run, err)
	}
	if want := today.AddDate(0, 0, -6).Add(-90 * day); !run.From.Equal(want) || !run.To.Equal(today) {
		t.Fatalf("sweep of [%s, %s), want [%s, %s)", run.From, run.To, want, today)
	}
	if _, _, err := rec.Sweep(context.Background(), "bcb", now.Add(day)); !errors.Is(err, reconcile.ErrInput) {
		t.Fatalf("the sweep of a day not begun: %v", err)
	}
}

// TestSweepOpensOneDivergenceForAPixItCannotRead: a Pix with a devolução
// that cannot be read is a divergence of the sweep, and the sweeps of
// the days after it, whose windows differ, open no other for it.
func TestSweepOpensOneDivergenceForAPixItCannotRead(t *testing.T) {
	t.Parallel()
	e := newSweepEnv(t, goLive)
	// Its devolução's valor does not read (its credit, read or not, is
	// its window's).
	bad := pixItem{E2E: e2e(9), Txid: "bad9", Valor: "1.00", Horario: today.AddDate(0, 0, -4)}
	bad.Devolucoes = []devolucao{{ID: "R9", Valor: "1.0", Status: "DEVOLVIDO", Liquidacao: today.AddDate(0, 0, -2)}}
	e.psp.add(bad)
	for _, day := range []time.Time{now, now.Add(24 * time.Hour), now.Add(48 * time.Hour)} {
		rec, err := e.reconcilerAt(day)
		if err != nil {
			t.Fatal(err)
		}
		run, claimed, err := rec.Sweep(context.Background(), "bcb", day)
		if err != nil || !claimed || run.Lines != 1 || run.Divergences != 1 {
			t.Fatalf("sweep of %s: %+v (claimed %v): %v", day, run, claimed, err)
		}
	}
	if n := e.count(`SELECT count(*) FROM divergences WHERE reason = 'invalid_line'`); n != 1 {
		t.Fatalf("%d divergences for one Pix read on three days", n)
	}
	if n := e.count(`SELECT count(DISTINCT divergence_id) FROM reconciliation_lines WHERE reason = 'invalid_line'`); n != 1 {
		t.Fatalf("the sweeps' lines point at %d divergences", n)
	}
}

// TestSweepPhantomsAreItsRefundsOnly: a sweep judges the refunds of the
// Pix it reads: a refund the ledger booked that the PSP does not list is
// a phantom; a sale the PSP does not list is its window's to judge, and a
// refund settled since the sweep's statement was read is not judged yet.
func TestSweepPhantomsAreItsRefundsOnly(t *testing.T) {
	t.Parallel()
	e := newSweepEnv(t, goLive)
	ghost := pixItem{E2E: e2e(1), Txid: "ghost", Valor: "5.00", Horario: today.AddDate(0, 0, -12)}
	ghost.Devolucoes = []devolucao{{ID: "RG", Valor: "5.00", Status: "DEVOLVIDO", Liquidacao: today.AddDate(0, 0, -5)}}
	unlisted := pixItem{E2E: e2e(2), Txid: "unlisted", Valor: "4.00", Horario: today.AddDate(0, 0, -11)}
	recent := pixItem{E2E: e2e(3), Txid: "recent", Valor: "3.00", Horario: today.AddDate(0, 0, -1)}
	recent.Devolucoes = []devolucao{{ID: "RR", Valor: "1.00", Status: "DEVOLVIDO", Liquidacao: now.Add(-30 * time.Minute)}}
	for _, it := range []struct {
		charge string
		amount int64
		item   pixItem
	}{{"ghost", 500, ghost}, {"unlisted", 400, unlisted}, {"recent", 300, recent}} {
		e.charge(it.charge, it.amount, "")
		if code, st := e.postPix(it.item); code != 200 || st != "accepted" {
			t.Fatalf("webhook of %s: %d %s", it.charge, code, st)
		}
	}
	// The PSP lists ghost and recent without their refunds, and not unlisted.
	ghost.Devolucoes, recent.Devolucoes = nil, nil
	e.psp.add(ghost, recent)
	run, claimed, err := e.rec.Sweep(context.Background(), "bcb", now)
	if err != nil || !claimed {
		t.Fatalf("sweep %+v: %v", run, err)
	}
	var phantoms []string
	if err := e.db.Select(&phantoms, `SELECT charge_id || ' ' || kind || ' ' || refund_id FROM reconciliation_lines
		WHERE run_id = $1 AND reason = 'phantom' ORDER BY charge_id`, run.ID); err != nil {
		t.Fatal(err)
	}
	if want := []string{"ghost refunded RG"}; !slices.Equal(phantoms, want) || run.Lines != 0 || run.Divergences != 1 {
		t.Fatalf("sweep %+v: phantoms %q, want %q", run, phantoms, want)
	}
}
