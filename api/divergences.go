package api

import (
	"net/http"
	"strconv"
	"time"

	"github.com/gorilla/mux"

	"github.com/razao/razao/divergences"
)

// divergenceID is the {id} of a divergence's path; ok is false (and the
// 404 written) when it is no id.
func divergenceID(w http.ResponseWriter, r *http.Request) (int64, bool) {
	id, err := strconv.ParseInt(mux.Vars(r)["id"], 10, 64)
	if err != nil || id <= 0 {
		writeProblem(w, http.StatusNotFound, "not-found", "Not found", "divergence ids are positive integers")
		return 0, false
	}
	return id, true
}

// getDivergence answers GET /v1/divergences/{id}: the divergence and the
// bookings it offers, their amounts computed from its two sides.
func (a *API) getDivergence(w http.ResponseWriter, r *http.Request) {
	id, ok := divergenceID(w, r)
	if !ok {
		return
	}
	d, err := divergences.Describe(r.Context(), a.DB, id)
	if err != nil {
		writeError(w, r, a.Log, err)
		return
	}
	writeJSON(w, http.StatusOK, d)
}

// resolveRequest is the body of POST /v1/divergences/{id}/resolve: a
// note alone, or a resolution (one of the bookings the divergence
// offers) with its parameters and an optional note.
type resolveRequest struct {
	Note               string `json:"note"`
	Resolution         string `json:"resolution"`
	CreditDivergenceID *int64 `json:"credit_divergence_id"`
	// Competence (YYYY-MM-DD) books the set on that date.
	Competence string `json:"competence"`
}

func (a *API) resolveDivergence(w http.ResponseWriter, r *http.Request) {
	id, ok := divergenceID(w, r)
	if !ok {
		return
	}
	var body resolveRequest
	if !decodeJSON(w, r, &body) {
		return
	}
	if body.Resolution == "" {
		// A note alone: it takes no booking's parameters.
		switch {
		case body.CreditDivergenceID != nil:
			writeProblem(w, http.StatusBadRequest, "invalid-parameter", "Invalid parameter",
				"credit_divergence_id is a parameter of the credit_refund resolution; a note alone takes none")
			return
		case body.Competence != "":
			writeProblem(w, http.StatusBadRequest, "invalid-parameter", "Invalid parameter",
				"competence dates a resolution's booking; a note alone books nothing")
			return
		}
		d, err := divergences.Resolve(r.Context(), a.DB, id, body.Note, a.Now())
		if err != nil {
			writeError(w, r, a.Log, err)
			return
		}
		writeJSON(w, http.StatusOK, d)
		return
	}
	req := divergences.Request{Resolution: divergences.Booking(body.Resolution), Note: body.Note,
		CreditDivergenceID: body.CreditDivergenceID}
	if body.Competence != "" {
		c, err := time.Parse(time.DateOnly, body.Competence)
		if err != nil {
			writeProblem(w, http.StatusBadRequest, "invalid-parameter", "Invalid parameter",
				"competence must be a date, YYYY-MM-DD")
			return
		}
		req.Competence = c
	}
	d, err := divergences.Book(r.Context(), a.DB, a.Ledger, id, req, a.Now())
	if err != nil {
		writeError(w, r, a.Log, err)
		return
	}
	writeJSON(w, http.StatusOK, d)
}
