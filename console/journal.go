package console

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/razao/razao/accounts"
	"github.com/razao/razao/internal/cursor"
	"github.com/razao/razao/money"
	"github.com/razao/razao/postings"
)

// maxParam bounds every query value of the journal and the search: longer
// than any charge id, account code, date, amount or PSP reference.
const maxParam = 200

// journalLimit is how many sets a page of the journal shows.
const journalLimit = 50

// partials are the templates pages share, parsed with each page named.
var partials = map[string][]string{
	"journal": {"templates/sets.html"},
	"search":  {"templates/sets.html"},
	"charge":  {"templates/sets.html"},
}

// findFuncs are the template functions of the journal, search and
// charge pages.
var findFuncs = map[string]any{
	"chargeLink": chargeLink,
	"day":        dayText,
	"debit":      debitText,
	"credit":     creditText,
	"setList":    func(caption string, sets []postings.FoundSet) setList { return setList{caption, sets} },
	"inc":        func(n int) int { return n + 1 },
}

// setList is what the partial "sets" shows: sets with their legs under a
// caption.
type setList struct {
	Caption string
	Sets    []postings.FoundSet
}

// chargeLink is the console's page of the charge id: the id as one path
// segment, whatever a PSP put in it.
func chargeLink(id string) string {
	return Prefix + "/charges/" + url.PathEscape(id)
}

// dayText writes a date stored as 2026-08-05 as Brazilians do, 05/08/2026;
// anything else as stored.
func dayText(s string) string {
	t, err := time.Parse(time.DateOnly, s)
	if err != nil {
		return s
	}
	return t.Format("02/01/2006")
}

// debitText and creditText are a signed leg's two columns: a debit is
// positive, a credit negative, and the other column is blank.
func debitText(amount int64) string {
	if amount > 0 {
		return brl(amount)
	}
	return ""
}

func creditText(amount int64) string {
	if amount < 0 {
		return brl(-amount)
	}
	return ""
}

// kindOption is one kind of set in the journal's kind picker.
type kindOption struct{ Value, Label string }

var setKinds = []postings.Kind{postings.KindSale, postings.KindCommission, postings.KindRefund,
	postings.KindCommissionReversal, postings.KindPayout, postings.KindAdjustment}

func kindOptions() []kindOption {
	out := make([]kindOption, len(setKinds))
	for i, k := range setKinds {
		out[i] = kindOption{string(k), pt("set", string(k))}
	}
	return out
}

// journalForm is the journal's filter form as the user wrote it, shown
// back on every page (a refused value included, to be corrected).
type journalForm struct {
	From, To, Account, Partner, Kind, Min, Max, Charge string
}

// journalFields are the form's query parameters, in the form's order.
var journalFields = []string{"de", "ate", "conta", "parceiro", "tipo", "min", "max", "cobranca"}

func (f *journalForm) fields() []*string {
	return []*string{&f.From, &f.To, &f.Account, &f.Partner, &f.Kind, &f.Min, &f.Max, &f.Charge}
}

// query is the form's non-empty fields as a query string.
func (f journalForm) query() url.Values {
	q := url.Values{}
	for i, p := range f.fields() {
		if *p != "" {
			q.Set(journalFields[i], *p)
		}
	}
	return q
}

// refusal is a filter a user wrote that cannot be read: said in
// Portuguese, answered 400 on the page that has the form, the field at
// fault (its query parameter; "" for none) marked invalid.
type refusal struct{ field, msg string }

func (r *refusal) Error() string { return r.msg }

func refuse(field, format string, args ...any) error {
	return &refusal{field, fmt.Sprintf(format, args...)}
}

// journalLabels are the form's fields as its labels name them.
var journalLabels = map[string]string{"de": "Competência de", "ate": "Competência até", "conta": "Conta", "parceiro": "Parceiro",
	"tipo": "Tipo", "min": "Valor mínimo", "max": "Valor máximo", "cobranca": "Cobrança"}

