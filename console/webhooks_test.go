package console

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/razao/razao/events"
	"github.com/razao/razao/outgoing"
)

// hookWait bounds every wait for a delivery: a deadline for a test that
// would otherwise hang, never a claim about speed.
const hookWait = 30 * time.Second

// hookAnswer is what a failing receiver answers: markup, which every page
// must show escaped, then more than a row shows (and than the service
// keeps), without a space.
var hookAnswer = `<script>alert("razao")</script><b>fora do ar</b> ` + strings.Repeat("indisponível-", 400)

// hookReceiver is the selling app's webhook handler: 503 with hookAnswer
// while failing, else 200; it records the webhook-id and status of each
// request.
type hookReceiver struct {
	srv     *httptest.Server
	failing atomic.Bool
	mu      sync.Mutex
	got     []string // webhook-id + " " + status
}

func newHookReceiver(t *testing.T, failing bool) *hookReceiver {
	t.Helper()
	h := &hookReceiver{}
	h.failing.Store(failing)
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		status := http.StatusOK
		if h.failing.Load() {
			status = http.StatusServiceUnavailable
		}
		h.mu.Lock()
		h.got = append(h.got, r.Header.Get("webhook-id")+" "+strconv.Itoa(status))
		h.mu.Unlock()
		w.WriteHeader(status)
		if status != http.StatusOK {
			io.WriteString(w, hookAnswer)
		}
	}))
	t.Cleanup(h.srv.Close)
	return h
}

// count is how many requests of webhook-id id were answered status.
func (h *hookReceiver) count(id string, status int) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, g := range h.got {
		if g == id+" "+strconv.Itoa(status) {
			n++
		}
	}
	return n
}

// waitUntil polls cond until it holds, failing the test after hookWait.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(hookWait)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after %s", what, hookWait)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// hooks is a fixture's webhooks: an endpoint whose receiver failed the
// whole schedule (so it is disabled, with three attempts logged) and one
// that took everything, both sent the charge.paid event Event.
type hooks struct {
	svc               outgoing.Service
	failing, healthy  outgoing.Endpoint
	bad, good         *hookReceiver
	event             int64
	failingID, goodID string // the event's webhook-id at each endpoint
}

