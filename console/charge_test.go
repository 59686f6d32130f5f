package console

import (
	"context"
	"fmt"
	"github.com/razao/razao/accounts"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/razao/razao/charges"
	"github.com/razao/razao/internal/deliverytest"
	"github.com/razao/razao/webhook"
)

// pixE2E is the endToEndId that paid charge pix1.
const pixE2E = "E00000000000000000000000000000A1"

// withCharges is the console's fixture with charges paid, refunded and
// paid twice through the real webhook front of every scheme: order-1
// (Hodle, trackId track-1, partner p1, refunded R$ 10,00), std-1 (Standard
// Webhooks, webhook-id msg_1), pix1 (bcb-pix, endToEndId pixE2E, then a
// second payment: a divergence) and never-paid, pending.
func withCharges(t *testing.T) (*fixture, *deliverytest.Env) {
	t.Helper()
	f := newFixture(t)
	e := deliverytest.NewWithEndpoints(t, f.db, f.dbURL,
		append(append([]webhook.EndpointConfig{}, deliverytest.DefaultEndpoints...), deliverytest.PixEndpoint(10))...)
	for _, n := range []charges.NewCharge{
		{ID: "order-1", Amount: 4990, Merchant: "loja-1", Partner: "p1", CommissionBP: 1000},
		{ID: "std-1", Amount: 2500, Merchant: "loja-1"},
		{ID: "pix1", Amount: 4990, Merchant: "loja-1"},
		{ID: "never-paid", Amount: 1234, Merchant: "loja-1"},
	} {
		n.Access = "course:x"
		if _, _, err := charges.Register(context.Background(), f.db, n); err != nil {
			t.Fatal(err)
		}
	}
	for what, r := range map[string]func() deliverytest.Reply{
		"hodle paid": func() deliverytest.Reply { return e.PostHodle(deliverytest.HodlePaid("track-1", "order-1", "49.90")) },
		"standard paid": func() deliverytest.Reply {
			return e.PostStandard("msg_1", "charge.paid", map[string]any{"charge_id": "std-1", "amount": 2500})
		},
	} {
		if got := r(); got.Code != http.StatusOK {
			t.Fatalf("%s: %+v", what, got)
		}
	}
	if r := e.PostHodle(deliverytest.HodleRefund("rf-event-1", "order-1", "10.00")); r.Code != http.StatusOK {
		t.Fatalf("hodle refund: %+v", r)
	}
	at := deliverytest.Clock.UTC().Format(time.RFC3339)
	for _, e2e := range []string{pixE2E, "E00000000000000000000000000000A2"} {
		body := fmt.Sprintf(`{"pix":[{"endToEndId":%q,"txid":"pix1","valor":"49.90","horario":%q}]}`, e2e, at)
		if r := e.PostPix("pix", []byte(body)); r.Code != http.StatusOK {
			t.Fatalf("pix %s: %+v", e2e, r)
		}
	}
	return f, e
}

var entryTypeRE = regexp.MustCompile(`<li data-type="([a-z_]+)">`)

// A charge's page shows the charge as finance reads it and the API's
// timeline, entry for entry in the same order: its deliveries with their
// scheme, kind, status and attempts; its sets with their legs (the sale,
// the commission, the refund); its events; a read token sees it.
func TestChargePageShowsTheChargeAndTheAPIsTimelineInOrder(t *testing.T) {
	t.Parallel()
	f, _ := withCharges(t)
	srv := serve(t, f.router)
	c := signedIn(t, srv, f.read)

	res, page := c.get("/console/charges/order-1")
	if res.StatusCode != http.StatusOK {
		t.Fatalf("charge page: %d\n%s", res.StatusCode, page)
	}
	var tl charges.Timeline
	c.api(f.read, "/v1/charges/order-1/timeline", &tl)
	var want []string
	for _, e := range tl.Entries {
		want = append(want, e.Type)
	}
	var got []string
	for _, m := range entryTypeRE.FindAllStringSubmatch(page, -1) {
		got = append(got, m[1])
	}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("timeline on the page %v, the API's %v", got, want)
	}
	for _, s := range []string{
		`id="charge-state">parcialmente estornada<`,
		`data-field="amount">R$ 49,90<`, `data-field="refunded">R$ 10,00<`, `data-field="paid">R$ 49,90<`,
		`data-field="merchant">loja-1<`, `<a href="/console/partners/p1">p1</a>`,
		`data-field="scheme">hodle<`, `pagamento · <span data-field="status">processada</span>`,
		`estorno · <span data-field="status">processada</span>`, `data-field="attempts">1<`,
		`<span data-field="kind">venda</span> · <span data-field="amount">R$ 49,90</span>`,
		`<span data-field="kind">comissão</span>`, `<span data-field="kind">estorno</span> · <span data-field="amount">R$ 10,00</span>`,
		`<tr data-account="assets:cash">`, `<tr data-account="liabilities:commission-payable:p1">`,
		`cobrança paga`, `cobrança estornada`,
	} {
		if !strings.Contains(page, s) {
			t.Errorf("the charge page lacks %s", s)
		}
	}
	// Times in São Paulo: the Hodle delivery was received at the webhook's
	// clock, 22/09/2026 00:00 UTC, 21/09/2026 21:00 in São Paulo.
	if ch, _ := charges.Get(context.Background(), f.db, "order-1"); !strings.Contains(page, `data-field="created">`+dateTime(saoPaulo(t))(ch.CreatedAt)+`<`) {
		t.Errorf("creation time not shown in São Paulo time (%v)", ch.CreatedAt)
	}
}

func saoPaulo(t *testing.T) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation("America/Sao_Paulo")
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

