package console

import (
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/mux"

	"github.com/razao/razao/periods"
	"github.com/razao/razao/postings"
	"github.com/razao/razao/reports"
)

// wantBalanceteLine fails the test unless the balancete's row of l's
// account shows the API's figures as a balancete writes them: the
// balances with their side (dc), the month's debits and credits as
// amounts.
func wantBalanceteLine(t *testing.T, page, month string, l reports.TrialBalanceLine) {
	t.Helper()
	for name, want := range map[string]string{"opening": dc(l.Opening), "debits": brl(l.Debits), "credits": brl(l.Credits), "closing": dc(l.Closing)} {
		if got := field(t, page, "data-account", l.Account, name); got != want {
			t.Errorf("%s %s %s: page %q, API %s", month, l.Account, name, got, want)
		}
	}
}

var axisMonthRE = regexp.MustCompile(`<tspan x="[^"]*">([a-z]{3})</tspan><tspan x="[^"]*" dy="\d+">(\d{4})</tspan>`)

// axisMonths are the months a chart's SVG labels under its axis, as
// ago/2026.
func axisMonths(svg string) []string {
	var out []string
	for _, m := range axisMonthRE.FindAllStringSubmatch(svg, -1) {
		out = append(out, m[1]+"/"+m[2])
	}
	return out
}

// The month's books speak Portuguese from the chart up: the balancete is
// one table whose rows are the accounts by their Portuguese names in a
// balancete's order, parents as group rows over their children, each
// balance with its side (an income account's credit balance is R$ … C,
// never −R$ …).
func TestBalanceteIsOneTableInPortugueseWithBalancesBySide(t *testing.T) {
	t.Parallel()
	f, srv := setup(t)
	c := signedIn(t, srv, f.read)
	_, page := c.get("/console/month/2026-08")
	var tb reports.TrialBalanceReport
	c.api(f.read, "/v1/reports/trial-balance/2026-08", &tb)

	section := page[strings.Index(page, `id="tb-title"`):strings.Index(page, `id="csv-title"`)]
	if n := strings.Count(section, "<table"); n != 1 || strings.Contains(section, "<details") {
		t.Errorf("the balancete is %d tables (or has details blocks), want one table", n)
	}
	for _, h := range []string{"Saldo anterior", "Débitos", "Créditos", "Saldo atual"} {
		if !strings.Contains(section, `<th scope="col" class="num">`+h+`</th>`) {
			t.Errorf("the balancete has no column %q", h)
		}
	}
	if strings.Contains(section, "−R$") {
		t.Error("the balancete writes a balance with a minus sign, not with its side")
	}
	for _, l := range tb.Lines {
		wantBalanceteLine(t, section, "2026-08", l)
		name := regexp.MustCompile(`(?s)<tr data-account="` + regexp.QuoteMeta(l.Account) + `".*?<a href="/console/accounts/[^"]+">([^<]*)</a> <code class="acct">([^<]*)</code>`).FindStringSubmatch(section)
		if name == nil || name[1] != accountName(l.Account) || name[2] != l.Account {
			t.Errorf("%s: named %v, want %q with its code beside", l.Account, name, accountName(l.Account))
		}
	}
	if got := field(t, section, "data-account", "income:revenue", "closing"); got != "R$ 174,90 C" {
		t.Errorf("revenue's closing balance reads %q, want R$ 174,90 C", got)
	}
	if got := field(t, section, "data-account", "assets:cash", "closing"); got != "R$ 167,65 D" {
		t.Errorf("cash's closing balance reads %q, want R$ 167,65 D", got)
	}
	// Ativo, Passivo, Receitas, Despesas: a balancete's order.
	at := func(code string) int { return strings.Index(section, `<tr data-account="`+code+`"`) }
	if !(at("assets") < at("liabilities") && at("liabilities") < at("income") && at("income") < at("expenses")) {
		t.Errorf("classes in the order %d %d %d %d, want ativo, passivo, receitas, despesas", at("assets"), at("liabilities"), at("income"), at("expenses"))
	}
	// The payables' group row, and its partners' rows inside it.
	group := regexp.MustCompile(`<tr data-account="liabilities:commission-payable" id="(tb-\d+)" data-in="(tb-\d+)" class="d1 group">`).FindStringSubmatch(section)
	if group == nil {
		t.Fatal("no group row for liabilities:commission-payable at depth 1")
	}
	if !strings.Contains(section, `<tr data-account="liabilities:commission-payable:p1" id="`) ||
		!regexp.MustCompile(`<tr data-account="liabilities:commission-payable:p1" id="tb-\d+" data-in="`+group[2]+" "+group[1]+`" class="d2">`).MatchString(section) {
		t.Error("p1's payable is not a row inside the payables' group")
	}
	if !regexp.MustCompile(`<button type="button" class="toggle" aria-expanded="false" aria-controls="[^"]+" hidden><span class="visually-hidden">Contas de Comissões a pagar</span></button>`).MatchString(section) {
		t.Error("the payables' group has no closed disclosure button named in Portuguese")
	}
	// The month's state, the DRE's lines and the footer's time zone.
	for _, want := range []string{`<span class="state open">aberto</span>`, "(−) Estornos", "(=) Resultado", "(−) Tarifas do PSP",
		"Datas e horas no horário de São Paulo (America/Sao_Paulo)."} {
		if !strings.Contains(page, want) {
			t.Errorf("the month page lacks %q", want)
		}
	}
}

