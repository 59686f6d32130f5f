package api

import (
	"net/http"
	"strconv"
	"time"

	"github.com/razao/razao/auth"
	"github.com/razao/razao/outgoing"
)

// registerWebhookEndpoints mounts the webhooks razao sends (package
// outgoing): the endpoints, their secrets, replays and attempts. All of
// it is admin: an endpoint receives every event it names, and its
// attempts show what the app answered.
func (a *API) registerWebhookEndpoints(route func(method, path string, scope auth.Scope, h http.HandlerFunc)) {
	route(http.MethodPost, "/webhook-endpoints", auth.Admin, a.createWebhookEndpoint)
	route(http.MethodGet, "/webhook-endpoints", auth.Admin, a.listWebhookEndpoints)
	route(http.MethodGet, "/webhook-endpoints/{id}", auth.Admin, a.getWebhookEndpoint)
	route(http.MethodPatch, "/webhook-endpoints/{id}", auth.Admin, a.updateWebhookEndpoint)
	route(http.MethodDelete, "/webhook-endpoints/{id}", auth.Admin, a.deleteWebhookEndpoint)
	route(http.MethodPost, "/webhook-endpoints/{id}/rotate-secret", auth.Admin, a.rotateWebhookSecret)
	route(http.MethodPost, "/webhook-endpoints/{id}/replay", auth.Admin, a.replayWebhookEvents)
	route(http.MethodGet, "/webhook-endpoints/{id}/attempts", auth.Admin, a.webhookAttempts)
}

func (a *API) webhookService() outgoing.Service {
	return outgoing.Service{DB: a.DB, Config: a.Webhooks, Now: a.Now}
}

func (a *API) createWebhookEndpoint(w http.ResponseWriter, r *http.Request) {
	var body outgoing.NewEndpoint
	if !decodeJSON(w, r, &body) {
		return
	}
	e, err := a.webhookService().Create(r.Context(), body)
	if err != nil {
		writeError(w, r, a.Log, err)
		return
	}
	writeJSON(w, http.StatusCreated, e)
}

// WebhookEndpoints is GET /v1/webhook-endpoints: every endpoint, by id.
type WebhookEndpoints struct {
	Endpoints []outgoing.Endpoint `json:"endpoints"`
}

func (a *API) listWebhookEndpoints(w http.ResponseWriter, r *http.Request) {
	es, err := a.webhookService().List(r.Context())
	if err != nil {
		writeError(w, r, a.Log, err)
		return
	}
	writeJSON(w, http.StatusOK, WebhookEndpoints{Endpoints: es})
}

func (a *API) getWebhookEndpoint(w http.ResponseWriter, r *http.Request) {
	id, ok := pathID(w, r, "webhook endpoint")
	if !ok {
		return
	}
	e, err := a.webhookService().Get(r.Context(), id)
	if err != nil {
		writeError(w, r, a.Log, err)
		return
	}
	writeJSON(w, http.StatusOK, e)
}

func (a *API) updateWebhookEndpoint(w http.ResponseWriter, r *http.Request) {
	id, ok := pathID(w, r, "webhook endpoint")
	if !ok {
		return
	}
	var body outgoing.Patch
	if !decodeJSON(w, r, &body) {
		return
	}
	e, err := a.webhookService().Update(r.Context(), id, body)
	if err != nil {
		writeError(w, r, a.Log, err)
		return
	}
	writeJSON(w, http.StatusOK, e)
}

func (a *API) deleteWebhookEndpoint(w http.ResponseWriter, r *http.Request) {
	id, ok := pathID(w, r, "webhook endpoint")
	if !ok {
		return
	}
	if err := a.webhookService().Delete(r.Context(), id); err != nil {
		writeError(w, r, a.Log, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// rotateRequest is the optional body of POST .../rotate-secret.
type rotateRequest struct {
	// OverlapSeconds is how long the old secret goes on signing (default:
	// webhooks.rotation_overlap).
	OverlapSeconds int64 `json:"overlap_seconds"`
}

func (a *API) rotateWebhookSecret(w http.ResponseWriter, r *http.Request) {
	id, ok := pathID(w, r, "webhook endpoint")
	if !ok {
		return
	}
	var body rotateRequest
	if r.ContentLength != 0 && !decodeJSON(w, r, &body) {
		return
	}
	if body.OverlapSeconds < 0 || body.OverlapSeconds > 30*24*3600 {
		writeProblem(w, http.StatusBadRequest, "invalid-webhook-endpoint", "Invalid webhook endpoint", "overlap_seconds must be 0 to 2592000 (30 days)")
		return
	}
	e, err := a.webhookService().Rotate(r.Context(), id, time.Duration(body.OverlapSeconds)*time.Second)
	if err != nil {
		writeError(w, r, a.Log, err)
		return
	}
	writeJSON(w, http.StatusOK, e)
}

// ReplayQueued answers a replay: how many events were queued.
type ReplayQueued struct {
	Queued int `json:"queued"`
}

func (a *API) replayWebhookEvents(w http.ResponseWriter, r *http.Request) {
	id, ok := pathID(w, r, "webhook endpoint")
	if !ok {
		return
	}
	var body outgoing.Replay
	if !decodeJSON(w, r, &body) {
		return
	}
	n, err := a.webhookService().Replay(r.Context(), id, body)
	if err != nil {
		writeError(w, r, a.Log, err)
		return
	}
	writeJSON(w, http.StatusAccepted, ReplayQueued{Queued: n})
}

// WebhookAttempts is one page of an endpoint's attempts, newest first.
type WebhookAttempts struct {
	Attempts []outgoing.Attempt `json:"attempts"`
	// NextBefore fetches the next (older) page as ?before=; absent on the
	// last one.
	NextBefore *int64 `json:"next_before,omitempty"`
}

func (a *API) webhookAttempts(w http.ResponseWriter, r *http.Request) {
	id, ok := pathID(w, r, "webhook endpoint")
	if !ok {
		return
	}
	q := r.URL.Query()
	var before int64
	limit := 50
	if v := q.Get("before"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 {
			writeProblem(w, http.StatusBadRequest, "invalid-parameter", "Invalid parameter", "before must be a positive attempt id")
			return
		}
		before = n
	}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > outgoing.MaxAttemptsPage {
			writeProblem(w, http.StatusBadRequest, "invalid-parameter", "Invalid parameter", "limit must be 1 to "+strconv.Itoa(outgoing.MaxAttemptsPage))
			return
		}
		limit = n
	}
	as, err := a.webhookService().Attempts(r.Context(), id, before, limit)
	if err != nil {
		writeError(w, r, a.Log, err)
		return
	}
	page := WebhookAttempts{Attempts: as}
	if len(as) == limit {
		last := as[len(as)-1].ID
		page.NextBefore = &last
	}
	writeJSON(w, http.StatusOK, page)
}
