package console

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/gorilla/mux"

	"github.com/razao/razao/outgoing"
)

// The webhooks razao sends to the selling app (package outgoing): every
// endpoint with its state, and each one's attempts log, read from the
// service GET /v1/webhook-endpoints calls; an admin enables, disables and
// replays through the same service methods the API calls. The secret is
// never shown here: the API shows it once, at creation or rotation.

// attemptsPerPage is one page of an endpoint's attempts log.
const attemptsPerPage = 50

// How much of an attempt's response (or error) a row shows, in the
// attempts log and as the list's last error: the service keeps up to
// 4 KiB, the API gives all of it.
const (
	excerptRunes     = 300
	lastErrorExcerpt = 120
)

// webhookService is the service the API builds, without its Config: the
// secrets' key and the address guard serve creating, rotating and
// re-addressing an endpoint, which the console does not do.
func (c *Console) webhookService() outgoing.Service {
	return outgoing.Service{DB: c.DB, Now: c.Now}
}

// endpointRow is an endpoint as the list shows it, with its last attempt
// when that one failed.
type endpointRow struct {
	outgoing.Endpoint
	LastError *attemptRow
}

// attemptRow is an attempt with its response (or error) cut for a row.
type attemptRow struct {
	outgoing.Attempt
	// N is the attempt's number: in a template .Attempt is the embedded
	// struct, not its field.
	N       int
	OK      bool
	Excerpt string
	Cut     bool
}

func newAttemptRow(a outgoing.Attempt, runes int) attemptRow {
	row := attemptRow{Attempt: a, N: a.Attempt, OK: a.Status != nil && *a.Status >= 200 && *a.Status < 300}
	text := a.Response
	if a.Error != nil {
		text = *a.Error
	}
	row.Excerpt, row.Cut = excerpt(text, runes)
	return row
}

// excerpt is s's first n runes, and whether it was cut.
func excerpt(s string, n int) (string, bool) {
	if utf8.RuneCountInString(s) <= n {
		return s, false
	}
	i := 0
	for j := range s {
		if i == n {
			return s[:j], true
		}
		i++
	}
	return s, false
}

// webhooksPage is the list: every endpoint and those the schedule gave up on.
type webhooksPage struct {
	Endpoints []endpointRow
	Failing   []int64
}

// webhooks lists every endpoint (outgoing.Service.List, as GET
// /v1/webhook-endpoints), each with its last attempt when it failed: an
// endpoint disabled after failing the whole schedule is announced above
// the table.
func (c *Console) webhooks(w http.ResponseWriter, r *http.Request) {
	svc := c.webhookService()
	es, err := svc.List(r.Context())
	if err != nil {
		c.failWith(w, r, err)
		return
	}
	var pg webhooksPage
	for _, e := range es {
		row := endpointRow{Endpoint: e}
		last, err := svc.Attempts(r.Context(), e.ID, 0, 1)
		if errors.Is(err, outgoing.ErrNotFound) {
			continue // deleted since the list was read
		}
		if err != nil {
			c.failWith(w, r, err)
			return
		}
		if len(last) == 1 {
			if a := newAttemptRow(last[0], lastErrorExcerpt); !a.OK {
				row.LastError = &a
			}
		}
		if !e.Enabled && e.DisabledReason == "failing" {
			pg.Failing = append(pg.Failing, e.ID)
		}
		pg.Endpoints = append(pg.Endpoints, row)
	}
	c.render(w, r, "webhooks", "Webhooks", pg)
}

// webhookPage is one endpoint and a page of its attempts, newest first.
type webhookPage struct {
	Endpoint outgoing.Endpoint
	Attempts []attemptRow
	// Older is the next (older) page's address; Newest the first page's,
	// when this is not it.
	Older, Newest string
	Done          string
}

// webhookID reads the endpoint id of the path; ok is false (and the
// console's 404 answered) when it is no id.
func (c *Console) webhookID(w http.ResponseWriter, r *http.Request) (int64, bool) {
	v := mux.Vars(r)["id"]
	id, err := strconv.ParseInt(v, 10, 64)
	if err != nil || id <= 0 {
		c.fail(w, r, http.StatusNotFound, "Endpoint de webhook desconhecido.")
		return 0, false
	}
	return id, true
}

// webhook is an endpoint's page: its state and its attempts log
// (outgoing.Service.Attempts, as GET /v1/webhook-endpoints/{id}/attempts),
// paged by ?antes= (an attempt id). An unknown endpoint is a 404 page.
func (c *Console) webhook(w http.ResponseWriter, r *http.Request) {
	id, ok := c.webhookID(w, r)
	if !ok {
		return
	}
	q := r.URL.Query()
	var before int64
	if v := q.Get("antes"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 {
			c.fail(w, r, http.StatusBadRequest, "Paginação inválida: volte à primeira página.")
			return
		}
		before = n
	}
	svc := c.webhookService()
	e, err := svc.Get(r.Context(), id)
	if err != nil {
		c.failWebhook(w, r, id, err)
		return
	}
	as, err := svc.Attempts(r.Context(), id, before, attemptsPerPage)
	if err != nil {
		c.failWebhook(w, r, id, err)
		return
	}
	pg := webhookPage{Endpoint: e, Done: webhookDone(q)}
	for _, a := range as {
		pg.Attempts = append(pg.Attempts, newAttemptRow(a, excerptRunes))
	}
	base := fmt.Sprintf("%s/webhooks/%d", Prefix, id)
	if len(as) == attemptsPerPage {
		pg.Older = base + "?antes=" + strconv.FormatInt(as[len(as)-1].ID, 10) + "#attempts"
	}
	if before > 0 {
		pg.Newest = base + "#attempts"
	}
	c.render(w, r, "webhook", fmt.Sprintf("Webhook #%d", id), pg)
}

