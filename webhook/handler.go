package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gorilla/mux"

	"github.com/razao/razao/charges"
	"github.com/razao/razao/metrics"
	"github.com/razao/razao/money"
	"github.com/razao/razao/postings"
	"github.com/razao/razao/webhook/scheme"
)

// Handler serves POST /webhooks/{endpoint}.
type Handler struct {
	endpoints map[string]*Endpoint
	inbox     *Inbox
	proc      *Processor
	now       func() time.Time
	log       *slog.Logger
	large     *gate
	refusals  *refusalLog
	// Metrics counts deliveries by endpoint and outcome; nil counts nothing.
	Metrics *metrics.Metrics
}

// NewHandler returns the webhook handler for the configured endpoints.
// now is the clock the timestamp windows are checked against.
func NewHandler(endpoints []*Endpoint, inbox *Inbox, proc *Processor, now func() time.Time, log *slog.Logger) *Handler {
	m := make(map[string]*Endpoint, len(endpoints))
	for _, ep := range endpoints {
		m[ep.Name] = ep
	}
	return &Handler{endpoints: m, inbox: inbox, proc: proc, now: now, log: log, large: newGate(), refusals: newRefusalLog(log)}
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
		err = checkEvents(ep, evs)
	}
	if err == nil && ep.Scheme.Name() == bcbPixScheme {
		evs = judgeEach(evs, h.proc.applier.Ledger.Calendar(), h.proc.applier.Ledger.Limit(), req.Now)
	}
	if err == nil {
		err = checkTimes(evs, h.proc.applier.Ledger.Calendar(), req.Now)
	}
	if err == nil {
		err = checkAmounts(evs, h.proc.applier.Ledger.Limit())
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
	if _, err := h.inbox.putMalformed(ctx, ep, ep.Scheme.DeliveryID(req), req.Body, auditHeaders(req.Header), cause); err != nil {
		h.log.ErrorContext(ctx, "inbox unavailable", "endpoint", ep.Name, "error", err)
		h.reply(w, ep.Name, "unavailable", http.StatusServiceUnavailable, Response{Status: "unavailable"})
		return
	}
	h.proc.committed() // a divergence.opened event
	h.reply(w, ep.Name, "malformed", http.StatusBadRequest, Response{Status: "malformed", Error: cause.Error()})
}

func (h *Handler) store(w http.ResponseWriter, ctx context.Context, ep *Endpoint, evs []scheme.Event, body, headers []byte) {
	stored, err := h.inbox.Store(ctx, ep, evs, body, headers)
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

// maxIDLength bounds the ids a delivery is keyed and looked up by: longer
// ones would not fit a btree index entry, and no PSP sends them.
const maxIDLength = 256

// checkEvents refuses a delivery the inbox could not store, or whose
// events would fail every time they are applied, so that it is kept as
// malformed (400) instead of failing to store (503) or being answered 200
// and then failing attempt after attempt: too many events for the
// endpoint, an id too long for the index or with text PostgreSQL refuses,
// or a refund id too long for the posting-set keys derived from it.
func checkEvents(ep *Endpoint, evs []scheme.Event) error {
	if len(evs) > ep.MaxItems {
		return fmt.Errorf("%w: the delivery carries %d events (for bcb-pix: each Pix and each devolução), more than this endpoint's max_items of %d; send them in smaller callbacks",
			scheme.ErrMalformed, len(evs), ep.MaxItems)
	}
	for _, ev := range evs {
		for _, f := range []struct{ name, v string }{{"event id", ev.EventID}, {"event type", ev.Type},
			{"charge id", ev.ChargeID}, {"PSP reference", ev.PSPRef}, {"refund id", ev.RefundID}} {
			if err := checkText(f.v); err != nil {
				return fmt.Errorf("%w: %s %w", scheme.ErrMalformed, f.name, err)
			}
		}
		for name, v := range ev.Extra {
			if strings.IndexByte(v, 0) >= 0 || !utf8.ValidString(v) {
				return fmt.Errorf("%w: %s holds a NUL or invalid UTF-8", scheme.ErrMalformed, name)
			}
		}
		if err := checkSetKeys(ev); err != nil {
			return err
		}
	}
	return nil
}

// checkText refuses an id the inbox cannot store: longer than
// maxIDLength, or with a NUL or invalid UTF-8, which PostgreSQL's text
// (and jsonb) refuse.
func checkText(v string) error {
	switch {
	case len(v) > maxIDLength:
		return fmt.Errorf("longer than %d bytes", maxIDLength)
	case strings.IndexByte(v, 0) >= 0:
		return errors.New("holds a NUL character")
	case !utf8.ValidString(v):
		return errors.New("is not valid UTF-8")
	}
	return nil
}

// longestChargeID stands for whichever charge an event's ids find: the
// posting-set keys of a refund derive from its charge's id, which can be
// as long as charges.MaxIDLength.
var longestChargeID = strings.Repeat("x", charges.MaxIDLength)

// checkSetKeys refuses a refund whose posting sets' idempotency keys,
// which name its PSP refund id in full so that the journal reads plainly,
// would be longer than postings.MaxKeyLength for some charge.
func checkSetKeys(ev scheme.Event) error {
	if ev.RefundID == "" {
		return nil
	}
	for _, k := range postings.RefundKeys(longestChargeID, ev.RefundID) {
		if len(k) > postings.MaxKeyLength {
			return fmt.Errorf("%w: refund id of %d bytes: the posting-set keys derived from it would exceed %d bytes (refund ids of up to %d bytes fit)",
				scheme.ErrMalformed, len(ev.RefundID), postings.MaxKeyLength, len(ev.RefundID)-(len(k)-postings.MaxKeyLength))
		}
	}
	return nil
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

// checkTimes refuses events dated outside the ledger's window (before its
// go-live date, past our clock plus postings.MaxAhead — the scheme's 300 s
// tolerance plus 5 minutes — or at a UTC offset no zone has), so the
// delivery is kept as malformed (400) at intake, for every scheme alike,
// instead of being booked in a month nobody can close or failing in the
// database ten times. The ledger refuses the same times again when it
// books; the window is its calendar's.
func checkTimes(evs []scheme.Event, cal postings.Calendar, now time.Time) error {
	for _, ev := range evs {
		if ev.OccurredAt.IsZero() {
			continue // the scheme carries no time: the delivery's receipt dates it
		}
		if err := cal.CheckEventTime(ev.OccurredAt, now); err != nil {
			return fmt.Errorf("%w: %s: %w", scheme.ErrMalformed, ev.Type, err)
		}
	}
	return nil
}

// checkAmounts refuses events stating an amount or fee above the ledger's
// limit: authentic but malformed (400, kept, a divergence), never a
// delivery that fails on every retry or, worse, a sum no report can add.
func checkAmounts(evs []scheme.Event, limit money.Limit) error {
	for _, ev := range evs {
		if ev.HasAmount {
			if err := limit.Check("amount", ev.Amount); err != nil {
				return fmt.Errorf("%w: %w", scheme.ErrMalformed, err)
			}
		}
		if ev.HasFee {
			if err := limit.Check("fee", ev.Fee); err != nil {
				return fmt.Errorf("%w: %w", scheme.ErrMalformed, err)
			}
		}
	}
	return nil
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
