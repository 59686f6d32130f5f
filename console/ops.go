package console

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/gorilla/mux"

	"github.com/razao/razao/auth"
	"github.com/razao/razao/divergences"
	"github.com/razao/razao/events"
	"github.com/razao/razao/inbox"
	"github.com/razao/razao/monthsums"
	"github.com/razao/razao/partners"
	"github.com/razao/razao/periods"
	"github.com/razao/razao/postings"
	"github.com/razao/razao/reports"
)

// pageSize is how many rows a console listing shows per page.
const pageSize = 50

// partnersPerPage is how many partners a page of them shows.
const partnersPerPage = 20

// divergenceRow is a divergence with its delivery, if it has one.
type divergenceRow struct {
	divergences.Divergence
	Delivery *inbox.Summary
	// Offers are the bookings an open divergence allows (Describe); none:
	// a note closes it.
	Offers []divergences.Offer
}

type divergencesPage struct {
	Open, Resolved         []divergenceRow
	NextOpen, NextResolved string
	Done                   string
}

// deliveries reads the inbox's deliveries behind divs in one query.
func (c *Console) deliveries(ctx context.Context, divs []divergences.Divergence) ([]divergenceRow, error) {
	var ids []int64
	for _, d := range divs {
		if d.InboxID != 0 {
			ids = append(ids, d.InboxID)
		}
	}
	byID := map[int64]*inbox.Summary{}
	if len(ids) > 0 {
		rows, err := inbox.Summaries(ctx, c.reads(ctx), ids)
		if err != nil {
			return nil, fmt.Errorf("deliveries of %d divergence(s): %w", len(divs), err)
		}
		for i := range rows {
			byID[rows[i].ID] = &rows[i]
		}
	}
	out := make([]divergenceRow, len(divs))
	for i, d := range divs {
		out[i] = divergenceRow{Divergence: d, Delivery: byID[d.InboxID]}
	}
	return out, nil
}

// divergences lists the open divergences first, then the resolved, each
// read by divergences.List as GET /v1/divergences reads them.
func (c *Console) divergences(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	var pg divergencesPage
	for _, part := range []struct {
		status divergences.Status
		cursor string
		rows   *[]divergenceRow
		next   *string
	}{
		{divergences.StatusOpen, q.Get("open"), &pg.Open, &pg.NextOpen},
		{divergences.StatusResolved, q.Get("resolved"), &pg.Resolved, &pg.NextResolved},
	} {
		list, err := divergences.List(r.Context(), c.reads(r.Context()), part.status, part.cursor, pageSize)
		if err != nil {
			c.failWith(w, r, err)
			return
		}
		if *part.rows, err = c.deliveries(r.Context(), list.Divergences); err != nil {
			c.failWith(w, r, err)
			return
		}
		if part.status == divergences.StatusOpen {
			if err := c.offers(r.Context(), *part.rows); err != nil {
				c.failWith(w, r, err)
				return
			}
		}
		if list.NextCursor != "" {
			next := url.Values{string(part.status): {list.NextCursor}}
			*part.next = Prefix + "/divergences?" + next.Encode()
		}
	}
	pg.Done = q.Get("done")
	c.render(w, r, "divergences", "Divergências", pg)
}

// resolve resolves a divergence (admin) as POST
// /v1/divergences/{id}/resolve does: by booking one of its offers when
// the form names one (bookDivergence), else with a note alone.
func (c *Console) resolve(w http.ResponseWriter, r *http.Request) {
	id, ok := idParam(r)
	if !ok {
		c.failWith(w, r, divergences.ErrNotFound)
		return
	}
	if r.PostForm.Has("resolution") {
		c.bookDivergence(w, r, id)
		return
	}
	if _, err := divergences.Resolve(r.Context(), c.DB, id, r.PostForm.Get("note"), c.Now()); err != nil {
		c.refuse(w, r, err)
		return
	}
	http.Redirect(w, r, Prefix+"/divergences?done="+fmt.Sprint(id), http.StatusSeeOther)
}

type periodsPage struct {
	Periods []periods.Period
	Done    string
}

// periods lists the months as GET /v1/periods does.
func (c *Console) periods(w http.ResponseWriter, r *http.Request) {
	ps, err := periods.List(r.Context(), c.DB, c.Ledger.Calendar(), c.Now())
	if err != nil {
		c.failWith(w, r, err)
		return
	}
	c.render(w, r, "periods", "Períodos", periodsPage{Periods: ps, Done: r.URL.Query().Get("done")})
}

// closePage shows what closing a month freezes: its trial balance totals
// and income statement, which become its snapshot.
type closePage struct {
	Month  string
	TB     reports.TrialBalanceReport
	Income reports.Income
}

