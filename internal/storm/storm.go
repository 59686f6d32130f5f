package storm

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sync"
	"syscall"
	"time"
)

// FaultKind names a fault.
type FaultKind string

// The faults a storm injects.
const (
	// KillReplica sends SIGKILL to a replica mid-flight and starts it
	// again after Down.
	KillReplica FaultKind = "kill-9"
	// StopDatabase stops PostgreSQL for at least Down and starts it again;
	// the replicas must recover on their own.
	StopDatabase FaultKind = "pg-outage"
)

// Fault is one scheduled fault, At after the storm starts.
type Fault struct {
	Kind    FaultKind
	At      time.Duration
	Down    time.Duration
	Replica int // KillReplica only
}

// Config sizes a storm.
type Config struct {
	// Charges fired over Duration (paced evenly), with at most Concurrency
	// charges in flight at once (each is 1-8 concurrent sends).
	Charges     int
	Duration    time.Duration
	Concurrency int
	// OutageCharges are fired the moment PostgreSQL is down, per outage.
	OutageCharges int
	// KillCharges, per kill, are held in flight on the victim by a row
	// lock (their deliveries stored, their processing waiting) when it is
	// killed: each kill surely loses answers and aborts processing.
	KillCharges int
	// Forged charges and refunds signed with a wrong key.
	Forged int
	// MaxAttempts bounds the PSP's tries per send (default 60, about a
	// minute with back-off capped at 1s).
	MaxAttempts int
	Faults      []Fault
	Seed        uint64
	Logf        func(format string, args ...any)
}

// ReadyProbe is one GET /readyz during an outage.
type ReadyProbe struct {
	Replica    int       `json:"replica"`
	Start, End time.Time `json:"-"`
	Code       int       `json:"code"`
}

// FaultRecord is what happened during one fault.
type FaultRecord struct {
	Kind    FaultKind `json:"kind"`
	Replica int       `json:"replica,omitempty"`
	// Began: the fault was injected (SIGKILL sent / stop requested).
	// From-To: the window in which the fault certainly held (the process
	// was reaped / the cluster was down and not yet restarting).
	// Recovered: every replica answered /readyz 200 again.
	Began, From, To, Recovered time.Time
	// Probes are the /readyz answers seen while PostgreSQL was down and
	// while it came back.
	Probes []ReadyProbe `json:"-"`
	// PIDsBefore/After: a database outage must not need a restart.
	PIDsBefore, PIDsAfter []int
	ExitState             string `json:"exit_state,omitempty"`
	// HeldAtKill: requests stored and waiting on the gate when SIGKILL came.
	HeldAtKill int
	Problems   []string
}

// Result is what a storm did.
type Result struct {
	Plan     Plan
	Attempts []Attempt
	Sends    int
	Faults   []*FaultRecord
	Start    time.Time
	End      time.Time
	// Registered is how long registering the charges took.
	Registered time.Duration
	// PlannedFaults is how many faults the schedule held.
	PlannedFaults int
	Problems      []string
}

