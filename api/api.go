package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"reflect"
	"strings"
	"time"

	"github.com/gorilla/mux"
	"github.com/jmoiron/sqlx"

	"github.com/razao/razao/adjustments"
	"github.com/razao/razao/auth"
	"github.com/razao/razao/charges"
	"github.com/razao/razao/internal/httplog"
	"github.com/razao/razao/internal/strictjson"
	"github.com/razao/razao/monthsums"
	"github.com/razao/razao/outgoing"
	"github.com/razao/razao/postings"
	"github.com/razao/razao/reads"
	"github.com/razao/razao/reconcile"
	"github.com/razao/razao/reports"
)

// maxJSONBody bounds every JSON request body of the API.
const maxJSONBody = 64 << 10

// API holds what the /v1 handlers need.
type API struct {
	DB     *sqlx.DB
	Ledger *postings.Ledger
	Log    *slog.Logger
	// Now is the clock of requests that book something (payouts).
	Now func() time.Time
	// Events serves GET /v1/events.
	Events http.Handler
	// Merchants are the merchants the webhook endpoints belong to: a
	// charge is registered to one of them (see
	// charges.NewCharge.ResolveMerchant).
	Merchants []string
	// Reconciler takes uploaded statements; nil takes none.
	Reconciler *reconcile.Reconciler
	// Adjustments is how corrections are approved; the zero value asks
	// for four eyes.
	Adjustments adjustments.Config
	// Webhooks is how the webhooks razao sends are managed (secrets' key,
	// private targets); the zero value refuses private targets and
	// stores secrets unsealed.
	Webhooks outgoing.Config
	// Reads chooses the database of the reads that need not see their
	// own writes (reports, lists, on-demand exports): a streaming standby
	// while it is fresh enough (package reads); nil: DB.
	Reads *reads.Pool
}

// reads is the database of a read that need not see its own writes: the
// reports, the lists and the on-demand exports. Everything else (writes,
// a single object fetched by id, which a client reads back right after
// creating it, and authentication) stays on DB.
func (a *API) reads(r *http.Request) *sqlx.DB {
	if a.Reads == nil {
		return a.DB
	}
	return a.Reads.DB(r.Context())
}

// Register mounts the /v1 routes on r. Every route needs a bearer token
// (auth.Middleware) and declares the scope it needs. Routes are mounted on
// r itself, not a subrouter, so that a known path with the wrong method is
// answered 405 by r's MethodNotAllowedHandler.
func (a *API) Register(r *mux.Router) {
	authed := auth.Middleware(a.DB, a.Log)
	route := func(method, path string, scope auth.Scope, h http.HandlerFunc) {
		r.Handle("/v1"+path, authed(noteToken(auth.Require(scope)(h)))).Methods(method)
	}
	route(http.MethodPost, "/charges", auth.Write, a.createCharge)
	route(http.MethodGet, "/charges/{id}", auth.Read, a.getCharge)
	route(http.MethodGet, "/charges", auth.Read, a.listCharges)
	route(http.MethodGet, "/charges/{id}/timeline", auth.Read, a.chargeTimeline)
	route(http.MethodGet, "/balances", auth.Read, a.balances)
	route(http.MethodGet, "/partners", auth.Read, a.listPartners)
	route(http.MethodGet, "/partners/{id}", auth.Read, a.getPartner)
	route(http.MethodPost, "/partners/{id}/payouts", auth.Write, a.createPayout)
	route(http.MethodGet, "/reports/trial-balance/{month}", auth.Read, a.trialBalance)
	route(http.MethodGet, "/reports/income-statement/{month}", auth.Read, a.incomeStatement)
	route(http.MethodGet, "/reports/journal/{month}", auth.Read, a.journal)
	route(http.MethodGet, "/accounts", auth.Read, a.chart)
	route(http.MethodGet, "/posting-sets", auth.Read, a.listPostingSets)
	route(http.MethodGet, "/accounts/{code}/series", auth.Read, a.accountSeries)
	route(http.MethodGet, "/periods", auth.Read, a.periods)
	route(http.MethodPost, "/periods/{month}/close", auth.Admin, a.closePeriod)
	route(http.MethodGet, "/divergences", auth.Read, a.divergences)
	route(http.MethodGet, "/divergences/{id}", auth.Read, a.getDivergence)
	// Finance's call, not the selling app's: resolving needs admin.
	route(http.MethodPost, "/divergences/{id}/resolve", auth.Admin, a.resolveDivergence)
	route(http.MethodGet, "/exports/{kind}.csv", auth.Read, a.exportCSV)
	route(http.MethodGet, "/exports/journal.hledger", auth.Read, a.exportLedger(reports.Hledger))
	route(http.MethodGet, "/exports/journal.beancount", auth.Read, a.exportLedger(reports.Beancount))
	a.registerReconciliations(route)
	a.registerAdjustments(route)
	a.registerWebhookEndpoints(route)
	if a.Events != nil {
		route(http.MethodGet, "/events", auth.Read, a.Events.ServeHTTP)
	}
}

