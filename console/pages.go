package console

import (
	"cmp"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gorilla/mux"

	"github.com/razao/razao/accounts"
	"github.com/razao/razao/auth"
	"github.com/razao/razao/divergences"
	"github.com/razao/razao/internal/problem"
	"github.com/razao/razao/monthsums"
	"github.com/razao/razao/partners"
	"github.com/razao/razao/periods"
	"github.com/razao/razao/reports"
)

// refusals are what a user can cause with their own words, each said in
// Portuguese; its status is its kind's, as the API answers it
// (problem.StatusOf), unless given here.
var refusals = []struct {
	err    error
	status int
	msg    string
}{
	{reports.ErrInvalidMonth, 0, "Mês inválido: use AAAA-MM."},
	{reports.ErrInvalidRange, 0, "Intervalo de meses inválido."},
	{reports.ErrInvalidCursor, 0, "Paginação inválida: volte à primeira página."},
	{reports.ErrUnknownAccount, 0, "Conta desconhecida."},
	{accounts.ErrInvalidCode, http.StatusNotFound, "Conta desconhecida."},
	{partners.ErrNotFound, 0, "Parceiro desconhecido."},
	{divergences.ErrNotFound, 0, "Divergência desconhecida."},
	{reports.ErrUnknownKind, 0, "Exportação desconhecida."},
	{reports.ErrUnknownDialect, 0, "Exportação desconhecida."},
	{divergences.ErrAlreadyResolved, 0, "Esta divergência já foi resolvida."},
	{divergences.ErrInvalidNote, 0, "Escreva uma nota de resolução (até 2.000 caracteres)."},
	{periods.ErrMonthNotOver, 0, "Este mês ainda não terminou: não pode ser fechado."},
	{periods.ErrEarlierMonthOpen, 0, "Um mês anterior está aberto: feche os meses em ordem."},
	{periods.ErrAlreadyClosed, 0, "Este mês já está fechado."},
}

// failWith answers err as an error page: a refusal with its message,
// anything else as a 500 logged with its detail.
func (c *Console) failWith(w http.ResponseWriter, r *http.Request, err error) {
	for _, f := range refusals {
		if errors.Is(err, f.err) {
			status := f.status
			if status == 0 {
				status = problem.StatusOf(f.err)
			}
			c.fail(w, r, status, f.msg)
			return
		}
	}
	if r.Context().Err() == nil {
		c.Log.ErrorContext(r.Context(), "console page failed", "path", r.URL.Path, "error", err)
	}
	c.fail(w, r, http.StatusInternalServerError, "Erro interno: tente de novo; se persistir, veja os logs do serviço.")
}

// currentMonth is the competence month of now.
func (c *Console) currentMonth() periods.Month {
	return c.Ledger.Calendar().Month(c.Now())
}

// monthParam reads a month from the path or query variable name; absent,
// def.
func monthParam(r *http.Request, name string, def periods.Month) (periods.Month, error) {
	v := mux.Vars(r)[name]
	if v == "" {
		v = r.URL.Query().Get(name)
	}
	if v == "" {
		return def, nil
	}
	return periods.ParseMonth(v)
}

func (c *Console) home(w http.ResponseWriter, r *http.Request) {
	http.Redirect(w, r, Prefix+"/month/"+c.currentMonth().String(), http.StatusSeeOther)
}

// pickMonth is the month picker's target: GET /console/month?ano=&mes=
// (the picker's year and month fields), or ?month=YYYY-MM.
func (c *Console) pickMonth(w http.ResponseWriter, r *http.Request) {
	m, err := monthParam(r, "month", c.currentMonth())
	if q := r.URL.Query(); q.Has("ano") || q.Has("mes") {
		m, err = pickedMonth(q.Get("ano"), q.Get("mes"))
	}
	if err != nil {
		c.failWith(w, r, err)
		return
	}
	http.Redirect(w, r, Prefix+"/month/"+m.String(), http.StatusSeeOther)
}

// pickedMonth is the month of the picker's year (2026) and month (08)
// fields, or ErrInvalidMonth.
func pickedMonth(year, month string) (periods.Month, error) {
	if len(year) != 4 || len(month) != 2 {
		return periods.Month{}, fmt.Errorf("%w: year %q, month %q", reports.ErrInvalidMonth, year, month)
	}
	return periods.ParseMonth(year + "-" + month)
}

// loginForm shows the sign-in form with a fresh double-submit value.
func (c *Console) loginForm(w http.ResponseWriter, r *http.Request) {
	c.showLogin(w, r, http.StatusOK, "")
}

func (c *Console) showLogin(w http.ResponseWriter, r *http.Request, status int, problem string) {
	value := newSecret()
	c.setCookie(w, r, loginCookie, value, 10*time.Minute)
	c.renderStatus(w, r, status, "login", "Entrar", struct{ CSRF, Problem string }{value, problem})
}

