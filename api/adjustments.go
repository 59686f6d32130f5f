package api

import (
	"fmt"
	"net/http"
	"slices"
	"strconv"

	"github.com/gorilla/mux"

	"github.com/razao/razao/adjustments"
	"github.com/razao/razao/auth"
	"github.com/razao/razao/internal/cursor"
)

// registerAdjustments mounts the corrections: adjustments proposed,
// approved or rejected by admins (four eyes), and reversals of posting
// sets, which join the same queue. Reading them needs read.
func (a *API) registerAdjustments(route func(method, path string, scope auth.Scope, h http.HandlerFunc)) {
	route(http.MethodPost, "/adjustments", auth.Admin, a.proposeAdjustment)
	route(http.MethodGet, "/adjustments", auth.Read, a.listAdjustments)
	route(http.MethodGet, "/adjustments/{id}", auth.Read, a.getAdjustment)
	route(http.MethodPost, "/adjustments/{id}/approve", auth.Admin, a.approveAdjustment)
	route(http.MethodPost, "/adjustments/{id}/reject", auth.Admin, a.rejectAdjustment)
	route(http.MethodPost, "/posting-sets/{id}/reverse", auth.Admin, a.reverseSet)
}

func (a *API) corrections() adjustments.Corrections {
	return adjustments.Corrections{DB: a.DB, Ledger: a.Ledger, Config: a.Adjustments}
}

// actor is who the request's token names.
func actor(r *http.Request) adjustments.Actor {
	t, _ := auth.FromContext(r.Context())
	return adjustments.Actor{Name: t.Name, TokenID: t.ID}
}

// adjustmentRequest is the body of POST /v1/adjustments.
type adjustmentRequest struct {
	Legs         []adjustments.Leg `json:"legs"`
	Reason       string            `json:"reason"`
	Competence   string            `json:"competence"`
	ChargeID     string            `json:"charge_id"`
	Partner      string            `json:"partner"`
	DivergenceID int64             `json:"divergence_id"`
}

// proposeAdjustment proposes an adjustment, idempotently on the
// Idempotency-Key header: 201 when proposed (or booked at once, approval
// off), 200 when the same request was made already.
func (a *API) proposeAdjustment(w http.ResponseWriter, r *http.Request) {
	key := r.Header.Get("Idempotency-Key")
	if key == "" {
		writeProblem(w, http.StatusBadRequest, "idempotency-key-required", "Idempotency-Key header required", "")
		return
	}
	var body adjustmentRequest
	if !decodeJSONUpTo(w, r, &body, maxAdjustmentBody) {
		return
	}
	adj, err := a.corrections().Propose(r.Context(), adjustments.Request{IdempotencyKey: key, Legs: body.Legs,
		Reason: body.Reason, Competence: body.Competence, ChargeID: body.ChargeID, Partner: body.Partner,
		DivergenceID: body.DivergenceID}, actor(r), a.Now())
	a.answerProposal(w, r, adj, err)
}

// reverseRequest is the body of POST /v1/posting-sets/{id}/reverse.
type reverseRequest struct {
	Reason string `json:"reason"`
}

// reverseSet proposes the reversal of a posting set: 201 when proposed
// (or booked, approval off), 200 when the same proposer asked the same.
func (a *API) reverseSet(w http.ResponseWriter, r *http.Request) {
	id, ok := pathID(w, r, "posting set")
	if !ok {
		return
	}
	var body reverseRequest
	if !decodeJSON(w, r, &body) {
		return
	}
	adj, err := a.corrections().ProposeReversal(r.Context(), id, body.Reason, actor(r), a.Now())
	a.answerProposal(w, r, adj, err)
}

func (a *API) answerProposal(w http.ResponseWriter, r *http.Request, adj adjustments.Adjustment, err error) {
	if err != nil {
		writeError(w, r, a.Log, err)
		return
	}
	status := http.StatusCreated
	if adj.Replayed {
		status = http.StatusOK
	}
	writeJSON(w, status, adj)
}

