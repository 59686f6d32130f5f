package api

import (
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"time"

	"github.com/gorilla/mux"

	"github.com/razao/razao/charges"
	"github.com/razao/razao/inbox"
	"github.com/razao/razao/reconcile"
)

// ChargesPage is one page of charges, newest first.
type ChargesPage struct {
	Charges []charges.Charge `json:"charges"`
	// NextCursor fetches the next page; empty on the last one.
	NextCursor string `json:"next_cursor,omitempty"`
}

// chargeParams are the query parameters GET /v1/charges takes.
var chargeParams = map[string]bool{
	"cursor": true, "limit": true, "state": true, "merchant": true, "partner": true,
	"created_from": true, "created_to": true, "paid_from": true, "paid_to": true,
	"amount_min": true, "amount_max": true,
	"txid": true, "end_to_end_id": true, "track_id": true, "webhook_id": true,
}

// listCharges lists the charges newest first, a page at a time, narrowed
// by its filters (charges.Filter).
func (a *API) listCharges(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f, err := chargeFilter(q)
	if err != nil {
		writeError(w, r, a.Log, err)
		return
	}
	if err := f.Validate(a.Ledger.Limit()); err != nil {
		writeError(w, r, a.Log, err)
		return
	}
	after, err := f.ParseCursor(q.Get("cursor"))
	if err != nil {
		writeError(w, r, a.Log, err)
		return
	}
	size, err := limit(r)
	if err != nil {
		writeError(w, r, a.Log, err)
		return
	}
	page, err := charges.Find(r.Context(), a.reads(r), inbox.ChargeRefs{}, f, after, size)
	if err != nil {
		writeError(w, r, a.Log, err)
		return
	}
	out := ChargesPage{Charges: page.Charges}
	if page.Next != nil {
		out.NextCursor = f.Cursor(*page.Next)
	}
	writeJSON(w, http.StatusOK, out)
}

// chargeFilter reads the listing's query into a filter: a parameter it
// does not take, one given twice, a time that is not RFC 3339 or an
// amount that is not a whole number is refused naming the parameter.
// What the values mean is checked by charges.Filter.Validate.
func chargeFilter(q url.Values) (charges.Filter, error) {
	names := make([]string, 0, len(q))
	for name := range q {
		names = append(names, name)
	}
	sort.Strings(names) // the first bad one named is the same on every call
	for _, name := range names {
		if !chargeParams[name] {
			return charges.Filter{}, fmt.Errorf("%w: %.40q is not a parameter of this listing", errInvalidParameter, name)
		}
		if len(q[name]) > 1 {
			return charges.Filter{}, fmt.Errorf("%w: %s: given more than once", errInvalidParameter, name)
		}
	}
	f := charges.Filter{
		State: charges.State(q.Get("state")), Merchant: q.Get("merchant"), Partner: q.Get("partner"),
		TxID: q.Get("txid"), EndToEndID: q.Get("end_to_end_id"), TrackID: q.Get("track_id"), WebhookID: q.Get("webhook_id"),
	}
	for _, t := range []struct {
		param string
		to    **time.Time
	}{{"created_from", &f.CreatedFrom}, {"created_to", &f.CreatedTo}, {"paid_from", &f.PaidFrom}, {"paid_to", &f.PaidTo}} {
		v := q.Get(t.param)
		if v == "" {
			continue
		}
		at, err := time.Parse(time.RFC3339, v)
		if err != nil {
			return charges.Filter{}, fmt.Errorf("%w: %s: must be an RFC 3339 date-time with a UTC offset, e.g. 2026-08-01T00:00:00-03:00",
				errInvalidParameter, t.param)
		}
		*t.to = &at
	}
	for _, n := range []struct {
		param string
		to    **int64
	}{{"amount_min", &f.AmountMin}, {"amount_max", &f.AmountMax}} {
		v := q.Get(n.param)
		if v == "" {
			continue
		}
		amount, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return charges.Filter{}, fmt.Errorf("%w: %s: must be a whole number of centavos", errInvalidParameter, n.param)
		}
		*n.to = &amount
	}
	return f, nil
}

// chargeTimeline is everything razao recorded about a charge, in time
// order: its deliveries, posting sets, divergences, statement lines and
// events.
func (a *API) chargeTimeline(w http.ResponseWriter, r *http.Request) {
	tl, err := charges.GetTimeline(r.Context(), a.DB, mux.Vars(r)["id"], charges.TimelineSources{
		Deliveries: inbox.ChargeDeliveries, Lines: reconcile.ChargeLines,
	})
	if err != nil {
		writeError(w, r, a.Log, err)
		return
	}
	writeJSON(w, http.StatusOK, tl)
}
