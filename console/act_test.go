package console

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"mime/multipart"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/mux"

	"github.com/razao/razao/accounts"
	"github.com/razao/razao/adjustments"
	"github.com/razao/razao/api"
	"github.com/razao/razao/auth"
	"github.com/razao/razao/charges"
	"github.com/razao/razao/divergences"
	"github.com/razao/razao/inbox"
	"github.com/razao/razao/reconcile"
	"github.com/razao/razao/webhook"
)

// The forms that act on the books: payouts, corrections (four eyes),
// divergences resolved by booking, statement uploads and the
// reconciliation pages.

// hiddenValue returns the value of the hidden input name in the form
// with id formID of page.
func hiddenValue(t testing.TB, page, formID, name string) string {
	t.Helper()
	form := regexp.MustCompile(`(?s)<form[^>]*id="` + regexp.QuoteMeta(formID) + `".*?</form>`).FindString(page)
	m := regexp.MustCompile(`name="` + regexp.QuoteMeta(name) + `" value="([^"]*)"`).FindStringSubmatch(form)
	if m == nil {
		t.Fatalf("form %s has no %s field", formID, name)
	}
	return m[1]
}

// wantPage fails the test unless res has status and page holds each of want.
func wantPage(t testing.TB, what string, res *http.Response, page string, status int, want ...string) {
	t.Helper()
	if res.StatusCode != status {
		t.Fatalf("%s: %d, want %d\n%s", what, res.StatusCode, status, page)
	}
	for _, w := range want {
		if !strings.Contains(page, w) {
			t.Errorf("%s: page lacks %q", what, w)
		}
	}
}

func (f *fixture) countOf(t testing.TB, q string, args ...any) int {
	t.Helper()
	var n int
	if err := f.db.Get(&n, q, args...); err != nil {
		t.Fatal(err)
	}
	return n
}

// A payout form sent twice books one payout: the form carries its
// idempotency key, as the API's Idempotency-Key header.
func TestPayoutFormBooksOnceOnDoubleSubmit(t *testing.T) {
	t.Parallel()
	f, srv := setup(t)
	c := signedIn(t, srv, f.admin)
	_, page := c.get("/console/partners/p1")
	if !strings.Contains(page, `id="payout-form"`) || !strings.Contains(page, `value="02/10/2026"`) {
		t.Fatalf("the partner page has no payout form dated today:\n%s", page)
	}
	form := url.Values{"csrf": {csrfOf(t, page)}, "key": {hiddenValue(t, page, "payout-form", "key")}, "valor": {"1,00"}, "data": {"01/10/2026"},
		"adiantamento": {"1"}} // p1 is owed less than that
	res, body := c.postForm("/console/partners/p1/payouts", form)
	if res.StatusCode != http.StatusSeeOther {
		t.Fatalf("payout: %d\n%s", res.StatusCode, body)
	}
	again, _ := c.postForm("/console/partners/p1/payouts", form)
	if again.StatusCode != http.StatusSeeOther || !strings.Contains(again.Header.Get("Location"), "repetido=1") {
		t.Fatalf("second submit: %d %s", again.StatusCode, again.Header.Get("Location"))
	}
	if n := f.countOf(t, `SELECT count(*) FROM posting_sets WHERE kind = 'payout' AND partner = 'p1' AND amount = 100`); n != 1 {
		t.Fatalf("%d payouts of R$ 1,00 after a double submit, want 1", n)
	}
	_, page = c.get(again.Header.Get("Location"))
	wantPage(t, "after the second submit", &http.Response{StatusCode: 200}, page, 200, "já tinha sido lançado")
	_, page = c.get(res.Header.Get("Location"))
	wantPage(t, "after the first submit", &http.Response{StatusCode: 200}, page, 200, "Repasse de R$ 1,00 lançado")
	if hiddenValue(t, page, "payout-form", "key") == form.Get("key") {
		t.Error("the page after a payout offers the same key again: the next payout would be a replay")
	}

	for _, tc := range []struct {
		valor, data string
		status      int
		want        string
	}{
		{"abc", "01/10/2026", 400, "valor positivo em reais"},
		{"1.5", "01/10/2026", 400, "use vírgula para os centavos"},
		{"0,00", "01/10/2026", 400, "valor positivo"},
		{"1,00", "2026-10-01", 400, "não é uma data dd/mm/aaaa"},
		{"1,00", "03/10/2026", 400, "não pode ser futura"},
		{"1.000.000,00", "01/10/2026", 409, "passa do que se deve"},
		{"99999999999999999999", "01/10/2026", 400, "Valor"},
	} {
		form := url.Values{"csrf": {csrfOf(t, page)}, "key": {newSecret()}, "valor": {tc.valor}, "data": {tc.data}}
		res, body := c.postForm("/console/partners/p1/payouts", form)
		wantPage(t, tc.valor+" on "+tc.data, res, body, tc.status, tc.want)
	}
	res, body = c.postForm("/console/partners/p1/payouts", url.Values{"csrf": {csrfOf(t, page)}, "valor": {"1,00"}, "data": {"01/10/2026"}})
	wantPage(t, "no key", res, body, http.StatusBadRequest, "recarregue a página")
	res, body = c.postForm("/console/partners/no-such/payouts", url.Values{"csrf": {csrfOf(t, page)}, "key": {newSecret()}, "valor": {"1,00"}, "data": {"01/10/2026"}})
	wantPage(t, "unknown partner", res, body, 404, "Parceiro desconhecido")
}

