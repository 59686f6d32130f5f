package console

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/razao/razao/accounts"
	"github.com/razao/razao/adjustments"
	"github.com/razao/razao/internal/cursor"
	"github.com/razao/razao/postings"
)

// The corrections: adjustments and reversals proposed by one admin and
// approved or rejected by another (four eyes), through
// adjustments.Corrections, the code /v1/adjustments and razao adjust
// call. Who acts is the signed-in token's name.

// legRows is how many leg rows the proposal form shows at first; the
// form's "more legs" link asks for more, up to adjustments.MaxLegs.
const legRows = 4

// maxChartOptions bounds the accounts the proposal form suggests.
const maxChartOptions = cursor.MaxLimit

// legInput is one row of the proposal form as typed.
type legInput struct {
	Account, Side, Value string
}

// proposeForm is the proposal form: its idempotency key (fresh per
// showing, kept when the form comes back refused, since nothing was
// written) and what was typed.
type proposeForm struct {
	Key                                 string
	Legs                                []legInput
	Reason, Competence, Charge, Partner string
	Divergence                          string
	Problem                             string
	MoreLegs                            string
}

// adjustmentsPage is the queue and its forms.
type adjustmentsPage struct {
	Status, Kind string
	Statuses     []adjustments.Status
	List         []adjustments.Adjustment
	Next         string
	Done         string
	Form         proposeForm
	Chart        []accounts.ChartEntry
	FourEyes     bool
	// Now is the console's clock: a proposal past its time shows as
	// expiring before the sweeper marks it expired.
	Now time.Time
}

// corrections are the console's corrections, with the service's policy.
func (c *Console) corrections() adjustments.Corrections {
	return adjustments.Corrections{DB: c.DB, Ledger: c.Ledger, Config: c.Adjustments}
}

// actor is who the session's token names.
func actor(r *http.Request) adjustments.Actor {
	s, _ := sessionFrom(r.Context())
	return adjustments.Actor{Name: s.token.Name, TokenID: s.token.ID}
}

// adjustmentsList shows the queue, oldest first, filtered by status and
// kind (adjustments.List, as GET /v1/adjustments), and the forms.
func (c *Console) adjustmentsList(w http.ResponseWriter, r *http.Request) {
	rows := legRows
	if n, err := strconv.Atoi(r.URL.Query().Get("pernas")); err == nil {
		rows = min(max(n, legRows), adjustments.MaxLegs)
	}
	c.showAdjustments(w, r, http.StatusOK, proposeForm{Key: newSecret(), Legs: make([]legInput, rows),
		Competence: c.Now().In(c.loc()).Format(dateLayout)})
}

// showAdjustments renders the page with form as given (a refused form
// comes back with what was typed and its problem, status 4xx).
func (c *Console) showAdjustments(w http.ResponseWriter, r *http.Request, status int, form proposeForm) {
	q := r.URL.Query()
	pg := adjustmentsPage{Status: q.Get("status"), Kind: q.Get("kind"), Statuses: adjustments.Statuses,
		Done: doneMessage(q), Form: form, FourEyes: !c.Adjustments.ApprovalOff, Now: c.Now()}
	f := adjustments.Filter{Status: adjustments.Status(pg.Status), Kind: adjustments.Kind(pg.Kind)}
	if f.Status != "" && !slices.Contains(adjustments.Statuses, f.Status) ||
		f.Kind != "" && f.Kind != adjustments.KindAdjustment && f.Kind != adjustments.KindReversal {
		c.fail(w, r, http.StatusBadRequest, "Filtro inválido: escolha um estado e um tipo da lista.")
		return
	}
	after, ok := afterParam(q)
	if !ok {
		c.fail(w, r, http.StatusBadRequest, "Paginação inválida: volte à primeira página.")
		return
	}
	list, more, err := adjustments.List(r.Context(), c.reads(r.Context()), f, after, pageSize)
	if err != nil {
		c.failWith(w, r, err)
		return
	}
	pg.List = list
	if more {
		next := url.Values{"after": {strconv.FormatInt(list[len(list)-1].ID, 10)}}
		if pg.Status != "" {
			next.Set("status", pg.Status)
		}
		if pg.Kind != "" {
			next.Set("kind", pg.Kind)
		}
		pg.Next = Prefix + "/adjustments?" + next.Encode()
	}
	if len(form.Legs) < adjustments.MaxLegs {
		pg.Form.MoreLegs = Prefix + "/adjustments?" + url.Values{"pernas": {strconv.Itoa(min(len(form.Legs)+legRows, adjustments.MaxLegs))}}.Encode() + "#propose"
	}
	if pg.Chart, _, err = accounts.Chart(r.Context(), c.DB, 0, maxChartOptions); err != nil {
		c.failWith(w, r, err)
		return
	}
	c.renderStatus(w, r, status, "adjustments", "Ajustes", pg)
}

