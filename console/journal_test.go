package console

import (
	"context"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/razao/razao/postings"
)

var (
	setIDRE   = regexp.MustCompile(`<tbody class="set" id="set-(\d+)"`)
	olderRE   = regexp.MustCompile(`href="([^"]*)" rel="next" id="older"`)
	legRowRE  = regexp.MustCompile(`(?s)<tbody class="set" id="set-(\d+)".*?</tbody>`)
	legAcctRE = regexp.MustCompile(`<tr class="leg" data-account="([^"]+)">`)
)

// setIDs are the ids of the sets a page shows, in its order.
func setIDs(page string) []int64 {
	var ids []int64
	for _, m := range setIDRE.FindAllStringSubmatch(page, -1) {
		id, _ := strconv.ParseInt(m[1], 10, 64)
		ids = append(ids, id)
	}
	return ids
}

// apiSetIDs are the ids of the sets GET /v1/posting-sets?query lists on
// its first page of limit.
func apiSetIDs(c *client, token, query string, limit int) []int64 {
	c.t.Helper()
	var page postings.FoundPage
	c.api(token, "/v1/posting-sets?limit="+strconv.Itoa(limit)+"&"+query, &page)
	ids := []int64{}
	for _, s := range page.Sets {
		ids = append(ids, s.ID)
	}
	return ids
}

// Each filter of the journal's form selects the sets the API's filter of
// the same meaning lists, newest first; each set is shown with its legs;
// a read token sees it.
func TestJournalFiltersListTheAPIsSets(t *testing.T) {
	t.Parallel()
	f, srv := setup(t)
	c := signedIn(t, srv, f.read)
	for _, tt := range []struct{ form, api string }{
		{"", ""},
		{"de=01%2F09%2F2026&ate=30%2F09%2F2026", "competence_from=2026-09-01&competence_to=2026-09-30"},
		{"de=2026-08-20", "competence_from=2026-08-20"},
		{"ate=31%2F08%2F2026", "competence_to=2026-08-31"},
		{"conta=income%3Arevenue", "account=income:revenue"},
		{"conta=liabilities", "account=liabilities"},
		{"parceiro=p1", "partner=p1"},
		{"tipo=payout", "kind=payout"},
		{"min=49%2C90&max=49%2C90", "amount_min=4990&amount_max=4990"},
		{"min=R%24+50", "amount_min=5000"},
		{"max=1.000%2C00", "amount_max=100000"},
		{"cobranca=c1", "charge=c1"},
		{"cobranca=c1&tipo=sale", "charge=c1&kind=sale"},
		{"de=01%2F09%2F2026&tipo=refund&conta=income%3Arevenue", "competence_from=2026-09-01&kind=refund&account=income:revenue"},
	} {
		res, page := c.get("/console/journal?" + tt.form)
		if res.StatusCode != http.StatusOK {
			t.Errorf("%s: %d\n%s", tt.form, res.StatusCode, page)
			continue
		}
		got, want := setIDs(page), apiSetIDs(c, f.read, tt.api, journalLimit)
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("journal?%s shows sets %v, the API lists %v", tt.form, got, want)
		}
		if len(want) == 0 && !strings.Contains(page, `id="journal-empty"`) {
			t.Errorf("journal?%s: no sets and no word saying so", tt.form)
		}
	}
	// The legs of every set, as the API gives them.
	_, page := c.get("/console/journal")
	var all postings.FoundPage
	c.api(f.read, "/v1/posting-sets?limit=50", &all)
	legs := map[string][]string{}
	for _, m := range legRowRE.FindAllStringSubmatch(page, -1) {
		for _, a := range legAcctRE.FindAllStringSubmatch(m[0], -1) {
			legs[m[1]] = append(legs[m[1]], a[1])
		}
	}
	for _, s := range all.Sets {
		var want []string
		for _, l := range s.Postings {
			want = append(want, l.Account)
		}
		if got := legs[strconv.FormatInt(s.ID, 10)]; fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("set %d: legs %v on the page, the API's %v", s.ID, got, want)
		}
	}
	// What the PSP or the app wrote is text.
	if !strings.Contains(page, "Repasse &lt;b&gt;agosto&lt;/b&gt; &lt;script&gt;alert(1)&lt;/script&gt;") || strings.Contains(page, "<script>alert") {
		t.Error("the payout's description is not shown escaped")
	}
}

