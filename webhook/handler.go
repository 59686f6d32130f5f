package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"time"

	"github.com/gorilla/mux"

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
	return &Handler{endpoints: m, inbox: inbox, proc: proc, now: now, log: log}
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

// ServeHTTP authenticates and stores one delivery, which the inbox then
// applies. It never answers 2xx before the delivery is committed to the
// inbox; from then on, whatever happens to its processing, the delivery
// is durable and the worker finishes what processing could not.
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
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, ep.MaxBody))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			h.reply(w, ep.Name, "too_large", http.StatusRequestEntityTooLarge, Response{Status: "error", Error: "body too large"})
			return
		}
		h.reply(w, ep.Name, "unreadable", http.StatusBadRequest, Response{Status: "error", Error: "could not read body"})
		return
	}
	req := scheme.Request{Header: r.Header, Query: callbackQuery(ep, r), Body: body, Now: h.now()}
	// Up to here, and in IsTest, anyone's bytes cost us no more than a
	// bounded byte scan: a flood of unauthenticated bodies must not slow
	// the genuine deliveries. Parsing waits for Authenticate.
	if ep.Scheme.IsTest(req) {
		h.reply(w, ep.Name, "test", http.StatusOK, Response{Status: "test"})
		return
	}
	var certErr error
	if ep.mtls != nil {
		certErr = ep.mtls.verify(r, req.Now)
		req.ClientCertVerified = certErr == nil
	}
	if err := ep.Scheme.Authenticate(req); err != nil {
		attrs := []any{"endpoint", ep.Name, "reason", err.Error()}
		if certErr != nil {
			attrs = append(attrs, "client_certificate", certErr.Error())
		}
		h.log.WarnContext(r.Context(), "webhook refused", attrs...)
		h.reply(w, ep.Name, "unauthorized", http.StatusUnauthorized, Response{Status: "unauthorized"})
		return
	}
	if !isJSON(r.Header.Get("Content-Type")) {
		h.reply(w, ep.Name, "unsupported_media_type", http.StatusUnsupportedMediaType, Response{Status: "error", Error: "body must be application/json"})
		return
	}
	evs, err := scheme.ParseDelivery(ep.Scheme, req)
	if err == nil {
		err = checkIDs(evs)
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
	h.store(w, r.Context(), ep, evs, body, auditHeaders(r.Header))
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
	entries := entriesFor(ep, evs, body)
	stored, err := h.inbox.put(ctx, ep, entries, body, headers)
	switch {
	case err != nil && errors.Is(err, ctx.Err()):
		// The PSP hung up while its batch was stored or processed: the
		// delivery may well be stored, and its redelivery will say so.
		h.log.InfoContext(ctx, "client gone before the answer", "endpoint", ep.Name, "error", err)
		h.reply(w, ep.Name, "client_gone", http.StatusServiceUnavailable, Response{Status: "unavailable"})
		return
	case err != nil:
		h.log.ErrorContext(ctx, "inbox unavailable", "endpoint", ep.Name, "error", err)
		h.reply(w, ep.Name, "unavailable", http.StatusServiceUnavailable, Response{Status: "unavailable"})
		return
	}
	resp := Response{Status: "duplicate"}
	for i, s := range stored {
		st := "accepted"
		switch {
		case s.Duplicate:
			st = "duplicate"
		case entries[i].status == "ignored":
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

// checkIDs refuses events whose ids the inbox could not store, so the
// delivery is kept as malformed (400) instead of failing to store (503).
func checkIDs(evs []scheme.Event) error {
	for _, ev := range evs {
		for _, f := range []struct{ name, v string }{{"event id", ev.EventID}, {"event type", ev.Type},
			{"charge id", ev.ChargeID}, {"PSP reference", ev.PSPRef}, {"refund id", ev.RefundID}} {
			if len(f.v) > maxIDLength {
				return fmt.Errorf("%w: %s longer than %d bytes", scheme.ErrMalformed, f.name, maxIDLength)
			}
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

// endpointName is the {endpoint} path variable of the route.
func endpointName(r *http.Request) string { return mux.Vars(r)["endpoint"] }