// journalPage is the journal: its form, and a page of sets or why not.
type journalPage struct {
	Form    journalForm
	Kinds   []kindOption
	Problem string
	// Invalid is the field the problem is about.
	Invalid string
	Sets    []postings.FoundSet
	// Older is the next page's link; Newest the first page's, on a later
	// page.
	Older, Newest string
	Filtered      bool
}

// journal is Lançamentos: the posting sets across months that the form's
// filters select, newest first, with their legs, a page at a time
// (postings.Find, as GET /v1/posting-sets reads them).
func (c *Console) journal(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	p := journalPage{Kinds: kindOptions()}
	var f postings.Filter
	var err error
	p.Form, f, err = c.journalFilter(q)
	pageCursor := q.Get("cursor")
	if err == nil && len(pageCursor) > maxParam {
		err = refuse("", "Paginação inválida: volte à primeira página.")
	}
	var page postings.FoundPage
	if err == nil {
		page, err = postings.Find(r.Context(), c.reads(r.Context()), f, pageCursor, journalLimit)
		err = findRefusal(err, f)
	}
	var bad *refusal
	switch {
	case errors.As(err, &bad):
		p.Problem, p.Invalid = bad.msg, bad.field
		c.renderStatus(w, r, http.StatusBadRequest, "journal", "Lançamentos", p)
		return
	case err != nil:
		c.failWith(w, r, err)
		return
	}
	p.Sets = page.Sets
	p.Filtered = len(p.Form.query()) > 0
	if page.NextCursor != "" {
		next := p.Form.query()
		next.Set("cursor", page.NextCursor)
		p.Older = Prefix + "/journal?" + next.Encode()
	}
	if pageCursor != "" {
		p.Newest = Prefix + "/journal"
		if first := p.Form.query(); len(first) > 0 {
			p.Newest += "?" + first.Encode()
		}
	}
	c.render(w, r, "journal", "Lançamentos", p)
}

// findRefusal says in Portuguese what postings.Find refused of a filter
// the console had already read: the cursor, or an account the chart does
// not have (every other value was checked as it was read).
func findRefusal(err error, f postings.Filter) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, cursor.ErrInvalid):
		return refuse("", "Paginação inválida: volte à primeira página.")
	case errors.Is(err, postings.ErrInvalidFilter) && f.Account != "":
		return refuse("conta", "A conta “%s” não está no plano de contas.", f.Account)
	case errors.Is(err, postings.ErrInvalidFilter):
		return refuse("", "Filtro inválido: confira os campos.")
	}
	return err
}

// journalFilter reads the journal's form: each value bounded and checked
// here, refused in Portuguese naming the field.
func (c *Console) journalFilter(q url.Values) (journalForm, postings.Filter, error) {
	var form journalForm
	for i, p := range form.fields() {
		v := strings.TrimSpace(q.Get(journalFields[i]))
		if len(v) > maxParam {
			return form, postings.Filter{}, refuse(journalFields[i], "%s: mais de %d caracteres.", journalLabels[journalFields[i]], maxParam)
		}
		*p = v
	}
	var f postings.Filter
	var err error
	if form.From != "" {
		if f.CompetenceFrom, err = parseDay(form.From); err != nil {
			return form, f, refuse("de", "Competência “de”: %s", err)
		}
	}
	if form.To != "" {
		if f.CompetenceTo, err = parseDay(form.To); err != nil {
			return form, f, refuse("ate", "Competência “até”: %s", err)
		}
	}
	if !f.CompetenceFrom.IsZero() && !f.CompetenceTo.IsZero() && f.CompetenceFrom.After(f.CompetenceTo) {
		return form, f, refuse("ate", "O período de competência termina antes de começar.")
	}
	if form.Account != "" {
		if accounts.ValidateCode(form.Account) != nil {
			return form, f, refuse("conta", "Conta inválida: escreva o código da conta, como income:revenue.")
		}
		f.Account = form.Account
	}
	if form.Partner != "" {
		if _, err := accounts.PartnerPayable(form.Partner); err != nil {
			return form, f, refuse("parceiro", "Parceiro inválido: letras minúsculas, dígitos, “-”, “_” ou “.”.")
		}
		f.Partner = form.Partner
	}
	if form.Kind != "" {
		if pt("set", form.Kind) == form.Kind {
			return form, f, refuse("tipo", "Tipo de lançamento desconhecido.")
		}
		f.Kind = postings.Kind(form.Kind)
	}
	limit := c.Ledger.Limit()
	for _, a := range []struct {
		field, v string
		to       *int64
	}{{"min", form.Min, &f.AmountMin}, {"max", form.Max, &f.AmountMax}} {
		if a.v == "" {
			continue
		}
		n, err := parseReais(a.v)
		if err == nil && !limit.Allows(n) {
			err = fmt.Errorf("acima do maior valor aceito, %s", brl(limit.Max()))
		}
		if err != nil {
			return form, f, refuse(a.field, "%s: %s", journalLabels[a.field], err)
		}
		*a.to = n
	}
	if f.AmountMin > 0 && f.AmountMax > 0 && f.AmountMin > f.AmountMax {
		return form, f, refuse("min", "O valor mínimo é maior que o máximo.")
	}
	if form.Charge != "" {
		if !chargeIDRE.MatchString(form.Charge) {
			return form, f, refuse("cobranca", "Cobrança inválida: um id de cobrança tem letras, dígitos, “_”, “.”, “:” ou “-”.")
		}
		f.Charge = form.Charge
	}
	if err := f.Validate(); err != nil {
		return form, f, refuse("", "Filtro inválido: confira os campos.")
	}
	return form, f, nil
}

