package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"strings"
	"time"

	"github.com/gorilla/mux"

	"github.com/razao/razao/inbox"
	"github.com/razao/razao/metrics"
	"github.com/razao/razao/webhook/scheme"
)

// Handler serves POST /webhooks/{endpoint}.
type Handler struct {
	endpoints map[string]*Endpoint
	inbox     *inbox.Inbox
	now       func() time.Time
	log       *slog.Logger
	large     *gate
	refusals  *refusalLog
	// Metrics counts deliveries by endpoint and outcome; nil counts nothing.
	Metrics *metrics.Metrics
}

// NewHandler returns the webhook handler for the configured endpoints,
// storing what they deliver in in. now is the clock the timestamp windows
// are checked against.
func NewHandler(endpoints []*Endpoint, in *inbox.Inbox, now func() time.Time, log *slog.Logger) *Handler {
	m := make(map[string]*Endpoint, len(endpoints))
	for _, ep := range endpoints {
		m[ep.Name] = ep
	}
	return &Handler{endpoints: m, inbox: in, now: now, log: log, large: newGate(), refusals: newRefusalLog(log)}
}

// Response is the JSON body of every webhook answer.
type Response struct {
	Status string        `json:"status"`
	Error  string        `json:"error,omitempty"`
	Events []EventStatus `json:"events,omitempty"`
}

// EventStatus says what happened to one event of a delivery.
type EventStatus struct {
	Key    string `json:"key"`
	Status string `json:"status"`
}

// ServeHTTP authenticates and stores one delivery, which the workers then
// apply. It never answers 2xx before the delivery is committed to the
// inbox; from then on the delivery is durable, and the inbox is the queue
// the workers claim it from.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ep, ok := h.endpoints[endpointName(r)]
	if !ok {
		h.reply(w, "", "not_found", http.StatusNotFound, Response{Status: "error", Error: "unknown webhook endpoint"})
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		h.reply(w, ep.Name, "bad_method", http.StatusMethodNotAllowed, Response{Status: "error", Error: "use POST"})
		return
	}
	if isPixRoute(r) && ep.Scheme.Name() != bcbPixScheme {
		h.reply(w, ep.Name, "not_found", http.StatusNotFound, Response{Status: "error", Error: "only bcb-pix endpoints take {url}/pix"})
		return
	}
	req, ok := h.authenticate(w, r, ep)
	if !ok {
		return
	}
	if !isJSON(r.Header.Get("Content-Type")) {
		h.reply(w, ep.Name, "unsupported_media_type", http.StatusUnsupportedMediaType, Response{Status: "error", Error: "body must be application/json"})
		return
	}
	evs, err := scheme.ParseDelivery(ep.Scheme, req)
	if err == nil {
		evs, err = h.inbox.Check(&ep.Endpoint, evs, req.Now)
	}
	if err != nil {
		h.malformed(w, r.Context(), ep, req, err)
		return
	}
	if allTests(evs) {
		// A signed test event too large for IsTest's bounded look: still
		// no write and no business path.
		h.reply(w, ep.Name, "test", http.StatusOK, Response{Status: "test"})
		return
	}
	h.store(w, r.Context(), ep, evs, req.Body, auditHeaders(r.Header))
}

func (h *Handler) malformed(w http.ResponseWriter, ctx context.Context, ep *Endpoint, req scheme.Request, cause error) {
	if _, err := h.inbox.StoreMalformed(ctx, &ep.Endpoint, ep.Scheme.DeliveryID(req), req.Body, auditHeaders(req.Header), cause); err != nil {
		h.log.ErrorContext(ctx, "inbox unavailable", "endpoint", ep.Name, "error", err)
		h.reply(w, ep.Name, "unavailable", http.StatusServiceUnavailable, Response{Status: "unavailable"})
		return
	}
	h.reply(w, ep.Name, "malformed", http.StatusBadRequest, Response{Status: "malformed", Error: cause.Error()})
}

