package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// job is one timed request; build signs it at the moment it is sent, so
// its timestamp is fresh whatever the queue.
type job struct {
	kind  string
	build func(now time.Time) delivery
}

// fire sends jobs at concurrency c and times the whole batch.
func (l *loader) fire(ctx context.Context, res *result, jobs []job, c int) ([]reply, []bool) {
	replies := make([]reply, len(jobs))
	sent := make([]bool, len(jobs))
	res.cpuStart = sampleCPU(l.opt.serverPID)
	start := time.Now()
	res.started = start
	forEach(ctx, len(jobs), c, func(ctx context.Context, i int) {
		if !l.onSchedule(ctx, start, i) {
			return
		}
		d := jobs[i].build(time.Now())
		rp := l.do(ctx, l.client, http.MethodPost, d.path, d.body, d.header)
		if ctx.Err() != nil && rp.err != nil {
			return // cut by the cap: not an answer from razao
		}
		replies[i], sent[i] = rp, true
		res.record(i, jobs[i].kind, rp)
	})
	res.WallS = time.Since(start).Seconds()
	res.CPU = cores(res.cpuStart, sampleCPU(l.opt.serverPID), l.opt.serverPID)
	res.tally(replies, sent)
	if res.Sent < len(jobs) {
		res.Incomplete = true
	}
	return replies, sent
}

