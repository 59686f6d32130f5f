package webhook_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/mux"
	"github.com/jmoiron/sqlx"

	"github.com/razao/razao/charges"
	"github.com/razao/razao/inbox"
	"github.com/razao/razao/internal/pgtest"
	"github.com/razao/razao/postings"
	"github.com/razao/razao/webhook"
	"github.com/razao/razao/webhook/scheme"
)

const (
	hodleSecret    = "example-secret-for-local-tests-only"
	abacateSecret  = "url-secret-abcdefghijklmnopqrstuvwxyz-0123"
	standardSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
)

// clock is the injected "now" of the webhook front: tests pin it so the
// timestamp window is exercised, never disabled.
var clock = time.Unix(1790035200, 0)

// env is one test's running webhook front on its own database.
type env struct {
	t       testing.TB
	db      *sqlx.DB
	url     string
	applier *charges.Applier
	proc    *inbox.Processor
	inbox   *inbox.Inbox
	router  http.Handler
	handler *webhook.Handler
	// running: the workers run (groupCommit); else each request is
	// followed by a drain, as if a worker took its delivery at once.
	running bool
}

// groupCommit runs the service as razao serve does, for the rest of the
// test: the inbox's batcher group-commits deliveries, answered after
// their commit, and the workers apply them a moment later (see settled).
func (e *env) groupCommit() { e.groupCommitLoops(2) }

func (e *env) groupCommitLoops(loops int) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{}, 2)
	go func() { e.inbox.RunBatcher(ctx, loops); done <- struct{}{} }()
	w := inbox.NewWorker(e.proc, time.Second)
	w.Listen(e.url)
	go func() { w.Run(ctx); done <- struct{}{} }()
	e.running = true
	e.t.Cleanup(func() { cancel(); <-done; <-done })
	// Until then a delivery would be stored alone.
	for !e.inbox.Batching() {
		time.Sleep(time.Millisecond)
	}
}

// drain is a worker's claim loop run to the end in the test's own
// goroutine, for tests without running workers: it applies whatever is
// due now, and returns once nothing is.
func (e *env) drain() {
	e.t.Helper()
	for {
		n, err := e.proc.ProcessDue(context.Background(), inbox.MaxBatch)
		if err != nil {
			// A test of an unreachable database sees it in its answers.
			e.t.Logf("drain: %v", err)
			return
		}
		if n == 0 {
			return
		}
	}
}

