package api

import (
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"

	"github.com/gorilla/mux"

	"github.com/razao/razao/auth"
	"github.com/razao/razao/divergences"
	"github.com/razao/razao/internal/kind"
	"github.com/razao/razao/monthsums"
	"github.com/razao/razao/periods"
	"github.com/razao/razao/reports"
)

// month parses the {month} path variable or ?month= query.
func month(r *http.Request, name string) (periods.Month, error) {
	v := mux.Vars(r)[name]
	if v == "" {
		v = r.URL.Query().Get(name)
	}
	return periods.ParseMonth(v)
}

// errInvalidLimit is a page size that is not a whole number from 1 on.
var errInvalidLimit = kind.New(kind.Invalid, "invalid-parameter", "Invalid parameter", "invalid limit")

// errInvalidParameter is a query or path parameter that a route does not
// take, takes once, or takes with other values.
var errInvalidParameter = kind.New(kind.Invalid, "invalid-parameter", "Invalid parameter", "invalid parameter")

// limit parses ?limit=, a listing's page size: 0 when absent (the
// listing's default, cursor.DefaultLimit); else a whole number from 1 on,
// one beyond int's range read as the largest (the listing caps it,
// cursor.MaxLimit). Anything else is refused naming it, rather than
// served a page of another size than asked.
func limit(r *http.Request) (int, error) {
	v := r.URL.Query().Get("limit")
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if errors.Is(err, strconv.ErrRange) && !strings.HasPrefix(v, "-") {
		return math.MaxInt, nil
	}
	if err != nil || n < 1 {
		return 0, fmt.Errorf("%w: %.32q is not a whole number from 1 on", errInvalidLimit, v)
	}
	return n, nil
}

func (a *API) trialBalance(w http.ResponseWriter, r *http.Request) {
	m, err := month(r, "month")
	if err != nil {
		writeError(w, r, a.Log, err)
		return
	}
	tb, err := reports.TrialBalance(r.Context(), a.reads(r), monthsums.Books{}, m)
	if err != nil {
		writeError(w, r, a.Log, err)
		return
	}
	writeJSON(w, http.StatusOK, tb)
}

func (a *API) incomeStatement(w http.ResponseWriter, r *http.Request) {
	m, err := month(r, "month")
	if err != nil {
		writeError(w, r, a.Log, err)
		return
	}
	inc, err := reports.IncomeStatement(r.Context(), a.reads(r), monthsums.Books{}, m)
	if err != nil {
		writeError(w, r, a.Log, err)
		return
	}
	writeJSON(w, http.StatusOK, inc)
}

func (a *API) journal(w http.ResponseWriter, r *http.Request) {
	m, err := month(r, "month")
	if err != nil {
		writeError(w, r, a.Log, err)
		return
	}
	size, err := limit(r)
	if err != nil {
		writeError(w, r, a.Log, err)
		return
	}
	page, err := reports.Journal(r.Context(), a.reads(r), m, r.URL.Query().Get("cursor"), size)
	if err != nil {
		writeError(w, r, a.Log, err)
		return
	}
	writeJSON(w, http.StatusOK, page)
}

func (a *API) accountSeries(w http.ResponseWriter, r *http.Request) {
	from, err := month(r, "from")
	if err != nil {
		writeError(w, r, a.Log, err)
		return
	}
	to, err := month(r, "to")
	if err != nil {
		writeError(w, r, a.Log, err)
		return
	}
	s, err := reports.AccountSeries(r.Context(), a.reads(r), monthsums.Books{}, mux.Vars(r)["code"], from, to)
	if err != nil {
		writeError(w, r, a.Log, err)
		return
	}
	writeJSON(w, http.StatusOK, s)
}

func (a *API) periods(w http.ResponseWriter, r *http.Request) {
	ps, err := periods.List(r.Context(), a.DB, a.Ledger.Calendar(), a.Now())
	if err != nil {
		writeError(w, r, a.Log, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"periods": ps})
}

// closePeriod closes a month (admin): from then on the database refuses
// postings into it and its reports are a stored snapshot.
func (a *API) closePeriod(w http.ResponseWriter, r *http.Request) {
	m, err := month(r, "month")
	if err != nil {
		writeError(w, r, a.Log, err)
		return
	}
	// The token's name says who closed the month; the database role would
	// only say which service connected.
	t, _ := auth.FromContext(r.Context())
	if err := periods.Close(r.Context(), a.DB, a.Ledger.Calendar(), m, a.Now(), t.Name, monthsums.Closing); err != nil {
		writeError(w, r, a.Log, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"month": m.String(), "status": "closed"})
}

func (a *API) divergences(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	size, err := limit(r)
	if err != nil {
		writeError(w, r, a.Log, err)
		return
	}
	page, err := divergences.List(r.Context(), a.reads(r), divergences.Status(q.Get("status")), q.Get("cursor"), size)
	if err != nil {
		writeError(w, r, a.Log, err)
		return
	}
	writeJSON(w, http.StatusOK, page)
}

// exportCSV streams an export: the rows go from the database to the client
// as they come, from one read-only snapshot, so memory stays flat and the
// file is consistent with itself.
func (a *API) exportCSV(w http.ResponseWriter, r *http.Request) {
	kind, err := reports.ParseExportKind(mux.Vars(r)["kind"])
	if err != nil {
		writeError(w, r, a.Log, err)
		return
	}
	m, err := month(r, "month")
	if err != nil {
		writeError(w, r, a.Log, err)
		return
	}
	dialectName := r.URL.Query().Get("dialect")
	if dialectName == "" {
		dialectName = "rfc4180"
	}
	d, err := reports.ParseDialect(dialectName)
	if err != nil {
		writeError(w, r, a.Log, err)
		return
	}
	// The export reads in a read-only snapshot of its own.
	started, err := reports.ServeCSV(r.Context(), a.reads(r), monthsums.Books{}, w, kind, m, d)
	a.exportFailed(w, r, started, err, "kind", string(kind), "month", m.String())
}

// exportLedger streams the month's journal as a file of format f (GET
// /v1/exports/journal.hledger, journal.beancount), as exportCSV streams
// a CSV export.
func (a *API) exportLedger(f reports.LedgerFormat) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		m, err := month(r, "month")
		if err != nil {
			writeError(w, r, a.Log, err)
			return
		}
		started, err := reports.ServeLedger(r.Context(), a.reads(r), monthsums.Books{}, w, f, m)
		a.exportFailed(w, r, started, err, "format", f.String(), "month", m.String())
	}
}

// exportFailed answers an export's error: as any error before the first
// byte; mid-stream, when the status is gone, by cutting the connection so
// the client sees a broken download rather than a short file that looks
// whole.
func (a *API) exportFailed(w http.ResponseWriter, r *http.Request, started bool, err error, what ...any) {
	if err == nil {
		return
	}
	if !started {
		writeError(w, r, a.Log, err)
		return
	}
	a.Log.ErrorContext(r.Context(), "export stream failed", append(what, "error", err)...)
	panic(http.ErrAbortHandler)
}