// login exchanges the form's API token for a session cookie.
func (c *Console) login(w http.ResponseWriter, r *http.Request) {
	if !c.parseForm(w, r) {
		return
	}
	ck, err := r.Cookie(loginCookie)
	if err != nil || !sameSecret(r.PostForm.Get("csrf"), ck.Value) {
		c.fail(w, r, http.StatusForbidden, "Formulário recusado (CSRF): recarregue a página de entrada.")
		return
	}
	addr, token := c.clientAddr(r), strings.TrimSpace(r.PostForm.Get("token"))
	if wait, refused := c.signIns.refused(addr, token); refused {
		c.Log.WarnContext(r.Context(), "console sign-in refused: too many failed attempts", "addr", addr)
		w.Header().Set("Retry-After", strconv.FormatInt(int64((wait+time.Second-1)/time.Second), 10))
		c.showLogin(w, r, http.StatusTooManyRequests, "Muitas tentativas de entrada sem sucesso. Tente de novo em "+waitText(wait)+".")
		return
	}
	plaintext, t, err := c.signIn(r.Context(), token)
	switch {
	case errors.Is(err, auth.ErrUnauthenticated):
		c.signIns.failed(addr, token)
		c.Log.DebugContext(r.Context(), "console sign-in refused", "reason", err)
		c.showLogin(w, r, http.StatusUnauthorized, "Token inválido ou revogado.")
		return
	case err != nil:
		c.Log.ErrorContext(r.Context(), "console sign-in failed", "error", err)
		c.fail(w, r, http.StatusServiceUnavailable, "Não foi possível entrar agora.")
		return
	}
	c.Log.InfoContext(r.Context(), "console sign-in", "token", t.Name)
	c.clearCookie(w, r, loginCookie)
	c.setCookie(w, r, sessionCookie, plaintext, SessionTTL)
	http.Redirect(w, r, Prefix+"/", http.StatusSeeOther)
}

func (c *Console) logout(w http.ResponseWriter, r *http.Request) {
	s, _ := sessionFrom(r.Context())
	if err := c.signOut(r.Context(), s.plaintext); err != nil {
		c.failWith(w, r, err)
		return
	}
	c.clearCookie(w, r, sessionCookie)
	http.Redirect(w, r, Prefix+"/login", http.StatusSeeOther)
}

// tbRow is one row of the balancete, which is one table: an account with
// the accounts rolled up into it, indented by its depth under its shown
// ancestors. A group (an account with rows under it) has a toggle that
// shows or hides them (balancete.js); a group is shown open at first when
// it is a root, as the chart's five classes are, and closed below that
// (a partner's payables can be thousands of rows).
type tbRow struct {
	reports.TrialBalanceLine
	// ID is the row's element id; In lists the ids of its ancestor
	// groups, nearest last, which the toggle reads.
	ID, In string
	Group  bool
	Open   bool
	// Indent is the row's depth under its shown ancestors as the style
	// sheet indents it (d0 to d6: deeper rows stay at d6).
	Indent int
	// Children are the ids of the rows right under a group.
	Children string
}

// balanceteRows orders the trial balance's lines as its one table shows
// them: each account under its nearest shown ancestor of the same
// currency (as rollUp summed them), depth first, siblings by code.
func balanceteRows(lines []reports.TrialBalanceLine) []tbRow {
	index := map[string]int{}
	for i, l := range lines {
		index[l.Currency+"\x00"+l.Account] = i
	}
	children := make([][]int, len(lines))
	var roots []int
	for i, l := range lines { // lines are ordered by code: siblings stay so
		parent := -1
		for p := accounts.Parent(l.Account); p != ""; p = accounts.Parent(p) {
			if j, ok := index[l.Currency+"\x00"+p]; ok {
				parent = j
				break
			}
		}
		if parent < 0 {
			roots = append(roots, i)
		} else {
			children[parent] = append(children[parent], i)
		}
	}
	// The classes in the order of a Brazilian balancete: ativo, passivo,
	// patrimônio líquido, receitas, despesas.
	slices.SortStableFunc(roots, func(a, b int) int { return cmp.Compare(typeRank(lines[a].Type), typeRank(lines[b].Type)) })
	out := make([]tbRow, 0, len(lines))
	var walk func(i, depth int, in []string)
	walk = func(i, depth int, in []string) {
		id := "tb-" + strconv.Itoa(i)
		r := tbRow{TrialBalanceLine: lines[i], ID: id, In: strings.Join(in, " "), Indent: min(depth, 6),
			Group: len(children[i]) > 0, Open: depth == 0}
		var kids []string
		for _, c := range children[i] {
			kids = append(kids, "tb-"+strconv.Itoa(c))
		}
		r.Children = strings.Join(kids, " ")
		out = append(out, r)
		for _, c := range children[i] {
			walk(c, depth+1, append(in[:len(in):len(in)], id))
		}
	}
	for _, i := range roots {
		walk(i, 0, nil)
	}
	return out
}

