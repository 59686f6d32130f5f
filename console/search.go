package console

import (
	"cmp"
	"context"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"github.com/razao/razao/accounts"
	"github.com/razao/razao/charges"
	"github.com/razao/razao/inbox"
	"github.com/razao/razao/postings"
)

// searchLimit is how many charges, and how many sets, a search shows of
// each thing it looked for; more are a link away (the journal's filters).
const searchLimit = 20

// searchPage is what a search found.
type searchPage struct {
	Q       string
	Problem string
	// Read lists what the words were read as, in Portuguese.
	Read    []string
	Charges []charges.Charge
	Sets    []postings.FoundSet
	// More links to the journal filtered as the search read the words,
	// where it may hold more sets than shown.
	More []moreLink
	// Partner is the partner the words name, when they name one with sets
	// or charges.
	Partner string
	Nothing bool
}

type moreLink struct{ Label, URL string }

// refRE is a reference a PSP could send: printable, without spaces or
// '|' (charges.Filter.Validate).
var refRE = regexp.MustCompile(`^[!-{}~]{1,200}$`)

// search finds what the words q name: a charge by its id (the Pix txid),
// by a payment's endToEndId, trackId or webhook id (charges.Find, as GET
// /v1/charges?txid=… reads them); a charge's or a partner's sets, the
// sets of an amount ("49,90") or of a competence date ("05/12/2026")
// (postings.Find, as GET /v1/posting-sets reads them). Each reading of
// the words is tried; the page says plainly when none found anything.
func (c *Console) search(w http.ResponseWriter, r *http.Request) {
	q := strings.TrimSpace(r.URL.Query().Get("q"))
	p := searchPage{Q: q}
	if len(q) > maxParam {
		p.Problem = "Busca longa demais: até 200 caracteres."
		c.renderStatus(w, r, http.StatusBadRequest, "search", "Busca", p)
		return
	}
	if q == "" {
		c.render(w, r, "search", "Busca", p)
		return
	}
	if err := c.find(r.Context(), q, &p); err != nil {
		c.failWith(w, r, err)
		return
	}
	// Newest first, as the journal: the readings' sets interleave.
	slices.SortFunc(p.Sets, func(a, b postings.FoundSet) int { return cmp.Compare(b.ID, a.ID) })
	p.Nothing = len(p.Charges) == 0 && len(p.Sets) == 0
	c.render(w, r, "search", "Busca: "+q, p)
}

// find fills p with what q names.
func (c *Console) find(ctx context.Context, q string, p *searchPage) error {
	seenCharge := map[string]bool{}
	addCharges := func(f charges.Filter) error {
		if f.Validate(c.Ledger.Limit()) != nil {
			return nil // not a reference of this kind
		}
		page, err := charges.Find(ctx, c.reads(ctx), inbox.ChargeRefs{}, f, nil, searchLimit)
		if err != nil {
			return err
		}
		for _, ch := range page.Charges {
			if !seenCharge[ch.ID] {
				seenCharge[ch.ID] = true
				p.Charges = append(p.Charges, ch)
			}
		}
		return nil
	}
	seenSet := map[int64]bool{}
	addSets := func(f postings.Filter, label, more string) error {
		page, err := postings.Find(ctx, c.reads(ctx), f, "", searchLimit)
		if err != nil {
			return err
		}
		for _, s := range page.Sets {
			if !seenSet[s.ID] {
				seenSet[s.ID] = true
				p.Sets = append(p.Sets, s)
			}
		}
		if page.NextCursor != "" {
			p.More = append(p.More, moreLink{label, more})
		}
		return nil
	}
	journalURL := func(v url.Values) string { return Prefix + "/journal?" + v.Encode() }

	if day, err := parseDay(q); err == nil {
		d := day.Format("02/01/2006")
		p.Read = append(p.Read, "data de competência "+d)
		more := journalURL(url.Values{"de": {d}, "ate": {d}})
		if err := addSets(postings.Filter{CompetenceFrom: day, CompetenceTo: day}, "Todos os lançamentos de "+d, more); err != nil {
			return err
		}
	}
	if amount, err := parseReais(q); err == nil && c.Ledger.Limit().Allows(amount) {
		p.Read = append(p.Read, "valor "+brl(amount))
		more := journalURL(url.Values{"min": {q}, "max": {q}})
		if err := addSets(postings.Filter{AmountMin: amount, AmountMax: amount}, "Todos os lançamentos de "+brl(amount), more); err != nil {
			return err
		}
	}
	// No reference has a ',' or a '/': words with one are an amount or a
	// date alone.
	if !refRE.MatchString(q) || strings.ContainsAny(q, ",/") {
		return nil
	}
	p.Read = append(p.Read, "referência de cobrança (id, txid, endToEndId, trackId, webhook-id)")
	for _, f := range []charges.Filter{{TxID: q}, {EndToEndID: q}, {TrackID: q}, {WebhookID: q}} {
		if err := addCharges(f); err != nil {
			return err
		}
	}
	if chargeIDRE.MatchString(q) {
		more := journalURL(url.Values{"cobranca": {q}})
		if err := addSets(postings.Filter{Charge: q}, "Todos os lançamentos da cobrança "+q, more); err != nil {
			return err
		}
	}
	if _, err := accounts.PartnerPayable(q); err == nil && (charges.Filter{Partner: q}).Validate(c.Ledger.Limit()) == nil {
		p.Read = append(p.Read, "parceiro")
		before := len(p.Charges) + len(p.Sets)
		if err := addCharges(charges.Filter{Partner: q}); err != nil {
			return err
		}
		more := journalURL(url.Values{"parceiro": {q}})
		if err := addSets(postings.Filter{Partner: q}, "Todos os lançamentos do parceiro "+q, more); err != nil {
			return err
		}
		if len(p.Charges)+len(p.Sets) > before {
			p.Partner = q
		}
	}
	return nil
}