// onSchedule waits for job i's time under -rate: the i-th payment is
// offered i/rate seconds after start, whenever the earlier ones were
// answered (an open load: a razao that falls behind meets a queue, as it
// would from a PSP, instead of a slower client). At most -c are in flight,
// so a razao far behind sees the -c oldest late payments at once. False:
// ctx ended first.
func (l *loader) onSchedule(ctx context.Context, start time.Time, i int) bool {
	if l.opt.rate <= 0 {
		return true
	}
	at := start.Add(time.Duration(int64(i) * int64(time.Second) / int64(l.opt.rate)))
	wait := time.Until(at)
	if wait <= 0 {
		return true
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

func partner(i int) string { return "load-p" + strconv.Itoa(i%8) }

// expectation is what one charge must show after the scenario.
type expectation struct {
	spec      chargeSpec
	paid      bool
	refunds   map[string]int64 // refund id -> amount, for refunds razao accepted
	undecided bool             // a request got no definite answer: the effect cannot be predicted
}

// distinct: N charges registered beforehand, then one signed payment each.
func (l *loader) distinct(ctx context.Context) *result {
	return l.payments(ctx, "distinct", nil)
}

// beside is a load that runs beside a scenario's payments: started once the
// charges are registered, before the timed phase; the function it returns
// stops it once every payment is applied and records what it saw in res.
type beside func(ctx context.Context, res *result) (stop func())

// payments is distinct, with an optional load beside it (flood, sse).
func (l *loader) payments(ctx context.Context, name string, with beside) *result {
	n := l.opt.n
	res := newResult(l, name, n, l.opt.c)
	prefix := l.runID + "-" + short(name) + "-"
	specs := make([]chargeSpec, n)
	for i := range specs {
		specs[i] = chargeSpec{ID: prefix + strconv.Itoa(i), Amount: 1000 + int64(i*37%9000), Partner: partner(i),
			CommissionBP: 1000, Access: "course:load"}
	}
	t0 := time.Now()
	l.logf("%s: registering %d charges", name, n)
	if err := l.register(ctx, specs); err != nil {
		res.violate("setup: %v", err)
		res.Incomplete = ctx.Err() != nil
		return res
	}
	res.SetupS = round2(time.Since(t0).Seconds())
	jobs := make([]job, n)
	for i := range jobs {
		s := specs[i]
		jobs[i] = job{kind: "paid", build: func(now time.Time) delivery { return l.scheme.paid("wh-"+s.ID, s.ID, s.Amount, now) }}
	}
	stop := func() {}
	if with != nil {
		stop = with(ctx, res)
		if len(res.Violations) > 0 {
			stop()
			return res
		}
	}
	l.logf("%s: %d payments at c=%d", name, n, l.opt.c)
	replies, sent := l.fire(ctx, res, jobs, l.opt.c)
	l.waitApplied(ctx, res, prefix)
	stop()
	if res.Accepted != res.Sent {
		res.violate("%d of %d payments were not answered 200 accepted", res.Sent-res.Accepted, res.Sent)
	}
	exps := make([]expectation, 0, n)
	for i, s := range specs {
		if !sent[i] {
			continue
		}
		e := expectation{spec: s, paid: replies[i].code == 200}
		e.undecided = replies[i].err != nil || replies[i].code >= 500
		exps = append(exps, e)
	}
	if max := l.opt.verifyMax; max > 0 && len(exps) > max {
		// GET /v1/charges/{id} grows with the ledger: read an even sample;
		// the database checks below count every charge.
		sample := make([]expectation, 0, max)
		for i := 0; i < max; i++ {
			sample = append(sample, exps[i*len(exps)/max])
		}
		res.Extra["verified_sample"] = fmt.Sprintf("%d of %d charges", max, len(exps))
		exps = sample
	}
	l.verifyCharges(ctx, res, exps)
	l.dbChecks(ctx, res, prefix, map[string]int{"charge.paid": res.Accepted, "access.granted": res.Accepted}, res.Sent)
	return res
}

// duplicateStorm: one charge, then storm copies of one identical delivery
// (same webhook-id, same bytes) released together by a start barrier over
// pre-opened connections. Exactly one may be accepted, every other copy
// must be a duplicate, and the ledger must show one sale and one commission.
func (l *loader) duplicateStorm(ctx context.Context) *result {
	k := l.opt.storm
	res := newResult(l, "duplicate-storm", k, k)
	prefix := l.runID + "-s-"
	spec := chargeSpec{ID: prefix + "0", Amount: 4990, Partner: partner(0), CommissionBP: 1000, Access: "course:load"}
	t0 := time.Now()
	if err := l.register(ctx, []chargeSpec{spec}); err != nil {
		res.violate("setup: %v", err)
		res.Incomplete = ctx.Err() != nil
		return res
	}
	t := newTransport(k)
	client := newClient(t)
	defer t.CloseIdleConnections()
	l.warm(ctx, client, k)
	res.SetupS = round2(time.Since(t0).Seconds())

	d := l.scheme.paid("wh-"+spec.ID, spec.ID, spec.Amount, time.Now())
	replies := make([]reply, k)
	sent := make([]bool, k)
	var ready, done sync.WaitGroup
	var reused atomic.Int64
	gate := make(chan struct{})
	for i := 0; i < k; i++ {
		ready.Add(1)
		done.Add(1)
		go func() {
			defer done.Done()
			ready.Done()
			<-gate
			rp := l.do(ctx, client, http.MethodPost, d.path, d.body, d.header)
			if ctx.Err() != nil && rp.err != nil {
				return
			}
			if rp.reused {
				reused.Add(1)
			}
			replies[i], sent[i] = rp, true
			res.record(i, "paid", rp)
		}()
	}
	ready.Wait()
	l.logf("duplicate-storm: releasing %d copies of one delivery", k)
	res.cpuStart = sampleCPU(l.opt.serverPID)
	start := time.Now()
	res.started = start
	close(gate)
	done.Wait()
	res.WallS = time.Since(start).Seconds()
	res.CPU = cores(res.cpuStart, sampleCPU(l.opt.serverPID), l.opt.serverPID)
	res.tally(replies, sent)
	l.waitApplied(ctx, res, prefix)
	res.Incomplete = res.Sent < k
	res.Extra["connections_reused"] = reused.Load()
	if res.Statuses["accepted"] != 1 {
		res.violate("%d copies accepted; exactly 1 must be", res.Statuses["accepted"])
	}
	if res.Statuses["duplicate"] != res.Sent-1 || res.Codes["200"] != res.Sent {
		res.violate("want 1 accepted and %d duplicate, all 200; got codes %s, statuses %s",
			res.Sent-1, mapString(res.Codes), mapString(res.Statuses))
	}
	undecided := res.Errors > 0
	for code := range res.Codes {
		if code[0] == '5' {
			undecided = true
		}
	}
	// One identical delivery: whatever else happened, the charge must be
	// paid once if any copy was answered 200.
	e := expectation{spec: spec, paid: res.Codes["200"] > 0, undecided: undecided && res.Codes["200"] == 0}
	l.verifyCharges(ctx, res, []expectation{e})
	l.dbChecks(ctx, res, prefix, map[string]int{"charge.paid": 1, "access.granted": 1}, 1)
	return res
}

// warm opens up to k keep-alive connections with concurrent GET /healthz,
// so the storm's copies leave at once instead of waiting on handshakes.
func (l *loader) warm(ctx context.Context, client *http.Client, k int) {
	var opened atomic.Int64
	for round := 0; round < 4 && int(opened.Load()) < k && ctx.Err() == nil; round++ {
		gate := make(chan struct{})
		var wg sync.WaitGroup
		for i := 0; i < k; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-gate
				if rp := l.do(ctx, client, http.MethodGet, "/healthz", nil, nil); rp.err == nil && !rp.reused {
					opened.Add(1)
				}
			}()
		}
		close(gate)
		wg.Wait()
	}
}