// Run registers the plan's charges and fires the storm at env's replicas
// while the fault schedule runs. It returns when every send has ended
// (accepted, refused, or out of attempts) and every fault is over.
func Run(ctx context.Context, env *Env, cfg Config) (*Result, error) {
	logf := cfg.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = 8
	}
	if cfg.Duration <= 0 {
		cfg.Duration = 10 * time.Second
	}
	if cfg.Seed == 0 {
		cfg.Seed = rand.Uint64()
	}
	outages, kills := 0, 0
	for _, f := range cfg.Faults {
		switch f.Kind {
		case StopDatabase:
			outages++
		case KillReplica:
			kills++
		}
	}
	plan := NewPlan(randomHex(3), PlanOptions{Charges: cfg.Charges, OutageCharges: cfg.OutageCharges,
		Outages: outages, KillCharges: cfg.KillCharges, Kills: kills, Forged: cfg.Forged, Seed: cfg.Seed})
	psp, err := NewPSP(env.URLs(), env.Endpoint, env.Secret, cfg.MaxAttempts)
	if err != nil {
		return nil, err
	}
	defer psp.Close()
	res := &Result{Plan: plan, PlannedFaults: len(cfg.Faults)}

	t0 := time.Now()
	if err := register(ctx, env, plan, cfg.Concurrency); err != nil {
		return nil, err
	}
	res.Registered = time.Since(t0)
	logf("storm: registered %d charges in %v (run %s, seed %d)", len(plan.Charges), res.Registered.Round(time.Millisecond), plan.RunID, plan.Seed)

	// Forgeries first, to every replica: each must be refused.
	for _, c := range plan.ByGroup("forged") {
		for i := range env.Replicas {
			psp.Send(ctx, c.Paid, i, RoleForge)
		}
	}
	for i, d := range plan.ForgedRefunds {
		psp.Send(ctx, d, i%len(env.Replicas), RoleForge)
	}

	res.Start = time.Now()
	var jobs sync.WaitGroup
	spawn := func(f func()) {
		jobs.Add(1)
		go func() {
			defer jobs.Done()
			f()
		}()
	}
	fire := func(c ChargePlan) { spawn(func() { fireCharge(ctx, psp, c) }) }

	// The fault schedule runs beside the storm.
	outageCharges, killCharges := plan.ByGroup("outage"), plan.ByGroup("kill")
	var faultsDone sync.WaitGroup
	faultsDone.Add(1)
	go func() {
		defer faultsDone.Done()
		oc, kc := 0, 0
		for _, f := range cfg.Faults {
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Until(res.Start.Add(f.At))):
			}
			var rec *FaultRecord
			switch f.Kind {
			case KillReplica:
				n := min(cfg.KillCharges, len(killCharges)-kc)
				batch := killCharges[kc : kc+n]
				kc += n
				rec = killAndRestart(ctx, env, psp, f, batch, spawn, logf)
			case StopDatabase:
				n := min(cfg.OutageCharges, len(outageCharges)-oc)
				batch := outageCharges[oc : oc+n]
				oc += n
				rec = outage(ctx, env, psp, f, batch, fire, logf)
			default:
				rec = &FaultRecord{Kind: f.Kind, Problems: []string{"unknown fault kind"}}
			}
			res.Faults = append(res.Faults, rec)
			res.Problems = append(res.Problems, rec.Problems...)
		}
	}()

	// The storm: charges paced evenly over Duration, at most Concurrency
	// of them in flight.
	sem := make(chan struct{}, cfg.Concurrency)
	storm := plan.ByGroup("storm")
	for i, c := range storm {
		due := res.Start.Add(time.Duration(i) * cfg.Duration / time.Duration(max(1, len(storm))))
		select {
		case <-ctx.Done():
		case <-time.After(time.Until(due)):
		}
		if ctx.Err() != nil {
			break
		}
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		jobs.Add(1)
		go func() {
			defer jobs.Done()
			defer func() { <-sem }()
			fireCharge(ctx, psp, c)
		}()
	}
	faultsDone.Wait()
	jobs.Wait()
	res.End = time.Now()
	res.Attempts = psp.Rec.Attempts()
	res.Sends = psp.Rec.Sends()
	if err := ctx.Err(); err != nil {
		return res, fmt.Errorf("storm cut short: %w", err)
	}
	logf("storm: %d sends, %d attempts in %v", res.Sends, len(res.Attempts), res.End.Sub(res.Start).Round(time.Millisecond))
	return res, nil
}

// register registers every charge of the plan through the API, spread over
// the replicas.
func register(ctx context.Context, env *Env, plan Plan, concurrency int) error {
	client := &http.Client{Timeout: 30 * time.Second}
	defer client.CloseIdleConnections()
	sem := make(chan struct{}, concurrency)
	errs := make(chan error, len(plan.Charges))
	var wg sync.WaitGroup
	for i, c := range plan.Charges {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			body := map[string]any{"id": c.ID, "amount": c.Amount, "partner": c.Partner,
				"commission_bp": c.CommissionBP, "access": "course:storm"}
			code, raw, err := apiCall(ctx, client, env.Replicas[i%len(env.Replicas)].URL(), env.Token, "POST", "/v1/charges", body)
			if err == nil && code != http.StatusCreated {
				err = fmt.Errorf("status %d: %s", code, raw)
			}
			if err != nil {
				errs <- fmt.Errorf("register charge %s: %w", c.ID, err)
			}
		}()
	}
	wg.Wait()
	close(errs)
	return <-errs // nil when closed and empty
}

// fireCharge sends a charge's confirmation and its refunds all at the same
// moment (a start barrier): the confirmation to a random replica, its twin
// to another, each refund to a random replica and its twin to another.
// Then, for some, the confirmation once more after it was accepted.
func fireCharge(ctx context.Context, psp *PSP, c ChargePlan) {
	n := len(psp.Targets)
	type send struct {
		d       Delivery
		replica int
		role    string
	}
	pick2 := func() (int, int) {
		a := rand.IntN(n)
		if n == 1 {
			return a, a
		}
		return a, (a + 1 + rand.IntN(n-1)) % n
	}
	var sends []send
	a, b := pick2()
	sends = append(sends, send{c.Paid, a, RoleFirst})
	if c.Twin {
		sends = append(sends, send{c.Paid, b, RoleTwin})
	}
	for _, r := range c.Refunds {
		a, b := pick2()
		sends = append(sends, send{r.Delivery, a, RoleFirst})
		if r.Twin {
			sends = append(sends, send{r.Delivery, b, RoleTwin})
		}
	}
	barrier := make(chan struct{})
	var wg sync.WaitGroup
	paidOK := make([]bool, len(sends))
	for i, s := range sends {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-barrier
			last := psp.Send(ctx, s.d, s.replica, s.role)
			paidOK[i] = s.d.Kind == "paid" && last.OK()
		}()
	}
	close(barrier)
	wg.Wait()
	accepted := false
	for _, ok := range paidOK {
		accepted = accepted || ok
	}
	if c.Late && accepted && ctx.Err() == nil {
		psp.Send(ctx, c.Paid, rand.IntN(n), RoleLate)
	}
}

