package main

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/razao/razao"
	"github.com/razao/razao/internal/standby"
	"github.com/razao/razao/outgoing"
	"github.com/razao/razao/verify"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

// multiHostURL is the libpq multi-host URL of database db on the pair,
// asking for the server that takes writes.
func multiHostURL(p *standby.Pair, db string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d,127.0.0.1:%d/%s?sslmode=disable&target_session_attrs=read-write&connect_timeout=2",
		p.Primary.Port, p.Standby.Port, db)
}

// pspLog is what the PSP heard: for each delivery, the answers in order.
type pspLog struct {
	mu      sync.Mutex
	answers map[string][]int
	// okBefore is the deliveries answered 2xx before the primary was
	// killed.
	okBefore map[string]bool
	killed   bool
}

func (l *pspLog) record(id string, code int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.answers[id] = append(l.answers[id], code)
	if code/100 == 2 && !l.killed {
		l.okBefore[id] = true
	}
}

// TestLosingThePrimaryLosesNoDeliveryAnsweredAndBooksNothingTwice runs
// razao serve on a libpq multi-host URL (primary, then its synchronous
// standby, target_session_attrs=read-write). A PSP sends signed
// deliveries, each retried until answered 2xx. A third of the way in the
// primary is killed with SIGKILL and the standby promoted; razao is not
// restarted. Then, on the promoted database: every delivery answered 2xx
// before the kill is there and booked; every delivery is booked once
// (each once more re-sent after, as a PSP whose answer was lost would:
// they are duplicates); razao verify is clean; and the webhooks razao
// sends to a subscribed app went on across the failover: every event of
// the promoted outbox reached it, first in the outbox's order, and it
// received none the promoted outbox does not hold.
func TestLosingThePrimaryLosesNoDeliveryAnsweredAndBooksNothingTwice(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	p := standby.Start(t, standby.Options{Sync: true})
	primaryURL, _, token := ledgerOnPair(ctx, t, p)
	// The selling app subscribes to every event razao sends.
	app := subscribe(ctx, t, primaryURL)
	base, _ := serveOnPair(t, multiHostURL(p, "razao"), "", 0)

	const charges = 150
	for i := range charges {
		body := fmt.Sprintf(`{"id":"fo-%d","amount":4990,"partner":"p1","commission_bp":1000,"access":"course:go"}`, i)
		if code, m := apiCall(t, token, "POST", base+"/v1/charges", body); code != 201 {
			t.Fatalf("register fo-%d: %d %v", i, code, m)
		}
	}

	var answered, killedAt, promotedAt, failures, appAtKill atomic.Int64
	log := &pspLog{answers: map[string][]int{}, okBefore: map[string]bool{}}
	client := &http.Client{Timeout: 5 * time.Second}
	send := func(i int) int {
		id := fmt.Sprintf("fo-%d", i)
		now := time.Now().Format(time.RFC3339)
		body := []byte(`{"type":"charge.paid","timestamp":"` + now + `","data":{"charge_id":"` + id + `","amount":4990,"occurred_at":"` + now + `"}}`)
		req := signedRequest(base, "msg-"+id, body)
		resp, err := client.Do(req)
		code := 0 // no answer: the PSP retries
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			code = resp.StatusCode
		}
		log.record(id, code)
		if code/100 != 2 {
			failures.Add(1)
		}
		return code
	}

	killOnce := sync.Once{}
	failover := make(chan error, 1)
	next := make(chan int)
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				for send(i)/100 != 2 {
					if ctx.Err() != nil {
						return
					}
					time.Sleep(100 * time.Millisecond) // the PSP's back-off
				}
				if answered.Add(1) == charges/3 {
					killOnce.Do(func() {
						go func() {
							// The app has had an event from the
							// primary: the webhooks span the kill.
							for len(app.snapshot()) == 0 && ctx.Err() == nil {
								time.Sleep(10 * time.Millisecond)
							}
							appAtKill.Store(int64(len(app.snapshot())))
							log.mu.Lock()
							log.killed = true
							err := p.KillPrimary()
							log.mu.Unlock()
							killedAt.Store(answered.Load())
							// Promoted once the PSP has had a failure
							// (an error answer, or none in time): the
							// window without a primary is then one the
							// PSP saw, and retries across.
							for err == nil && failures.Load() == 0 && ctx.Err() == nil {
								time.Sleep(10 * time.Millisecond)
							}
							if err == nil {
								err = p.Promote(ctx)
							}
							promotedAt.Store(answered.Load())
							failover <- err
						}()
					})
				}
			}
		}()
	}
	for i := range charges {
		next <- i
	}
	close(next)
	wg.Wait()
	if err := <-failover; err != nil {
		t.Fatalf("failover: %v", err)
	}
	if ctx.Err() != nil {
		t.Fatal("the PSP gave up: some delivery was never answered 2xx")
	}
	promoted, err := razao.Open(ctx, p.Standby.DatabaseURL("razao"))
	if err != nil {
		t.Fatal(err)
	}
	defer promoted.Close()
	// Before any re-send, which would book a lost delivery anew and hide
	// the loss: every delivery answered 2xx, before the kill, in the
	// window without a primary or after, is in the promoted inbox.
	var lost []string
	for i := range charges {
		id := fmt.Sprintf("fo-%d", i)
		var n int
		if err := promoted.GetContext(ctx, &n, `SELECT count(*) FROM inbox WHERE charge_ref = $1`, id); err != nil {
			t.Fatal(err)
		}
		if n != 1 {
			lost = append(lost, fmt.Sprintf("%s (%d rows, answered %v, before the kill: %v)", id, n, log.answers[id], log.okBefore[id]))
		}
	}
	if len(log.okBefore) < charges/3 || len(lost) > 0 {
		t.Fatalf("%d deliveries answered 2xx before the kill; answered 2xx but not in the promoted inbox: %v", len(log.okBefore), lost)
	}
	// Re-sent once more each: a PSP that lost the answers.
	for i := range charges {
		if code := send(i); code/100 != 2 {
			t.Errorf("fo-%d re-sent after the failover: %d, want a 2xx (duplicate)", i, code)
		}
	}
	waitFor(ctx, t, "every delivery applied on the promoted primary", func() bool {
		var pending int
		promoted.GetContext(ctx, &pending, `SELECT count(*) FROM inbox WHERE status <> 'processed'`)
		return pending == 0
	})
	var deliveries, sales, twice int
	if err := promoted.GetContext(ctx, &deliveries, `SELECT count(*) FROM inbox WHERE charge_ref LIKE 'fo-%'`); err != nil {
		t.Fatal(err)
	}
	if err := promoted.GetContext(ctx, &sales, `SELECT count(*) FROM posting_sets WHERE kind = 'sale'`); err != nil {
		t.Fatal(err)
	}
	if err := promoted.GetContext(ctx, &twice, `SELECT count(*) FROM (SELECT charge_id FROM posting_sets WHERE kind = 'sale' GROUP BY charge_id HAVING count(*) > 1) x`); err != nil {
		t.Fatal(err)
	}
	if deliveries != charges || sales != charges || twice != 0 {
		t.Errorf("promoted ledger: %d deliveries, %d sales, %d charges sold twice; want %d, %d, 0", deliveries, sales, twice, charges, charges)
	}
	report, err := verify.Run(ctx, promoted)
	if err != nil {
		t.Fatal(err)
	}
	if !report.OK() {
		var b bytes.Buffer
		report.WriteTo(&b)
		t.Errorf("razao verify on the promoted primary:\n%s", b.String())
	}
	// The webhooks razao sends went on across the failover: every event
	// of the promoted outbox reaches the app, in the outbox's order the
	// first time each comes (again after it is fine: at least once), and
	// the app received no event the promoted outbox does not hold.
	var outbox []int64
	if err := promoted.SelectContext(ctx, &outbox, `SELECT id FROM outbox ORDER BY xid, id`); err != nil {
		t.Fatal(err)
	}
	waitFor(ctx, t, "every event of the promoted outbox at the app", func() bool { return len(firstSeen(app.snapshot())) >= len(outbox) })
	if got := firstSeen(app.snapshot()); fmt.Sprint(got) != fmt.Sprint(outbox) {
		t.Errorf("the app first received events %v, want the promoted outbox's %v", got, outbox)
	}
	if app.forged != 0 {
		t.Errorf("%d deliveries to the app did not verify", app.forged)
	}
	t.Logf("the app: %d events received before the kill; %d requests in all for %d events", appAtKill.Load(), len(app.snapshot()), len(outbox))
	retried, failed := 0, map[int]int{}
	for _, codes := range log.answers {
		for _, c := range codes {
			if c/100 != 2 {
				failed[c]++
			}
		}
		if len(codes) > 2 { // a failure, its 2xx, the re-send
			retried++
		}
	}
	t.Logf("answered 2xx: %d at the kill, %d once promoted", killedAt.Load(), promotedAt.Load())
	t.Logf("%d deliveries, %d answered 2xx before the kill, %d retried across the failover (failed answers by code: %v)",
		charges, len(log.okBefore), retried, failed)
}

