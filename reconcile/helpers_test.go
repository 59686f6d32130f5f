package reconcile_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/mux"
	"github.com/jmoiron/sqlx"

	"github.com/razao/razao/charges"
	"github.com/razao/razao/inbox"
	"github.com/razao/razao/internal/pgtest"
	"github.com/razao/razao/periods"
	"github.com/razao/razao/postings"
	"github.com/razao/razao/reconcile"
	"github.com/razao/razao/webhook"
)

const (
	hodleSecret = "example-secret-for-local-tests-only"
	bcbSecret   = "bcb-url-secret-abcdefghijklmnopqrstuvwxyz-0123"
	secretEnv   = "RAZAO_TEST_PIX_CLIENT_SECRET"
)

// now is the tests' clock: statement items are dated hours before it.
var now = time.Now().UTC().Truncate(time.Second)

// goLive is the first day of the month before now's, in São Paulo.
var goLive = func() time.Time {
	loc, _ := time.LoadLocation(periods.DefaultTimeZone)
	n := now.In(loc)
	return time.Date(n.Year(), n.Month()-1, 1, 0, 0, 0, 0, time.UTC)
}()

// window is a final window (its end is over final_after before now).
var winFrom, winTo = now.Add(-6 * time.Hour), now.Add(-2 * time.Hour)

// env is one test's ledger, webhook front and reconciler on its own
// database.
type env struct {
	t      *testing.T
	db     *sqlx.DB
	url    string
	inbox  *inbox.Inbox
	proc   *inbox.Processor
	ledger *postings.Ledger
	hooks  []*webhook.Endpoint
	router http.Handler
	rec    *reconcile.Reconciler
	psp    *fakePSP
	cfgs   []reconcile.EndpointConfig
	waits  *waits
}

// waits records the back-offs a client asked for instead of waiting.
type waits struct {
	mu sync.Mutex
	ds []time.Duration
}

func (w *waits) wait(_ context.Context, d time.Duration) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.ds = append(w.ds, d)
	return nil
}

func (w *waits) all() []time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]time.Duration(nil), w.ds...)
}

var hookConfigs = []webhook.EndpointConfig{
	{Name: "bcb", Scheme: "bcb-pix", Merchant: "loja-1", Secrets: []string{bcbSecret}},
	{Name: "hodle", Scheme: "hodle", Merchant: "loja-1", Secrets: []string{hodleSecret}},
	{Name: "abacate", Scheme: "abacatepay", Merchant: "loja-1", Secrets: []string{"url-secret-abcdefghijklmnopqrstuvwxyz-0123"}},
	{Name: "bcbcsv", Scheme: "bcb-pix", Merchant: "loja-1", Secrets: []string{bcbSecret}},
}

// brPixCSV maps a bcb-pix endpoint's statement exported as a br CSV.
var brPixCSV = reconcile.CSVMapping{Dialect: "br", PSPID: "e2e", ChargeRef: "txid", Kind: "tipo",
	PaidValues: []string{"PIX"}, RefundValues: []string{"DEVOLUCAO"}, Amount: "valor", Time: "horario", RefundID: "devolucao"}

// newEnv builds the test's env: a bcb-pix endpoint "bcb" reconciled from
// a fake PSP, "hodle" and "abacate" from CSV files.
func newEnv(t *testing.T) *env {
	t.Helper()
	db, dbURL := pgtest.NewWithURL(t)
	return newEnvOn(t, db, dbURL)
}

// newEnvOn is newEnv on a migrated database reached through db (and
// dbURL, for statement loads), as whichever role it connects as.
func newEnvOn(t *testing.T, db *sqlx.DB, dbURL string) *env {
	t.Helper()
	// Go-live at the start of last month: a test can close that month.
	return newEnvSince(t, db, dbURL, goLive)
}

