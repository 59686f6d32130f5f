package storm

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"sync"
	"syscall"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/razao/razao/inbox"
)

// GracefulShutdown checks SIGTERM on every replica with deliveries in
// flight. The in-flight state is forced, not hoped for: a separate
// connection holds the row lock of one charge per replica (the gate); a
// confirmation and a refund of that charge are sent to its replica; both
// are stored, answered, and claimed by workers that find the charge held
// and snooze them, which their inbox rows show. Then every replica gets
// SIGTERM; once each refuses new connections (shutdown has begun), the
// gate is released. Every held request must have been answered 200
// "accepted" and every replica must exit 0. What they answered lives in
// the inbox, not in their memory: each held delivery is applied on the
// way out or waits in the inbox (see Stranded), and a replica started
// again applies the rest, exactly once; the ledger must then still
// verify. Figures and problems are added to rep.
func GracefulShutdown(ctx context.Context, env *Env, rep *Report) error {
	f := &rep.Figures
	run := randomHex(3)
	n := len(env.Replicas)
	psp, err := NewPSP(env.URLs(), env.Endpoint, env.Secret, 1) // one attempt: we want the exact answer
	if err != nil {
		return err
	}
	defer psp.Close()
	client := &http.Client{Timeout: 30 * time.Second}
	defer client.CloseIdleConnections()

	type held struct {
		charge  string
		replica int
		d       Delivery
	}
	var reqs []held
	ids := make([]string, n)
	at := time.Now().UTC().Truncate(time.Second)
	for i, r := range env.Replicas {
		ids[i] = fmt.Sprintf("gate-%s-%d", run, i)
		code, raw, err := apiCall(ctx, client, r.URL(), env.Token, "POST", "/v1/charges",
			map[string]any{"id": ids[i], "amount": 5000, "partner": "partner-gate", "commission_bp": 1000, "access": "course:storm"})
		if err != nil || code != http.StatusCreated {
			return fmt.Errorf("register gate charge on replica %d: %d %s %v", i, code, raw, err)
		}
		rid := "rf-" + ids[i]
		reqs = append(reqs,
			held{ids[i], i, Delivery{ID: "gate-pay-" + ids[i], Kind: "paid", ChargeID: ids[i], Amount: 5000,
				Body: standardBody("charge.paid", ids[i], "", 5000, at)}},
			held{ids[i], i, Delivery{ID: "gate-refund-" + rid, Kind: "refund", ChargeID: ids[i], RefundID: rid, Amount: 1000,
				Body: standardBody("charge.refunded", ids[i], rid, 1000, at.Add(time.Minute))}})
	}

	// The gate: hold the charges' row locks from a connection of our own.
	gate, err := CloseGate(ctx, env.DB(), ids)
	if err != nil {
		return err
	}
	defer gate.Open()

	results := make([]Attempt, len(reqs))
	var wg sync.WaitGroup
	for i, h := range reqs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = psp.Send(ctx, h.d, h.replica, RoleFirst)
		}()
	}
	// Every request is answered once its delivery is stored, gate or not.
	wg.Wait()
	for i, a := range results {
		if a.Code != http.StatusOK || a.Status != "accepted" {
			rep.problemf("shutdown: held %s to replica %d answered %d %q %s", reqs[i].d.ID, reqs[i].replica, a.Code, a.Status, a.Err)
		}
	}
	// Wait until a worker has claimed each of them and snoozed it on the
	// gate.
	if _, err := gate.WaitFor(ctx, env.DB(), len(reqs), len(reqs), 30*time.Second, nil); err != nil {
		rep.problemf("shutdown: %v", err)
		return nil
	}

	// SIGTERM every replica, and wait until each refuses new connections.
	termAt := time.Now()
	for _, r := range env.Replicas {
		if err := r.Signal(syscall.SIGTERM); err != nil {
			rep.problemf("shutdown: SIGTERM replica %d: %v", r.Index, err)
		}
	}
	for _, r := range env.Replicas {
		deadline := time.Now().Add(30 * time.Second)
		for {
			c, err := net.DialTimeout("tcp", r.Addr, time.Second)
			if err != nil {
				break
			}
			c.Close()
			if time.Now().After(deadline) {
				rep.problemf("shutdown: replica %d still accepts connections 30s after SIGTERM", r.Index)
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	// Shutdown has begun everywhere with the deliveries still held.
	gate.Open()
	for _, r := range env.Replicas {
		wctx, cancel := context.WithTimeout(ctx, 60*time.Second)
		st, err := r.Wait(wctx)
		cancel()
		if err != nil {
			rep.problemf("shutdown: replica %d did not exit within 60s of SIGTERM + release: %v\n%s", r.Index, err, r.LogTail(20))
			r.Kill()
			continue
		}
		f.ShutdownMaxS = max(f.ShutdownMaxS, time.Since(termAt).Seconds())
		if st.ExitCode() != 0 {
			rep.problemf("shutdown: replica %d exited %s after SIGTERM\n%s", r.Index, st, r.LogTail(20))
		}
		if !r.LogContains(`"shutting down"`) {
			rep.problemf("shutdown: replica %d never logged \"shutting down\"", r.Index)
		}
	}

	// Every replica is gone: what they accepted is applied, or waits in
	// the inbox for a replica started again.
	stranded, err := Stranded(ctx, env.DB(), ids)
	if err != nil {
		return err
	}
	for _, s := range stranded {
		rep.problemf("shutdown: %s after every replica stopped", s)
	}
	if err := applyPendingOnRestart(ctx, env.Replicas[0], env, rep); err != nil {
		return err
	}
	var unapplied int
	if err := env.DB().GetContext(ctx, &unapplied, `SELECT count(*) FROM inbox WHERE charge_ref = ANY($1) AND status <> 'processed'`,
		pq.Array(ids)); err != nil {
		return err
	}
	if unapplied != 0 {
		rep.problemf("shutdown: %d held deliveries not applied after a replica started again", unapplied)
	}
	for _, id := range ids {
		var st struct {
			State    string `db:"state"`
			Refunded int64  `db:"refunded_amount"`
			Sales    int    `db:"sales"`
			Refunds  int    `db:"refunds"`
		}
		err := env.DB().GetContext(ctx, &st, `SELECT state, refunded_amount,
			(SELECT count(*) FROM posting_sets WHERE kind = 'sale' AND charge_id = $1) AS sales,
			(SELECT count(*) FROM posting_sets WHERE kind = 'refund' AND charge_id = $1) AS refunds
			FROM charges WHERE id = $1`, id)
		if err != nil {
			return err
		}
		if st.State != "partially_refunded" || st.Refunded != 1000 || st.Sales != 1 || st.Refunds != 1 {
			rep.problemf("shutdown: gate charge %s ended %+v, want partially_refunded with 1 sale and 1 refund of 1000", id, st)
			continue
		}
		f.ShutdownInFlow += 2 // its payment and its refund
	}
	code, out, err := env.Verify(ctx)
	if err != nil || code != 0 {
		rep.problemf("razao verify after shutdown: exit %d (%v)\n%s", code, err, out)
	}
	return nil
}

// Stranded describes each delivery for the charges ids that is neither
// applied nor sure to be: its answer promised it would be booked, and
// nothing left in the inbox would book it. A delivery is applied
// (processed) or waits for a worker (pending); a refund may also wait
// parked for its payment while that payment is itself pending, since the
// transaction that books the payment releases the refunds parked before
// it. Which of these a shutdown leaves depends on how far the workers got
// after the gate opened: a worker that claimed the refund alone parked
// it, and one that stopped before the payment came due left the payment
// pending. A refund parked beside a payment already booked, or one whose
// payment is not in the inbox at all, would wait for nothing: that, and
// any other status, is stranded.
func Stranded(ctx context.Context, db *sqlx.DB, ids []string) ([]string, error) {
	var rows []struct {
		ID      int64  `db:"id"`
		EventID string `db:"event_id"`
		Kind    string `db:"kind"`
		Status  string `db:"status"`
		Charge  string `db:"charge_ref"`
		// PaymentPending: a payment for the same charge is pending.
		PaymentPending bool `db:"payment_pending"`
	}
	err := db.SelectContext(ctx, &rows, `SELECT i.id, i.event_id, i.kind, i.status, i.charge_ref,
		EXISTS (SELECT 1 FROM inbox p WHERE p.charge_ref = i.charge_ref AND p.kind = 'paid' AND p.status = 'pending') AS payment_pending
		FROM inbox i WHERE i.charge_ref = ANY($1) ORDER BY i.id`, pq.Array(ids))
	if err != nil {
		return nil, fmt.Errorf("held deliveries: %w", err)
	}
	var out []string
	for _, r := range rows {
		switch {
		case r.Status == string(inbox.StatusProcessed), r.Status == string(inbox.StatusPending):
		case r.Status == string(inbox.StatusParked) && r.Kind == "refunded" && r.PaymentPending:
		case r.Status == string(inbox.StatusParked):
			out = append(out, fmt.Sprintf("held %s %s (inbox %d) of charge %s is parked and no payment of its charge is pending to release it",
				r.Kind, r.EventID, r.ID, r.Charge))
		default:
			out = append(out, fmt.Sprintf("held %s %s (inbox %d) of charge %s is %s, neither applied nor pending",
				r.Kind, r.EventID, r.ID, r.Charge, r.Status))
		}
	}
	return out, nil
}

// applyPendingOnRestart starts r again, waits until the inbox holds
// nothing pending (the deliveries the stopped replicas answered and left
// due), and stops r with SIGTERM.
func applyPendingOnRestart(ctx context.Context, r *Replica, env *Env, rep *Report) error {
	if err := r.Start(); err != nil {
		rep.problemf("shutdown: start replica %d again: %v", r.Index, err)
		return nil
	}
	defer func() {
		r.Signal(syscall.SIGTERM)
		wctx, cancel := context.WithTimeout(ctx, 60*time.Second)
		defer cancel()
		if _, err := r.Wait(wctx); err != nil {
			r.Kill()
		}
	}()
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := r.WaitReady(rctx); err != nil {
		rep.problemf("shutdown: replica %d not ready after its restart: %v", r.Index, err)
		return nil
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		var pending int
		if err := env.DB().GetContext(ctx, &pending, `SELECT count(*) FROM inbox WHERE status = 'pending'`); err != nil {
			return err
		}
		if pending == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			rep.problemf("shutdown: %d deliveries still pending 30s after replica %d started again", pending, r.Index)
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
}