// mixedCharge is one charge of the mixed plan: its payment and partial
// refunds (summing to at most its amount).
type mixedCharge struct {
	amount  int64
	refunds []int64
}

// mixedOp is one request of the mixed plan: the payment of charge
// (refund < 0) or its refund-th refund.
type mixedOp struct {
	charge, refund int
}

// planMixed lays out exactly n requests: charges with a payment and 0-3
// partial refunds each (a quarter of those with refunds are refunded in
// full). ordered keeps each charge's payment before its refunds in the
// dispatch order, with charges interleaved at random; shuffled lets a
// refund go before its payment (razao parks it until the payment lands).
func planMixed(n int, rng *rand.Rand, shuffled bool) ([]mixedCharge, []mixedOp) {
	var charges []mixedCharge
	total := 0
	for total < n {
		amount := 1000 + rng.Int64N(9000)
		r := rng.IntN(4)
		if total+1+r > n {
			r = n - total - 1
		}
		c := mixedCharge{amount: amount}
		if r > 0 {
			sum := int64(r) + rng.Int64N(amount-int64(r)) // r..amount-1
			if rng.IntN(4) == 0 {
				sum = amount
			}
			left := sum
			for k := 0; k < r; k++ {
				rest := int64(r - k - 1)
				part := left
				if rest > 0 {
					part = 1 + rng.Int64N(left-rest) // leaves at least 1 for each later refund
				}
				c.refunds = append(c.refunds, part)
				left -= part
			}
		}
		charges = append(charges, c)
		total += 1 + r
	}
	var slots []int
	for i, c := range charges {
		for k := 0; k <= len(c.refunds); k++ {
			slots = append(slots, i)
		}
	}
	rng.Shuffle(len(slots), func(i, j int) { slots[i], slots[j] = slots[j], slots[i] })
	seen := make([]int, len(charges))
	ops := make([]mixedOp, len(slots))
	for i, c := range slots {
		ops[i] = mixedOp{charge: c, refund: seen[c] - 1}
		seen[c]++
	}
	if shuffled {
		rng.Shuffle(len(ops), func(i, j int) { ops[i], ops[j] = ops[j], ops[i] })
	}
	return charges, ops
}