func (h *Handler) store(w http.ResponseWriter, ctx context.Context, ep *Endpoint, evs []scheme.Event, body, headers []byte) {
	stored, err := h.inbox.Store(ctx, &ep.Endpoint, evs, body, headers)
	switch {
	case err != nil && errors.Is(err, ctx.Err()):
		// The PSP hung up while its batch was stored: the delivery may
		// well be stored, and its redelivery will say so.
		h.log.InfoContext(ctx, "client gone before the answer", "endpoint", ep.Name, "error", err)
		h.reply(w, ep.Name, "client_gone", http.StatusServiceUnavailable, Response{Status: "unavailable"})
		return
	case err != nil:
		h.log.ErrorContext(ctx, "inbox unavailable", "endpoint", ep.Name, "error", err)
		h.reply(w, ep.Name, "unavailable", http.StatusServiceUnavailable, Response{Status: "unavailable"})
		return
	}
	resp := Response{Status: "duplicate"}
	for _, s := range stored {
		st := "accepted"
		switch {
		case s.Duplicate:
			st = "duplicate"
		case s.Ignored:
			st = "ignored"
		}
		resp.Events = append(resp.Events, EventStatus{Key: s.Key, Status: st})
		resp.Status = overall(resp.Status, st)
	}
	h.reply(w, ep.Name, resp.Status, http.StatusOK, resp)
}

// allTests reports whether a delivery carries only registration tests.
func allTests(evs []scheme.Event) bool {
	for _, ev := range evs {
		if ev.Kind != scheme.KindTest {
			return false
		}
	}
	return len(evs) > 0
}

// keptHeaders are the headers worth keeping for audit and reconciliation.
// Anything that may carry a secret (X-Webhook-Secret, Authorization,
// cookies, the query string) is left out on purpose.
var keptHeaders = []string{"Content-Type", "User-Agent", "X-Hodle-Timestamp", "X-Hodle-Signature",
	"X-Webhook-Signature", "Webhook-Id", "Webhook-Timestamp", "Webhook-Signature", "X-Request-Id"}

// auditHeaders is the kept headers as a JSON object, written in the order
// of keptHeaders (jsonb keeps its own order): on every delivery, marshalling
// a map sorted its keys by reflection.
func auditHeaders(h http.Header) []byte {
	b := append(make([]byte, 0, 256), '{')
	for _, name := range keptHeaders {
		v := h.Get(name)
		if v == "" {
			continue
		}
		if len(v) > 512 {
			v = v[:512]
		}
		// jsonb refuses a NUL: the audit copy marks it instead.
		value, _ := json.Marshal(strings.ReplaceAll(v, "\x00", "\uFFFD"))
		if len(b) > 1 {
			b = append(b, ',')
		}
		b = append(append(append(append(b, '"'), name...), `":`...), value...)
	}
	return append(b, '}')
}

// overall folds the events' statuses: accepted wins over ignored, which
// wins over duplicate.
func overall(cur, next string) string {
	rank := map[string]int{"duplicate": 0, "ignored": 1, "accepted": 2}
	if rank[next] > rank[cur] {
		return next
	}
	return cur
}

func isJSON(contentType string) bool {
	if contentType == "" {
		return true // several PSPs omit it; the parser still demands JSON
	}
	mt, _, err := mime.ParseMediaType(contentType)
	return err == nil && (mt == "application/json" || len(mt) > 5 && mt[len(mt)-5:] == "+json")
}

func (h *Handler) reply(w http.ResponseWriter, endpoint, outcome string, code int, body Response) {
	h.Metrics.Delivery(endpoint, outcome)
	reply(w, code, body)
}

func reply(w http.ResponseWriter, code int, body Response) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(body)
}

