package api

import (
	"errors"
	"fmt"
	"mime"
	"net/http"
	"strconv"
	"time"

	"github.com/gorilla/mux"

	"github.com/razao/razao/auth"
	"github.com/razao/razao/reconcile"
	"github.com/razao/razao/reports"
)

// registerReconciliations mounts /v1/reconciliations: statement uploads,
// the runs' history and each run's lines. They are served without a
// reconciler too (the history stays readable; uploads find no endpoint).
func (a *API) registerReconciliations(route func(method, path string, scope auth.Scope, h http.HandlerFunc)) {
	// A statement books money no webhook announced: finance's call, like
	// resolving a divergence, not the selling app's (whose token writes).
	route(http.MethodPost, "/reconciliations", auth.Admin, a.uploadStatement)
	route(http.MethodGet, "/reconciliations", auth.Read, a.listReconciliations)
	route(http.MethodGet, "/reconciliations/{id}", auth.Read, a.getReconciliation)
	route(http.MethodGet, "/reconciliations/{id}/lines.csv", auth.Read, a.reconciliationCSV)
}

// RunPage is a page of GET /v1/reconciliations, newest first.
type RunPage struct {
	Runs []reconcile.Run `json:"runs"`
	// NextBefore is the before of the next page; absent on the last.
	NextBefore *int64 `json:"next_before,omitempty"`
}

// RunDetail is GET /v1/reconciliations/{id}: the run and a page of its
// lines that did not match, with both sides.
type RunDetail struct {
	Run       reconcile.Run          `json:"run"`
	Unmatched []reconcile.LineResult `json:"unmatched"`
	// NextAfter is the after of the next page of lines; absent on the last.
	NextAfter *int64 `json:"next_after,omitempty"`
}

// uploadStatement reconciles the CSV statement in the body for the
// endpoint named in the query, streaming it into the run's table.
func (a *API) uploadStatement(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	name := q.Get("endpoint")
	var max int64
	if a.Reconciler != nil {
		max = a.Reconciler.MaxFileBytes(name)
	}
	if max == 0 {
		writeProblem(w, http.StatusNotFound, "not-found", "Not found", fmt.Sprintf("endpoint %.64q takes no statement file", name))
		return
	}
	if ct := r.Header.Get("Content-Type"); ct != "" {
		if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != "text/csv" {
			writeProblem(w, http.StatusUnsupportedMediaType, "unsupported-media-type", "Body must be text/csv", "")
			return
		}
	}
	from, err1 := optionalTime(q.Get("from"))
	to, err2 := optionalTime(q.Get("to"))
	if err := errors.Join(err1, err2); err != nil {
		writeProblem(w, http.StatusBadRequest, "invalid-parameter", "Invalid parameter", err.Error())
		return
	}
	body := http.MaxBytesReader(w, r.Body, max)
	run, err := a.Reconciler.ReconcileFile(r.Context(), name, body, from, to)
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		writeProblem(w, http.StatusRequestEntityTooLarge, "too-large", "Body too large",
			fmt.Sprintf("a statement file of this endpoint is at most %d bytes", max))
	case err != nil:
		writeError(w, r, a.Log, err)
	default:
		writeJSON(w, http.StatusCreated, run)
	}
}

func optionalTime(s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return t, fmt.Errorf("%.40q is not an RFC 3339 time", s)
	}
	return t, nil
}

func (a *API) listReconciliations(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	before, ok := optionalID(w, q.Get("before"), "before")
	if !ok {
		return
	}
	size, err := limit(r)
	if err != nil {
		writeError(w, r, a.Log, err)
		return
	}
	runs, next, err := reconcile.RunsPage(r.Context(), a.reads(r), q.Get("endpoint"), before, size)
	if err != nil {
		writeError(w, r, a.Log, err)
		return
	}
	page := RunPage{Runs: runs}
	if next > 0 {
		page.NextBefore = &next
	}
	writeJSON(w, http.StatusOK, page)
}

func (a *API) getReconciliation(w http.ResponseWriter, r *http.Request) {
	id, ok := runID(w, r)
	if !ok {
		return
	}
	after, ok := optionalID(w, r.URL.Query().Get("after"), "after")
	if !ok {
		return
	}
	run, err := reconcile.GetRun(r.Context(), a.DB, id)
	if err != nil {
		writeError(w, r, a.Log, err)
		return
	}
	size, err := limit(r)
	if err != nil {
		writeError(w, r, a.Log, err)
		return
	}
	lines, next, err := reconcile.LinesPage(r.Context(), a.DB, id, true, after, size)
	if err != nil {
		writeError(w, r, a.Log, err)
		return
	}
	d := RunDetail{Run: run, Unmatched: lines}
	if next > 0 {
		d.NextAfter = &next
	}
	writeJSON(w, http.StatusOK, d)
}

// reconciliationCSV streams every line of a run as CSV.
func (a *API) reconciliationCSV(w http.ResponseWriter, r *http.Request) {
	id, ok := runID(w, r)
	if !ok {
		return
	}
	d, err := reports.ParseDialect(r.URL.Query().Get("dialect"))
	if err != nil {
		writeProblem(w, http.StatusBadRequest, "invalid-parameter", "Invalid parameter", err.Error())
		return
	}
	if _, err := reconcile.GetRun(r.Context(), a.DB, id); err != nil {
		writeError(w, r, a.Log, err)
		return
	}
	w.Header().Set("Content-Type", d.ContentType())
	w.Header().Set("Content-Disposition", fmt.Sprintf(`attachment; filename="razao-reconciliation-%d%s.csv"`, id,
		map[bool]string{true: "-br"}[d == reports.Brazil]))
	if _, err := reconcile.WriteLinesCSV(r.Context(), a.DB, w, id, d); err != nil {
		// Past the first byte: cut the connection so the download is
		// visibly broken rather than short.
		a.Log.ErrorContext(r.Context(), "reconciliation csv", "run", id, "error", err)
		panic(http.ErrAbortHandler)
	}
}

func runID(w http.ResponseWriter, r *http.Request) (int64, bool) {
	id, err := strconv.ParseInt(mux.Vars(r)["id"], 10, 64)
	if err != nil || id <= 0 {
		writeProblem(w, http.StatusNotFound, "not-found", "Not found", "reconciliation ids are positive integers")
		return 0, false
	}
	return id, true
}

func optionalID(w http.ResponseWriter, s, name string) (int64, bool) {
	if s == "" {
		return 0, true
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		writeProblem(w, http.StatusBadRequest, "invalid-parameter", "Invalid parameter", name+" must be a non-negative integer")
		return 0, false
	}
	return n, true
}