// signedRequest is a Standard Webhooks delivery signed with e2eSecret.
func signedRequest(base, msgID string, body []byte) *http.Request {
	req, _ := http.NewRequest("POST", base+"/webhooks/psp", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	for k, v := range standardHeaders(msgID, body) {
		req.Header.Set(k, v)
	}
	return req
}

// standardHeaders are the Standard Webhooks headers of a delivery signed
// with e2eSecret now.
func standardHeaders(msgID string, body []byte) map[string]string {
	key, _ := base64.StdEncoding.DecodeString(strings.TrimPrefix(e2eSecret, "whsec_"))
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	mac := hmac.New(sha256.New, key)
	fmt.Fprintf(mac, "%s.%s.%s", msgID, ts, body)
	return map[string]string{"webhook-id": msgID, "webhook-timestamp": ts,
		"webhook-signature": "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))}
}

// subscribe registers a receiver that verifies each delivery with the
// official library as a webhook endpoint of every event on the database
// at dbURL.
func subscribe(ctx context.Context, t *testing.T, dbURL string) *crashReceiver {
	t.Helper()
	db, err := razao.Open(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rcv := &crashReceiver{}
	srv := httptest.NewServer(rcv)
	t.Cleanup(srv.Close)
	svc := outgoing.Service{DB: db, Config: outgoing.Config{AllowPrivateTargets: true, AllowHTTPTargets: true}}
	ep, err := svc.Create(ctx, outgoing.NewEndpoint{URL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	if rcv.wh, err = standardwebhooks.NewWebhook(ep.Secret); err != nil {
		t.Fatal(err)
	}
	return rcv
}