// killAndRestart SIGKILLs one replica mid-flight, leaves it down for
// f.Down, then starts it again on the same port and waits until ready.
// "Mid-flight" is forced: the batch's charges are locked by a gate, their
// confirmation and refunds are sent to the victim, and the kill comes
// once they are all stored (and answered) and their processing waits on
// the lock. The crashed processing must be finished by someone else: the
// other replicas' workers, or a redelivery ("duplicate").
func killAndRestart(ctx context.Context, env *Env, psp *PSP, f Fault, batch []ChargePlan, spawn func(func()), logf func(string, ...any)) *FaultRecord {
	r := env.Replicas[f.Replica%len(env.Replicas)]
	rec := &FaultRecord{Kind: KillReplica, Replica: r.Index}
	var gate *Gate
	if len(batch) > 0 {
		ids := make([]string, len(batch))
		for i, c := range batch {
			ids[i] = c.ID
		}
		var err error
		if gate, err = CloseGate(ctx, env.DB(), ids); err != nil {
			// Still send and kill, only without the guarantee.
			rec.Problems = append(rec.Problems, fmt.Sprintf("kill: %v", err))
		} else {
			defer gate.Open()
		}
		sends := 0
		for _, c := range batch {
			for _, d := range append([]Delivery{c.Paid}, refundDeliveries(c)...) {
				sends++
				spawn(func() { psp.Send(ctx, d, r.Index, RoleFirst) })
			}
		}
		if gate != nil {
			n, err := gate.WaitFor(ctx, env.DB(), sends, 1, 30*time.Second, nil)
			if err != nil {
				rec.Problems = append(rec.Problems, fmt.Sprintf("kill: %v", err))
			}
			rec.HeldAtKill = n
		}
	}
	rec.Began = time.Now()
	pid := r.PID()
	rec.PIDsBefore = []int{pid}
	if err := r.Signal(syscall.SIGKILL); err != nil {
		rec.Problems = append(rec.Problems, fmt.Sprintf("kill -9 replica %d: %v", r.Index, err))
		return rec
	}
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	st, err := r.Wait(wctx)
	cancel()
	rec.From = time.Now()
	if err != nil {
		rec.Problems = append(rec.Problems, fmt.Sprintf("replica %d did not die after SIGKILL: %v", r.Index, err))
		return rec
	}
	rec.ExitState = st.String()
	if gate != nil {
		gate.Open() // the victim's orphaned backends may now fail and roll back
	}
	logf("storm: kill -9 replica %d (pid %d) with %d deliveries held in flight: %s; down for %v", r.Index, pid, rec.HeldAtKill, st, f.Down)
	select {
	case <-ctx.Done():
		return rec
	case <-time.After(f.Down):
	}
	rec.To = time.Now()
	// A process that exits at once (its port briefly taken, say) is
	// started once more.
	for try := 0; ; try++ {
		if err := r.Start(); err != nil {
			rec.Problems = append(rec.Problems, fmt.Sprintf("restart replica %d: %v", r.Index, err))
			return rec
		}
		rctx, cancel := context.WithTimeout(ctx, 60*time.Second)
		err = r.WaitReady(rctx)
		cancel()
		if err == nil || r.Running() || try == 1 {
			break
		}
		logf("storm: replica %d exited before it was ready (%v); starting it again", r.Index, err)
		time.Sleep(500 * time.Millisecond)
	}
	if err != nil {
		rec.Problems = append(rec.Problems, fmt.Sprintf("replica %d not ready after restart: %v\n%s", r.Index, err, r.LogTail(20)))
		return rec
	}
	rec.Recovered = time.Now()
	rec.PIDsAfter = []int{r.PID()}
	logf("storm: replica %d restarted (pid %d), ready %v after the kill", r.Index, r.PID(), rec.Recovered.Sub(rec.Began).Round(time.Millisecond))
	return rec
}

func refundDeliveries(c ChargePlan) []Delivery {
	out := make([]Delivery, len(c.Refunds))
	for i, r := range c.Refunds {
		out[i] = r.Delivery
	}
	return out
}