func (a *API) approveAdjustment(w http.ResponseWriter, r *http.Request) {
	id, ok := pathID(w, r, "adjustment")
	if !ok {
		return
	}
	adj, err := a.corrections().Approve(r.Context(), id, actor(r), a.Now())
	if err != nil {
		writeError(w, r, a.Log, err)
		return
	}
	writeJSON(w, http.StatusOK, adj)
}

// rejectRequest is the optional body of POST /v1/adjustments/{id}/reject.
type rejectRequest struct {
	Note string `json:"note"`
}

func (a *API) rejectAdjustment(w http.ResponseWriter, r *http.Request) {
	id, ok := pathID(w, r, "adjustment")
	if !ok {
		return
	}
	var body rejectRequest
	if r.ContentLength != 0 && !decodeJSON(w, r, &body) {
		return
	}
	adj, err := a.corrections().Reject(r.Context(), id, actor(r), body.Note, a.Now())
	if err != nil {
		writeError(w, r, a.Log, err)
		return
	}
	writeJSON(w, http.StatusOK, adj)
}

func (a *API) getAdjustment(w http.ResponseWriter, r *http.Request) {
	id, ok := pathID(w, r, "adjustment")
	if !ok {
		return
	}
	adj, err := adjustments.Get(r.Context(), a.DB, id)
	if err != nil {
		writeError(w, r, a.Log, err)
		return
	}
	writeJSON(w, http.StatusOK, adj)
}

// AdjustmentsPage is one page of GET /v1/adjustments, oldest first.
type AdjustmentsPage struct {
	Adjustments []adjustments.Adjustment `json:"adjustments"`
	// NextCursor fetches the next page; empty on the last one.
	NextCursor string `json:"next_cursor,omitempty"`
}

// listAdjustments lists the proposals, filtered by status and kind, a
// page at a time. The cursor is bound to the filters it was issued for.
func (a *API) listAdjustments(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f := adjustments.Filter{Status: adjustments.Status(q.Get("status")), Kind: adjustments.Kind(q.Get("kind"))}
	if f.Status != "" && !slices.Contains(adjustments.Statuses, f.Status) {
		writeError(w, r, a.Log, fmt.Errorf("%w: status %.32q: one of proposed, booked, rejected, expired", errInvalidParameter, f.Status))
		return
	}
	if f.Kind != "" && f.Kind != adjustments.KindAdjustment && f.Kind != adjustments.KindReversal {
		writeError(w, r, a.Log, fmt.Errorf("%w: kind %.32q: adjustment or reversal", errInvalidParameter, f.Kind))
		return
	}
	scope := "adjustments:" + string(f.Status) + ":" + string(f.Kind)
	after, err := cursor.Decode(q.Get("cursor"), scope)
	if err != nil {
		writeError(w, r, a.Log, err)
		return
	}
	size, err := limit(r)
	if err != nil {
		writeError(w, r, a.Log, err)
		return
	}
	list, more, err := adjustments.List(r.Context(), a.reads(r), f, after, cursor.Limit(size))
	if err != nil {
		writeError(w, r, a.Log, err)
		return
	}
	page := AdjustmentsPage{Adjustments: list}
	if more {
		page.NextCursor = cursor.Encode(scope, list[len(list)-1].ID)
	}
	writeJSON(w, http.StatusOK, page)
}

// pathID parses the {id} of the path, a positive integer; any other is a
// 404 naming what has integer ids.
func pathID(w http.ResponseWriter, r *http.Request, what string) (int64, bool) {
	id, err := strconv.ParseInt(mux.Vars(r)["id"], 10, 64)
	if err != nil || id <= 0 {
		writeProblem(w, http.StatusNotFound, "not-found", "Not found", what+" ids are positive integers")
		return 0, false
	}
	return id, true
}