// The journal pages back through every set, newest first, each once, by
// its "Mais antigos" link, which keeps the filters; the last page has no
// such link, and a later page links back to the newest.
func TestJournalPagesThroughEverySetOnce(t *testing.T) {
	t.Parallel()
	f := newBareFixture(t)
	const n = 2*journalLimit + 7
	for i := range n {
		s, err := postings.Sale("pg-"+strconv.Itoa(i), "BRL", 1000+int64(i%3), 0, sp(2026, 9, 1+i%28, 10, 0))
		post(t, f.ledger, s, err)
	}
	srv := serve(t, f.router)
	c := signedIn(t, srv, f.read)
	for _, filter := range []string{"", "conta=assets%3Acash&tipo=sale"} {
		var seen []int64
		next := "/console/journal?" + filter
		pages := 0
		for next != "" {
			pages++
			if pages > 5 {
				t.Fatalf("%s: more than 5 pages", filter)
			}
			res, page := c.get(next)
			if res.StatusCode != http.StatusOK {
				t.Fatalf("%s: %d", next, res.StatusCode)
			}
			seen = append(seen, setIDs(page)...)
			if pages > 1 && !strings.Contains(page, `rel="first"`) {
				t.Errorf("page %d has no link back to the newest", pages)
			}
			next = ""
			if m := olderRE.FindStringSubmatch(page); m != nil {
				next = html.UnescapeString(m[1])
				if filter != "" && !strings.Contains(next, "conta=assets%3Acash") {
					t.Errorf("the next page's link %s drops the filters", next)
				}
			}
		}
		if pages != 3 || len(seen) != n {
			t.Fatalf("%q: %d sets in %d pages, want %d in 3", filter, len(seen), pages, n)
		}
		for i := 1; i < len(seen); i++ {
			if seen[i] >= seen[i-1] {
				t.Fatalf("%q: set %d after %d: not newest first, or twice", filter, seen[i], seen[i-1])
			}
		}
	}
}

// Bad filter input is a Portuguese message on the journal's page with its
// form, status 400, never a 500; every value is bounded.
func TestJournalRefusesBadFiltersInPortuguese(t *testing.T) {
	t.Parallel()
	f, srv := setup(t)
	c := signedIn(t, srv, f.read)
	var otherCursor string
	{
		// A cursor of another filter's listing.
		g := newBareFixture(t)
		for i := range journalLimit + 1 {
			s, err := postings.Sale("x-"+strconv.Itoa(i), "BRL", 1000, 0, sp(2026, 9, 2, 10, 0))
			post(t, g.ledger, s, err)
		}
		p, err := postings.Find(context.Background(), g.db, postings.Filter{Kind: postings.KindSale}, "", journalLimit)
		if err != nil || p.NextCursor == "" {
			t.Fatal(err, p.NextCursor)
		}
		otherCursor = p.NextCursor
	}
	long := strings.Repeat("a", maxParam+1)
	for query, want := range map[string]string{
		"de=31%2F02%2F2026":                      "não é uma data do calendário",
		"de=2026%2F13%2F01":                      "DD/MM/AAAA",
		"ate=05-12-2026":                         "DD/MM/AAAA",
		"de=01%2F01%2F0001":                      "1900 e 9999",
		"de=02%2F09%2F2026&ate=01%2F09%2F2026":   "termina antes de começar",
		"min=abc":                                "em reais",
		"min=1.2345":                             "em reais",
		"max=0":                                  "pelo menos R$ 0,01",
		"min=99999999999999999999":               "grande demais",
		"min=50&max=49%2C99":                     "mínimo é maior que o máximo",
		"conta=Bad+Code":                         "Conta inválida",
		"conta=assets%3Anope":                    "não está no plano de contas",
		"parceiro=A%3AB":                         "Parceiro inválido",
		"tipo=venda":                             "Tipo de lançamento desconhecido",
		"cobranca=%3Cscript%3E":                  "Cobrança inválida",
		"cursor=garbage":                         "Paginação inválida",
		"cursor=" + url.QueryEscape(otherCursor): "Paginação inválida",
		"cobranca=" + long:                       "mais de 200 caracteres",
		"cursor=" + long:                         "Paginação inválida",
	} {
		res, page := c.get("/console/journal?" + query)
		if res.StatusCode != http.StatusBadRequest {
			t.Errorf("%.60s: %d, want 400", query, res.StatusCode)
			continue
		}
		msg := regexp.MustCompile(`(?s)id="journal-problem">(.*?)</p>`).FindStringSubmatch(page)
		if msg == nil || !strings.Contains(html.UnescapeString(msg[1]), want) {
			t.Errorf("%.60s: message %q, want one saying %q", query, msg, want)
		}
		if !strings.Contains(page, `id="journal-filters"`) {
			t.Errorf("%.60s: the refusal has no form to correct the filter", query)
		}
		if field, _, _ := strings.Cut(query, "="); field != "cursor" && strings.Count(page, `aria-invalid="true"`) != 1 {
			t.Errorf("%.60s: %d fields marked invalid, want the one at fault", query, strings.Count(page, `aria-invalid="true"`))
		}
	}
	// The refused value is shown back as text.
	if _, page := c.get("/console/journal?cobranca=%3Cscript%3E"); strings.Contains(page, "<script>") {
		t.Error("a refused charge id is shown as HTML")
	}
}