// outage stops PostgreSQL, fires the outage charges, and keeps it down for
// at least f.Down and until every replica has answered /readyz while it
// was down and some delivery was answered while it was down (bounded);
// then starts it again and waits until every replica is ready again,
// without restarting any.
func outage(ctx context.Context, env *Env, psp *PSP, f Fault, batch []ChargePlan, fire func(ChargePlan), logf func(string, ...any)) *FaultRecord {
	rec := &FaultRecord{Kind: StopDatabase, Began: time.Now()}
	for _, r := range env.Replicas {
		rec.PIDsBefore = append(rec.PIDsBefore, r.PID())
	}
	// Probe /readyz on every replica from now until recovery.
	probeCtx, stopProbes := context.WithCancel(ctx)
	var probesMu sync.Mutex
	var probes []ReadyProbe
	var pw sync.WaitGroup
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	for _, r := range env.Replicas {
		pw.Add(1)
		go func() {
			defer pw.Done()
			for probeCtx.Err() == nil {
				p := ReadyProbe{Replica: r.Index, Start: time.Now()}
				p.Code, _ = Probe(probeCtx, client, r.URL()+"/readyz")
				p.End = time.Now()
				if probeCtx.Err() != nil {
					return
				}
				probesMu.Lock()
				probes = append(probes, p)
				probesMu.Unlock()
				select {
				case <-probeCtx.Done():
				case <-time.After(100 * time.Millisecond):
				}
			}
		}()
	}
	defer func() {
		stopProbes()
		pw.Wait()
		rec.Probes = probes
	}()

	if err := env.StopDatabase(); err != nil {
		rec.Problems = append(rec.Problems, fmt.Sprintf("stop PostgreSQL: %v", err))
		return rec
	}
	rec.From = time.Now()
	logf("storm: PostgreSQL stopped; firing %d charges into the outage", len(batch))
	for _, c := range batch {
		fire(c)
	}
	// Hold the outage for at least f.Down, and until each replica has
	// answered /readyz and some delivery has been answered inside the
	// window; at most f.Down + 30s.
	hardEnd := rec.From.Add(f.Down + 30*time.Second)
	for {
		now := time.Now()
		if now.After(hardEnd) {
			rec.Problems = append(rec.Problems, "outage: no /readyz answer from every replica, or no webhook answer, while PostgreSQL was down (waited 30s past the planned outage)")
			break
		}
		if now.Sub(rec.From) >= f.Down && outageSeen(rec.From, env, &probesMu, &probes, psp) {
			break
		}
		select {
		case <-ctx.Done():
		case <-time.After(50 * time.Millisecond):
		}
		if ctx.Err() != nil {
			break
		}
	}
	rec.To = time.Now()
	if err := env.StartDatabase(); err != nil {
		rec.Problems = append(rec.Problems, fmt.Sprintf("start PostgreSQL again: %v", err))
		return rec
	}
	logf("storm: PostgreSQL started again after %v down", time.Since(rec.From).Round(time.Millisecond))
	// Every replica must become ready on its own, without a restart.
	deadline := time.Now().Add(60 * time.Second)
	for _, r := range env.Replicas {
		for {
			code, _ := Probe(ctx, client, r.URL()+"/readyz")
			if code == http.StatusOK {
				break
			}
			if time.Now().After(deadline) || ctx.Err() != nil {
				rec.Problems = append(rec.Problems, fmt.Sprintf("replica %d not ready 60s after PostgreSQL came back (last /readyz %d)", r.Index, code))
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		rec.PIDsAfter = append(rec.PIDsAfter, r.PID())
	}
	rec.Recovered = time.Now()
	for i := range rec.PIDsBefore {
		if rec.PIDsBefore[i] != rec.PIDsAfter[i] {
			rec.Problems = append(rec.Problems, fmt.Sprintf("replica %d was restarted during the outage (pid %d -> %d)", i, rec.PIDsBefore[i], rec.PIDsAfter[i]))
		}
	}
	logf("storm: every replica ready again %v after PostgreSQL started", rec.Recovered.Sub(rec.To).Round(time.Millisecond))
	return rec
}

// outageSeen: every replica answered /readyz within the window, and at
// least one webhook attempt got an HTTP answer within it.
func outageSeen(from time.Time, env *Env, mu *sync.Mutex, probes *[]ReadyProbe, psp *PSP) bool {
	mu.Lock()
	seen := map[int]bool{}
	for _, p := range *probes {
		if !p.Start.Before(from) && p.Code != 0 {
			seen[p.Replica] = true
		}
	}
	mu.Unlock()
	if len(seen) < len(env.Replicas) {
		return false
	}
	return psp.Rec.answeredSince(from)
}