// settled waits until every stored delivery has had its first attempt:
// with the workers running, a delivery is applied after its request is
// answered, as an outside observer would wait for it; without, the test
// drains the inbox itself, snoozed deliveries included once due.
func (e *env) settled() {
	e.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for e.count(`SELECT count(*) FROM inbox WHERE status = 'pending' AND attempts = 0`) > 0 {
		if time.Now().After(deadline) {
			e.t.Fatal("stored deliveries still wait for their first attempt")
		}
		if !e.running {
			e.drain()
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// waitSnoozed waits until workers have snoozed at least n pending
// deliveries because another transaction held their charge: the barrier
// of a test holding a charge's lock, as waiting on the lock was before
// workers skipped held charges.
func (e *env) waitSnoozed(n int) {
	e.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		got := e.count(`SELECT count(*) FROM inbox WHERE status = 'pending' AND last_error = $1`, inbox.SnoozedError)
		if got >= int64(n) {
			return
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("%d deliveries snoozed, want %d", got, n)
		}
		if !e.running {
			e.drain()
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func newEnv(t testing.TB) *env {
	t.Helper()
	db, url := pgtest.NewWithURL(t)
	return newEnvWithDB(t, db, url)
}

func newEnvWithDB(t testing.TB, db *sqlx.DB, url string) *env {
	t.Helper()
	return newEnvWithEndpoints(t, db, url, defaultEndpoints...)
}

// defaultEndpoints are the endpoints of newEnv: one per scheme that needs
// no certificate.
var defaultEndpoints = []webhook.EndpointConfig{
	{Name: "hodle", Scheme: "hodle", Merchant: "loja-1", Secrets: []string{hodleSecret}, MaxBodyBytes: 4096},
	{Name: "abacate", Scheme: "abacatepay", Merchant: "loja-1", Secrets: []string{abacateSecret}},
	{Name: "std", Scheme: "standard", Merchant: "loja-1", Secrets: []string{standardSecret}},
}

// newEnvWithEndpoints is the webhook front of one test: the real handler,
// inbox and processor on db, serving exactly the endpoints of cfgs.
func newEnvWithEndpoints(t testing.TB, db *sqlx.DB, url string, cfgs ...webhook.EndpointConfig) *env {
	t.Helper()
	cal, err := postings.NewCalendar(postings.DefaultTimeZone)
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	applier := charges.NewApplier(db, postings.New(db, cal))
	proc := inbox.NewProcessor(db, applier, log)
	var eps []*webhook.Endpoint
	for _, c := range cfgs {
		ep, err := webhook.NewEndpoint(c, func(string) string { return "" })
		if err != nil {
			t.Fatal(err)
		}
		eps = append(eps, ep)
	}
	in := inbox.NewInbox(db, proc)
	h := webhook.NewHandler(eps, in, func() time.Time { return clock }, log)
	r := mux.NewRouter()
	r.Handle("/webhooks/{endpoint}", h)
	return &env{t: t, db: db, url: url, applier: applier, proc: proc, inbox: in, router: r, handler: h}
}

// charge registers a charge the way the app does.
func (e *env) charge(id string, amount int64, partner string, bp int64) {
	e.t.Helper()
	_, _, err := charges.Register(context.Background(), e.db, charges.NewCharge{
		ID: id, Amount: amount, Partner: partner, CommissionBP: bp, Access: "course:" + id,
	})
	if err != nil {
		e.t.Fatal(err)
	}
}

type reply struct {
	Code int
	Body webhook.Response
}

// post sends a delivery through the real router and handler.
func (e *env) post(path string, header http.Header, body []byte) reply {
	e.t.Helper()
	return e.do(http.MethodPost, path, header, body)
}

func (e *env) do(method, path string, header http.Header, body []byte) reply {
	e.t.Helper()
	return e.doContext(context.Background(), method, path, header, body)
}

// doContext is do with the request's context: the PSP hanging up is ctx
// ending.
func (e *env) doContext(ctx context.Context, method, path string, header http.Header, body []byte) reply {
	e.t.Helper()
	req := httptest.NewRequestWithContext(ctx, method, path, bytes.NewReader(body))
	for k, v := range header {
		req.Header[k] = v
	}
	rec := httptest.NewRecorder()
	e.router.ServeHTTP(rec, req)
	if !e.running {
		e.drain()
	}
	var r reply
	r.Code = rec.Code
	json.Unmarshal(rec.Body.Bytes(), &r.Body)
	return r
}

func hodleHeaders(ts int64, body []byte, secret string) http.Header {
	mac := hmac.New(sha256.New, []byte(secret))
	fmt.Fprintf(mac, "%d.", ts)
	mac.Write(body)
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("X-Hodle-Timestamp", strconv.FormatInt(ts, 10))
	h.Set("X-Hodle-Signature", hex.EncodeToString(mac.Sum(nil)))
	return h
}

// postHodle signs body with the test secret at the clock's time.
func (e *env) postHodle(body string) reply {
	e.t.Helper()
	return e.post("/webhooks/hodle", hodleHeaders(clock.Unix(), []byte(body), hodleSecret), []byte(body))
}

// postAbacate sends an AbacatePay delivery with both of its factors: the
// URL secret and the public-key HMAC of the body.
func (e *env) postAbacate(body string) reply {
	e.t.Helper()
	mac := hmac.New(sha256.New, []byte(scheme.DefaultAbacatepayPublicKey))
	mac.Write([]byte(body))
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("X-Webhook-Signature", base64.StdEncoding.EncodeToString(mac.Sum(nil)))
	return e.post("/webhooks/abacate?webhookSecret="+url.QueryEscape(abacateSecret), h, []byte(body))
}

func standardHeaders(id string, ts int64, body []byte) http.Header {
	key, _ := base64.StdEncoding.DecodeString(standardSecret[len("whsec_"):])
	mac := hmac.New(sha256.New, key)
	fmt.Fprintf(mac, "%s.%d.", id, ts)
	mac.Write(body)
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("webhook-id", id)
	h.Set("webhook-timestamp", strconv.FormatInt(ts, 10))
	h.Set("webhook-signature", "v1,"+base64.StdEncoding.EncodeToString(mac.Sum(nil)))
	return h
}

// postStandard sends razao's own event format, signed as Standard Webhooks.
func (e *env) postStandard(msgID, typ string, data map[string]any) reply {
	e.t.Helper()
	body, _ := json.Marshal(map[string]any{"type": typ, "timestamp": clock.UTC().Format(time.RFC3339), "data": data})
	return e.post("/webhooks/std", standardHeaders(msgID, clock.Unix(), body), body)
}

func hodlePaid(trackID, externalID, reais string) string {
	return fmt.Sprintf(`{"event":"DEPOSIT_ASSET_SUCCESS","data":{"trackId":%q,"externalId":%q,"valueInBrl":%q,"fee":"0.75"}}`, trackID, externalID, reais)
}

func hodleRefund(eventID, externalID, reais string) string {
	return fmt.Sprintf(`{"event":"DEPOSIT_ASSET_REFUNDED","data":{"eventId":%q,"externalId":%q,"valueInBrl":%q}}`, eventID, externalID, reais)
}

func (e *env) count(query string, args ...any) int64 {
	e.t.Helper()
	var n int64
	if err := e.db.Get(&n, query, args...); err != nil {
		e.t.Fatalf("%s: %v", query, err)
	}
	return n
}

// balances returns each account's balance over the whole ledger.
func (e *env) balances() map[string]int64 {
	e.t.Helper()
	rows := []struct {
		Code    string `db:"code"`
		Balance int64  `db:"balance"`
	}{}
	if err := e.db.Select(&rows, `SELECT a.code, sum(p.amount) AS balance FROM postings p
		JOIN accounts a ON a.id = p.account_id GROUP BY a.code`); err != nil {
		e.t.Fatal(err)
	}
	out := map[string]int64{}
	for _, r := range rows {
		out[r.Code] = r.Balance
	}
	return out
}

func (e *env) wantBalances(want map[string]int64) {
	e.t.Helper()
	got := e.balances()
	for code, w := range want {
		if got[code] != w {
			e.t.Errorf("balance %s = %d, want %d (all: %v)", code, got[code], w, got)
		}
	}
	for code, g := range got {
		if _, ok := want[code]; !ok && g != 0 {
			e.t.Errorf("unexpected balance %s = %d", code, g)
		}
	}
}

// failAfterSale makes processing fail right after it wrote the sale, while
// the returned switch is on (it starts on). Appliers read it from their
// own goroutines, hence the atomic.
func (e *env) failAfterSale(cause string) *atomic.Bool {
	on := new(atomic.Bool)
	on.Store(true)
	e.applier.AfterSale = func() error {
		if on.Load() {
			return errors.New(cause)
		}
		return nil
	}
	return on
}

// eventually waits until query counts want rows.
func (e *env) eventually(what, query string, want int64) {
	e.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		n := e.count(query)
		if n == want {
			return
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("%s: counted %d, want %d", what, n, want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// holdCharge locks the charge's row from a transaction of the test's own
// until that transaction ends: the gate deliveries wait on.
func (e *env) holdCharge(id string) *sqlx.Tx {
	e.t.Helper()
	gate := e.db.MustBegin()
	gate.MustExec(`SELECT 1 FROM charges WHERE id = $1 FOR UPDATE`, id)
	return gate
}

// waitHeld waits until stored deliveries are in the inbox, still pending,
// and at least waiters sessions wait on a lock. With the processor's
// batcher running, deliveries of concurrent requests share transactions,
// so fewer sessions than deliveries wait: the rest queue behind them.
func (e *env) waitHeld(stored, waiters int) {
	e.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		waiting := e.count(`SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`)
		pending := e.count(`SELECT count(*) FROM inbox WHERE status = 'pending'`)
		if waiting >= int64(waiters) && pending >= int64(stored) {
			return
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("%d of %d sessions waiting on the lock, %d of %d deliveries stored", waiting, waiters, pending, stored)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
