package storm

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"
)

// Figures are the numbers a storm reports.
type Figures struct {
	Replicas int `json:"replicas"`
	Charges  int `json:"charges"`
	// DeliveriesSent counts sends (a twin, a late redelivery and a forgery
	// are sends of their own); Attempts counts HTTP requests, PSP retries
	// included.
	DeliveriesSent int `json:"deliveries_sent"`
	Attempts       int `json:"attempts"`
	Received2xx    int `json:"received_2xx"`
	// Accepted: 2xx "accepted" (first insert); DuplicatesAbsorbed: 2xx
	// "duplicate" (the inbox already held it).
	Accepted           int `json:"accepted"`
	DuplicatesAbsorbed int `json:"duplicates_absorbed"`
	Received503        int `json:"received_503"`
	TransportErrors    int `json:"transport_errors"`
	// AppliedOnce: payments + refunds whose effect is in the ledger exactly once.
	AppliedOnce      int `json:"applied_once"`
	PaymentsApplied  int `json:"payments_applied_once"`
	RefundsApplied   int `json:"refunds_applied_once"`
	RefundsBeforePay int `json:"refunds_stored_before_payment"`
	StoredUnanswered int `json:"stored_without_2xx"`
	// AnswerLost: stored, but the request that stored it never answered
	// (the replica was killed); the PSP's redelivery got "duplicate".
	AnswerLost int `json:"stored_answer_lost"`
	// HeldAtKill: requests stored and waiting when a replica was killed.
	HeldAtKill int `json:"held_in_flight_at_kill"`
	// ProcessedLate: deliveries processed 2s or more after they were
	// stored: finished by a worker or a redelivery after a crash, an
	// outage or a parking, not by the request that stored them.
	ProcessedLate      int `json:"processed_2s_after_receipt"`
	Outage503          int `json:"outage_503"`
	Outage2xx          int `json:"outage_2xx"`
	OutageOther        int `json:"outage_other"`
	ReadyzOutage503    int `json:"readyz_503_during_outage"`
	ReadyzOutageNot503 int `json:"readyz_not_503_during_outage"`
	ForgedRefused      int `json:"forged_refused"`
	ForgedApplied      int `json:"forged_applied"`
	Unaccepted         int `json:"never_accepted"`
	Lost               int `json:"lost"`
	DoubleApplied      int `json:"double_applied"`
	VerifyExit         int `json:"verify_exit"`
	// Timings, in seconds.
	SetupS         float64 `json:"setup_s"`
	StormS         float64 `json:"storm_s"`
	KillToReadyS   float64 `json:"kill_to_ready_s,omitempty"`
	OutageS        float64 `json:"outage_s,omitempty"`
	PGUpToReadyS   float64 `json:"pg_up_to_all_ready_s,omitempty"`
	DrainS         float64 `json:"drain_s"`
	VerifyS        float64 `json:"verify_s"`
	ShutdownMaxS   float64 `json:"shutdown_max_s,omitempty"`
	ShutdownInFlow int     `json:"shutdown_in_flight_ok,omitempty"`
	TotalS         float64 `json:"total_s,omitempty"`
	Seed           uint64  `json:"seed"`
}

// Report is the verdict of Check (and GracefulShutdown).
type Report struct {
	Figures  Figures
	Problems []string
	// VerifyOutput is what `razao verify` printed.
	VerifyOutput string
}

func (r *Report) problemf(format string, args ...any) {
	r.Problems = append(r.Problems, fmt.Sprintf(format, args...))
}

// CheckOptions bound Check.
type CheckOptions struct {
	// DrainTimeout bounds the wait for the inbox to have no pending row.
	DrainTimeout time.Duration
}

type inboxRow struct {
	EventID    string    `db:"event_id"`
	EventType  string    `db:"event_type"`
	Status     string    `db:"status"`
	Attempts   int       `db:"attempts"`
	LastError  string    `db:"last_error"`
	ReceivedAt time.Time `db:"received_at"`
	// Late: processed 2s or more after it was received.
	Late bool `db:"late"`
}

type setKey struct{ kind, charge, refund string }
type setAgg struct{ n, amount int64 }

type chargeRow struct {
	ID         string `db:"id"`
	State      string `db:"state"`
	PaidAmount int64  `db:"paid_amount"`
	Refunded   int64  `db:"refunded_amount"`
	Commission int64  `db:"commission"`
}