// The search finds what its words name: a charge by its id, endToEndId,
// trackId or webhook-id; a partner's charges and sets; the sets of an
// amount or of a competence date; and says plainly when nothing matched.
func TestSearchFindsWhatItsWordsName(t *testing.T) {
	t.Parallel()
	f, _ := withCharges(t)
	srv := serve(t, f.router)
	c := signedIn(t, srv, f.read)
	chargeRowRE := regexp.MustCompile(`<tr data-charge="([^"]+)">`)
	for _, tt := range []struct {
		q       string
		charges []string
		sets    string // the API's query listing the sets the search shows
	}{
		{"order-1", []string{"order-1"}, "charge=order-1"},
		{pixE2E, []string{"pix1"}, ""},
		{"E00000000000000000000000000000A2", []string{"pix1"}, ""}, // the second payment's: its delivery names pix1
		{"track-1", []string{"order-1"}, ""},
		{"msg_1", []string{"std-1"}, ""},
		{"p1", []string{"order-1"}, "partner=p1"},
		{"49,90", nil, "amount_min=4990&amount_max=4990"},
		{"R$ 100,00", nil, "amount_min=10000&amount_max=10000"},
		{"05/08/2026", nil, "competence_from=2026-08-05&competence_to=2026-08-05"},
		{"  never-paid  ", []string{"never-paid"}, ""},
	} {
		res, page := c.get("/console/search?q=" + url.QueryEscape(tt.q))
		if res.StatusCode != http.StatusOK {
			t.Errorf("%q: %d", tt.q, res.StatusCode)
			continue
		}
		var got []string
		for _, m := range chargeRowRE.FindAllStringSubmatch(page, -1) {
			got = append(got, m[1])
		}
		if fmt.Sprint(got) != fmt.Sprint(tt.charges) {
			t.Errorf("%q finds charges %v, want %v", tt.q, got, tt.charges)
		}
		wantSets := []int64{}
		if tt.sets != "" {
			wantSets = apiSetIDs(c, f.read, tt.sets, searchLimit)
			if len(wantSets) == 0 {
				t.Fatalf("%q: the API lists no sets for %s: a test that proves nothing", tt.q, tt.sets)
			}
		}
		if gotSets := setIDs(page); fmt.Sprint(gotSets) != fmt.Sprint(wantSets) && !(len(gotSets) == 0 && len(wantSets) == 0) {
			t.Errorf("%q finds sets %v, the API %v", tt.q, gotSets, wantSets)
		}
		if strings.Contains(page, `id="search-nothing"`) {
			t.Errorf("%q found things, and the page says nothing matched", tt.q)
		}
	}
	for _, q := range []string{"nada-disso", "E99999999999999999999999999999ZZ", "31/12/1999", "12.345,67", "<b>não</b> existe"} {
		res, page := c.get("/console/search?q=" + url.QueryEscape(q))
		if res.StatusCode != http.StatusOK || !strings.Contains(page, `id="search-nothing"`) {
			t.Errorf("%q: %d, and no word that nothing matched", q, res.StatusCode)
		}
		if strings.Contains(page, "<b>não</b>") {
			t.Errorf("%q is shown as HTML", q)
		}
	}
	res, page := c.get("/console/search?q=" + strings.Repeat("a", maxParam+1))
	if res.StatusCode != http.StatusBadRequest || !strings.Contains(page, "Busca longa demais") {
		t.Errorf("a search of %d characters: %d", maxParam+1, res.StatusCode)
	}
	if res, _ := c.get("/console/search"); res.StatusCode != http.StatusOK {
		t.Errorf("an empty search: %d", res.StatusCode)
	}
}

// The amounts and dates the journal and the search read are Brazilian.
func TestParseReaisAndDay(t *testing.T) {
	t.Parallel()
	for s, want := range map[string]int64{"49,90": 4990, "49,9": 4990, "49": 4900, "R$ 1.234,56": 123456, "R$1.234": 123400, "0,01": 1, "1.000.000,00": 100000000} {
		if got, err := parseReais(s); err != nil || got != want {
			t.Errorf("parseReais(%q) = %d, %v; want %d", s, got, err, want)
		}
	}
	for _, s := range []string{"", "0", "0,00", "49.90", "49,999", "1,234.56", "-5", "12.34", "R$", "1 000"} {
		if got, err := parseReais(s); err == nil {
			t.Errorf("parseReais(%q) = %d, want a refusal", s, got)
		}
	}
	for s, want := range map[string]string{"05/12/2026": "2026-12-05", "5/1/2026": "2026-01-05", "2026-12-05": "2026-12-05", "29/02/2028": "2028-02-29"} {
		if got, err := parseDay(s); err != nil || got.Format(time.DateOnly) != want || got.Location() != time.UTC {
			t.Errorf("parseDay(%q) = %v, %v; want %s UTC", s, got, err, want)
		}
	}
	for _, s := range []string{"29/02/2027", "00/01/2026", "05/12/26", "12/2026", "05/12/0999"} {
		if got, err := parseDay(s); err == nil {
			t.Errorf("parseDay(%q) = %v, want a refusal", s, got)
		}
	}
}