// proposalForm is the proposal form of page with legs, a note and a date.
func proposalForm(t testing.TB, page string, legs [][3]string, note string) url.Values {
	t.Helper()
	v := url.Values{"csrf": {csrfOf(t, page)}, "key": {hiddenValue(t, page, "propose-form", "key")}, "nota": {note}, "competencia": {"01/10/2026"}}
	for _, l := range legs {
		v.Add("conta", l[0])
		v.Add("lado", l[1])
		v.Add("valor", l[2])
	}
	return v
}

var adjustmentIDRE = regexp.MustCompile(`[?&]id=(\d+)`)

// An adjustment proposed in the console is approved by another person
// and booked; its proposer is refused, in Portuguese; both names are on
// the page. A reversal joins the same queue; a rejection names who
// rejected it.
func TestAdjustmentNeedsASecondPersonToApprove(t *testing.T) {
	t.Parallel()
	f, srv := setup(t)
	second := newToken(t, f.db, "second-admin", auth.Admin)
	a := signedIn(t, srv, f.admin)
	b := signedIn(t, srv, second)
	_, page := a.get("/console/adjustments")
	note := `acerto de caixa <script>alert(1)</script>`
	form := proposalForm(t, page, [][3]string{{accounts.Cash, "debito", "49,90"}, {accounts.Adjustments, "credito", "49,90"}, {"", "debito", ""}}, note)
	res, body := a.postForm("/console/adjustments", form)
	if res.StatusCode != http.StatusSeeOther {
		t.Fatalf("propose: %d\n%s", res.StatusCode, body)
	}
	m := adjustmentIDRE.FindStringSubmatch(res.Header.Get("Location"))
	if m == nil {
		t.Fatalf("propose redirected to %s", res.Header.Get("Location"))
	}
	id := m[1]
	if res, _ := a.postForm("/console/adjustments", form); !strings.Contains(res.Header.Get("Location"), "feito=repetido") {
		t.Errorf("a second submit of the proposal: %s, want a replay", res.Header.Get("Location"))
	}
	if n := f.countOf(t, `SELECT count(*) FROM adjustments`); n != 1 {
		t.Fatalf("%d proposals after a double submit, want 1", n)
	}
	_, page = a.get("/console/adjustments")
	wantPage(t, "queue", &http.Response{StatusCode: 200}, page, 200, "proposto", "Caixa (saldo no PSP)", "Ajustes", "R$ 49,90",
		"acerto de caixa &lt;script&gt;alert(1)&lt;/script&gt;", "finance-admin", "outra pessoa precisa aprová-lo")
	if strings.Contains(page, "<script>alert") {
		t.Fatal("the note's markup is on the page unescaped")
	}

	res, body = a.postForm("/console/adjustments/"+id+"/approve", url.Values{"csrf": {csrfOf(t, page)}})
	wantPage(t, "the proposer approves", res, body, http.StatusForbidden, "Você propôs este ajuste", "outra pessoa")
	if n := f.countOf(t, `SELECT count(*) FROM adjustments WHERE status = 'proposed'`); n != 1 {
		t.Fatal("the proposer's approval changed the proposal")
	}
	_, bpage := b.get("/console/adjustments")
	res, body = b.postForm("/console/adjustments/"+id+"/approve", url.Values{"csrf": {csrfOf(t, bpage)}})
	if res.StatusCode != http.StatusSeeOther {
		t.Fatalf("approve by another: %d\n%s", res.StatusCode, body)
	}
	_, page = a.get("/console/adjustments?status=booked")
	wantPage(t, "booked", &http.Response{StatusCode: 200}, page, 200, "lançado", "Proposto por", "finance-admin", "Aprovado por", "second-admin", "Lançamento")
	adj, err := adjustments.Get(context.Background(), f.db, mustInt(t, id))
	if err != nil || adj.Status != adjustments.StatusBooked || adj.DecidedBy != "second-admin" || adj.ProposedBy != "finance-admin" || adj.PostingSetID == 0 {
		t.Fatalf("after approval: %+v %v", adj, err)
	}
	res, body = b.postForm("/console/adjustments/"+id+"/approve", url.Values{"csrf": {csrfOf(t, bpage)}})
	wantPage(t, "approved twice", res, body, http.StatusConflict, "já foi decidido")

	// A proposal past its time says so, and is refused as expired.
	_, page = a.get("/console/adjustments")
	late := proposalForm(t, page, [][3]string{{accounts.Cash, "debito", "2,00"}, {accounts.Adjustments, "credito", "2,00"}}, "tarde")
	res, _ = a.postForm("/console/adjustments", late)
	lid := adjustmentIDRE.FindStringSubmatch(res.Header.Get("Location"))[1]
	// Its time runs out a second after it was proposed (a session lasts
	// less than a proposal's default week).
	f.db.MustExec(`UPDATE adjustments SET expires_at = proposed_at + interval '1 second' WHERE id = $1`, mustInt(t, lid))
	f.later.Store(int64(time.Minute))
	_, page = b.get("/console/adjustments?status=proposed")
	wantPage(t, "past its time", &http.Response{StatusCode: 200}, page, 200, "prazo vencido")
	res, body = b.postForm("/console/adjustments/"+lid+"/approve", url.Values{"csrf": {csrfOf(t, page)}})
	wantPage(t, "approve past its time", res, body, http.StatusConflict, "expirou sem aprovação")
	_, page = b.get("/console/adjustments?status=expired")
	wantPage(t, "expired", &http.Response{StatusCode: 200}, page, 200, "expirado", "Expirou", "sem aprovação")
	f.later.Store(0)
	_, page = a.get("/console/adjustments")

	// The reversal of the adjustment's set, rejected.
	res, body = a.postForm("/console/adjustments/reversal", url.Values{"csrf": {csrfOf(t, page)}, "lancamento": {fmt.Sprint(adj.PostingSetID)}, "nota": {"lançado por engano"}})
	if res.StatusCode != http.StatusSeeOther {
		t.Fatalf("propose reversal: %d\n%s", res.StatusCode, body)
	}
	rid := adjustmentIDRE.FindStringSubmatch(res.Header.Get("Location"))[1]
	res, _ = b.postForm("/console/adjustments/"+rid+"/reject", url.Values{"csrf": {csrfOf(t, bpage)}, "nota": {"não, está certo"}})
	if res.StatusCode != http.StatusSeeOther {
		t.Fatalf("reject: %d", res.StatusCode)
	}
	_, page = a.get("/console/adjustments?kind=reversal")
	wantPage(t, "rejected reversal", &http.Response{StatusCode: 200}, page, 200, "estorno de lançamento", "recusado", "Recusado por", "second-admin", "não, está certo",
		fmt.Sprintf("lançamento #%d", adj.PostingSetID))

	// What a person types wrong comes back in Portuguese, with what was typed.
	_, page = a.get("/console/adjustments")
	for _, tc := range []struct {
		legs [][3]string
		note string
		want string
	}{
		{[][3]string{{accounts.Cash, "debito", "49,90"}, {accounts.Adjustments, "credito", "40,00"}}, "x", "Débitos (R$ 49,90) e créditos (R$ 40,00) não batem"},
		{[][3]string{{"assets:nope", "debito", "1,00"}, {accounts.Adjustments, "credito", "1,00"}}, "x", "a conta assets:nope não existe"},
		{[][3]string{{"<b>x</b>", "debito", "1,00"}, {accounts.Adjustments, "credito", "1,00"}}, "x", "não é um código de conta"},
		{[][3]string{{accounts.Cash, "debito", "1,00"}}, "x", "ao menos duas pernas"},
		{[][3]string{{accounts.Cash, "debito", "1,00"}, {accounts.Adjustments, "credito", "1,00"}}, "", "Escreva uma nota"},
		{[][3]string{{accounts.Cash, "de lado", "1,00"}, {accounts.Adjustments, "credito", "1,00"}}, "x", "débito ou crédito"},
	} {
		res, body := a.postForm("/console/adjustments", proposalForm(t, page, tc.legs, tc.note))
		wantPage(t, tc.want, res, body, http.StatusBadRequest, tc.want, `id="propose-problem"`)
		if strings.Contains(body, "<b>x</b>") {
			t.Error("a typed account's markup is on the page unescaped")
		}
	}
	many := proposalForm(t, page, nil, "x")
	for range adjustments.MaxLegs + 1 {
		many.Add("conta", accounts.Cash)
	}
	res, body = a.postForm("/console/adjustments", many)
	wantPage(t, "too many legs", res, body, http.StatusBadRequest, "No máximo 100 pernas")
	res, body = a.postForm("/console/adjustments/reversal", url.Values{"csrf": {csrfOf(t, page)}, "lancamento": {"x"}, "nota": {"n"}})
	wantPage(t, "reversal of no set", res, body, http.StatusBadRequest, "número do lançamento")
	res, body = a.postForm("/console/adjustments/reversal", url.Values{"csrf": {csrfOf(t, page)}, "lancamento": {"999999"}, "nota": {"n"}})
	wantPage(t, "reversal of an unknown set", res, body, http.StatusNotFound, "Lançamento desconhecido")
	res, body = a.postForm("/console/adjustments/999999/approve", url.Values{"csrf": {csrfOf(t, page)}})
	wantPage(t, "approve an unknown proposal", res, body, http.StatusNotFound, "Ajuste desconhecido")
	if res, _ := a.get("/console/adjustments?status=nope"); res.StatusCode != http.StatusBadRequest {
		t.Errorf("a bad filter: %d", res.StatusCode)
	}
	if n := f.countOf(t, `SELECT count(*) FROM adjustments`); n != 3 {
		t.Errorf("%d proposals after the refused forms, want 3", n)
	}
}