// typeRank is the place of an account type in a balancete; an unknown
// type goes last.
func typeRank(t string) int {
	switch accounts.Type(t) {
	case accounts.Asset:
		return 0
	case accounts.Liability:
		return 1
	case accounts.Equity:
		return 2
	case accounts.Income:
		return 3
	case accounts.Expense:
		return 4
	}
	return 5
}

// exportLink is one CSV download button.
type exportLink struct {
	Label, Dialect, URL string
}

var exportKinds = []struct {
	kind  reports.ExportKind
	label string
}{
	{reports.ExportJournal, "Diário"},
	{reports.ExportTrialBalance, "Balancete"},
	{reports.ExportIncomeStatement, "DRE"},
}

func exportLinks(m periods.Month) []exportLink {
	var out []exportLink
	for _, k := range exportKinds {
		for _, d := range []struct{ name, label string }{{"br", "Excel BR (;)"}, {"rfc4180", "RFC 4180 (,)"}} {
			q := url.Values{"month": {m.String()}, "dialect": {d.name}}
			out = append(out, exportLink{Label: k.label, Dialect: d.label, URL: Prefix + "/exports/" + string(k.kind) + ".csv?" + q.Encode()})
		}
	}
	return out
}

// monthPage is the month's books.
type monthPage struct {
	Month, Prev, Next periods.Month
	TB                reports.TrialBalanceReport
	Rows              []tbRow
	Income            reports.Income
	Exports           []exportLink
	// First is the books' first month (zero when they are empty);
	// BeforeBooks is true for a month before it, which has nothing to
	// show and is not open to anything.
	First       periods.Month
	BeforeBooks bool
}

// books reads the month of the request's {month}: its trial balance and
// income statement, as GET /v1/reports/trial-balance/{month} and
// /v1/reports/income-statement/{month} read them.
func (c *Console) books(r *http.Request) (periods.Month, reports.TrialBalanceReport, reports.Income, error) {
	m, err := monthParam(r, "month", c.currentMonth())
	if err != nil {
		return m, reports.TrialBalanceReport{}, reports.Income{}, err
	}
	tb, err := reports.TrialBalance(r.Context(), c.reads(r.Context()), monthsums.Books{}, m)
	if err != nil {
		return m, tb, reports.Income{}, err
	}
	inc, err := reports.IncomeStatement(r.Context(), c.reads(r.Context()), monthsums.Books{}, m)
	return m, tb, inc, err
}

func (c *Console) month(w http.ResponseWriter, r *http.Request) {
	m, tb, inc, err := c.books(r)
	if err != nil {
		c.failWith(w, r, err)
		return
	}
	first, err := c.firstMonth(r.Context())
	if err != nil {
		c.failWith(w, r, err)
		return
	}
	c.render(w, r, "month", "Mês "+monthLabel(m), monthPage{
		Month: m, Prev: m.Prev(), Next: m.Next(), TB: tb, Rows: balanceteRows(tb.Lines), Income: inc, Exports: exportLinks(m),
		First: first, BeforeBooks: first.IsZero() || m.Before(first),
	})
}

// exportCSV streams a CSV export as GET /v1/exports/{kind}.csv does, from
// the same function (reports.WriteCSV).
func (c *Console) exportCSV(w http.ResponseWriter, r *http.Request) {
	kind, err := reports.ParseExportKind(mux.Vars(r)["kind"])
	if err != nil {
		c.failWith(w, r, err)
		return
	}
	m, err := monthParam(r, "month", c.currentMonth())
	if err != nil {
		c.failWith(w, r, err)
		return
	}
	d, err := reports.ParseDialect(r.URL.Query().Get("dialect"))
	if err != nil {
		c.failWith(w, r, err)
		return
	}
	if started, err := reports.ServeCSV(r.Context(), c.reads(r.Context()), monthsums.Books{}, w, kind, m, d); err != nil {
		if !started {
			c.failWith(w, r, err)
			return
		}
		c.Log.ErrorContext(r.Context(), "console export stream failed", "kind", kind, "month", m.String(), "error", err)
		panic(http.ErrAbortHandler) // a cut download, not a short file that looks whole
	}
}

// idParam parses a positive integer id from the path.
func idParam(r *http.Request) (int64, bool) {
	id, err := strconv.ParseInt(mux.Vars(r)["id"], 10, 64)
	return id, err == nil && id > 0
}