// failWebhook answers a failed read of endpoint id: unknown, the 404 page.
func (c *Console) failWebhook(w http.ResponseWriter, r *http.Request, id int64, err error) {
	if errors.Is(err, outgoing.ErrNotFound) {
		c.fail(w, r, http.StatusNotFound, fmt.Sprintf("Endpoint de webhook desconhecido: #%d.", id))
		return
	}
	c.failWith(w, r, err)
}

// webhookDone is the page's confirmation of the act that redirected to
// it (?feito=...).
func webhookDone(q url.Values) string {
	switch q.Get("feito") {
	case "ativado":
		return "Endpoint ativado: a entrega recomeça no evento em que parou."
	case "desativado":
		return "Endpoint desativado: nenhum evento é enviado até ele ser ativado de novo."
	case "reenvio":
		n, err := strconv.Atoi(q.Get("n"))
		event, err2 := strconv.ParseInt(q.Get("evento"), 10, 64)
		if err != nil || err2 != nil || n < 0 || event <= 0 {
			return ""
		}
		if n == 0 {
			return fmt.Sprintf("Nenhum evento enfileirado: o endpoint ainda não chegou ao evento %d (ele segue a caminho) ou não assina o tópico dele.", event)
		}
		return fmt.Sprintf("Evento %d enfileirado para reenvio: vai antes do próximo evento novo, com o mesmo webhook-id.", event)
	}
	return ""
}

// webhookRefusals are the service's refusals in Portuguese.
var webhookRefusals = []actRefusal{
	{outgoing.ErrNotFound, http.StatusNotFound, "Endpoint de webhook desconhecido."},
	{outgoing.ErrEventNotFound, http.StatusNotFound, "Evento desconhecido: confira o número do evento."},
	{outgoing.ErrInvalid, http.StatusBadRequest, "Pedido inválido: confira o número do evento."},
}

// refuseWebhook answers a refusal of the service, else as refuse does.
func (c *Console) refuseWebhook(w http.ResponseWriter, r *http.Request, err error) {
	for _, f := range webhookRefusals {
		if errors.Is(err, f.err) {
			c.fail(w, r, f.status, f.msg)
			return
		}
	}
	c.refuse(w, r, err)
}

// enableWebhook and disableWebhook switch an endpoint on or off
// (outgoing.Service.Update, as PATCH /v1/webhook-endpoints/{id} with
// enabled): enabling resumes at the event it stopped on, its failures
// forgotten.
func (c *Console) enableWebhook(w http.ResponseWriter, r *http.Request) { c.switchWebhook(w, r, true) }

func (c *Console) disableWebhook(w http.ResponseWriter, r *http.Request) {
	c.switchWebhook(w, r, false)
}

func (c *Console) switchWebhook(w http.ResponseWriter, r *http.Request, on bool) {
	id, ok := c.webhookID(w, r)
	if !ok {
		return
	}
	if _, err := c.webhookService().Update(r.Context(), id, outgoing.Patch{Enabled: &on}); err != nil {
		c.refuseWebhook(w, r, err)
		return
	}
	done, msg := "desativado", "console: webhook endpoint disabled"
	if on {
		done, msg = "ativado", "console: webhook endpoint enabled"
	}
	s, _ := sessionFrom(r.Context())
	c.Log.InfoContext(r.Context(), msg, "endpoint", id, "token", s.token.Name)
	http.Redirect(w, r, fmt.Sprintf("%s/webhooks/%d?feito=%s", Prefix, id, done), http.StatusSeeOther)
}

// replayWebhook queues one event (by its id) to be sent again
// (outgoing.Service.Replay, as POST /v1/webhook-endpoints/{id}/replay).
func (c *Console) replayWebhook(w http.ResponseWriter, r *http.Request) {
	id, ok := c.webhookID(w, r)
	if !ok {
		return
	}
	v := strings.TrimSpace(r.PostForm.Get("evento"))
	event, err := strconv.ParseInt(v, 10, 64)
	if err != nil || event <= 0 {
		c.fail(w, r, http.StatusBadRequest, "Informe o número do evento a reenviar (um número inteiro positivo).")
		return
	}
	n, err := c.webhookService().Replay(r.Context(), id, outgoing.Replay{EventID: event})
	if err != nil {
		c.refuseWebhook(w, r, err)
		return
	}
	s, _ := sessionFrom(r.Context())
	c.Log.InfoContext(r.Context(), "console: webhook event replayed", "endpoint", id, "event", event, "queued", n, "token", s.token.Name)
	q := url.Values{"feito": {"reenvio"}, "evento": {strconv.FormatInt(event, 10)}, "n": {strconv.Itoa(n)}}
	http.Redirect(w, r, fmt.Sprintf("%s/webhooks/%d?%s", Prefix, id, q.Encode()), http.StatusSeeOther)
}