func (c *Console) closeConfirm(w http.ResponseWriter, r *http.Request) {
	m, tb, inc, err := c.books(r)
	if err != nil {
		c.failWith(w, r, err)
		return
	}
	c.render(w, r, "close", "Fechar "+monthLabel(m), closePage{Month: m.String(), TB: tb, Income: inc})
}

// closeMonth closes a month (admin) as POST /v1/periods/{month}/close
// does, the token's name recorded as who closed it.
func (c *Console) closeMonth(w http.ResponseWriter, r *http.Request) {
	m, err := monthParam(r, "month", c.currentMonth())
	if err != nil {
		c.failWith(w, r, err)
		return
	}
	s, _ := sessionFrom(r.Context())
	if err := periods.Close(r.Context(), c.DB, c.Ledger.Calendar(), m, c.Now(), s.token.Name, monthsums.Closing); err != nil {
		c.failWith(w, r, err)
		return
	}
	http.Redirect(w, r, Prefix+"/periods?done="+m.String(), http.StatusSeeOther)
}

type partnersPage struct {
	Partners []partners.Summary
	Next     string
}

// partnerList lists the partners (the commission-payable sub-accounts,
// by code) with their summaries from partners.Page, the figures GET
// /v1/partners/{id} reads each with.
func (c *Console) partnerList(w http.ResponseWriter, r *http.Request) {
	after := r.URL.Query().Get("after") // partners.Page refuses one that is no partner id
	list, more, err := partners.Page(r.Context(), c.reads(r.Context()), after, partnersPerPage)
	if err != nil {
		c.failWith(w, r, err)
		return
	}
	pg := partnersPage{Partners: list}
	if more {
		pg.Next = Prefix + "/partners?" + url.Values{"after": {list[len(list)-1].Partner}}.Encode()
	}
	c.render(w, r, "partners", "Parceiros", pg)
}

type partnerPage struct {
	Summary partners.Summary
	Payouts []postings.PayoutSet
	Payout  payoutForm // admin only (payouts.go)
}

// partner shows a partner's summary (partners.Get) and its latest
// payouts, newest first. The payouts are a listing of the ledger's payout
// sets, the same sets whose postings partners.Get sums as Paid.
func (c *Console) partner(w http.ResponseWriter, r *http.Request) {
	id := mux.Vars(r)["id"]
	s, err := partners.Get(r.Context(), c.DB, id)
	if err != nil {
		c.failWith(w, r, err)
		return
	}
	ps, err := postings.RecentPayouts(r.Context(), c.DB, id, pageSize*2)
	if err != nil {
		c.failWith(w, r, fmt.Errorf("payouts of %s: %w", id, err))
		return
	}
	c.render(w, r, "partner", "Parceiro "+id, partnerPage{Summary: s, Payouts: ps, Payout: c.newPayoutForm(r)})
}

// events serves the live strip: the /v1/events stream, authenticated by
// the session (its token is in the context, so the hub ends the stream
// when the token is revoked, as for a bearer). The stream lives no longer
// than its session: at every keepalive the session is looked up again, and
// once it is gone (signed out, on this replica or another; expired; its
// token revoked) the stream is cut.
func (c *Console) events(w http.ResponseWriter, r *http.Request) {
	s, ok := sessionFrom(r.Context())
	if _, hasToken := auth.FromContext(r.Context()); !ok || !hasToken {
		c.fail(w, r, http.StatusUnauthorized, "Sessão ausente.")
		return
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	go c.watchSession(ctx, cancel, s.plaintext)
	c.Events.ServeHTTP(w, r.WithContext(ctx))
}

// watchSession calls end once the session of plaintext is no longer live,
// checking every keepalive until ctx ends. A database error is not an end:
// the stream keeps its session until a lookup says it has none.
func (c *Console) watchSession(ctx context.Context, end context.CancelFunc, plaintext string) {
	t := time.NewTicker(c.keepAlive())
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		_, err := c.lookup(ctx, plaintext)
		switch {
		case errors.Is(err, errNoSession):
			c.Log.DebugContext(ctx, "console event stream cut: its session ended", "reason", err)
			end()
			return
		case err != nil && ctx.Err() == nil:
			c.Log.WarnContext(ctx, "console event stream: cannot re-check its session", "error", err)
		}
	}
}

// keepAlive is how often an open stream re-checks its session: the hub's
// keepalive, at which it re-checks tokens too.
func (c *Console) keepAlive() time.Duration {
	if h, ok := c.Events.(*events.Hub); ok && h.KeepAlive > 0 {
		return h.KeepAlive
	}
	return events.DefaultKeepAlive
}
