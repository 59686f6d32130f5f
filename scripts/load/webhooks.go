package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jmoiron/sqlx"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/razao/razao/outgoing"
)

// webhookCatchUp bounds how long after the last payment applied the
// subscribers may take to receive every event.
const webhookCatchUp = 120 * time.Second

// webhooks: the distinct payments while razao delivers every event to
// -subscribers endpoints (10 by default), receivers of this tool on loopback that
// verify each delivery with the official Standard Webhooks library and
// answer 200. It reports the p99 from an event's creation in the outbox
// (inside the transaction that commits it) to the receiver's 200, over
// every delivery of the run's events, and the payments' confirmed/s to
// set beside distinct's. razao must serve with
// webhooks.allow_private_targets and allow_http_targets (run.sh adds them), the receivers
// being on 127.0.0.1. The endpoints are deleted at the end.
func (l *loader) webhooks(ctx context.Context) *result {
	if l.db == nil {
		res := newResult(l, "webhooks", l.opt.n, l.opt.c)
		res.violate("webhooks needs -database-url: it creates its endpoints in razao's database")
		return res
	}
	return l.payments(ctx, "webhooks", func(ctx context.Context, res *result) func() {
		svc := outgoing.Service{DB: sqlx.NewDb(l.db, "postgres"), Config: outgoing.Config{AllowPrivateTargets: true, AllowHTTPTargets: true}}
		prefix := l.runID + "-" + short("webhooks") + "-"
		var mu sync.Mutex
		var lags []time.Duration
		var forged, foreign atomic.Int64
		subscribers := l.opt.subscribers
		counts := make([]atomic.Int64, subscribers)
		var servers []*http.Server
		var ids []int64
		cleanup := func() {
			for _, s := range servers {
				s.Close()
			}
			for _, id := range ids {
				svc.Delete(context.WithoutCancel(ctx), id)
			}
		}
		for i := 0; i < subscribers; i++ {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				res.violate("receiver %d: %v", i, err)
				cleanup()
				return func() {}
			}
			var wh atomic.Pointer[standardwebhooks.Webhook]
			srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
				if k := wh.Load(); k == nil || k.Verify(body, r.Header) != nil {
					forged.Add(1)
					w.WriteHeader(http.StatusBadRequest)
					return
				}
				var ev struct {
					ChargeID  string    `json:"charge_id"`
					CreatedAt time.Time `json:"created_at"`
				}
				json.Unmarshal(body, &ev)
				lag := time.Since(ev.CreatedAt)
				w.WriteHeader(http.StatusOK)
				if !strings.HasPrefix(ev.ChargeID, prefix) {
					foreign.Add(1) // another run's event, or an earlier scenario's
					return
				}
				counts[i].Add(1)
				mu.Lock()
				lags = append(lags, lag)
				mu.Unlock()
			})}
			servers = append(servers, srv)
			go srv.Serve(ln)
			ep, err := svc.Create(ctx, outgoing.NewEndpoint{URL: "http://" + ln.Addr().String() + "/hook",
				Description: fmt.Sprintf("load %s receiver %d", l.runID, i)})
			if err != nil {
				res.violate("create webhook endpoint: %v", err)
				cleanup()
				return func() {}
			}
			k, err := standardwebhooks.NewWebhook(ep.Secret)
			if err != nil {
				res.violate("secret: %v", err)
				cleanup()
				return func() {}
			}
			wh.Store(k)
			ids = append(ids, ep.ID)
		}
		l.logf("webhooks: %d endpoints subscribed to every event", subscribers)
		res.Extra["webhook_subscribers"] = subscribers
		return func() {
			want := int64(2 * res.Accepted) // charge.paid and access.granted
			paymentsDone := time.Now()
			deadline := paymentsDone.Add(webhookCatchUp)
			var lo int64
			for {
				lo = want
				for i := range counts {
					lo = min(lo, counts[i].Load())
				}
				if lo >= want || time.Now().After(deadline) || ctx.Err() != nil {
					break
				}
				time.Sleep(50 * time.Millisecond)
			}
			res.Extra["webhook_catch_up_s"] = round2(time.Since(paymentsDone).Seconds())
			cleanup()
			mu.Lock()
			s := summarize(lags)
			res.Extra["webhook_deliveries"] = len(lags)
			mu.Unlock()
			res.Extra["webhook_lag_p50_ms"] = s.P50
			res.Extra["webhook_lag_p99_ms"] = s.P99
			res.Extra["webhook_lag_max_ms"] = s.Max
			res.Extra["webhook_foreign"] = foreign.Load()
			if lo < want {
				res.violate("a subscriber received %d events within %s of the last payment applied, want %d", lo, webhookCatchUp, want)
			}
			if n := forged.Load(); n > 0 {
				res.violate("%d deliveries did not verify", n)
			}
		}
	})
}