// An account's page names it and its nature in Portuguese; a partner's
// page names its payable.
func TestAccountPageNamesTheAccountAndItsNatureInPortuguese(t *testing.T) {
	t.Parallel()
	f, srv := setup(t)
	c := signedIn(t, srv, f.read)
	for path, want := range map[string][]string{
		"/console/accounts/income:revenue?to=2026-09": {"<h1>Receita de vendas <code class=\"acct\">income:revenue</code></h1>",
			"Conta de receita, natureza credora, em BRL", "<title>Conta Receita de vendas · razão</title>"},
		"/console/accounts/assets:cash?to=2026-09":                       {"Caixa (saldo no PSP)", "Conta de ativo, natureza devedora"},
		"/console/accounts/liabilities:commission-payable:p1?to=2026-09": {"Comissões a pagar — p1", "Conta de passivo, natureza credora"},
		"/console/partners/p1":                                           {"Série mensal da conta Comissões a pagar — p1</a>"},
	} {
		_, page := c.get(path)
		for _, w := range want {
			if !strings.Contains(page, w) {
				t.Errorf("%s lacks %q", path, w)
			}
		}
		if strings.Contains(page, "natureza debit") || strings.Contains(page, "natureza credit") {
			t.Errorf("%s writes the nature in English", path)
		}
	}
	// Revenue's series: its balance is a credit one.
	_, page := c.get("/console/accounts/income:revenue?to=2026-09")
	if got := field(t, page, "data-month", "2026-08", "historical"); got != "R$ 174,90 C" {
		t.Errorf("revenue's balance at the end of August reads %q, want R$ 174,90 C", got)
	}
	// Its chart draws the credit balance upward: the August point above
	// the zero line.
	_, svg := c.get("/console/accounts/income:revenue/chart.svg?to=2026-09")
	if !strings.Contains(svg, ">Saldo credor ao fim do mês<") || !strings.Contains(svg, ">Receita de vendas (income:revenue)<") {
		t.Error("the account's chart is not named in Portuguese by its nature")
	}
}