func mustInt(t testing.TB, s string) int64 {
	t.Helper()
	var n int64
	if _, err := fmt.Sscan(s, &n); err != nil {
		t.Fatal(err)
	}
	return n
}

// moneyDivergence stores an open divergence a reconciliation found: a
// payment of 99,00 for charge order-9, which the ledger has not booked.
func moneyDivergence(t testing.TB, f *fixture, pspID string) int64 {
	t.Helper()
	var id int64
	err := f.db.Get(&id, `INSERT INTO divergences (source, reconciliation_key, endpoint, run_line, line_kind, charge_id, reason, detail,
			statement_psp_id, statement_charge_ref, statement_refund_id, statement_amount, statement_at, ledger_amount)
		VALUES ('reconciliation', $1, 'bcb', 7, 'paid', 'order-9', 'amount_mismatch', 'differs', $2, 'order-9', '', 9900, '2026-09-15T12:00:00Z', 10000)
		RETURNING id`, `["bcb","`+pspID+`"]`, pspID)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// A divergence that stands for money shows the bookings it allows, each
// a form; a note alone is refused for it; booking one resolves it with
// its set. A divergence that moves no money keeps the note.
func TestDivergenceIsResolvedByBookingWhatItOffers(t *testing.T) {
	t.Parallel()
	f, srv := setup(t)
	id := moneyDivergence(t, f, "E<script>1</script>")
	plain := divergence(t, f.db, "ev-plain", "c-plain", "sem dinheiro")
	f.db.MustExec(`UPDATE divergences SET reason = 'malformed' WHERE id = $1`, plain)
	c := signedIn(t, srv, f.admin)
	_, page := c.get("/console/divergences")
	d, err := divergences.Describe(context.Background(), f.db, id)
	if err != nil || len(d.Offers) != 2 {
		t.Fatalf("offers %+v %v", d, err)
	}
	wantPage(t, "offers", &http.Response{StatusCode: 200}, page, 200, "valor diferente", `data-resolution="customer_credit"`, `data-resolution="revenue"`,
		"crédito ao cliente", "Receita de vendas", "Créditos de clientes", brl(9900), "E&lt;script&gt;1&lt;/script&gt;",
		fmt.Sprintf(`id="note-%d"`, plain))
	if strings.Contains(page, fmt.Sprintf(`id="note-%d"`, id)) {
		t.Error("a divergence that stands for money is offered a note alone")
	}
	if strings.Contains(page, "<script>1") {
		t.Fatal("the PSP's id is on the page unescaped")
	}
	csrf := csrfOf(t, page)
	res, body := c.postForm(fmt.Sprintf("/console/divergences/%d/resolve", id), url.Values{"csrf": {csrf}, "note": {"só uma nota"}})
	wantPage(t, "a note alone", res, body, http.StatusConflict, "movimenta dinheiro")
	res, body = c.postForm(fmt.Sprintf("/console/divergences/%d/resolve", id), url.Values{"csrf": {csrf}, "resolution": {"loss"}})
	wantPage(t, "a booking not offered", res, body, http.StatusConflict, "não oferece")
	res, body = c.postForm(fmt.Sprintf("/console/divergences/%d/resolve", id), url.Values{"csrf": {csrf}, "resolution": {"<x>"}})
	wantPage(t, "no booking", res, body, http.StatusBadRequest, "Resolução inválida")
	res, body = c.postForm(fmt.Sprintf("/console/divergences/%d/resolve", id), url.Values{"csrf": {csrf}, "resolution": {"revenue"}, "competencia": {"31/13/2026"}})
	wantPage(t, "a bad date", res, body, http.StatusBadRequest, "dd/mm/aaaa")
	res, body = c.postForm(fmt.Sprintf("/console/divergences/%d/resolve", id), url.Values{"csrf": {csrf}, "resolution": {"revenue"}, "note": {"vendido por 99,00 <script>alert(2)</script>"}})
	if res.StatusCode != http.StatusSeeOther {
		t.Fatalf("book revenue: %d\n%s", res.StatusCode, body)
	}
	got, _ := divergences.Get(context.Background(), f.db, id)
	if got.Status != divergences.StatusResolved || got.Resolution != divergences.BookRevenue || got.ResolutionSetID == nil {
		t.Fatalf("after booking: %+v", got)
	}
	_, page = c.get("/console/divergences")
	wantPage(t, "resolved", &http.Response{StatusCode: 200}, page, 200, "lançando receita", fmt.Sprintf("lançamento #%d", *got.ResolutionSetID),
		"vendido por 99,00 &lt;script&gt;alert(2)&lt;/script&gt;")
	if strings.Contains(page, "<script>alert(2)") {
		t.Error("the resolution note's markup is on the page unescaped")
	}
	other := moneyDivergence(t, f, "E-2")
	res, _ = c.postForm(fmt.Sprintf("/console/divergences/%d/resolve", other), url.Values{"csrf": {csrf}, "resolution": {"customer_credit"}})
	if got, _ := divergences.Get(context.Background(), f.db, other); res.StatusCode != http.StatusSeeOther ||
		got.ResolutionNote != "Resolvida no console por finance-admin, lançando crédito ao cliente." {
		t.Errorf("booked without a note: %d, note %q", res.StatusCode, got.ResolutionNote)
	}
	res, body = c.postForm(fmt.Sprintf("/console/divergences/%d/resolve", id), url.Values{"csrf": {csrf}, "resolution": {"revenue"}})
	wantPage(t, "booked twice", res, body, http.StatusConflict, "já foi resolvida")
}

// A read session can do nothing but read: every form's POST is refused
// 403 with its own valid CSRF value, and nothing changes; its pages show
// no form that acts.
func TestAReadSessionCannotAct(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.withReconciler(t)
	srv := serve(t, f.router)
	id := moneyDivergence(t, f, "E-read")
	changes := `SELECT (SELECT count(*) FROM adjustments) + (SELECT count(*) FROM reconciliation_runs)
		+ (SELECT count(*) FROM posting_sets) + (SELECT count(*) FROM divergences WHERE status = 'resolved')`
	before := f.countOf(t, changes)
	r := signedIn(t, srv, f.read)
	_, page := r.get("/console/adjustments")
	csrf := csrfOf(t, page)
	for _, p := range []struct{ path, body string }{
		{"/console/partners/p1/payouts", url.Values{"csrf": {csrf}, "key": {"k1"}, "valor": {"1,00"}, "data": {"01/10/2026"}}.Encode()},
		{"/console/adjustments", url.Values{"csrf": {csrf}, "key": {"k2"}, "conta": {accounts.Cash, accounts.Adjustments}, "lado": {"debito", "credito"},
			"valor": {"1,00", "1,00"}, "nota": {"n"}, "competencia": {"01/10/2026"}}.Encode()},
		{"/console/adjustments/reversal", url.Values{"csrf": {csrf}, "lancamento": {"1"}, "nota": {"n"}}.Encode()},
		{"/console/adjustments/1/approve", url.Values{"csrf": {csrf}}.Encode()},
		{"/console/adjustments/1/reject", url.Values{"csrf": {csrf}}.Encode()},
		{fmt.Sprintf("/console/divergences/%d/resolve", id), url.Values{"csrf": {csrf}, "resolution": {"revenue"}}.Encode()},
	} {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+p.path, strings.NewReader(p.body))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		res, body := r.do(req)
		wantPage(t, p.path, res, body, http.StatusForbidden, "escopo admin")
	}
	res, body := r.do(uploadRequest(t, srv.URL, csrf, "abacate", "a.csv", []byte("id,externalId,amount,fee,paidAt\n")))
	wantPage(t, "upload", res, body, http.StatusForbidden, "escopo admin")
	if n := f.countOf(t, changes) - before; n != 0 {
		t.Errorf("a read session changed %d things", n)
	}
	for _, p := range []string{"/console/adjustments", "/console/divergences", "/console/partners/p1", "/console/reconciliation"} {
		_, page := r.get(p)
		if n := strings.Count(page, `method="post"`); n != 1 { // the sign-out form
			t.Errorf("%s offers a read session %d forms that post", p, n-1)
		}
	}
}