// newEnvSince is newEnvOn with the ledger's go-live date since.
func newEnvSince(t *testing.T, db *sqlx.DB, dbURL string, since time.Time) *env {
	t.Helper()
	e := &env{t: t, db: db, url: dbURL, psp: newFakePSP(t), waits: &waits{}}
	cal, err := periods.NewCalendar(periods.DefaultTimeZone)
	if err != nil {
		t.Fatal(err)
	}
	cal = cal.WithGoLive(since)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	e.ledger = postings.New(db, cal)
	applier := charges.NewApplier(db, e.ledger)
	e.proc = inbox.NewProcessor(db, applier, log)
	for _, c := range hookConfigs {
		ep, err := webhook.NewEndpoint(c, func(string) string { return "" })
		if err != nil {
			t.Fatal(err)
		}
		e.hooks = append(e.hooks, ep)
	}
	e.inbox = inbox.NewInbox(db, e.proc)
	h := webhook.NewHandler(e.hooks, e.inbox, func() time.Time { return now }, log)
	r := mux.NewRouter()
	r.Handle("/webhooks/{endpoint}", h)
	r.Handle("/webhooks/{endpoint}/pix", h)
	e.router = r
	certFile, keyFile, caFile := e.psp.clientFiles(t, e.psp.ca)
	e.cfgs = []reconcile.EndpointConfig{
		{Endpoint: "bcb", Source: "bcb-pix", FinalAfter: time.Hour, BCBPix: reconcile.BCBPixConfig{
			BaseURL: e.psp.srv.URL, TokenURL: e.psp.srv.URL + "/oauth/token", ClientID: fakeClientID,
			ClientSecretEnv: secretEnv, CertFile: certFile, KeyFile: keyFile, CAFile: caFile, PageSize: 2}},
		{Endpoint: "hodle", Source: "csv", FinalAfter: time.Hour, CSV: reconcile.CSVMapping{
			PSPID: "trackId", ChargeRef: "externalId", Kind: "type", PaidValues: []string{"DEPOSIT"},
			RefundValues: []string{"REFUND"}, Amount: "amount", Time: "date", RefundID: "refundId"}},
		{Endpoint: "abacate", Source: "csv", FinalAfter: time.Hour, CSV: reconcile.CSVMapping{
			PSPID: "id", ChargeRef: "externalId", Amount: "amount", AmountUnit: "centavos", Fee: "fee", Time: "paidAt"}},
		{Endpoint: "bcbcsv", Source: "csv", FinalAfter: time.Hour, CSV: brPixCSV},
	}
	e.rec = e.reconciler(fakeClientSecret)
	return e
}

// reconciler builds a reconciler over the env, the Pix API's client
// secret as given.
func (e *env) reconciler(secret string) *reconcile.Reconciler {
	e.t.Helper()
	return e.reconcilerOn(e.db, secret, nil)
}

// reconcilerOn is reconciler with its own pool and metrics.
func (e *env) reconcilerOn(db *sqlx.DB, secret string, m *reconcile.Metrics) *reconcile.Reconciler {
	e.t.Helper()
	rec, err := reconcile.New(reconcile.Options{DB: db, DatabaseURL: e.url, Metrics: m, Inbox: e.inbox, Ledger: e.ledger, Hooks: webhook.InboxEndpoints(e.hooks),
		Endpoints: e.cfgs, Getenv: func(k string) string {
			if k == secretEnv {
				return secret
			}
			return ""
		}, Now: func() time.Time { return now }, Wait: e.waits.wait})
	if err != nil {
		e.t.Fatal(err)
	}
	return rec
}

// charge registers a charge of merchant loja-1, as the app does.
func (e *env) charge(id string, amount int64, pspRef string) {
	e.t.Helper()
	_, _, err := charges.Register(context.Background(), e.db, charges.NewCharge{
		ID: id, Amount: amount, PSPRef: pspRef, Merchant: "loja-1", Access: "course:" + id})
	if err != nil {
		e.t.Fatal(err)
	}
}

// drain applies what the inbox holds due, as the service's workers do a
// moment after a delivery is stored (the one path: inbox.Worker), so
// that what a test reads next is what the ledger shows once they have.
func (e *env) drain() {
	e.t.Helper()
	w := inbox.NewWorker(e.proc, time.Hour)
	for {
		n, err := w.RunOnce(context.Background())
		if err != nil {
			e.t.Fatalf("drain the inbox: %v", err)
		}
		if n == 0 {
			return
		}
	}
}

func (e *env) count(q string, args ...any) int {
	e.t.Helper()
	e.drain()
	var n int
	if err := e.db.Get(&n, q, args...); err != nil {
		e.t.Fatal(err)
	}
	return n
}