// Nothing before the books' first month is listed, drawn or called open:
// the periods start at the first month with postings, the trend and an
// account's series start there, and a month before it says it has no
// postings; with a go-live configured after that month, from go-live.
func TestNothingBeforeTheBooksFirstMonthIsListedOrOpen(t *testing.T) {
	t.Parallel()
	f, srv := setup(t)
	c := signedIn(t, srv, f.admin)
	_, page := c.get("/console/periods")
	months := regexp.MustCompile(`<tr data-month="([0-9-]+)">`).FindAllStringSubmatch(page, -1)
	var got []string
	for _, m := range months {
		got = append(got, m[1])
	}
	if !slices.Equal(got, []string{"2026-08", "2026-09", "2026-10"}) {
		t.Errorf("periods lists %v, want 2026-08 to 2026-10", got)
	}
	if field(t, page, "data-month", "2026-08", "status") != "aberto" {
		t.Error("August is not listed aberto")
	}
	_, page = c.get("/console/month/2026-07")
	if strings.Contains(page, ">aberto<") || !strings.Contains(page, `<span class="state before">sem lançamentos</span>`) ||
		!strings.Contains(page, `Os lançamentos começam em <a href="/console/month/2026-08">ago/2026</a>`) || strings.Contains(page, `rel="prev"`) {
		t.Error("July, before the books, is shown open or offers the month before it")
	}
	_, page = c.get("/console/month/2026-08")
	if strings.Contains(page, `href="/console/month/2026-07" rel="prev"`) || !strings.Contains(page, `href="/console/month/2026-09" rel="next"`) {
		t.Error("August, the first month, links July")
	}
	_, page = c.get("/console/chart?to=2026-07")
	if strings.Contains(page, "<img") || !strings.Contains(page, `os lançamentos começam em <a href="/console/chart?to=2026-08">ago/2026</a>`) {
		t.Error("a trend that ends before the books draws a chart or does not say where they begin")
	}
	_, page = c.get("/console/accounts/income:revenue?to=2026-07")
	if strings.Contains(page, "data-month=") || !strings.Contains(page, "Nenhum lançamento até jul/2026") {
		t.Error("a series that ends before the books lists months")
	}
	if res, _ := c.get("/console/accounts/nope:nope?to=2026-07"); res.StatusCode != http.StatusNotFound {
		t.Errorf("an unknown account before the books: %d, want 404", res.StatusCode)
	}

	// The close's time is São Paulo's (three hours behind UTC).
	_, confirm := c.get("/console/periods/2026-08/close")
	if res, _ := c.postForm("/console/periods/2026-08/close", url.Values{"csrf": {csrfOf(t, confirm)}}); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("close: %d", res.StatusCode)
	}
	var ps struct{ Periods []periods.Period }
	c.api(f.admin, "/v1/periods", &ps)
	if len(ps.Periods) == 0 || ps.Periods[0].ClosedAt == nil {
		t.Fatalf("August not closed: %+v", ps)
	}
	closedAt := *ps.Periods[0].ClosedAt
	inSP := closedAt.In(sp(2026, 1, 1, 0, 0).Location()).Format("02/01/2006 15:04")
	_, page = c.get("/console/periods")
	if !strings.Contains(page, "<td>"+inSP+"</td><td>finance-admin</td>") || strings.Contains(page, closedAt.UTC().Format("02/01/2006 15:04")) ||
		field(t, page, "data-month", "2026-08", "status") != "fechado" {
		t.Errorf("the close is not shown fechado at its São Paulo time, %s", inSP)
	}

	// A ledger whose go-live is September: August is not its books'.
	cal, err := periods.NewCalendar(periods.DefaultTimeZone)
	if err != nil {
		t.Fatal(err)
	}
	now := func() time.Time { return afterSeptember }
	late, err := New(f.db, postings.New(f.db, cal.WithGoLive(time.Date(2026, 9, 1, 0, 0, 0, 0, time.UTC))).WithClock(now), nil, nil, now)
	if err != nil {
		t.Fatal(err)
	}
	r := mux.NewRouter()
	late.Register(r)
	lc := signedIn(t, serve(t, r), f.read)
	_, page = lc.get("/console/periods")
	if strings.Contains(page, `data-month="2026-08"`) || !strings.Contains(page, `<tr data-month="2026-09">`) {
		t.Error("with go-live in September, the periods list August")
	}
	_, page = lc.get("/console/chart?to=2026-09")
	if strings.Contains(page, `data-month="2026-08"`) || !strings.Contains(page, `<tr data-month="2026-09">`) {
		t.Error("with go-live in September, the trend lists August")
	}
}

