package api

import (
	"net/http"
	"time"

	"github.com/gorilla/mux"

	"github.com/razao/razao/internal/cursor"
	"github.com/razao/razao/partners"
)

func (a *API) getPartner(w http.ResponseWriter, r *http.Request) {
	s, err := partners.Get(r.Context(), a.DB, mux.Vars(r)["id"])
	if err != nil {
		writeError(w, r, a.Log, err)
		return
	}
	writeJSON(w, http.StatusOK, s)
}

// payoutRequest is the body of POST /v1/partners/{id}/payouts.
type payoutRequest struct {
	Amount        int64 `json:"amount"`
	AllowOverOwed bool  `json:"allow_over_owed"`
	// EffectiveAt is when the payout was made, RFC 3339; absent, now. A
	// string rather than time.Time, so a bad value is refused in the API's
	// words, not time.Parse's.
	EffectiveAt *string `json:"effective_at"`
}

// createPayout books a payout, idempotently on the Idempotency-Key header:
// 201 when booked, 200 when the same request was already booked.
func (a *API) createPayout(w http.ResponseWriter, r *http.Request) {
	key := r.Header.Get("Idempotency-Key")
	if key == "" {
		writeProblem(w, http.StatusBadRequest, "idempotency-key-required", "Idempotency-Key header required", "")
		return
	}
	var body payoutRequest
	if !decodeJSON(w, r, &body) {
		return
	}
	now := a.Now()
	at := now
	if body.EffectiveAt != nil {
		t, err := time.Parse(time.RFC3339, *body.EffectiveAt)
		if err != nil {
			writeProblem(w, http.StatusBadRequest, "invalid-payout", "Invalid payout",
				"effective_at must be an RFC 3339 date-time with a UTC offset, e.g. 2026-08-31T18:00:00-03:00")
			return
		}
		at = t
	}
	res, err := partners.Payout(r.Context(), a.DB, a.Ledger, partners.PayoutRequest{
		Partner: mux.Vars(r)["id"], IdempotencyKey: key, Amount: body.Amount,
		AllowOverOwed: body.AllowOverOwed, At: at, AtStated: body.EffectiveAt != nil, Now: now,
	})
	if err != nil {
		writeError(w, r, a.Log, err)
		return
	}
	status := http.StatusCreated
	if res.Replayed {
		status = http.StatusOK
	}
	writeJSON(w, status, res)
}

// partnersScope is the cursor scope of the pages of partners.
const partnersScope = "partners"

// PartnersPage is one page of partners.
type PartnersPage struct {
	Partners []partners.Listed `json:"partners"`
	// NextCursor fetches the next page; empty on the last one.
	NextCursor string `json:"next_cursor,omitempty"`
}

// listPartners lists the partners by id, a page at a time: what each is
// owed and was paid, and its last payout.
func (a *API) listPartners(w http.ResponseWriter, r *http.Request) {
	after, err := cursor.DecodeKey(r.URL.Query().Get("cursor"), partnersScope)
	if err != nil {
		writeError(w, r, a.Log, err)
		return
	}
	size, err := limit(r)
	if err != nil {
		writeError(w, r, a.Log, err)
		return
	}
	list, more, err := partners.List(r.Context(), a.reads(r), after, size)
	if err != nil {
		writeError(w, r, a.Log, err)
		return
	}
	page := PartnersPage{Partners: list}
	if page.Partners == nil {
		page.Partners = []partners.Listed{}
	}
	if more {
		page.NextCursor = cursor.EncodeKey(partnersScope, list[len(list)-1].Partner)
	}
	writeJSON(w, http.StatusOK, page)
}