// doneMessage is the page's confirmation of the act that redirected to
// it (?feito=...&id=N).
func doneMessage(q url.Values) string {
	id, err := strconv.ParseInt(q.Get("id"), 10, 64)
	if err != nil || id <= 0 {
		return ""
	}
	switch q.Get("feito") {
	case "proposto":
		return fmt.Sprintf("Ajuste #%d proposto: aguarda a aprovação de outra pessoa.", id)
	case "lancado":
		return fmt.Sprintf("Ajuste #%d aprovado e lançado.", id)
	case "recusado":
		return fmt.Sprintf("Ajuste #%d recusado.", id)
	case "repetido":
		return fmt.Sprintf("Ajuste #%d já tinha sido pedido: nada novo foi gravado.", id)
	}
	return ""
}

func (c *Console) redirectDone(w http.ResponseWriter, r *http.Request, adj adjustments.Adjustment, done string) {
	if adj.Replayed {
		done = "repetido"
	} else if adj.Status == adjustments.StatusBooked {
		done = "lancado"
	}
	q := url.Values{"feito": {done}, "id": {strconv.FormatInt(adj.ID, 10)}}
	http.Redirect(w, r, fmt.Sprintf("%s/adjustments?%s#adjustment-%d", Prefix, q.Encode(), adj.ID), http.StatusSeeOther)
}

// proposeAdjustment proposes the form's adjustment. A refused form comes
// back with what was typed and the problem in Portuguese.
func (c *Console) proposeAdjustment(w http.ResponseWriter, r *http.Request) {
	form, req, err := c.readProposal(r)
	if err == nil {
		var adj adjustments.Adjustment
		adj, err = c.corrections().Propose(r.Context(), req, actor(r), c.Now())
		if err == nil {
			c.redirectDone(w, r, adj, "proposto")
			return
		}
	}
	status, msg, ok := refusalOf(err)
	if !ok {
		c.failWith(w, r, err)
		return
	}
	form.Problem = msg
	c.showAdjustments(w, r, status, form)
}

// readProposal reads the proposal form into the request it asks for,
// checking in Portuguese what a person types wrong (each leg's account,
// side and value, the balance, the note and the date). What it passes is
// checked again by adjustments.Propose.
func (c *Console) readProposal(r *http.Request) (proposeForm, adjustments.Request, error) {
	f := r.PostForm
	form := proposeForm{Key: f.Get("key"), Reason: f.Get("nota"), Competence: f.Get("competencia"),
		Charge: f.Get("cobranca"), Partner: f.Get("parceiro"), Divergence: f.Get("divergencia")}
	accts, sides, values := f["conta"], f["lado"], f["valor"]
	n := max(len(accts), len(sides), len(values))
	if n > adjustments.MaxLegs {
		return form, adjustments.Request{}, formRefusal(http.StatusBadRequest, fmt.Sprintf("No máximo %d pernas por ajuste.", adjustments.MaxLegs))
	}
	at := func(vs []string, i int) string {
		if i < len(vs) {
			return strings.TrimSpace(vs[i])
		}
		return ""
	}
	req := adjustments.Request{IdempotencyKey: form.Key, Reason: form.Reason, ChargeID: strings.TrimSpace(form.Charge),
		Partner: strings.TrimSpace(form.Partner)}
	var problems []string
	var debits, credits int64
	for i := range n {
		l := legInput{Account: at(accts, i), Side: at(sides, i), Value: at(values, i)}
		form.Legs = append(form.Legs, l)
		if l.Account == "" && l.Value == "" {
			continue // an unused row
		}
		leg := i + 1
		amount, err := parseBRL(l.Value)
		switch {
		case l.Account == "":
			problems = append(problems, fmt.Sprintf("Perna %d: escolha a conta.", leg))
			continue
		case l.Side != "debito" && l.Side != "credito":
			problems = append(problems, fmt.Sprintf("Perna %d: escolha débito ou crédito.", leg))
			continue
		case err != nil:
			problems = append(problems, fmt.Sprintf("Perna %d: %s", leg, err))
			continue
		}
		if err := accounts.ValidateCode(l.Account); err != nil {
			problems = append(problems, fmt.Sprintf("Perna %d: %q não é um código de conta (como assets:cash).", leg, short(l.Account)))
			continue
		}
		if _, err := accounts.Get(r.Context(), c.DB, l.Account); errors.Is(err, accounts.ErrUnknownAccount) {
			problems = append(problems, fmt.Sprintf("Perna %d: a conta %s não existe no plano de contas.", leg, l.Account))
			continue
		} else if err != nil {
			return form, req, err
		}
		if l.Side == "credito" {
			credits += amount // bounded: at most MaxLegs amounts, each checked below the ledger's limit
			amount = -amount
		} else {
			debits += amount
		}
		req.Legs = append(req.Legs, adjustments.Leg{Account: l.Account, Amount: amount})
	}
	if len(problems) == 0 && len(req.Legs) < adjustments.MinLegs {
		problems = append(problems, "Um ajuste tem ao menos duas pernas: uma a débito e outra a crédito.")
	}
	if len(problems) == 0 && debits != credits {
		problems = append(problems, fmt.Sprintf("Débitos (%s) e créditos (%s) não batem.", brl(debits), brl(credits)))
	}
	if reason := strings.TrimSpace(form.Reason); reason == "" || utf8.RuneCountInString(reason) > adjustments.MaxReasonLength {
		problems = append(problems, fmt.Sprintf("Escreva uma nota dizendo o porquê (até %d caracteres).", adjustments.MaxReasonLength))
	}
	if d, err := c.parseDay("competência", form.Competence); err != nil {
		problems = append(problems, err.Error())
	} else {
		req.Competence = d.Format("2006-01-02")
	}
	if v := strings.TrimSpace(form.Divergence); v != "" {
		id, err := strconv.ParseInt(v, 10, 64)
		if err != nil || id <= 0 {
			problems = append(problems, "Divergência: informe o número dela (como 12).")
		}
		req.DivergenceID = id
	}
	if len(problems) > 0 {
		return form, req, formRefusal(http.StatusBadRequest, strings.Join(problems, " "))
	}
	return form, req, nil
}

