package api

import (
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/razao/razao/postings"
)

// postingSetParams are the query parameters GET /v1/posting-sets takes;
// any other is refused, so that a misspelt filter is never a listing of
// everything.
var postingSetParams = map[string]bool{
	"charge": true, "partner": true, "kind": true, "account": true,
	"competence_from": true, "competence_to": true, "effective_from": true, "effective_to": true,
	"amount_min": true, "amount_max": true, "cursor": true, "limit": true,
}

// listPostingSets lists the posting sets across months that match the
// filters, newest first, each with its postings (postings.Find).
func (a *API) listPostingSets(w http.ResponseWriter, r *http.Request) {
	f, err := a.postingSetFilter(r)
	if err != nil {
		writeError(w, r, a.Log, err)
		return
	}
	size, err := limit(r)
	if err != nil {
		writeError(w, r, a.Log, err)
		return
	}
	page, err := postings.Find(r.Context(), a.reads(r), f, r.URL.Query().Get("cursor"), size)
	if err != nil {
		writeError(w, r, a.Log, err)
		return
	}
	writeJSON(w, http.StatusOK, page)
}

// postingSetFilter parses the query's filters; postings.Find validates
// what they say (ids, kind, bounds, ranges).
func (a *API) postingSetFilter(r *http.Request) (postings.Filter, error) {
	q := r.URL.Query()
	bad := func(param, format string, args ...any) error {
		return fmt.Errorf("%w: %s: "+format, append([]any{postings.ErrInvalidFilter, param}, args...)...)
	}
	for name, vs := range q {
		if !postingSetParams[name] {
			return postings.Filter{}, bad(fmt.Sprintf("%.40q", name), "not a parameter of this listing")
		}
		if len(vs) > 1 {
			return postings.Filter{}, bad(name, "given %d times, once at most", len(vs))
		}
		if vs[0] == "" && name != "cursor" {
			return postings.Filter{}, bad(name, "empty; leave it out not to filter by it")
		}
	}
	f := postings.Filter{Charge: q.Get("charge"), Partner: q.Get("partner"), Kind: postings.Kind(q.Get("kind")), Account: q.Get("account")}
	for _, d := range []struct {
		param string
		to    *time.Time
	}{{"competence_from", &f.CompetenceFrom}, {"competence_to", &f.CompetenceTo}} {
		if v := q.Get(d.param); v != "" {
			t, err := time.Parse(time.DateOnly, v)
			if err != nil {
				return postings.Filter{}, bad(d.param, "%.40q is not a date written YYYY-MM-DD", v)
			}
			if err := yearInRange(d.param, t); err != nil {
				return postings.Filter{}, err
			}
			*d.to = t
		}
	}
	for _, d := range []struct {
		param string
		to    *time.Time
	}{{"effective_from", &f.EffectiveFrom}, {"effective_to", &f.EffectiveTo}} {
		if v := q.Get(d.param); v != "" {
			t, err := time.Parse(time.RFC3339, v)
			if err != nil {
				return postings.Filter{}, bad(d.param, "%.40q is not an RFC 3339 date-time with a UTC offset, e.g. 2026-08-31T18:00:00-03:00", v)
			}
			if err := yearInRange(d.param, t); err != nil {
				return postings.Filter{}, err
			}
			*d.to = t
		}
	}
	for _, p := range []struct {
		param string
		to    *int64
	}{{"amount_min", &f.AmountMin}, {"amount_max", &f.AmountMax}} {
		if v := q.Get(p.param); v != "" {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < 1 {
				return postings.Filter{}, bad(p.param, "%.40q is not a whole number of centavos from 1 on", v)
			}
			if err := a.Ledger.Limit().Check(p.param, n); err != nil {
				return postings.Filter{}, err
			}
			*p.to = n
		}
	}
	return f, nil
}

// yearInRange refuses a date outside the years 1900 to 9999 here, where
// it is still told apart from no date: 0001-01-01 is time.Time's zero,
// which a postings.Filter reads as "not given".
func yearInRange(param string, t time.Time) error {
	if y := t.UTC().Year(); y < 1900 || y > 9999 {
		return fmt.Errorf("%w: %s: year %d is outside 1900 to 9999", postings.ErrInvalidFilter, param, y)
	}
	return nil
}