// post sends a webhook through the real router and handler, and returns
// the status and the answer's overall status.
func (e *env) post(path string, header http.Header, body []byte) (int, string) {
	e.t.Helper()
	req := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body))
	for k, v := range header {
		req.Header[k] = v
	}
	rec := httptest.NewRecorder()
	e.router.ServeHTTP(rec, req)
	e.drain()
	var resp webhook.Response
	json.Unmarshal(rec.Body.Bytes(), &resp)
	return rec.Code, resp.Status
}

// postPix sends a bcb-pix callback of items to the endpoint "bcb".
func (e *env) postPix(items ...pixItem) (int, string) {
	e.t.Helper()
	var list []map[string]any
	for _, it := range items {
		list = append(list, it.json())
	}
	body, _ := json.Marshal(map[string]any{"pix": list})
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	return e.post("/webhooks/bcb/pix?hmac="+url.QueryEscape(bcbSecret), h, body)
}

// postHodle sends a signed Hodle DEPOSIT_ASSET_SUCCESS.
func (e *env) postHodle(trackID, externalID, valueBRL string) (int, string) {
	e.t.Helper()
	return e.postHodleBody([]byte(fmt.Sprintf(`{"event":"DEPOSIT_ASSET_SUCCESS","data":{"trackId":%q,"externalId":%q,"valueInBrl":%q}}`,
		trackID, externalID, valueBRL)))
}

// postHodleBody posts body to the Hodle endpoint, signed as Hodle signs.
func (e *env) postHodleBody(body []byte) (int, string) {
	e.t.Helper()
	ts := now.Unix()
	mac := hmac.New(sha256.New, []byte(hodleSecret))
	fmt.Fprintf(mac, "%d.", ts)
	mac.Write(body)
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("X-Hodle-Timestamp", strconv.FormatInt(ts, 10))
	h.Set("X-Hodle-Signature", hex.EncodeToString(mac.Sum(nil)))
	return e.post("/webhooks/hodle", h, body)
}

// runPix reconciles the fake PSP's window.
func (e *env) runPix(from, to time.Time) reconcile.Run {
	e.t.Helper()
	run, err := e.rec.ReconcileWindow(context.Background(), "bcb", from, to)
	if err != nil {
		e.t.Fatalf("reconcile bcb [%s, %s): %v", from, to, err)
	}
	e.drain()
	return run
}

// runCSV reconciles a statement file of endpoint over the test window.
func (e *env) runCSV(endpoint, file string) reconcile.Run {
	e.t.Helper()
	run, err := e.rec.ReconcileFile(context.Background(), endpoint, strings.NewReader(file), winFrom, winTo)
	if err != nil {
		e.t.Fatalf("reconcile %s file: %v", endpoint, err)
	}
	e.drain()
	return run
}

// outcomes lists a run's lines as "kind outcome reason charge" strings,
// in line order.
func (e *env) outcomes(run int64) []string {
	e.t.Helper()
	lines, err := reconcile.Lines(context.Background(), e.db, run, false, 0, 1000)
	if err != nil {
		e.t.Fatal(err)
	}
	var out []string
	for _, l := range lines {
		reason, charge := "", ""
		if l.Reason != nil {
			reason = *l.Reason
		}
		if l.ChargeID != nil {
			charge = *l.ChargeID
		}
		out = append(out, strings.TrimSpace(fmt.Sprintf("%s %s %s %s", l.Kind, l.Outcome, reason, charge)))
	}
	return out
}

// e2e is a 32-character endToEndId numbered n.
func e2e(n int) string { return fmt.Sprintf("E%031d", n) }

// at is a time inside the test window, m minutes after its start.
func at(m int) time.Time { return winFrom.Add(time.Duration(m) * time.Minute) }

func (e *env) sales() int { return e.count(`SELECT count(*) FROM posting_sets WHERE kind = 'sale'`) }

func linesOf(e *env, run int64) ([]reconcile.LineResult, error) {
	e.t.Helper()
	ls, err := reconcile.Lines(context.Background(), e.db, run, false, 0, 1000)
	if err != nil {
		e.t.Fatal(err)
	}
	return ls, nil
}
