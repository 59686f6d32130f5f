// Package deliverytest runs the delivery path of one test on a database
// of its own: the webhook front (the real router and handler), the inbox
// and its processor, as razao serve wires them, with the helpers to send
// signed deliveries of each scheme and to read what they booked. The
// tests of webhook and of inbox share it: most of them send a PSP's bytes
// through the front and look at the ledger.
package deliverytest

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
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/mux"
	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/razao/razao/charges"
	"github.com/razao/razao/inbox"
	"github.com/razao/razao/internal/pgtest"
	"github.com/razao/razao/periods"
	"github.com/razao/razao/postings"
	"github.com/razao/razao/webhook"
	"github.com/razao/razao/webhook/scheme"
)

// The endpoints' secrets.
const (
	HodleSecret    = "example-secret-for-local-tests-only"
	AbacateSecret  = "url-secret-abcdefghijklmnopqrstuvwxyz-0123"
	StandardSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	BCBSecret      = "bcb-url-secret-abcdefghijklmnopqrstuvwxyz-0123"
)

// Clock is the injected "now" of the webhook front: tests pin it so the
// timestamp window is exercised, never disabled.
var Clock = time.Unix(1790035200, 0)

// Env is one test's running webhook front on its own database.
type Env struct {
	T       testing.TB
	DB      *sqlx.DB
	URL     string
	Applier *charges.Applier
	Proc    *inbox.Processor
	Inbox   *inbox.Inbox
	Router  http.Handler
	Handler *webhook.Handler
	// Running: the workers run (GroupCommit); else each request is
	// followed by a drain, as if a worker took its delivery at once.
	Running bool
}

// GroupCommit runs the service as razao serve does, for the rest of the
// test: the inbox's batcher group-commits deliveries, answered after
// their commit, and the workers apply them a moment later (see Settled).
func (e *Env) GroupCommit() { e.GroupCommitLoops(2) }

// GroupCommitLoops is GroupCommit with loops group commits in flight.
func (e *Env) GroupCommitLoops(loops int) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{}, 2)
	go func() { e.Inbox.RunBatcher(ctx, loops); done <- struct{}{} }()
	w := inbox.NewWorker(e.Proc, time.Second)
	w.Listen(e.URL)
	go func() { w.Run(ctx); done <- struct{}{} }()
	e.Running = true
	e.T.Cleanup(func() { cancel(); <-done; <-done })
	// Until then a delivery would be stored alone.
	for !e.Inbox.Batching() {
		time.Sleep(time.Millisecond)
	}
}

// Drain is a worker's claim loop run to the end in the test's own
// goroutine, for tests without running workers: it applies whatever is
// due now, and returns once nothing is.
func (e *Env) Drain() {
	e.T.Helper()
	for {
		n, err := e.Proc.ProcessDue(context.Background(), inbox.MaxBatch)
		if err != nil {
			// A test of an unreachable database sees it in its answers.
			e.T.Logf("drain: %v", err)
			return
		}
		if n == 0 {
			return
		}
	}
}