// noteToken tells the access log which token the request came with (its
// name, never the token), also when Require then refuses it.
func noteToken(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if t, ok := auth.FromContext(r.Context()); ok {
			httplog.SetToken(r.Context(), t.Name)
		}
		next.ServeHTTP(w, r)
	})
}

// maxAdjustmentBody bounds a proposed adjustment's body: room for far
// more legs than adjustments.MaxLegs, so that a list of 10,000 is read and
// refused naming its field, not as a body too large.
const maxAdjustmentBody = 1 << 20

// decodeJSON reads a body of at most maxJSONBody into v, refusing unknown
// fields, trailing data and non-JSON content types; it writes the problem
// itself.
func decodeJSON(w http.ResponseWriter, r *http.Request, v any) bool {
	return decodeJSONUpTo(w, r, v, maxJSONBody)
}

// decodeJSONUpTo is decodeJSON with a body of at most limit bytes.
func decodeJSONUpTo(w http.ResponseWriter, r *http.Request, v any, limit int64) bool {
	if ct := r.Header.Get("Content-Type"); ct != "" {
		if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != "application/json" {
			writeProblem(w, http.StatusUnsupportedMediaType, "unsupported-media-type", "Body must be application/json", "")
			return false
		}
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			writeProblem(w, http.StatusRequestEntityTooLarge, "too-large", "Body too large", "")
			return false
		}
		writeProblem(w, http.StatusBadRequest, "bad-body", "Could not read body", "")
		return false
	}
	if err := strictjson.Check(body); err != nil {
		detail := err.Error()
		if p := nulPath(body); errors.Is(err, strictjson.ErrNUL) && p != "" {
			detail = "field " + p + ": " + detail
		}
		writeProblem(w, http.StatusBadRequest, "invalid-json", "Invalid JSON", detail)
		return false
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		writeProblem(w, http.StatusBadRequest, "invalid-json", "Invalid JSON", decodeDetail(err))
		return false
	}
	if dec.More() {
		writeProblem(w, http.StatusBadRequest, "invalid-json", "Invalid JSON", "trailing data after the object")
		return false
	}
	return true
}

// decodeDetail says what is wrong with a body in the API's terms: the field
// and the JSON type it takes, never encoding/json's text, which names Go
// types and struct fields ("cannot unmarshal number 1.5 into Go struct
// field NewCharge.amount of type int64").
func decodeDetail(err error) string {
	var typeErr *json.UnmarshalTypeError
	var syntaxErr *json.SyntaxError
	switch {
	case errors.As(err, &typeErr):
		want := jsonType(typeErr.Type)
		if typeErr.Field == "" {
			return "the body must be " + want + ", not " + typeErr.Value
		}
		return fmt.Sprintf("field %q must be %s, not %s", typeErr.Field, want, typeErr.Value)
	case errors.As(err, &syntaxErr):
		return fmt.Sprintf("not JSON at byte %d", syntaxErr.Offset)
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "the body is empty or cut short"
	}
	// DisallowUnknownFields' error has no type of its own; its text is
	// `json: unknown field "x"`, which names no Go type.
	if msg, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		return "unknown field " + msg
	}
	return "the body does not match the request's fields"
}

// jsonType names the JSON type a Go type decodes from.
func jsonType(t reflect.Type) string {
	if t == nil {
		return "another type"
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Struct, reflect.Map:
		return "an object"
	}
	return "another type"
}

func (a *API) createCharge(w http.ResponseWriter, r *http.Request) {
	var n charges.NewCharge
	if !decodeJSON(w, r, &n) {
		return
	}
	if err := n.ResolveMerchant(a.Merchants); err != nil {
		writeError(w, r, a.Log, err)
		return
	}
	c, created, err := charges.RegisterWithin(r.Context(), a.DB, n, a.Ledger.Limit())
	if err != nil {
		writeError(w, r, a.Log, err)
		return
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	writeJSON(w, status, c)
}

func (a *API) getCharge(w http.ResponseWriter, r *http.Request) {
	d, err := charges.GetDetail(r.Context(), a.DB, mux.Vars(r)["id"])
	if err != nil {
		writeError(w, r, a.Log, err)
		return
	}
	writeJSON(w, http.StatusOK, d)
}

func (a *API) balances(w http.ResponseWriter, r *http.Request) {
	bs, err := reports.Balances(r.Context(), a.reads(r), monthsums.Books{})
	if err != nil {
		writeError(w, r, a.Log, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"accounts": bs})
}