// A second payment of pix1 is a divergence on its page, linked to the
// divergences' page; the delivery of the second payment is there too.
func TestChargePageShowsItsDivergencesLinked(t *testing.T) {
	t.Parallel()
	f, _ := withCharges(t)
	srv := serve(t, f.router)
	c := signedIn(t, srv, f.read)
	_, page := c.get("/console/charges/pix1")
	var id int64
	if err := f.db.Get(&id, `SELECT id FROM divergences WHERE charge_id = 'pix1'`); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{
		`<li data-type="divergence">`, fmt.Sprintf(`href="/console/divergences#divergence-%d"`, id),
		`segundo pagamento`, `data-field="scheme">bcb-pix<`, `<code data-field="event_id">` + pixE2E + `</code>`,
	} {
		if !strings.Contains(page, s) {
			t.Errorf("pix1's page lacks %s", s)
		}
	}
}

// An unknown charge, or an id no charge could have, is the console's 404
// page in Portuguese, as HTML; what the id held is shown as text.
func TestUnknownChargeIsAPortuguese404Page(t *testing.T) {
	t.Parallel()
	f, srv := setup(t)
	c := signedIn(t, srv, f.read)
	for _, path := range []string{"/console/charges/nope", "/console/charges/%3Cb%3Ex%3C%2Fb%3E", "/console/charges/" + strings.Repeat("a", 101),
		"/console/charges/c1"} { // c1 has sets, but no charge was registered
		res, page := c.get(path)
		if res.StatusCode != http.StatusNotFound || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/html") {
			t.Errorf("%s: %d %s, want an HTML 404", path, res.StatusCode, res.Header.Get("Content-Type"))
		}
		if !strings.Contains(page, "Cobrança desconhecida") || strings.Contains(page, "<b>x") {
			t.Errorf("%s: page\n%s", path, page)
		}
	}
}

// Every charge id the console shows links to the charge's page: the
// divergences' (escaped, whatever the PSP sent), the journal's and the
// search's.
func TestChargeIDsLinkToTheChargePage(t *testing.T) {
	t.Parallel()
	f, _ := withCharges(t)
	divergence(t, f.db, "ev-link", `<b>c?x</b>`, "detalhe")
	srv := serve(t, f.router)
	admin := signedIn(t, srv, f.admin)
	_, page := admin.get("/console/adjustments")
	form := proposalForm(t, page, [][3]string{{accounts.Cash, "debito", "1,00"}, {accounts.Adjustments, "credito", "1,00"}}, "acerto de order-1")
	form.Set("cobranca", "order-1")
	if res, body := admin.postForm("/console/adjustments", form); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("propose an adjustment of order-1: %d\n%s", res.StatusCode, body)
	}
	c := signedIn(t, srv, f.read)
	for path, links := range map[string][]string{
		"/console/adjustments":        {`href="/console/charges/order-1"`},
		"/console/divergences":        {`href="/console/charges/pix1"`, `href="/console/charges/%3Cb%3Ec%3Fx%3C%2Fb%3E"`},
		"/console/journal":            {`href="/console/charges/order-1"`, `href="/console/charges/pix1"`, `href="/console/charges/std-1"`},
		"/console/search?q=" + pixE2E: {`href="/console/charges/pix1"`},
	} {
		_, page := c.get(path)
		for _, l := range links {
			if !strings.Contains(page, l) {
				t.Errorf("%s lacks the link %s", path, l)
			}
		}
	}
	if res, _ := c.get("/console/charges/pix1"); res.StatusCode != http.StatusOK {
		t.Errorf("the linked charge page: %d", res.StatusCode)
	}
}

// A charge's statement lines are on its page with their outcome; of a
// kind the charge has more of than the timeline shows, the page says
// there are more.
func TestChargePageShowsStatementLinesAndSaysWhatItLeftOut(t *testing.T) {
	t.Parallel()
	f := newBareFixture(t)
	if _, _, err := charges.Register(context.Background(), f.db, charges.NewCharge{ID: "busy-1", Amount: 4990, Access: "x"}); err != nil {
		t.Fatal(err)
	}
	f.db.MustExec(`INSERT INTO outbox (topic, charge_id, payload) SELECT 'charge.paid', 'busy-1', '{}' FROM generate_series(1, $1::int)`,
		charges.MaxTimelinePerKind+1)
	f.db.MustExec(`INSERT INTO reconciliation_runs (id, endpoint, source, window_from, window_to, final, claimed_by, lease_until)
		VALUES (7, 'pix', 'csv', '2026-08-01', '2026-08-02', true, 'test', now())`)
	f.db.MustExec(`INSERT INTO reconciliation_lines (run_id, line, kind, amount, outcome, charge_id) VALUES (7, 12, 'paid', 4990, 'matched', 'busy-1')`)
	srv := serve(t, f.router)
	c := signedIn(t, srv, f.read)
	res, page := c.get("/console/charges/busy-1")
	if res.StatusCode != http.StatusOK {
		t.Fatalf("%d\n%s", res.StatusCode, page)
	}
	if n := strings.Count(page, `<li data-type="event">`); n != charges.MaxTimelinePerKind {
		t.Errorf("%d events shown, want the first %d", n, charges.MaxTimelinePerKind)
	}
	msg := regexp.MustCompile(`(?s)id="timeline-truncated">(.*?)</p>`).FindStringSubmatch(page)
	if msg == nil || !strings.Contains(msg[1], "eventos") || strings.Contains(msg[1], "linhas de extrato") {
		t.Errorf("the page says of what it left out: %q", msg)
	}
	for _, s := range []string{`<li data-type="statement_line">`, "Linha 12 do extrato pix (conciliação #7) · pagamento · R$ 49,90", "resultado: conferida"} {
		if !strings.Contains(page, s) {
			t.Errorf("the page lacks %s", s)
		}
	}
}