// mixed: payments and partial refunds of many charges interleaved.
func (l *loader) mixed(ctx context.Context) *result {
	n := l.opt.n
	res := newResult(l, "mixed", n, l.opt.c)
	seed := l.opt.seed
	if seed == 0 {
		seed = time.Now().UnixNano()
	}
	res.Extra["seed"] = seed
	res.Extra["order"] = l.opt.order
	charges, ops := planMixed(n, rand.New(rand.NewPCG(uint64(seed), 0x72617a616f)), l.opt.order == "shuffled")
	prefix := l.runID + "-m-"
	specs := make([]chargeSpec, len(charges))
	refunds := 0
	for i, c := range charges {
		specs[i] = chargeSpec{ID: prefix + strconv.Itoa(i), Amount: c.amount, Partner: partner(i), CommissionBP: 1000, Access: "course:load"}
		refunds += len(c.refunds)
	}
	res.Extra["charges"] = len(charges)
	res.Extra["refunds"] = refunds
	t0 := time.Now()
	l.logf("mixed: registering %d charges", len(specs))
	if err := l.register(ctx, specs); err != nil {
		res.violate("setup: %v", err)
		res.Incomplete = ctx.Err() != nil
		return res
	}
	res.SetupS = round2(time.Since(t0).Seconds())
	refundID := func(op mixedOp) string { return specs[op.charge].ID + "-r" + strconv.Itoa(op.refund) }
	jobs := make([]job, len(ops))
	for i, op := range ops {
		s := specs[op.charge]
		if op.refund < 0 {
			jobs[i] = job{kind: "paid", build: func(now time.Time) delivery { return l.scheme.paid("wh-"+s.ID, s.ID, s.Amount, now) }}
			continue
		}
		rid, amount := refundID(op), charges[op.charge].refunds[op.refund]
		jobs[i] = job{kind: "refund", build: func(now time.Time) delivery { return l.scheme.refund("wh-"+rid, s.ID, rid, amount, now) }}
	}
	l.logf("mixed: %d requests (%d payments, %d refunds) at c=%d, %s", len(ops), len(charges), refunds, l.opt.c, l.opt.order)
	replies, sent := l.fire(ctx, res, jobs, l.opt.c)
	l.waitApplied(ctx, res, prefix)
	if res.Accepted != res.Sent {
		res.violate("%d of %d deliveries were not answered 200 accepted", res.Sent-res.Accepted, res.Sent)
	}
	exps := make([]expectation, len(specs))
	for i := range specs {
		exps[i] = expectation{spec: specs[i], refunds: map[string]int64{}}
	}
	used := make([]bool, len(specs))
	acceptedRefunds := 0
	for i, op := range ops {
		if !sent[i] {
			continue
		}
		used[op.charge] = true
		e := &exps[op.charge]
		rp := replies[i]
		if rp.err != nil || rp.code >= 500 {
			e.undecided = true
			continue
		}
		if rp.code != 200 {
			continue
		}
		if op.refund < 0 {
			e.paid = true
		} else {
			e.refunds[refundID(op)] = charges[op.charge].refunds[op.refund]
			acceptedRefunds++
		}
	}
	var check []expectation
	for i, e := range exps {
		if used[i] {
			if len(e.refunds) > 0 && !e.paid {
				// a refund whose payment was never sent stays parked: unpaid
				e.refunds = map[string]int64{}
			}
			check = append(check, e)
		}
	}
	l.verifyCharges(ctx, res, check)
	paid := 0
	for _, e := range check {
		if e.paid {
			paid++
		}
	}
	l.dbChecks(ctx, res, prefix, map[string]int{"charge.paid": paid, "access.granted": paid, "charge.refunded": acceptedRefunds}, res.Sent)
	return res
}

// verifyCharges reads every charge back through GET /v1/charges/{id} and
// compares it with what was sent. Charges that do not match yet are read
// again for up to 20 s (a delivery razao deferred to its worker lands
// later), within the run's cap.
func (l *loader) verifyCharges(ctx context.Context, res *result, exps []expectation) {
	if !l.opt.verify || len(exps) == 0 || ctx.Err() != nil {
		return
	}
	v := &res.Verify
	v.Ran = true
	res.getC = l.opt.c
	v.Charges = len(exps)
	var todo []int
	for i, e := range exps {
		if e.undecided {
			v.Skipped++
			continue
		}
		todo = append(todo, i)
	}
	start := time.Now()
	deadline := start.Add(20 * time.Second)
	problems := make([]string, len(exps))
	var firstRound []time.Duration
	for round := 0; len(todo) > 0 && ctx.Err() == nil; round++ {
		durs := make([]time.Duration, len(todo))
		forEach(ctx, len(todo), l.opt.c, func(ctx context.Context, j int) {
			i := todo[j]
			t := time.Now()
			d, err := l.getCharge(ctx, exps[i].spec.ID)
			durs[j] = time.Since(t)
			if err != nil {
				problems[i] = err.Error()
				return
			}
			problems[i] = checkCharge(d, exps[i])
		})
		if round == 0 {
			firstRound = durs
			v.ReadS = round2(time.Since(start).Seconds())
		}
		var again []int
		for _, i := range todo {
			if problems[i] != "" {
				again = append(again, i)
			}
		}
		if round > 0 {
			v.Settled = round2(time.Since(start).Seconds())
		}
		if len(again) == 0 || time.Now().After(deadline) {
			todo = again
			break
		}
		if round == 0 {
			l.logf("%s: %d charges not settled yet, reading them again", res.Scenario, len(again))
			for _, i := range again[:min(3, len(again))] {
				v.FirstRead = append(v.FirstRead, exps[i].spec.ID+": "+problems[i])
			}
		}
		todo = again
		select {
		case <-ctx.Done():
		case <-time.After(500 * time.Millisecond):
		}
	}
	v.GetLatency = summarize(firstRound)
	if ctx.Err() != nil && len(todo) > 0 {
		res.Incomplete = true
	}
	v.Bad = len(todo)
	v.OK = v.Charges - v.Skipped - v.Bad
	for _, i := range todo {
		if len(v.Examples) < 5 {
			v.Examples = append(v.Examples, exps[i].spec.ID+": "+problems[i])
		}
	}
	if v.Bad > 0 {
		res.violate("%d of %d charges do not show what was sent", v.Bad, v.Charges)
	}
	if v.Settled > 0 && v.Bad == 0 {
		res.warn("some charges showed their effects only %.1f s after razao had answered every request", v.Settled)
	}
}