// Settled waits until every stored delivery has had its first attempt:
// with the workers running, a delivery is applied after its request is
// answered, as an outside observer would wait for it; without, the test
// drains the inbox itself, snoozed deliveries included once due.
func (e *Env) Settled() {
	e.T.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for e.Count(`SELECT count(*) FROM inbox WHERE status = 'pending' AND attempts = 0`) > 0 {
		if time.Now().After(deadline) {
			e.T.Fatal("stored deliveries still wait for their first attempt")
		}
		if !e.Running {
			e.Drain()
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// WaitSnoozed waits until workers have snoozed at least n pending
// deliveries because another transaction held their charge: the barrier
// of a test holding a charge's lock, as waiting on the lock was before
// workers skipped held charges.
func (e *Env) WaitSnoozed(n int) {
	e.T.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		got := e.Count(`SELECT count(*) FROM inbox WHERE status = 'pending' AND last_error = $1`, inbox.SnoozedError)
		if got >= int64(n) {
			return
		}
		if time.Now().After(deadline) {
			e.T.Fatalf("%d deliveries snoozed, want %d", got, n)
		}
		if !e.Running {
			e.Drain()
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// New is the webhook front of one test on a database of its own, serving
// DefaultEndpoints.
func New(t testing.TB) *Env {
	t.Helper()
	db, url := pgtest.NewWithURL(t)
	return NewWithDB(t, db, url)
}

// NewWithDB is New on db, whose URL is url.
func NewWithDB(t testing.TB, db *sqlx.DB, url string) *Env {
	t.Helper()
	return NewWithEndpoints(t, db, url, DefaultEndpoints...)
}

// DefaultEndpoints are the endpoints of New: one per scheme that needs
// no certificate.
var DefaultEndpoints = []webhook.EndpointConfig{
	{Name: "hodle", Scheme: "hodle", Merchant: "loja-1", Secrets: []string{HodleSecret}, MaxBodyBytes: 4096},
	{Name: "abacate", Scheme: "abacatepay", Merchant: "loja-1", Secrets: []string{AbacateSecret}},
	{Name: "std", Scheme: "standard", Merchant: "loja-1", Secrets: []string{StandardSecret}},
}

// NewWithEndpoints is the webhook front of one test: the real handler,
// inbox and processor on db, serving exactly the endpoints of cfgs.
func NewWithEndpoints(t testing.TB, db *sqlx.DB, url string, cfgs ...webhook.EndpointConfig) *Env {
	t.Helper()
	cal, err := periods.NewCalendar(periods.DefaultTimeZone)
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
	h := webhook.NewHandler(eps, in, func() time.Time { return Clock }, log)
	r := mux.NewRouter()
	r.Handle("/webhooks/{endpoint}", h)
	return &Env{T: t, DB: db, URL: url, Applier: applier, Proc: proc, Inbox: in, Router: r, Handler: h}
}

// Charge registers a charge the way the app does.
func (e *Env) Charge(id string, amount int64, partner string, bp int64) {
	e.T.Helper()
	_, _, err := charges.Register(context.Background(), e.DB, charges.NewCharge{
		ID: id, Amount: amount, Partner: partner, CommissionBP: bp, Access: "course:" + id,
	})
	if err != nil {
		e.T.Fatal(err)
	}
}

// Reply is the webhook's answer to one delivery.
type Reply struct {
	Code int
	Body webhook.Response
}

// Post sends a delivery through the real router and handler.
func (e *Env) Post(path string, header http.Header, body []byte) Reply {
	e.T.Helper()
	return e.Do(http.MethodPost, path, header, body)
}

// Do sends a request of method through the real router and handler.
func (e *Env) Do(method, path string, header http.Header, body []byte) Reply {
	e.T.Helper()
	return e.DoContext(context.Background(), method, path, header, body)
}

// DoContext is Do with the request's context: the PSP hanging up is ctx
// ending.
func (e *Env) DoContext(ctx context.Context, method, path string, header http.Header, body []byte) Reply {
	e.T.Helper()
	req := httptest.NewRequestWithContext(ctx, method, path, bytes.NewReader(body))
	for k, v := range header {
		req.Header[k] = v
	}
	rec := httptest.NewRecorder()
	e.Router.ServeHTTP(rec, req)
	if !e.Running {
		e.Drain()
	}
	var r Reply
	r.Code = rec.Code
	json.Unmarshal(rec.Body.Bytes(), &r.Body)
	return r
}

// HodleHeaders are the headers of body signed by Hodle with secret at ts.
func HodleHeaders(ts int64, body []byte, secret string) http.Header {
	mac := hmac.New(sha256.New, []byte(secret))
	fmt.Fprintf(mac, "%d.", ts)
	mac.Write(body)
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("X-Hodle-Timestamp", strconv.FormatInt(ts, 10))
	h.Set("X-Hodle-Signature", hex.EncodeToString(mac.Sum(nil)))
	return h
}

// PostHodle signs body with the test secret at the Clock's time.
func (e *Env) PostHodle(body string) Reply {
	e.T.Helper()
	return e.Post("/webhooks/hodle", HodleHeaders(Clock.Unix(), []byte(body), HodleSecret), []byte(body))
}

// PostAbacate sends an AbacatePay delivery with both of its factors: the
// URL secret and the public-key HMAC of the body.
func (e *Env) PostAbacate(body string) Reply {
	e.T.Helper()
	mac := hmac.New(sha256.New, []byte(scheme.DefaultAbacatepayPublicKey))
	mac.Write([]byte(body))
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("X-Webhook-Signature", base64.StdEncoding.EncodeToString(mac.Sum(nil)))
	return e.Post("/webhooks/abacate?webhookSecret="+url.QueryEscape(AbacateSecret), h, []byte(body))
}

// StandardHeaders are the headers of message id with body, signed as
// Standard Webhooks at ts with StandardSecret.
func StandardHeaders(id string, ts int64, body []byte) http.Header {
	key, _ := base64.StdEncoding.DecodeString(StandardSecret[len("whsec_"):])
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

// PostStandard sends razao's own event format, signed as Standard Webhooks.
func (e *Env) PostStandard(msgID, typ string, data map[string]any) Reply {
	e.T.Helper()
	body, _ := json.Marshal(map[string]any{"type": typ, "timestamp": Clock.UTC().Format(time.RFC3339), "data": data})
	return e.Post("/webhooks/std", StandardHeaders(msgID, Clock.Unix(), body), body)
}

// HodleFailedBody is a Hodle deposit of order-1 that failed (event-1).
const HodleFailedBody = `{"event":"DEPOSIT_ASSET_FAILED","data":{"eventId":"event-1","externalId":"order-1"}}`

// HodlePaid is a Hodle deposit confirmation.
func HodlePaid(trackID, externalID, reais string) string {
	return fmt.Sprintf(`{"event":"DEPOSIT_ASSET_SUCCESS","data":{"trackId":%q,"externalId":%q,"valueInBrl":%q,"fee":"0.75"}}`, trackID, externalID, reais)
}

// HodleRefund is a Hodle deposit refund.
func HodleRefund(eventID, externalID, reais string) string {
	return fmt.Sprintf(`{"event":"DEPOSIT_ASSET_REFUNDED","data":{"eventId":%q,"externalId":%q,"valueInBrl":%q}}`, eventID, externalID, reais)
}

// Count runs a query that counts.
func (e *Env) Count(query string, args ...any) int64 {
	e.T.Helper()
	var n int64
	if err := e.DB.Get(&n, query, args...); err != nil {
		e.T.Fatalf("%s: %v", query, err)
	}
	return n
}

// Balances returns each account's balance over the whole ledger.
func (e *Env) Balances() map[string]int64 {
	e.T.Helper()
	rows := []struct {
		Code    string `db:"code"`
		Balance int64  `db:"balance"`
	}{}
	if err := e.DB.Select(&rows, `SELECT a.code, sum(p.amount) AS balance FROM postings p
		JOIN accounts a ON a.id = p.account_id GROUP BY a.code`); err != nil {
		e.T.Fatal(err)
	}
	out := map[string]int64{}
	for _, r := range rows {
		out[r.Code] = r.Balance
	}
	return out
}

// WantBalances fails unless the accounts' balances are want, every
// other account's zero.
func (e *Env) WantBalances(want map[string]int64) {
	e.T.Helper()
	got := e.Balances()
	for code, w := range want {
		if got[code] != w {
			e.T.Errorf("balance %s = %d, want %d (all: %v)", code, got[code], w, got)
		}
	}
	for code, g := range got {
		if _, ok := want[code]; !ok && g != 0 {
			e.T.Errorf("unexpected balance %s = %d", code, g)
		}
	}
}

// FailAfterSale makes processing fail right after it wrote the sale, while
// the returned switch is on (it starts on). Appliers read it from their
// own goroutines, hence the atomic.
func (e *Env) FailAfterSale(cause string) *atomic.Bool {
	on := new(atomic.Bool)
	on.Store(true)
	e.Applier.AfterSale = func() error {
		if on.Load() {
			return errors.New(cause)
		}
		return nil
	}
	return on
}

// Eventually waits until query counts want rows.
func (e *Env) Eventually(what, query string, want int64) {
	e.T.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		n := e.Count(query)
		if n == want {
			return
		}
		if time.Now().After(deadline) {
			e.T.Fatalf("%s: counted %d, want %d", what, n, want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// HoldCharge locks the charge's row from a transaction of the test's own
// until that transaction ends: the gate deliveries wait on.
func (e *Env) HoldCharge(id string) *sqlx.Tx {
	e.T.Helper()
	gate := e.DB.MustBegin()
	gate.MustExec(`SELECT 1 FROM charges WHERE id = $1 FOR UPDATE`, id)
	return gate
}

// WaitHeld waits until stored deliveries are in the inbox, still pending,
// and at least waiters sessions wait on a lock. With the processor's
// batcher running, deliveries of concurrent requests share transactions,
// so fewer sessions than deliveries wait: the rest queue behind them.
func (e *Env) WaitHeld(stored, waiters int) {
	e.T.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		waiting := e.Count(`SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`)
		pending := e.Count(`SELECT count(*) FROM inbox WHERE status = 'pending'`)
		if waiting >= int64(waiters) && pending >= int64(stored) {
			return
		}
		if time.Now().After(deadline) {
			e.T.Fatalf("%d of %d sessions waiting on the lock, %d of %d deliveries stored", waiting, waiters, pending, stored)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// NewWith is New with more endpoints beside the usual ones.
func NewWith(t testing.TB, extra ...webhook.EndpointConfig) *Env {
	t.Helper()
	db, url := pgtest.NewWithURL(t)
	return NewWithEndpoints(t, db, url, append(append([]webhook.EndpointConfig{}, DefaultEndpoints...), extra...)...)
}

// NewMerchants is a webhook front with two merchants: loja-1 has two
// Hodle endpoints and two standard ones, loja-2 one of each.
func NewMerchants(t testing.TB) *Env {
	t.Helper()
	db, url := pgtest.NewWithURL(t)
	return NewWithEndpoints(t, db, url, []webhook.EndpointConfig{
		{Name: "hodle", Scheme: "hodle", Merchant: "loja-1", Secrets: []string{HodleSecret}},
		{Name: "hodle-2", Scheme: "hodle", Merchant: "loja-1", Secrets: []string{HodleSecret}},
		{Name: "std", Scheme: "standard", Merchant: "loja-1", Secrets: []string{StandardSecret}},
		{Name: "std-2", Scheme: "standard", Merchant: "loja-1", Secrets: []string{StandardSecret}},
		{Name: "hodle-b", Scheme: "hodle", Merchant: "loja-2", Secrets: []string{HodleSecret}},
		{Name: "std-b", Scheme: "standard", Merchant: "loja-2", Secrets: []string{StandardSecret}},
	}...)
}

// HodleAt posts a signed Hodle body to the named endpoint.
func (e *Env) HodleAt(endpoint, body string) Reply {
	e.T.Helper()
	return e.Post("/webhooks/"+endpoint, HodleHeaders(Clock.Unix(), []byte(body), HodleSecret), []byte(body))
}

// PixCallback returns a bcb-pix callback of n Pix, one per charge
// prefix1 … prefixN, each paid R$ 49.90, and the charges' ids; round
// tells the endToEndIds of one call from another's.
func PixCallback(prefix string, round, n int) ([]byte, []string) {
	var b strings.Builder
	b.WriteString(`{"pix":[`)
	ids := make([]string, n)
	at := Clock.UTC().Format(time.RFC3339)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		ids[i] = fmt.Sprintf("%s%d", prefix, i+1)
		fmt.Fprintf(&b, `{"endToEndId":"E%04d%027d","txid":%q,"valor":"49.90","horario":%q}`, round, i+1, ids[i], at)
	}
	b.WriteString(`]}`)
	return []byte(b.String()), ids
}

// PostPix posts a bcb-pix callback to the named endpoint, authenticated
// by its URL secret.
func (e *Env) PostPix(endpoint string, body []byte) Reply {
	e.T.Helper()
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	return e.Post("/webhooks/"+endpoint+"?hmac="+url.QueryEscape(BCBSecret), h, body)
}

// ChargesFor registers a charge of R$ 49.90 for each id, in one statement.
func (e *Env) ChargesFor(ids []string) {
	e.T.Helper()
	e.DB.MustExec(`INSERT INTO charges (id, amount, access, request_hash) SELECT unnest($1::text[]), 4990, 'x', 'h'`, pq.Array(ids))
}

// PixEndpoint is a bcb-pix endpoint taking callbacks of up to maxItems events.
func PixEndpoint(maxItems int) webhook.EndpointConfig {
	return webhook.EndpointConfig{Name: "pix", Scheme: "bcb-pix", Merchant: "loja-1", Secrets: []string{BCBSecret}, MaxItems: maxItems}
}