// withWebhooks creates the endpoints through outgoing.Service, as the API
// does, runs a dispatcher (three attempts, a few milliseconds apart) and
// commits one charge.paid, then waits until the failing endpoint is
// disabled and the healthy one has the event.
func withWebhooks(t *testing.T, f *fixture) *hooks {
	t.Helper()
	cfg := outgoing.Config{AllowPrivateTargets: true, AllowHTTPTargets: true, Schedule: []time.Duration{5 * time.Millisecond, 5 * time.Millisecond},
		Jitter: -1, Interval: 50 * time.Millisecond}
	h := &hooks{svc: outgoing.Service{DB: f.db, Config: cfg}, bad: newHookReceiver(t, true), good: newHookReceiver(t, false)}
	ctx := context.Background()
	var err error
	h.failing, err = h.svc.Create(ctx, outgoing.NewEndpoint{URL: h.bad.srv.URL + "/hooks", Description: "Loja <b>principal</b>",
		Topics: []string{string(events.TopicChargePaid)}})
	if err != nil {
		t.Fatal(err)
	}
	if h.healthy, err = h.svc.Create(ctx, outgoing.NewEndpoint{URL: h.good.srv.URL + "/hooks"}); err != nil {
		t.Fatal(err)
	}
	d := outgoing.NewDispatcher(f.db, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), nil)
	d.Listen(f.dbURL)
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { d.Run(runCtx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	appendEvent(t, f, events.TopicChargePaid, "order-hook")
	waitUntil(t, "the failing endpoint disabled", func() bool {
		e, err := h.svc.Get(ctx, h.failing.ID)
		return err == nil && !e.Enabled
	})
	as, err := h.svc.Attempts(ctx, h.failing.ID, 0, 1)
	if err != nil || len(as) != 1 {
		t.Fatalf("attempts of the failing endpoint: %v %v", as, err)
	}
	h.event = as[0].EventID
	h.failingID, h.goodID = outgoing.MessageID(h.failing.ID, h.event), outgoing.MessageID(h.healthy.ID, h.event)
	waitUntil(t, "the healthy endpoint has the event", func() bool { return h.good.count(h.goodID, http.StatusOK) == 1 })
	// Its position is saved a moment after the delivery (outgoing saves
	// progress at most once a second): a replay reaches only events at or
	// behind the saved position.
	waitUntil(t, "the healthy endpoint's position saved past the event", func() bool {
		e, err := h.svc.Get(ctx, h.healthy.ID)
		if err != nil {
			return false
		}
		_, id, _ := strings.Cut(e.Cursor, "-")
		n, err := strconv.ParseInt(id, 10, 64)
		return err == nil && n >= h.event
	})
	return h
}

var attemptRowRE = regexp.MustCompile(`<tr data-attempt="(\d+)">`)

// attemptIDs are the attempt rows of a page, in its order.
func attemptIDs(t *testing.T, page string) []int64 {
	t.Helper()
	var ids []int64
	for _, m := range attemptRowRE.FindAllStringSubmatch(page, -1) {
		ids = append(ids, mustInt(t, m[1]))
	}
	return ids
}

// The list and an endpoint's page show what outgoing.Service reads: the
// endpoint disabled after failing the whole schedule stands out (an
// alert, its reason in Portuguese), its attempts newest first with the
// receiver's answer escaped and the time in São Paulo; the secret is never
// shown. The pages are an admin's, as /v1/webhook-endpoints is: an
// endpoint's URL may carry the app's token, and a read session is refused
// them and the actions.
func TestWebhookPagesShowTheEndpointsAndTheirAttempts(t *testing.T) {
	t.Parallel()
	f := newBareFixture(t)
	h := withWebhooks(t, f)
	srv := serve(t, f.router)
	c := signedIn(t, srv, f.admin)
	escaped := []string{`&lt;script&gt;alert(&#34;razao&#34;)&lt;/script&gt;&lt;b&gt;fora do ar&lt;/b&gt;`}
	noSecret := func(what, page string) {
		t.Helper()
		for _, s := range []string{h.failing.Secret, h.healthy.Secret, "whsec_"} {
			if strings.Contains(page, s) {
				t.Errorf("%s shows a secret", what)
			}
		}
		if strings.Contains(page, "<script>alert") || strings.Contains(page, "<b>") {
			t.Errorf("%s shows the receiver's or the description's markup unescaped", what)
		}
	}
	res, page := c.get("/console/webhooks")
	wantPage(t, "list", res, page, http.StatusOK, append(escaped, `<p class="problem" role="alert" id="failing">`,
		fmt.Sprintf(`<a href="/console/webhooks/%d">#%d</a>`, h.failing.ID, h.failing.ID),
		fmt.Sprintf(`<a href="/console/webhooks/%d#attempts">`, h.healthy.ID), `<code>charge.paid</code>`, "todos os tópicos",
		`Loja &lt;b&gt;principal&lt;/b&gt;`, `aria-current="page">Webhooks</a>`)...)
	for id, want := range map[int64]string{h.failing.ID: `<strong class="problem">desativado após falhar todas as tentativas</strong>`,
		h.healthy.ID: `<span class="ok">ativo</span>`} {
		if got := rowField(t, page, "data-endpoint", strconv.FormatInt(id, 10), "state"); !strings.HasPrefix(got, want) {
			t.Errorf("endpoint %d's state: %q, want %q", id, got, want)
		}
	}
	if got := rowField(t, page, "data-last-error", strconv.FormatInt(h.failing.ID, 10), "error"); !strings.HasPrefix(got, `<span class="problem">Último erro</span>: HTTP 503 em `) {
		t.Errorf("the failing endpoint's last error: %q", got)
	}
	if strings.Contains(page, fmt.Sprintf(`data-last-error="%d"`, h.healthy.ID)) {
		t.Error("the healthy endpoint is shown a last error")
	}
	noSecret("list", page)

	path := fmt.Sprintf("/console/webhooks/%d", h.failing.ID)
	res, page = c.get(path)
	wantPage(t, "failing endpoint", res, page, http.StatusOK, append(escaped, `role="alert" id="failing"`,
		fmt.Sprintf("do evento #%d", h.event))...)
	as, err := h.svc.Attempts(context.Background(), h.failing.ID, 0, outgoing.MaxAttemptsPage)
	if err != nil {
		t.Fatal(err)
	}
	if len(as) != 3 {
		t.Fatalf("%d attempts logged, want 3", len(as))
	}
	ids := attemptIDs(t, page)
	if len(ids) != 3 {
		t.Fatalf("the page shows %d attempts, want 3", len(ids))
	}
	at := dateTime(f.console.loc())
	for i, a := range as {
		if ids[i] != a.ID {
			t.Errorf("row %d is attempt %d, want %d (newest first)", i, ids[i], a.ID)
		}
		row := rowOf(t, page, "data-attempt", strconv.FormatInt(a.ID, 10))
		if !strings.Contains(row, "<th scope=\"row\">"+at(a.At)+"</th>") || !strings.Contains(row, "HTTP 503") ||
			!strings.Contains(row, fmt.Sprintf(`<td class="num">%d ms</td>`, a.LatencyMS)) {
			t.Errorf("attempt %d's row: %s", a.ID, row)
		}
		if got := rowField(t, page, "data-response", strconv.FormatInt(a.ID, 10), "response"); !strings.HasPrefix(got, fmt.Sprintf("Resposta da tentativa %d: <code>%s", a.Attempt, escaped[0])) {
			t.Errorf("attempt %d's response: %s", a.ID, got)
		}
		if got := rowField(t, page, "data-attempt", strconv.FormatInt(a.ID, 10), "attempt"); got != strconv.Itoa(a.Attempt) {
			t.Errorf("attempt %d's number: %q, want %d", a.ID, got, a.Attempt)
		}
		next := "—"
		if a.NextAt != nil {
			next = at(*a.NextAt)
		}
		if !strings.HasSuffix(row, "<td>"+next+"</td>") {
			t.Errorf("attempt %d's next try is not shown as %s: %s", a.ID, next, row)
		}
	}
	if !strings.Contains(page, "</code>… <span class=\"hint\">(cortada)</span>") || strings.Contains(page, strings.Repeat("indisponível-", 30)) {
		t.Error("a long response is not cut, saying so")
	}
	noSecret("endpoint", page)

	// A read session is refused the pages, and the actions with its own
	// CSRF value.
	read := signedIn(t, srv, f.read)
	for _, p := range []string{"/console/webhooks", path} {
		res, body := read.get(p)
		wantPage(t, "read "+p, res, body, http.StatusForbidden, "escopo admin")
	}
	if _, month := read.get("/console/"); strings.Contains(month, `href="/console/webhooks"`) {
		t.Error("a read session's navigation links the webhooks")
	}
	_, periods := read.get("/console/periods")
	csrf := csrfOf(t, periods)
	for _, act := range []string{"enable", "disable", "replay"} {
		res, body := read.postForm(path+"/"+act, url.Values{"csrf": {csrf}, "evento": {strconv.FormatInt(h.event, 10)}})
		wantPage(t, "read "+act, res, body, http.StatusForbidden, "escopo admin")
	}
	if e, _ := h.svc.Get(context.Background(), h.failing.ID); e.Enabled || e.DisabledReason != "failing" {
		t.Errorf("after a read session's POSTs: %+v", e)
	}

	for _, p := range []string{"/console/webhooks/999999", "/console/webhooks/nope", "/console/webhooks/0",
		fmt.Sprintf("/console/webhooks/%d/x", h.failing.ID)} {
		res, body := c.get(p)
		wantPage(t, p, res, body, http.StatusNotFound, `<p class="problem" role="alert">Endpoint de webhook desconhecido`, `lang="pt-BR"`)
	}
}

// rowOf is the row with attribute attr=value.
func rowOf(t *testing.T, page, attr, value string) string {
	t.Helper()
	row := regexp.MustCompile(`(?s)<tr ` + regexp.QuoteMeta(attr+`="`+value+`"`) + `(?:\s[^>]*)?>(.*?)</tr>`).FindStringSubmatch(page)
	if row == nil {
		t.Fatalf("no row %s=%q on the page", attr, value)
	}
	return row[1]
}

// rowField is the markup of the cell data-field=name in the row with
// attribute attr=value.
func rowField(t *testing.T, page, attr, value, name string) string {
	t.Helper()
	cell := regexp.MustCompile(`(?s)data-field="` + regexp.QuoteMeta(name) + `">(.*?)</td>`).FindStringSubmatch(rowOf(t, page, attr, value))
	if cell == nil {
		t.Fatalf("row %s=%q has no %s", attr, value, name)
	}
	return cell[1]
}

// An admin enables, disables and replays through the same service the
// API calls, each a form with the session's CSRF value: enabling resumes
// at the event the endpoint stopped on, a replay sends the event again
// with its webhook-id.
func TestWebhookActionsAreAdminFormsThatCallTheService(t *testing.T) {
	t.Parallel()
	f := newBareFixture(t)
	h := withWebhooks(t, f)
	srv := serve(t, f.router)
	c := signedIn(t, srv, f.admin)
	ctx := context.Background()
	path := fmt.Sprintf("/console/webhooks/%d", h.failing.ID)
	_, page := c.get(path)
	csrf := hiddenValue(t, page, "enable-form", "csrf")

	if res, body := c.postForm(path+"/enable", url.Values{"csrf": {"forged"}}); res.StatusCode != http.StatusForbidden {
		t.Fatalf("enable with a forged CSRF value: %d\n%s", res.StatusCode, body)
	}
	// The app is fixed; enabling sends the event it stopped on, accepted.
	h.bad.failing.Store(false)
	res, body := c.postForm(path+"/enable", url.Values{"csrf": {csrf}})
	if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != path+"?feito=ativado" {
		t.Fatalf("enable: %d %s\n%s", res.StatusCode, res.Header.Get("Location"), body)
	}
	if e, err := h.svc.Get(ctx, h.failing.ID); err != nil || !e.Enabled {
		t.Fatalf("after enabling: %+v %v", e, err)
	}
	waitUntil(t, "the stopped event delivered after enabling", func() bool { return h.bad.count(h.failingID, http.StatusOK) == 1 })
	res, page = c.get(path + "?feito=ativado")
	wantPage(t, "enabled", res, page, http.StatusOK, "Endpoint ativado", `<span class="ok">ativo</span>`, `id="disable-form"`)
	if strings.Contains(page, `id="failing"`) {
		t.Error("an enabled endpoint is still announced as disabled")
	}

	res, body = c.postForm(path+"/disable", url.Values{"csrf": {csrf}})
	if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != path+"?feito=desativado" {
		t.Fatalf("disable: %d %s\n%s", res.StatusCode, res.Header.Get("Location"), body)
	}
	if e, err := h.svc.Get(ctx, h.failing.ID); err != nil || e.Enabled || e.DisabledReason != "operator" {
		t.Fatalf("after disabling: %+v %v", e, err)
	}
	_, page = c.get(path + "?feito=desativado")
	wantPage(t, "disabled", res, page, http.StatusSeeOther, "Endpoint desativado", "desativado por um operador", `id="enable-form"`)

	// A replay of the event the healthy endpoint has passed sends it again,
	// with the same webhook-id.
	good := fmt.Sprintf("/console/webhooks/%d", h.healthy.ID)
	res, body = c.postForm(good+"/replay", url.Values{"csrf": {csrf}, "evento": {strconv.FormatInt(h.event, 10)}})
	want := good + "?" + url.Values{"evento": {strconv.FormatInt(h.event, 10)}, "feito": {"reenvio"}, "n": {"1"}}.Encode()
	if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != want {
		t.Fatalf("replay: %d %s, want %s\n%s", res.StatusCode, res.Header.Get("Location"), want, body)
	}
	waitUntil(t, "the replayed event delivered", func() bool { return h.good.count(h.goodID, http.StatusOK) == 2 })
	waitUntil(t, "the replay logged", func() bool {
		as, err := h.svc.Attempts(ctx, h.healthy.ID, 0, 1)
		return err == nil && len(as) == 1 && as[0].Replay
	})
	_, page = c.get(want)
	wantPage(t, "replayed", res, page, http.StatusSeeOther, fmt.Sprintf("Evento %d enfileirado para reenvio", h.event), "(reenvio)")

	for _, tc := range []struct {
		path, event string
		status      int
		msg         string
	}{
		{good + "/replay", "99999999", http.StatusNotFound, "Evento desconhecido"},
		{good + "/replay", "abc", http.StatusBadRequest, "número do evento"},
		{good + "/replay", "", http.StatusBadRequest, "número do evento"},
		{"/console/webhooks/999999/replay", "1", http.StatusNotFound, "Endpoint de webhook desconhecido"},
		{"/console/webhooks/999999/enable", "", http.StatusNotFound, "Endpoint de webhook desconhecido"},
		{"/console/webhooks/nope/disable", "", http.StatusNotFound, "Endpoint de webhook desconhecido"},
	} {
		res, body := c.postForm(tc.path, url.Values{"csrf": {csrf}, "evento": {tc.event}})
		wantPage(t, tc.path+" "+tc.event, res, body, tc.status, tc.msg)
	}
}

// The attempts log is paged by the service's before, newest first: every
// attempt once, the pages linked both ways.
func TestWebhookAttemptsArePagedNewestFirst(t *testing.T) {
	t.Parallel()
	f := newBareFixture(t)
	svc := outgoing.Service{DB: f.db, Config: outgoing.Config{AllowPrivateTargets: true, AllowHTTPTargets: true}}
	e, err := svc.Create(context.Background(), outgoing.NewEndpoint{URL: "http://127.0.0.1:9/hooks"})
	if err != nil {
		t.Fatal(err)
	}
	// More than a page, as the dispatcher logs them (outgoing's table).
	f.db.MustExec(`INSERT INTO webhook_attempts (endpoint_id, event_id, topic, attempt, replay, status, latency_ms, response, at)
		SELECT $1, n, 'charge.paid', 1, false, 500, n, 'erro ' || n, now() - make_interval(secs => 70 - n) FROM generate_series(1, 70) n`, e.ID)
	srv := serve(t, f.router)
	c := signedIn(t, srv, f.admin)
	path := fmt.Sprintf("/console/webhooks/%d", e.ID)
	var all []int64
	next := path
	for pages := 0; next != ""; pages++ {
		if pages > 3 {
			t.Fatal("the pages never end")
		}
		res, page := c.get(next)
		wantPage(t, next, res, page, http.StatusOK)
		ids := attemptIDs(t, page)
		if len(ids) == 0 {
			t.Fatalf("%s: no attempt", next)
		}
		all = append(all, ids...)
		if pages > 0 && !strings.Contains(page, `<a href="`+path+`#attempts" rel="first">`) {
			t.Errorf("%s: no link to the newest", next)
		}
		next = ""
		if m := regexp.MustCompile(`<a href="([^"]+)" rel="next"`).FindStringSubmatch(page); m != nil {
			next = strings.TrimSuffix(htmlUnescape(m[1]), "#attempts")
		}
	}
	if len(all) != 70 {
		t.Fatalf("%d attempts over the pages, want 70", len(all))
	}
	for i := 1; i < len(all); i++ {
		if all[i] >= all[i-1] {
			t.Fatalf("attempt %d after %d: not newest first", all[i], all[i-1])
		}
	}
	if res, page := c.get(path + "?antes=x"); res.StatusCode != http.StatusBadRequest {
		t.Errorf("?antes=x: %d\n%s", res.StatusCode, page)
	}
}