// withReconciler gives f's console a reconciler of one endpoint,
// "abacate", whose statements are CSV files of at most 4 KiB, and mounts
// the console again (its routes depend on it).
func (f *fixture) withReconciler(t testing.TB) *reconcile.Reconciler {
	t.Helper()
	ep, err := webhook.NewEndpoint(webhook.EndpointConfig{Name: "abacate", Scheme: "abacatepay", Merchant: "loja-1",
		Secrets: []string{"url-secret-abcdefghijklmnopqrstuvwxyz-0123"}}, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	proc := inbox.NewProcessor(f.db, charges.NewApplier(f.db, f.ledger), log)
	rec, err := reconcile.New(reconcile.Options{DB: f.db, DatabaseURL: f.dbURL, Inbox: inbox.NewInbox(f.db, proc), Ledger: f.ledger,
		Hooks: webhook.InboxEndpoints([]*webhook.Endpoint{ep}), Now: f.console.Now, Log: log,
		Endpoints: []reconcile.EndpointConfig{{Endpoint: "abacate", Source: "csv", FinalAfter: time.Hour, MaxFileBytes: 4 << 10,
			CSV: reconcile.CSVMapping{PSPID: "id", ChargeRef: "externalId", Amount: "amount", AmountUnit: "centavos", Fee: "fee", Time: "paidAt"}}}})
	if err != nil {
		t.Fatal(err)
	}
	f.console.Reconciliations = rec
	r := mux.NewRouter().SkipClean(true)
	r.NotFoundHandler, r.MethodNotAllowedHandler = api.NotFound(), api.MethodNotAllowed(r)
	(&api.API{DB: f.db, Ledger: f.ledger, Log: log, Now: f.console.Now, Events: f.hub, Reconciler: rec}).Register(r)
	f.console.Register(r)
	f.router = r
	return rec
}

// uploadRequest is the upload form's multipart POST, fields in the
// form's order.
func uploadRequest(t testing.TB, base, csrf, endpoint, name string, file []byte) *http.Request {
	t.Helper()
	var b bytes.Buffer
	w := multipart.NewWriter(&b)
	for _, kv := range [][2]string{{"csrf", csrf}, {"endpoint", endpoint}, {"de", ""}, {"ate", ""}} {
		w.WriteField(kv[0], kv[1])
	}
	fw, _ := w.CreateFormFile("arquivo", name)
	fw.Write(file)
	w.Close()
	req, _ := http.NewRequest(http.MethodPost, base+"/console/reconciliation/upload", &b)
	req.Header.Set("Content-Type", w.FormDataContentType())
	return req
}

// registerCharge registers a charge of merchant loja-1, as the app does.
func registerCharge(t testing.TB, f *fixture, id string, amount int64) {
	t.Helper()
	if _, _, err := charges.Register(context.Background(), f.db, charges.NewCharge{ID: id, Amount: amount, Merchant: "loja-1", Access: "course:" + id}); err != nil {
		t.Fatal(err)
	}
}

// drainInbox applies what the inbox holds, as the service's workers do.
func drainInbox(t testing.TB, f *fixture) {
	t.Helper()
	proc := inbox.NewProcessor(f.db, charges.NewApplier(f.db, f.ledger), slog.New(slog.NewTextHandler(io.Discard, nil)))
	w := inbox.NewWorker(proc, time.Hour)
	for {
		n, err := w.RunOnce(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			return
		}
	}
}

// statement is a CSV statement of abacate: a payment of a registered
// charge, and one of a charge razao does not know, in September.
const statement = "id,externalId,amount,fee,paidAt\n" +
	"ch_1,ab-1,10000,80,2026-09-10T12:00:00-03:00\n" +
	"ch_<script>2</script>,nosuch,990,0,2026-09-11T12:00:00-03:00\n"

// The reconciliation pages: the runs with the console's layout and São
// Paulo times, a run's lines filterable and paged, an HTML 404 for an
// unknown run, and a statement uploaded through the form, bounded, its
// file name escaped.
func TestReconciliationPagesAndUpload(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.withReconciler(t)
	srv := serve(t, f.router)
	registerCharge(t, f, "ab-1", 10000)
	a := signedIn(t, srv, f.admin)
	_, page := a.get("/console/reconciliation")
	wantPage(t, "no runs", &http.Response{StatusCode: 200}, page, 200, `aria-current="page">Conciliação`, `id="upload-form"`, "Nenhuma execução", "/console/static/upload.js")
	csrf := csrfOf(t, page)
	// No slash: a part's file name is its base name.
	name := `extrato <img src=x onerror=alert(1)>.csv`
	res, body := a.do(uploadRequest(t, srv.URL, csrf, "abacate", name, []byte(statement)))
	if res.StatusCode != http.StatusSeeOther || !strings.HasPrefix(res.Header.Get("Location"), "/console/reconciliation/1?") {
		t.Fatalf("upload: %d %s\n%s", res.StatusCode, res.Header.Get("Location"), body)
	}
	drainInbox(t, f)
	res, page = a.get(res.Header.Get("Location"))
	wantPage(t, "run page", res, page, 200, "Conciliação #1", "Extrato recebido e conciliado (SHA-256", "concluída",
		"cobrança desconhecida", "ch_&lt;script&gt;2&lt;/script&gt;", "10/09/2026 12:00", `aria-current="page">Conciliação`,
		`<a href="/console/charges/ab-1"><code>ab-1</code></a>`)
	if strings.Contains(page, "<img") || strings.Contains(page, "<script>2") || strings.Contains(page, "UTC") {
		t.Fatal("the run page shows markup unescaped, or UTC times")
	}
	// A name in the URL is not the run's: no link can label a run with a
	// file it never read.
	if _, forged := a.get("/console/reconciliation/1?arquivo=extrato-falso.csv"); strings.Contains(forged, "extrato-falso") {
		t.Error("the run page repeats a file name from its URL")
	}
	_, page = a.get("/console/reconciliation/1?resultado=divergence")
	if !strings.Contains(page, `data-outcome="divergence"`) || strings.Contains(page, `data-outcome="booked"`) {
		t.Errorf("filtered by divergence:\n%s", page)
	}
	_, page = a.get("/console/reconciliation/1?lado=ledger")
	if !strings.Contains(page, "Nenhuma linha com este filtro") {
		t.Error("the ledger side of a run without phantoms is not empty")
	}
	_, page = a.get("/console/reconciliation")
	wantPage(t, "runs", &http.Response{StatusCode: 200}, page, 200, `href="/console/reconciliation/1"`, `endpoint=abacate">abacate</a> (csv)`, "10/09/2026 12:00")
	if strings.Contains(page, "UTC") {
		t.Error("the runs page is in UTC")
	}
	for path, status := range map[string]int{
		"/console/reconciliation/999":             http.StatusNotFound,
		"/console/reconciliation/x":               http.StatusNotFound,
		"/console/reconciliation/1?tipo=<b>":      http.StatusBadRequest,
		"/console/reconciliation/1?after=-1":      http.StatusBadRequest,
		"/console/reconciliation?before=x":        http.StatusBadRequest,
		"/console/reconciliation?run=1":           http.StatusMovedPermanently,
		"/console/reconciliation?endpoint=nobody": http.StatusOK,
	} {
		res, body := a.get(path)
		if res.StatusCode != status || !strings.Contains(res.Header.Get("Content-Type"), "text/html") {
			t.Errorf("%s: %d %s, want %d in HTML", path, res.StatusCode, res.Header.Get("Content-Type"), status)
		}
		if status == http.StatusNotFound && !strings.Contains(body, "Execução de conciliação desconhecida") {
			t.Errorf("%s: not the Portuguese 404", path)
		}
	}

	big := append([]byte("id,externalId,amount,fee,paidAt\n"), bytes.Repeat([]byte("ch_9,ab-9,100,0,2026-09-10T12:00:00-03:00\n"), 200)...)
	res, body = a.do(uploadRequest(t, srv.URL, csrf, "abacate", "big.csv", big))
	wantPage(t, "too big", res, body, http.StatusRequestEntityTooLarge, "Arquivo grande demais", "4 KiB")
	res, body = a.do(uploadRequest(t, srv.URL, "forged", "abacate", "a.csv", []byte(statement)))
	wantPage(t, "forged", res, body, http.StatusForbidden, "CSRF")
	res, body = a.do(uploadRequest(t, srv.URL, csrf, "<b>nobody</b>", "a.csv", []byte(statement)))
	wantPage(t, "unknown endpoint", res, body, http.StatusBadRequest, "Escolha um endpoint")
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/console/reconciliation/upload", strings.NewReader(url.Values{"csrf": {csrf}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	res, body = a.do(req)
	wantPage(t, "not multipart", res, body, http.StatusUnsupportedMediaType, "multipart")
	res, body = a.do(uploadRequest(t, srv.URL, csrf, "abacate", "<script>bad.csv", []byte("no,header,here\n1,2,3\n")))
	if res.StatusCode != http.StatusSeeOther {
		t.Fatalf("a file the run cannot read: %d\n%s", res.StatusCode, body)
	}
	_, page = a.get(res.Header.Get("Location"))
	wantPage(t, "failed run", &http.Response{StatusCode: 200}, page, 200, "falhou", "Erro")
	if strings.Contains(page, "<script>bad") {
		t.Error("the file name's markup is on the page unescaped")
	}
}

// The acting pages keep the console's policy: its CSP and headers, no
// inline script or style, the upload's script served from the console.
func TestActPagesHaveTheCSPAndNoInlineScriptOrStyle(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.withReconciler(t)
	srv := serve(t, f.router)
	moneyDivergence(t, f, "E-csp")
	c := signedIn(t, srv, f.admin)
	_, page := c.get("/console/reconciliation")
	if res, body := c.do(uploadRequest(t, srv.URL, csrfOf(t, page), "abacate", "s.csv", []byte(statement))); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("upload: %d\n%s", res.StatusCode, body)
	}
	inline := regexp.MustCompile(`(?i)<script(?:\s[^>]*)?>\s*[^<\s]|<script(?:\s(?:[^s>]|s[^r>])*)?>|\sstyle=|<style|\son[a-z]+=|javascript:`)
	for _, p := range []string{"/console/adjustments", "/console/adjustments?pernas=100", "/console/divergences", "/console/partners/p1?repasse=1&valor=100",
		"/console/reconciliation", "/console/reconciliation/1", "/console/reconciliation/1?resultado=divergence", "/console/reconciliation/999",
		"/console/static/upload.js"} {
		res, body := c.get(p)
		if res.Header.Get("Content-Security-Policy") != contentSecurityPolicy || res.Header.Get("Cache-Control") != "no-store" {
			t.Errorf("%s: headers %v", p, res.Header)
		}
		if strings.HasPrefix(res.Header.Get("Content-Type"), "text/html") {
			if m := inline.FindString(body); m != "" {
				t.Errorf("%s: inline script or style: %q", p, m)
			}
		} else if !strings.Contains(body, "XMLHttpRequest") {
			t.Errorf("%s: %d %s", p, res.StatusCode, res.Header.Get("Content-Type"))
		}
	}
	if _, page := c.get("/console/adjustments?pernas=100000"); strings.Count(page, `name="conta"`) != adjustments.MaxLegs {
		t.Errorf("the form offers %d legs for ?pernas=100000, want at most %d", strings.Count(page, `name="conta"`), adjustments.MaxLegs)
	}
}