// checkCharge compares a charge's detail with the expectation; "" is a match.
func checkCharge(d chargeDetail, e expectation) string {
	a, c := e.spec.Amount, e.spec.commission()
	if !e.paid {
		if d.State != "pending" || len(d.PostingSets) != 0 {
			return fmt.Sprintf("nothing was paid, yet state %s with %d posting sets", d.State, len(d.PostingSets))
		}
		return ""
	}
	var refunded int64
	for _, r := range e.refunds {
		refunded += r
	}
	want := "paid"
	switch {
	case refunded == a:
		want = "refunded"
	case refunded > 0:
		want = "partially_refunded"
	}
	kinds := map[string]int{}
	sums := map[string]int64{}
	for _, s := range d.PostingSets {
		kinds[s.Kind]++
		sums[s.Kind] += s.Amount
		var legs int64
		for _, p := range s.Postings {
			legs += p.Amount
		}
		if len(s.Postings) < 2 || legs != 0 {
			return fmt.Sprintf("posting set %d (%s) has %d postings summing to %d", s.ID, s.Kind, len(s.Postings), legs)
		}
	}
	got := map[string]int64{}
	for _, r := range d.Refunds {
		got[r.RefundID] += r.Amount
	}
	wantRev := mulDiv(c, refunded, a)
	switch {
	case d.State != want:
		return fmt.Sprintf("state %s, want %s", d.State, want)
	case d.PaidAmount == nil || *d.PaidAmount != a:
		return fmt.Sprintf("paid_amount %v, want %d", d.PaidAmount, a)
	case d.RefundedAmount != refunded:
		return fmt.Sprintf("refunded_amount %d, sent %d", d.RefundedAmount, refunded)
	case kinds["sale"] != 1 || sums["sale"] != a:
		return fmt.Sprintf("%d sale sets of %d in all, want 1 of %d", kinds["sale"], sums["sale"], a)
	case kinds["commission"] != 1 || sums["commission"] != c:
		return fmt.Sprintf("%d commission sets of %d in all, want 1 of %d", kinds["commission"], sums["commission"], c)
	case kinds["refund"] != len(e.refunds) || sums["refund"] != refunded:
		return fmt.Sprintf("%d refund sets of %d in all, want %d of %d", kinds["refund"], sums["refund"], len(e.refunds), refunded)
	case sums["commission_reversal"] != wantRev:
		return fmt.Sprintf("commission reversals %d, want floor(%d*%d/%d) = %d", sums["commission_reversal"], c, refunded, a, wantRev)
	case len(d.PostingSets) != kinds["sale"]+kinds["commission"]+kinds["refund"]+kinds["commission_reversal"]:
		return fmt.Sprintf("unexpected posting sets: %v", kinds)
	case d.AccessGrant == nil:
		return "paid but no access grant"
	}
	for id, amount := range e.refunds {
		if got[id] != amount {
			return fmt.Sprintf("refund %s booked %d, sent %d", id, got[id], amount)
		}
	}
	return ""
}

// mulDiv is floor(a·b/c) for the small non-negative values used here.
func mulDiv(a, b, c int64) int64 {
	if c == 0 {
		return 0
	}
	return a * b / c
}