// chargeIDRE is a charge id (charges.MaxIDLength, charges' idRE).
var chargeIDRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.:-]{0,99}$`)

var dayRE = regexp.MustCompile(`^(\d{1,2})/(\d{1,2})/(\d{4})$`)

// parseDay reads a date written as Brazilians do, 05/12/2026 (or as
// 2026-12-05), as 00:00 UTC: a competence.
func parseDay(s string) (time.Time, error) {
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		return dayInRange(t)
	}
	m := dayRE.FindStringSubmatch(s)
	if m == nil {
		return time.Time{}, errors.New("escreva a data como DD/MM/AAAA, por exemplo 05/12/2026.")
	}
	d, _ := strconv.Atoi(m[1])
	mo, _ := strconv.Atoi(m[2])
	y, _ := strconv.Atoi(m[3])
	t := time.Date(y, time.Month(mo), d, 0, 0, 0, 0, time.UTC)
	if t.Day() != d || int(t.Month()) != mo {
		return time.Time{}, fmt.Errorf("%s não é uma data do calendário.", s)
	}
	return dayInRange(t)
}

func dayInRange(t time.Time) (time.Time, error) {
	if t.Year() < 1900 || t.Year() > 9999 {
		return time.Time{}, errors.New("o ano deve estar entre 1900 e 9999.")
	}
	return t, nil
}

var reaisRE = regexp.MustCompile(`^(?:R\$\s*)?(\d{1,3}(?:\.\d{3})+|\d+)(?:,(\d{1,2}))?$`)

// parseReais reads an amount written as Brazilians do (49,90, R$ 1.234,56,
// 50) as centavos, from 1 centavo to money.Ceiling.
func parseReais(s string) (int64, error) {
	m := reaisRE.FindStringSubmatch(s)
	if m == nil {
		return 0, errors.New("escreva o valor em reais, como 49,90 ou 1.234,56.")
	}
	whole := strings.ReplaceAll(m[1], ".", "")
	if len(whole) > 16 {
		return 0, errors.New("valor grande demais.")
	}
	reais, _ := strconv.ParseInt(whole, 10, 64)
	cents := int64(0)
	if m[2] != "" {
		cents, _ = strconv.ParseInt(m[2], 10, 64)
		if len(m[2]) == 1 {
			cents *= 10
		}
	}
	if reais > money.Ceiling/100 {
		return 0, errors.New("valor grande demais.")
	}
	n := reais*100 + cents
	if n < 1 || n > money.Ceiling {
		return 0, errors.New("o valor deve ser de pelo menos R$ 0,01.")
	}
	return n, nil
}
