package console

import (
	"errors"
	"net/http"

	"github.com/gorilla/mux"
	"github.com/jmoiron/sqlx"

	"github.com/razao/razao/charges"
	"github.com/razao/razao/inbox"
	"github.com/razao/razao/internal/snapshot"
	"github.com/razao/razao/postings"
	"github.com/razao/razao/reconcile"
)

// timelineSources are the reads of a charge's timeline that package
// charges cannot call itself, as GET /v1/charges/{id}/timeline gives them.
var timelineSources = charges.TimelineSources{Deliveries: inbox.ChargeDeliveries, Lines: reconcile.ChargeLines}

// topicNames are the outbox's topics as the live strip names them.
var topicNames = map[string]string{
	"charge.paid":         "cobrança paga",
	"charge.refunded":     "cobrança estornada",
	"charge.failed":       "cobrança falhou",
	"access.granted":      "acesso liberado",
	"divergence.opened":   "divergência aberta",
	"adjustment.proposed": "ajuste proposto",
	"adjustment.booked":   "ajuste lançado",
	"adjustment.rejected": "ajuste recusado",
	"adjustment.expired":  "ajuste expirado",
}

// entryNames are the kinds of a timeline's entries, in Portuguese.
var entryNames = map[string]string{
	charges.EntryDelivery:      "entregas de webhook",
	charges.EntryPostingSet:    "lançamentos",
	charges.EntryDivergence:    "divergências",
	charges.EntryStatementLine: "linhas de extrato",
	charges.EntryEvent:         "eventos",
}

// chargeEntry is an entry of the timeline, a set's with its legs.
type chargeEntry struct {
	charges.TimelineEntry
	Legs []postings.StoredLeg
}

// chargePage is a charge and everything razao recorded about it.
type chargePage struct {
	Charge    charges.Charge
	Entries   []chargeEntry
	PerKind   int
	Truncated []string
	Topics    map[string]string
}

// charge is a charge's page: the charge, and its timeline in time order
// (charges.GetTimeline, as GET /v1/charges/{id}/timeline reads it) with
// each posting set's legs, all read in one snapshot. An unknown charge is
// a 404 page.
func (c *Console) charge(w http.ResponseWriter, r *http.Request) {
	id := mux.Vars(r)["id"]
	if !chargeIDRE.MatchString(id) {
		c.fail(w, r, http.StatusNotFound, "Cobrança desconhecida.")
		return
	}
	var p chargePage
	err := snapshot.Read(r.Context(), c.DB, func(q sqlx.QueryerContext) error {
		ch, err := charges.Get(r.Context(), q, id)
		if err != nil {
			return err
		}
		tl, err := charges.GetTimeline(r.Context(), q, id, timelineSources)
		if err != nil {
			return err
		}
		var ids []int64
		for _, e := range tl.Entries {
			if e.PostingSet != nil {
				ids = append(ids, e.PostingSet.ID)
			}
		}
		bySet := map[int64][]postings.StoredLeg{}
		if len(ids) > 0 {
			legs, err := postings.LegsOf(r.Context(), q, ids)
			if err != nil {
				return err
			}
			for _, l := range legs {
				bySet[l.SetID] = append(bySet[l.SetID], l)
			}
		}
		p = chargePage{Charge: ch, PerKind: tl.PerKindLimit, Topics: topicNames}
		for _, e := range tl.Entries {
			ce := chargeEntry{TimelineEntry: e}
			if e.PostingSet != nil {
				ce.Legs = bySet[e.PostingSet.ID]
			}
			p.Entries = append(p.Entries, ce)
		}
		for _, k := range tl.Truncated {
			p.Truncated = append(p.Truncated, entryNames[k])
		}
		return nil
	})
	if errors.Is(err, charges.ErrNotFound) {
		c.fail(w, r, http.StatusNotFound, "Cobrança desconhecida: “"+id+"”.")
		return
	}
	if err != nil {
		c.failWith(w, r, err)
		return
	}
	c.render(w, r, "charge", "Cobrança "+id, p)
}