// The balancete's rows: each under its nearest shown ancestor of its own
// currency, classes in a balancete's order, roots open and groups below
// them closed, depth capped for the indent.
func TestBalanceteRowsNestByCodeAndCurrency(t *testing.T) {
	t.Parallel()
	line := func(code, typ, currency string) reports.TrialBalanceLine {
		return reports.TrialBalanceLine{Account: code, Type: typ, Currency: currency}
	}
	lines := []reports.TrialBalanceLine{ // ordered by code, as the report gives them
		line("assets", "asset", "BRL"), line("assets:cash", "asset", "BRL"), line("assets:usd", "asset", "USD"),
		line("expenses", "expense", "BRL"), line("income", "income", "BRL"), line("income:revenue", "income", "BRL"),
		line("liabilities", "liability", "BRL"), line("liabilities:a:b:c:d:e:f:g", "liability", "BRL"),
		line("liabilities:commission-payable", "liability", "BRL"), line("liabilities:commission-payable:p1", "liability", "BRL"),
	}
	var got []string
	for _, r := range balanceteRows(lines) {
		got = append(got, fmt.Sprintf("%s d%d in[%s] group=%v open=%v kids[%s]", r.Account, r.Indent, r.In, r.Group, r.Open, r.Children))
	}
	want := []string{
		"assets d0 in[] group=true open=true kids[tb-1]",
		"assets:cash d1 in[tb-0] group=false open=false kids[]",
		"assets:usd d0 in[] group=false open=true kids[]",
		"liabilities d0 in[] group=true open=true kids[tb-7 tb-8]",
		"liabilities:a:b:c:d:e:f:g d1 in[tb-6] group=false open=false kids[]",
		"liabilities:commission-payable d1 in[tb-6] group=true open=false kids[tb-9]",
		"liabilities:commission-payable:p1 d2 in[tb-6 tb-8] group=false open=false kids[]",
		"income d0 in[] group=true open=true kids[tb-5]",
		"income:revenue d1 in[tb-4] group=false open=false kids[]",
		"expenses d0 in[] group=false open=true kids[]",
	}
	if !slices.Equal(got, want) {
		t.Errorf("rows:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// With nothing booked yet, every page renders and says so: no month is
// open, nothing is charted.
func TestEmptyBooksRenderEveryPage(t *testing.T) {
	t.Parallel()
	f := newBareFixture(t)
	c := signedIn(t, serve(t, f.router), f.read)
	for path, want := range map[string]string{
		"/console/month/2026-10":                      "O razão ainda não tem lançamentos.",
		"/console/chart?to=2026-10":                   `<p id="no-months">Nenhum lançamento até out/2026.</p>`,
		"/console/accounts/income:revenue?to=2026-10": "Nenhum lançamento até out/2026.",
		"/console/periods":                            "Nenhum mês com lançamentos.",
		"/console/partners":                           "Nenhum parceiro.",
	} {
		res, page := c.get(path)
		if res.StatusCode != http.StatusOK || !strings.Contains(page, want) {
			t.Errorf("%s with empty books: %d, want %q", path, res.StatusCode, want)
		}
		if strings.Contains(page, ">aberto<") {
			t.Errorf("%s with empty books shows a month open", path)
		}
	}
	if res, svg := c.get("/console/chart.svg?to=2026-10"); res.StatusCode != http.StatusOK || !strings.Contains(svg, "Nenhum lançamento nestes meses.") {
		t.Errorf("the chart of empty books: %d", res.StatusCode)
	}
}