// authenticate reads r's body and proves it genuine (see unauthenticated.go
// for what that may cost), answering r itself when it is not or when it
// is a registration test. A large body holds one of the gate's slots
// until it is authenticated.
func (h *Handler) authenticate(w http.ResponseWriter, r *http.Request, ep *Endpoint) (scheme.Request, bool) {
	in, leave, ok := h.large.enter(w, r, ep.MaxBody)
	if !ok {
		giveUp(w, r)
		h.busy(w, ep)
		return scheme.Request{}, false
	}
	defer leave()
	body, err := readBody(w, r, in, ep.MaxBody)
	if err != nil {
		giveUp(w, r)
		var tooBig *http.MaxBytesError
		if errors.Is(err, errGateBusy) {
			h.busy(w, ep)
			return scheme.Request{}, false
		}
		if errors.As(err, &tooBig) {
			h.reply(w, ep.Name, "too_large", http.StatusRequestEntityTooLarge, Response{Status: "error", Error: "body too large"})
			return scheme.Request{}, false
		}
		h.reply(w, ep.Name, "unreadable", http.StatusBadRequest, Response{Status: "error", Error: "could not read body"})
		return scheme.Request{}, false
	}
	req := scheme.Request{Header: r.Header, Query: callbackQuery(ep, r), Body: body, Now: h.now()}
	// Up to here, and in IsTest, anyone's bytes cost us no more than a
	// bounded byte scan: parsing waits for Authenticate.
	if ep.Scheme.IsTest(req) {
		h.reply(w, ep.Name, "test", http.StatusOK, Response{Status: "test"})
		return scheme.Request{}, false
	}
	var certErr error
	if ep.mtls != nil {
		certErr = ep.mtls.verify(r, req.Now)
		req.ClientCertVerified = certErr == nil
	}
	if err := ep.Scheme.Authenticate(req); err != nil {
		var attrs []any
		if certErr != nil {
			attrs = append(attrs, "client_certificate", certErr.Error())
		}
		h.refusals.refused(r.Context(), ep.Name, err, attrs...)
		h.reply(w, ep.Name, "unauthorized", http.StatusUnauthorized, Response{Status: "unauthorized"})
		return scheme.Request{}, false
	}
	return req, true
}

// busy answers a large body that found no slot or budget in time.
func (h *Handler) busy(w http.ResponseWriter, ep *Endpoint) {
	h.reply(w, ep.Name, "busy", http.StatusServiceUnavailable, Response{Status: "error", Error: "too many large deliveries at once; send it again"})
}

// readBody reads at most limit bytes of r's body from in (r.Body, or the
// gate's budgeted reader of it), in one allocation when the request states
// its length.
func readBody(w http.ResponseWriter, r *http.Request, in io.Reader, limit int64) ([]byte, error) {
	rd := http.MaxBytesReader(w, io.NopCloser(in), limit)
	if r.ContentLength < 0 || r.ContentLength > limit {
		return io.ReadAll(rd)
	}
	buf := bytes.NewBuffer(make([]byte, 0, r.ContentLength+1)) // +1: room to see EOF without growing
	_, err := buf.ReadFrom(rd)
	return buf.Bytes(), err
}

// giveUp stops the reading of r's body, which the answer about to be
// written gives up on: what is left of it is not read, and an HTTP/1
// connection closes after the answer. Otherwise net/http reads up to
// 256 KiB more of the body after the handler, to reuse the connection, for
// as long as the read deadline lets the sender trickle it; and the rest
// must not be read as the next request. Over HTTP/2 the stream alone is
// reset: Connection: close there would shut the connection down, with every
// other stream on it.
func giveUp(w http.ResponseWriter, r *http.Request) {
	if r.ProtoMajor == 1 {
		w.Header().Set("Connection", "close")
	}
	// Not supported by a test's recorder; a real connection has it.
	_ = http.NewResponseController(w).SetReadDeadline(time.Now())
}

// endpointName is the {endpoint} path variable of the route.
func endpointName(r *http.Request) string { return mux.Vars(r)["endpoint"] }