// deliveryAnswers folds the attempts of one delivery id.
type deliveryAnswers struct {
	ok, accepted, duplicate int
	codes                   map[int]int
	lateNotDuplicate        int
}

// Check waits (bounded) until the inbox has no pending delivery, runs
// `razao verify`, and compares every answer the PSP got with the ledger.
func Check(ctx context.Context, env *Env, res *Result, opts CheckOptions) (*Report, error) {
	if opts.DrainTimeout <= 0 {
		opts.DrainTimeout = 90 * time.Second
	}
	rep := &Report{}
	f := &rep.Figures
	f.Replicas, f.Seed = len(env.Replicas), res.Plan.Seed
	f.SetupS = env.SetupTime.Seconds()
	f.StormS = res.End.Sub(res.Start).Seconds()
	rep.Problems = append(rep.Problems, res.Problems...)
	db := env.DB()

	// 1. Drain: the workers must finish everything that was accepted.
	t0 := time.Now()
	deadline := t0.Add(opts.DrainTimeout)
	var pending int
	for {
		err := db.GetContext(ctx, &pending, `SELECT count(*) FROM inbox WHERE status = 'pending'`)
		if err == nil && pending == 0 {
			break
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			var rows []inboxRow
			db.SelectContext(ctx, &rows, `SELECT event_id, event_type, status, attempts, coalesce(last_error, '') AS last_error, received_at
				FROM inbox WHERE status = 'pending' ORDER BY id LIMIT 5`)
			rep.problemf("inbox did not drain within %v: %d pending (err %v); e.g. %+v", opts.DrainTimeout, pending, err, rows)
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	f.DrainS = time.Since(t0).Seconds()

	// 2. razao verify.
	t0 = time.Now()
	code, out, err := env.Verify(ctx)
	f.VerifyS = time.Since(t0).Seconds()
	f.VerifyExit, rep.VerifyOutput = code, out
	if err != nil || code != 0 {
		rep.problemf("razao verify exit %d (%v):\n%s", code, err, out)
	}

	// 3. The database as it ended.
	inbox := map[string]inboxRow{}
	var rows []inboxRow
	if err := db.SelectContext(ctx, &rows, `SELECT event_id, event_type, status, attempts, coalesce(last_error, '') AS last_error, received_at,
		coalesce(processed_at >= received_at + interval '2 seconds', false) AS late
		FROM inbox WHERE endpoint = $1`, env.Endpoint); err != nil {
		return rep, fmt.Errorf("read inbox: %w", err)
	}
	for _, r := range rows {
		inbox[r.EventID] = r
	}
	sets := map[setKey]setAgg{}
	var setRows []struct {
		Kind   string `db:"kind"`
		Charge string `db:"charge_id"`
		Refund string `db:"refund_id"`
		N      int64  `db:"n"`
		Amount int64  `db:"amount"`
	}
	if err := db.SelectContext(ctx, &setRows, `SELECT kind, coalesce(charge_id, '') AS charge_id, coalesce(refund_id, '') AS refund_id,
		count(*) AS n, sum(amount) AS amount FROM posting_sets GROUP BY 1, 2, 3`); err != nil {
		return rep, fmt.Errorf("read posting sets: %w", err)
	}
	for _, s := range setRows {
		sets[setKey{s.Kind, s.Charge, s.Refund}] = setAgg{s.N, s.Amount}
	}
	charges := map[string]chargeRow{}
	var chargeRows []chargeRow
	if err := db.SelectContext(ctx, &chargeRows, `SELECT id, state, coalesce(paid_amount, 0) AS paid_amount, refunded_amount, commission FROM charges`); err != nil {
		return rep, fmt.Errorf("read charges: %w", err)
	}
	for _, c := range chargeRows {
		charges[c.ID] = c
	}
	outbox := map[setKey]int{}
	var outRows []struct {
		Topic  string `db:"topic"`
		Charge string `db:"charge_id"`
		Refund string `db:"refund_id"`
		N      int    `db:"n"`
	}
	if err := db.SelectContext(ctx, &outRows, `SELECT topic, coalesce(charge_id, '') AS charge_id, coalesce(payload->>'refund_id', '') AS refund_id,
		count(*) AS n FROM outbox GROUP BY 1, 2, 3`); err != nil {
		return rep, fmt.Errorf("read outbox: %w", err)
	}
	for _, o := range outRows {
		outbox[setKey{o.Topic, o.Charge, o.Refund}] = o.N
	}
	grants := map[string]bool{}
	var grantRows []string
	if err := db.SelectContext(ctx, &grantRows, `SELECT charge_id FROM access_grants`); err != nil {
		return rep, fmt.Errorf("read grants: %w", err)
	}
	for _, g := range grantRows {
		grants[g] = true
	}
	var divergences []string
	if err := db.SelectContext(ctx, &divergences, `SELECT reason || ' ' || coalesce(charge_id, '') || ': ' || detail FROM divergences ORDER BY id`); err != nil {
		return rep, fmt.Errorf("read divergences: %w", err)
	}
	for _, d := range divergences {
		rep.problemf("divergence opened: %s", d)
	}

	// 4. What the PSP heard, per delivery.
	answers := map[string]*deliveryAnswers{}
	for _, a := range res.Attempts {
		d := answers[a.Delivery]
		if d == nil {
			d = &deliveryAnswers{codes: map[int]int{}}
			answers[a.Delivery] = d
		}
		d.codes[a.Code]++
		f.Attempts++
		switch {
		case a.Code == 0:
			f.TransportErrors++
		case a.Code == 503:
			f.Received503++
		}
		if a.OK() {
			f.Received2xx++
			d.ok++
			switch a.Status {
			case "accepted":
				d.accepted++
				f.Accepted++
			case "duplicate":
				d.duplicate++
				f.DuplicatesAbsorbed++
			default:
				rep.problemf("delivery %s: 2xx with status %q", a.Delivery, a.Status)
			}
			if a.Role == RoleLate && a.Status != "duplicate" {
				d.lateNotDuplicate++
			}
		}
	}
	f.DeliveriesSent = res.Sends
	get := func(id string) *deliveryAnswers {
		if d := answers[id]; d != nil {
			return d
		}
		return &deliveryAnswers{codes: map[int]int{}}
	}
	known := map[string]bool{}

	// 5. Per charge, payment and refund.
	for _, c := range res.Plan.Charges {
		f.Charges++
		known[c.Paid.ID] = true
		ch, registered := charges[c.ID]
		if !registered {
			rep.problemf("charge %s: not registered", c.ID)
			continue
		}
		pa := get(c.Paid.ID)
		payRow, payStored := inbox[c.Paid.ID]
		sale := sets[setKey{"sale", c.ID, ""}]
		comm := sets[setKey{"commission", c.ID, ""}]
		if c.Group == "forged" {
			if pa.ok > 0 || payStored || sale.n > 0 || ch.State != "pending" {
				f.ForgedApplied++
				rep.problemf("forged confirmation of %s: answers %v, stored %v, sales %d, state %s", c.ID, pa.codes, payStored, sale.n, ch.State)
			}
			f.ForgedRefused += pa.codes[401]
			continue
		}
		if pa.accepted > 1 {
			f.DoubleApplied++
			rep.problemf("delivery %s answered \"accepted\" %d times (the inbox stored it twice?)", c.Paid.ID, pa.accepted)
		}
		if pa.lateNotDuplicate > 0 {
			rep.problemf("late redelivery of %s answered other than \"duplicate\"", c.Paid.ID)
		}
		paid := pa.ok > 0 || payStored
		if payStored && pa.ok > 0 && pa.accepted == 0 {
			f.AnswerLost++
		}
		if payStored && payRow.Late {
			f.ProcessedLate++
		}
		switch {
		case pa.ok > 0 && !payStored:
			f.Lost++
			rep.problemf("LOST: %s got 2xx %d times but is not in the inbox", c.Paid.ID, pa.ok)
		case pa.ok == 0 && payStored:
			f.StoredUnanswered++
			f.AnswerLost++
		case pa.ok == 0:
			f.Unaccepted++
			rep.problemf("payment %s never accepted after %d attempts (answers %v)", c.Paid.ID, sumCodes(pa.codes), pa.codes)
		}
		wantComm := int64(0)
		if c.Commission() > 0 {
			wantComm = 1
		}
		if sale.n > 1 || comm.n > 1 || outbox[setKey{"charge.paid", c.ID, ""}] > 1 || outbox[setKey{"access.granted", c.ID, ""}] > 1 {
			f.DoubleApplied++
			rep.problemf("DOUBLE: charge %s has %d sales, %d commissions, %d charge.paid and %d access.granted events",
				c.ID, sale.n, comm.n, outbox[setKey{"charge.paid", c.ID, ""}], outbox[setKey{"access.granted", c.ID, ""}])
		}
		if paid {
			ok := true
			if payStored && payRow.Status != "processed" {
				ok = false
				rep.problemf("payment %s: inbox status %s after drain (attempts %d, last error %q)", c.Paid.ID, payRow.Status, payRow.Attempts, payRow.LastError)
			}
			if sale.n != 1 || sale.amount != c.Amount || comm.n != wantComm || (wantComm == 1 && comm.amount != c.Commission()) {
				ok = false
				rep.problemf("payment %s: %d sales of %d (want 1 of %d), %d commissions of %d (want %d of %d)",
					c.Paid.ID, sale.n, sale.amount, c.Amount, comm.n, comm.amount, wantComm, c.Commission())
			}
			if ch.PaidAmount != c.Amount || ch.State == "pending" || ch.State == "failed" || !grants[c.ID] ||
				outbox[setKey{"charge.paid", c.ID, ""}] != 1 {
				ok = false
				rep.problemf("charge %s: state %s, paid %d of %d, grant %v, %d charge.paid events", c.ID, ch.State, ch.PaidAmount,
					c.Amount, grants[c.ID], outbox[setKey{"charge.paid", c.ID, ""}])
			}
			if ok {
				f.PaymentsApplied++
			} else if sale.n == 0 {
				f.Lost++
			}
		} else if sale.n != 0 || comm.n != 0 || ch.State != "pending" {
			rep.problemf("charge %s: never accepted yet %d sales, %d commissions, state %s", c.ID, sale.n, comm.n, ch.State)
		}

		var refunded, reversed int64
		for _, r := range c.Refunds {
			known[r.ID] = true
			ra := get(r.ID)
			row, stored := inbox[r.ID]
			set := sets[setKey{"refund", c.ID, r.RefundID}]
			rev := sets[setKey{"commission_reversal", c.ID, r.RefundID}]
			reversed += rev.amount
			events := outbox[setKey{"charge.refunded", c.ID, r.RefundID}]
			if ra.accepted > 1 {
				f.DoubleApplied++
				rep.problemf("delivery %s answered \"accepted\" %d times", r.ID, ra.accepted)
			}
			if set.n > 1 || rev.n > 1 || events > 1 {
				f.DoubleApplied++
				rep.problemf("DOUBLE: refund %s has %d refund sets, %d reversals, %d charge.refunded events", r.RefundID, set.n, rev.n, events)
			}
			switch {
			case ra.ok > 0 && !stored:
				f.Lost++
				rep.problemf("LOST: %s got 2xx %d times but is not in the inbox", r.ID, ra.ok)
				continue
			case ra.ok == 0 && stored:
				f.StoredUnanswered++
				f.AnswerLost++
			case ra.ok == 0:
				f.Unaccepted++
				rep.problemf("refund %s never accepted after %d attempts (answers %v)", r.ID, sumCodes(ra.codes), ra.codes)
			}
			if stored && ra.ok > 0 && ra.accepted == 0 {
				f.AnswerLost++
			}
			if stored && row.Late {
				f.ProcessedLate++
			}
			if payStored && stored && row.ReceivedAt.Before(payRow.ReceivedAt) {
				f.RefundsBeforePay++
			}
			switch {
			case stored && paid:
				if row.Status != "processed" || set.n != 1 || set.amount != r.Amount || events != 1 {
					rep.problemf("refund %s of %s: inbox %s (attempts %d, %q), %d refund sets of %d (want 1 of %d), %d events",
						r.RefundID, c.ID, row.Status, row.Attempts, row.LastError, set.n, set.amount, r.Amount, events)
					if set.n == 0 {
						f.Lost++
					}
					continue
				}
				refunded += r.Amount
				f.RefundsApplied++
			case stored:
				if row.Status != "parked" || set.n != 0 {
					rep.problemf("refund %s of unpaid %s: inbox %s, %d refund sets (want parked, none)", r.RefundID, c.ID, row.Status, set.n)
				}
			default:
				if set.n != 0 {
					rep.problemf("refund %s never stored yet %d refund sets", r.RefundID, set.n)
				}
			}
		}
		var allSets int64
		for k, s := range sets {
			if k.kind == "refund" && k.charge == c.ID {
				allSets += s.amount
			}
		}
		if allSets != refunded || ch.Refunded != refunded {
			if allSets > refunded || ch.Refunded > refunded {
				f.DoubleApplied++
			}
			rep.problemf("charge %s: refund sets sum %d, charge says %d refunded, accepted refunds sum %d", c.ID, allSets, ch.Refunded, refunded)
		}
		if paid {
			want := "paid"
			switch {
			case refunded == c.Amount:
				want = "refunded"
			case refunded > 0:
				want = "partially_refunded"
			}
			if ch.State != want {
				rep.problemf("charge %s: state %s, want %s (refunded %d of %d)", c.ID, ch.State, want, refunded, c.Amount)
			}
			if reversed > c.Commission() || (refunded == c.Amount && reversed != c.Commission()) {
				rep.problemf("charge %s: commission reversals %d, commission %d, refunded %d of %d", c.ID, reversed, c.Commission(), refunded, c.Amount)
			}
		}
	}
	for _, d := range res.Plan.ForgedRefunds {
		known[d.ID] = true
		a := get(d.ID)
		_, stored := inbox[d.ID]
		if a.ok > 0 || stored || sets[setKey{"refund", d.ChargeID, d.RefundID}].n > 0 {
			f.ForgedApplied++
			rep.problemf("forged refund %s: answers %v, stored %v", d.ID, a.codes, stored)
		}
		f.ForgedRefused += a.codes[401]
	}
	for id := range inbox {
		if !known[id] && !strings.HasPrefix(id, "gate-") {
			rep.problemf("inbox holds %s, which the storm never sent", id)
		}
	}
	f.AppliedOnce = f.PaymentsApplied + f.RefundsApplied

	// 6. Faults: answers inside each window.
	if len(res.Faults) < res.PlannedFaults {
		rep.problemf("only %d of %d planned faults were injected", len(res.Faults), res.PlannedFaults)
	}
	for _, fr := range res.Faults {
		switch fr.Kind {
		case StopDatabase:
			f.OutageS += fr.To.Sub(fr.From).Seconds()
			if !fr.Recovered.IsZero() {
				f.PGUpToReadyS = max(f.PGUpToReadyS, fr.Recovered.Sub(fr.To).Seconds())
			}
			seen := map[int]bool{}
			for _, p := range fr.Probes {
				if p.Start.Before(fr.From) || p.End.After(fr.To) || p.Code == 0 {
					continue
				}
				seen[p.Replica] = true
				if p.Code == 503 {
					f.ReadyzOutage503++
				} else {
					f.ReadyzOutageNot503++
					rep.problemf("replica %d answered /readyz %d while PostgreSQL was down", p.Replica, p.Code)
				}
			}
			if len(seen) < len(env.Replicas) {
				rep.problemf("only %d of %d replicas answered /readyz while PostgreSQL was down", len(seen), len(env.Replicas))
			}
			for _, a := range res.Attempts {
				if a.Start.Before(fr.From) || a.End.After(fr.To) || a.Code == 0 || a.Role == RoleForge {
					continue
				}
				switch {
				case a.Code == 503:
					f.Outage503++
				case a.OK():
					f.Outage2xx++
					rep.problemf("2xx WITHOUT DATABASE: %s answered %d %q by replica %d while PostgreSQL was down", a.Delivery, a.Code, a.Status, a.Replica)
				default:
					f.OutageOther++
					rep.problemf("%s answered %d by replica %d while PostgreSQL was down (want 503)", a.Delivery, a.Code, a.Replica)
				}
			}
		case KillReplica:
			f.HeldAtKill += fr.HeldAtKill
			if !fr.Recovered.IsZero() {
				f.KillToReadyS = max(f.KillToReadyS, fr.Recovered.Sub(fr.Began).Seconds())
			}
			if !strings.Contains(fr.ExitState, "killed") {
				rep.problemf("kill -9 of replica %d: exit state %q", fr.Replica, fr.ExitState)
			}
			for _, a := range res.Attempts {
				if a.Replica == fr.Replica && !a.Start.Before(fr.From) && !a.End.After(fr.To) && a.Code != 0 {
					rep.problemf("%s answered %d by replica %d while it was dead", a.Delivery, a.Code, a.Replica)
				}
			}
		}
	}
	if f.Outage503 == 0 && countKind(res.Faults, StopDatabase) > 0 {
		rep.problemf("no delivery was answered 503 during the outage")
	}

	// 7. The replicas' logs.
	for _, r := range env.Replicas {
		for _, bad := range []string{"panic:", "DATA RACE", "fatal error:"} {
			if n := r.LogCount(bad); n > 0 {
				rep.problemf("replica %d log has %d %q lines; tail:\n%s", r.Index, n, bad, r.LogTail(30))
			}
		}
	}
	return rep, nil
}

func sumCodes(m map[int]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

func countKind(fs []*FaultRecord, k FaultKind) int {
	n := 0
	for _, f := range fs {
		if f.Kind == k {
			n++
		}
	}
	return n
}

// Table renders the figures for a human.
func (r *Report) Table() string {
	f := r.Figures
	var b strings.Builder
	row := func(name string, v any, note string) {
		fmt.Fprintf(&b, "  %-34s %10v  %s\n", name, v, note)
	}
	fmt.Fprintf(&b, "razao replicas storm: %d replicas, %d charges (seed %d)\n", f.Replicas, f.Charges, f.Seed)
	row("deliveries sent", f.DeliveriesSent, "sends: firsts, twins, late redeliveries, forgeries")
	row("HTTP attempts", f.Attempts, "PSP retries included")
	row("2xx received", f.Received2xx, "")
	row("  accepted", f.Accepted, "first insert into the inbox")
	row("  duplicates absorbed", f.DuplicatesAbsorbed, "same webhook-id already stored")
	row("503 received", f.Received503, "")
	row("  503s during the outage", f.Outage503, "answers wholly inside the PostgreSQL outage")
	row("  2xx during the outage", f.Outage2xx, "must be 0")
	row("/readyz 503 during the outage", f.ReadyzOutage503, fmt.Sprintf("not-503: %d (must be 0)", f.ReadyzOutageNot503))
	row("transport errors", f.TransportErrors, "no HTTP answer (killed replica, ...)")
	row("applied once", f.AppliedOnce, fmt.Sprintf("%d payments + %d refunds", f.PaymentsApplied, f.RefundsApplied))
	row("refunds stored before payment", f.RefundsBeforePay, "parked, then applied when the payment landed")
	row("held in flight at kill -9", f.HeldAtKill, "stored, processing waiting on a row lock, when SIGKILL came")
	row("stored, answer lost", f.AnswerLost, "the storing request never answered; redelivery got \"duplicate\"")
	row("stored, never a 2xx", f.StoredUnanswered, "applied though the PSP gave up")
	row("processed 2s+ after receipt", f.ProcessedLate, "finished by a worker or a redelivery, not right after the commit")
	row("forged refused (401)", f.ForgedRefused, fmt.Sprintf("forged applied: %d (must be 0)", f.ForgedApplied))
	row("never accepted", f.Unaccepted, "PSP gave up (must be 0)")
	row("lost", f.Lost, "must be 0")
	row("double-applied", f.DoubleApplied, "must be 0")
	row("razao verify exit", f.VerifyExit, "must be 0")
	if f.ShutdownInFlow > 0 || f.ShutdownMaxS > 0 {
		row("held across SIGTERM", f.ShutdownInFlow, "deliveries stored before, applied while the replica shut down")
	}
	fmt.Fprintf(&b, "  timings: setup %.1fs, storm %.1fs, kill-9 to ready %.1fs, outage %.1fs, PG up to all ready %.1fs, drain %.1fs, verify %.1fs, shutdown max %.1fs, total %.1fs\n",
		f.SetupS, f.StormS, f.KillToReadyS, f.OutageS, f.PGUpToReadyS, f.DrainS, f.VerifyS, f.ShutdownMaxS, f.TotalS)
	if len(r.Problems) == 0 {
		b.WriteString("  verdict: OK\n")
	} else {
		fmt.Fprintf(&b, "  verdict: %d PROBLEM(S)\n", len(r.Problems))
	}
	return b.String()
}

// JSON renders the figures as one line.
func (r *Report) JSON() string {
	b, _ := json.Marshal(struct {
		Figures
		OK       bool     `json:"ok"`
		Problems []string `json:"problems,omitempty"`
	}{r.Figures, len(r.Problems) == 0, firstN(r.Problems, 20)})
	return string(b)
}

func firstN(s []string, n int) []string {
	if len(s) > n {
		out := append([]string(nil), s[:n]...)
		return append(out, fmt.Sprintf("... and %d more", len(s)-n))
	}
	return s
}

// SortedProblems returns the problems in a stable order.
func (r *Report) SortedProblems() []string {
	out := append([]string(nil), r.Problems...)
	sort.Strings(out)
	return out
}