// short cuts what a person typed to a length a message can quote.
func short(s string) string {
	if utf8.RuneCountInString(s) <= 64 {
		return s
	}
	return string([]rune(s)[:64]) + "…"
}

// reverseSet proposes the reversal of a posting set, by its id.
func (c *Console) reverseSet(w http.ResponseWriter, r *http.Request) {
	id, err := strconv.ParseInt(strings.TrimSpace(r.PostForm.Get("lancamento")), 10, 64)
	if err != nil || id <= 0 {
		c.fail(w, r, http.StatusBadRequest, "Informe o número do lançamento a estornar (como 42).")
		return
	}
	reason := r.PostForm.Get("nota")
	if t := strings.TrimSpace(reason); t == "" || utf8.RuneCountInString(t) > adjustments.MaxReasonLength {
		c.fail(w, r, http.StatusBadRequest, fmt.Sprintf("Escreva uma nota dizendo o porquê do estorno (até %d caracteres).", adjustments.MaxReasonLength))
		return
	}
	adj, err := c.corrections().ProposeReversal(r.Context(), id, reason, actor(r), c.Now())
	if err != nil {
		c.refuse(w, r, err)
		return
	}
	c.redirectDone(w, r, adj, "proposto")
}

// approveAdjustment approves a proposal and books it; its proposer may
// not (four eyes).
func (c *Console) approveAdjustment(w http.ResponseWriter, r *http.Request) {
	id, ok := idParam(r)
	if !ok {
		c.refuse(w, r, adjustments.ErrNotFound)
		return
	}
	adj, err := c.corrections().Approve(r.Context(), id, actor(r), c.Now())
	if err != nil {
		c.refuse(w, r, err)
		return
	}
	c.redirectDone(w, r, adj, "lancado")
}

// rejectAdjustment rejects a proposal, with an optional note.
func (c *Console) rejectAdjustment(w http.ResponseWriter, r *http.Request) {
	id, ok := idParam(r)
	if !ok {
		c.refuse(w, r, adjustments.ErrNotFound)
		return
	}
	adj, err := c.corrections().Reject(r.Context(), id, actor(r), r.PostForm.Get("nota"), c.Now())
	if err != nil {
		c.refuse(w, r, err)
		return
	}
	c.redirectDone(w, r, adj, "recusado")
}

// adjustmentRefusals are the corrections' refusals in Portuguese.
var adjustmentRefusals = []actRefusal{
	{adjustments.ErrOwnProposal, http.StatusForbidden, "Você propôs este ajuste: quem aprova precisa ser outra pessoa (outro token, de outro nome). Peça a um colega."},
	{adjustments.ErrNotFound, http.StatusNotFound, "Ajuste desconhecido."},
	{adjustments.ErrExpired, http.StatusConflict, "Este ajuste expirou sem aprovação: proponha-o de novo."},
	{adjustments.ErrDecided, http.StatusConflict, "Este ajuste já foi decidido (lançado, recusado ou expirado)."},
	{adjustments.ErrReversalPending, http.StatusConflict, "Este lançamento já tem um estorno proposto."},
	{adjustments.ErrInvalid, http.StatusBadRequest, "Ajuste inválido: confira as pernas, os valores, a nota, a competência e os vínculos (cobrança, parceiro, divergência)."},
	{postings.ErrSetNotFound, http.StatusNotFound, "Lançamento desconhecido."},
	{postings.ErrNotReversible, http.StatusConflict, "Este lançamento não pode ser estornado: só ajustes e repasses são estornados (vendas e estornos se corrigem por ajuste)."},
	{postings.ErrAlreadyReversed, http.StatusConflict, "Este lançamento já foi estornado."},
	{postings.ErrIdempotencyConflict, http.StatusConflict, "Este formulário já foi usado para outro pedido: recarregue a página."},
}
