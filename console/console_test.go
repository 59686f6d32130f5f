package console

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/razao/razao/accounts"
	"github.com/razao/razao/auth"
	"github.com/razao/razao/divergences"
	"github.com/razao/razao/monthsums"
	"github.com/razao/razao/partners"
	"github.com/razao/razao/periods"
	"github.com/razao/razao/reports"
)

func TestSignInExchangesTokenForAStrictCookieStoredHashed(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	for _, mode := range []string{"http", "tls", "behind-proxy"} {
		tls := mode != "http"
		f.console.BehindTLSProxy = mode == "behind-proxy"
		srv := httptest.NewUnstartedServer(f.router)
		if mode == "tls" {
			srv.StartTLS()
		} else {
			srv.Start()
		}
		defer srv.Close()
		c := newClient(t, srv)
		_, page := c.get("/console/login")
		res, _ := c.postForm("/console/login", url.Values{"csrf": {csrfOf(t, page)}, "token": {f.admin}})
		var ck *http.Cookie
		for _, k := range res.Cookies() {
			if k.Name == sessionCookie {
				ck = k
			}
		}
		if ck == nil {
			t.Fatalf("tls=%v: no session cookie: %d", tls, res.StatusCode)
		}
		if !ck.HttpOnly || ck.SameSite != http.SameSiteStrictMode || ck.Secure != tls || ck.MaxAge != int(SessionTTL.Seconds()) || ck.Path != Prefix {
			t.Errorf("tls=%v: cookie %+v", tls, ck)
		}
		if strings.Contains(ck.Value, f.admin) || ck.Value == f.admin {
			t.Error("the cookie carries the API token")
		}
		var stored int
		if err := f.db.Get(&stored, `SELECT count(*) FROM console_sessions WHERE session_hash = $1 AND expires_at = created_at + interval '8 hours'`, sessionDigest(ck.Value)); err != nil || stored != 1 {
			t.Errorf("tls=%v: %d sessions stored under the cookie's digest: %v", tls, stored, err)
		}
		var plain int
		f.db.Get(&plain, `SELECT count(*) FROM console_sessions WHERE session_hash = convert_to($1, 'UTF8')`, ck.Value)
		if plain != 0 {
			t.Error("the cookie is stored in plaintext")
		}
		if res, body := c.get("/console/month/2026-08"); res.StatusCode != 200 || !strings.Contains(body, "finance-admin") {
			t.Errorf("tls=%v: month page after sign-in: %d", tls, res.StatusCode)
		}
	}
}

func TestSignInRefusesBadTokensAndForgedForms(t *testing.T) {
	t.Parallel()
	f, srv := setup(t)
	c := newClient(t, srv)
	_, page := c.get("/console/login")
	csrf := csrfOf(t, page)
	for _, tok := range []string{"", "rz_nope", f.admin + "x", strings.Repeat("a", 60<<10), "rz_\x00<script>"} {
		if res, body := c.postForm("/console/login", url.Values{"csrf": {csrf}, "token": {tok}}); res.StatusCode != http.StatusUnauthorized || !strings.Contains(body, "Token inválido") {
			t.Errorf("token %.20q: %d", tok, res.StatusCode)
		}
		_, page = c.get("/console/login")
		csrf = csrfOf(t, page)
	}
	// A sign-in form posted from elsewhere has no login cookie value to match.
	if res, _ := c.postForm("/console/login", url.Values{"csrf": {"forged"}, "token": {f.admin}}); res.StatusCode != http.StatusForbidden {
		t.Errorf("forged login csrf: %d, want 403", res.StatusCode)
	}
	if res, _ := c.postForm("/console/login", url.Values{"csrf": {csrf}, "token": {strings.Repeat("x", maxForm)}}); res.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("huge form: %d, want 413", res.StatusCode)
	}
	if n := f.sessions(t); n != 0 {
		t.Errorf("%d sessions after refused sign-ins", n)
	}
}

func TestConsoleRefusesNoSessionForgedCSRFAndRevokedToken(t *testing.T) {
	t.Parallel()
	f, srv := setup(t)
	div := divergence(t, f.db, "ev-1", "c9", "unknown charge")

	anon := newClient(t, srv)
	for _, p := range []string{"/console/", "/console/month/2026-08", "/console/chart", "/console/chart.svg", "/console/divergences",
		"/console/periods", "/console/partners", "/console/partners/p1", "/console/accounts/assets:cash",
		"/console/exports/journal.csv?month=2026-08", "/console/periods/2026-08/close"} {
		if res, _ := anon.get(p); res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/console/login" {
			t.Errorf("GET %s without a session: %d %s", p, res.StatusCode, res.Header.Get("Location"))
		}
	}
	for _, p := range []string{fmt.Sprintf("/console/divergences/%d/resolve", div), "/console/periods/2026-08/close", "/console/logout"} {
		if res, _ := anon.postForm(p, url.Values{"csrf": {"x"}, "note": {"n"}}); res.StatusCode != http.StatusUnauthorized {
			t.Errorf("POST %s without a session: %d", p, res.StatusCode)
		}
	}
	// A cookie nobody issued.
	anon.hc.Jar.SetCookies(mustURL(t, srv.URL+"/console/"), []*http.Cookie{{Name: sessionCookie, Value: newSecret(), Path: "/console"}})
	if res, _ := anon.get("/console/month/2026-08"); res.StatusCode != http.StatusSeeOther {
		t.Errorf("unknown cookie: %d", res.StatusCode)
	}

	admin := signedIn(t, srv, f.admin)
	_, page := admin.get("/console/divergences")
	good := csrfOf(t, page)
	for _, bad := range []string{"", "forged", good + "x", csrfToken(newSecret())} {
		res, _ := admin.postForm(fmt.Sprintf("/console/divergences/%d/resolve", div), url.Values{"csrf": {bad}, "note": {"ok"}})
		if res.StatusCode != http.StatusForbidden {
			t.Errorf("csrf %q: %d, want 403", bad, res.StatusCode)
		}
		res, _ = admin.postForm("/console/periods/2026-08/close", url.Values{"csrf": {bad}})
		if res.StatusCode != http.StatusForbidden {
			t.Errorf("close with csrf %q: %d, want 403", bad, res.StatusCode)
		}
	}
	if d, _ := divergences.Get(context.Background(), f.db, div); d.Status != divergences.StatusOpen {
		t.Fatalf("a forged form resolved the divergence: %+v", d)
	}
	if tb, _ := reports.TrialBalance(context.Background(), f.db, monthsums.Books{}, aug2026); tb.Closed {
		t.Fatal("a forged form closed the month")
	}

	// Revoking the token ends its sessions at the next request.
	tok, err := auth.Authenticate(context.Background(), f.db, f.admin)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := auth.Revoke(context.Background(), f.db, tok.ID); err != nil {
		t.Fatal(err)
	}
	if res, _ := admin.get("/console/month/2026-08"); res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/console/login" {
		t.Errorf("revoked token's session: %d", res.StatusCode)
	}
	if res, _ := admin.postForm(fmt.Sprintf("/console/divergences/%d/resolve", div), url.Values{"csrf": {good}, "note": {"ok"}}); res.StatusCode != http.StatusUnauthorized {
		t.Errorf("revoked token's session resolving: %d, want 401", res.StatusCode)
	}
}

func TestSignOutEndsTheSession(t *testing.T) {
	t.Parallel()
	f, srv := setup(t)
	c := signedIn(t, srv, f.read)
	cookies := c.hc.Jar.Cookies(mustURL(t, srv.URL+"/console/"))
	c.signOut()
	// The old cookie, replayed, is dead: the row is gone.
	replay := newClient(t, srv)
	replay.hc.Jar.SetCookies(mustURL(t, srv.URL+"/console/"), cookies)
	if res, _ := replay.get("/console/month/2026-08"); res.StatusCode != http.StatusSeeOther {
		t.Errorf("cookie after sign-out: %d", res.StatusCode)
	}
}

// Every page: the CSP header, and HTML without inline script, inline
// style or event-handler attributes.
func TestEveryPageHasTheCSPAndNoInlineScriptOrStyle(t *testing.T) {
	t.Parallel()
	f, srv := setup(t)
	divergence(t, f.db, "ev-1", "c9", "detail")
	c := signedIn(t, srv, f.admin)
	pages := []string{"/console/login", "/console/month/2026-08", "/console/chart?to=2026-09", "/console/accounts/income:revenue?to=2026-09",
		"/console/divergences", "/console/periods", "/console/periods/2026-08/close", "/console/partners", "/console/partners/p1",
		"/console/month/nope", "/console/static/console.css", "/console/static/live.js"}
	inline := regexp.MustCompile(`(?i)<script(?:\s[^>]*)?>\s*[^<\s]|<script(?:\s(?:[^s>]|s[^r>])*)?>|\sstyle=|<style|\son[a-z]+=|javascript:`)
	for _, p := range pages {
		res, body := c.get(p)
		if got := res.Header.Get("Content-Security-Policy"); got != contentSecurityPolicy {
			t.Errorf("%s: CSP %q", p, got)
		}
		if !strings.Contains(contentSecurityPolicy, "script-src 'self'") || strings.Contains(contentSecurityPolicy, "unsafe-inline") {
			t.Fatal("the policy allows inline script or style")
		}
		if res.Header.Get("X-Content-Type-Options") != "nosniff" || res.Header.Get("Cache-Control") != "no-store" {
			t.Errorf("%s: headers %v", p, res.Header)
		}
		if strings.HasPrefix(res.Header.Get("Content-Type"), "text/html") {
			if m := inline.FindString(body); m != "" {
				t.Errorf("%s: inline script or style: %q", p, m)
			}
		}
	}
	if res, _ := c.get("/console/chart.svg?to=2026-09"); !strings.Contains(res.Header.Get("Content-Security-Policy"), "default-src 'none'") ||
		strings.Contains(res.Header.Get("Content-Security-Policy"), "script") {
		t.Errorf("chart CSP %q", res.Header.Get("Content-Security-Policy"))
	}
}

func mustURL(t testing.TB, s string) *url.URL {
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// The month page shows the API's trial balance and income statement, line
// by line, and a download of each export equal to the API's.
func TestMonthPageShowsTheAPIsFigures(t *testing.T) {
	t.Parallel()
	f, srv := setup(t)
	c := signedIn(t, srv, f.read)
	for _, m := range []string{"2026-08", "2026-09"} {
		res, page := c.get("/console/month/" + m)
		if res.StatusCode != 200 {
			t.Fatalf("%s: %d", m, res.StatusCode)
		}
		var tb reports.TrialBalanceReport
		c.api(f.read, "/v1/reports/trial-balance/"+m, &tb)
		if len(tb.Lines) < 8 {
			t.Fatalf("%s: only %d lines from the API", m, len(tb.Lines))
		}
		for _, l := range tb.Lines {
			wantBalanceteLine(t, page, m, l)
		}
		var inc reports.Income
		c.api(f.read, "/v1/reports/income-statement/"+m, &inc)
		for name, want := range map[string]int64{"sales": inc.Sales, "refunds": inc.Refunds, "commission": inc.Commission,
			"psp_fees": inc.PSPFees, "net_income": inc.NetIncome, "net_revenue": inc.NetRevenue} {
			cell := regexp.MustCompile(`data-field="` + name + `">([^<]*)<`).FindStringSubmatch(page)
			if cell == nil || cell[1] != brl(want) {
				t.Errorf("%s income %s: page %v, API %d", m, name, cell, want)
			}
		}
		if !strings.Contains(page, ">aberto<") || !strings.Contains(page, "Mês "+monthText(m)) {
			t.Errorf("%s: no open state or Brazilian month label", m)
		}
		// Every export, both dialects, byte for byte the API's.
		links := regexp.MustCompile(`href="(/console/exports/[^"]+)"`).FindAllStringSubmatch(page, -1)
		if len(links) != 6 {
			t.Fatalf("%s: %d export links, want 6", m, len(links))
		}
		for _, l := range links {
			path := strings.ReplaceAll(l[1], "&amp;", "&")
			res, got := c.get(path)
			if res.StatusCode != 200 || !strings.HasPrefix(res.Header.Get("Content-Disposition"), "attachment;") {
				t.Fatalf("%s: %d %v", path, res.StatusCode, res.Header)
			}
			apiPath := strings.Replace(path, "/console/", "/v1/", 1)
			req, _ := http.NewRequest(http.MethodGet, srv.URL+apiPath, nil)
			req.Header.Set("Authorization", "Bearer "+f.read)
			ares, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			want, _ := io.ReadAll(ares.Body)
			ares.Body.Close()
			if got != string(want) || len(got) < 50 {
				t.Errorf("%s differs from %s", path, apiPath)
			}
		}
	}
	if res, _ := c.get("/console/month/0001-01"); res.StatusCode != http.StatusBadRequest {
		t.Errorf("month 0001-01: %d", res.StatusCode)
	}
	if res, _ := c.get("/console/month?month=2026-08"); res.Header.Get("Location") != "/console/month/2026-08" {
		t.Errorf("picker: %v", res.Header)
	}
	// The picker's fields: a month by its Portuguese name, a year.
	if res, _ := c.get("/console/month?mes=08&ano=2026"); res.Header.Get("Location") != "/console/month/2026-08" {
		t.Errorf("picker fields: %v", res.Header)
	}
	for _, q := range []string{"mes=13&ano=2026", "mes=8&ano=2026", "mes=08&ano=26", "mes=08"} {
		if res, _ := c.get("/console/month?" + q); res.StatusCode != http.StatusBadRequest {
			t.Errorf("picker %s: %d", q, res.StatusCode)
		}
	}
	_, page := c.get("/console/month/2026-08")
	if !strings.Contains(page, `<option value="08" selected>ago</option>`) || strings.Contains(page, `type="month"`) {
		t.Errorf("month picker: want a select of Portuguese month names with August chosen, no browser-localised month field")
	}
	// The chart's axis writes months as every page does: ago over 2026.
	if _, svg := c.get("/console/chart.svg?to=2026-09"); !slices.Equal(axisMonths(svg), []string{"ago/2026", "set/2026"}) {
		t.Errorf("chart axis labels months %v, want ago/2026 and set/2026 (its months from the first with postings)", axisMonths(svg))
	}
	if res, _ := c.get("/console/exports/passwd.csv?month=2026-08"); res.StatusCode != http.StatusNotFound {
		t.Errorf("unknown export: %d", res.StatusCode)
	}
	// A NUL or a byte PostgreSQL refuses in an account code or a page
	// cursor is the request's fault, never the database's.
	for _, path := range []string{"/console/accounts/a%00b", "/console/accounts/a%FFb", "/console/partners?after=%00",
		"/console/partners?after=a:b"} {
		if res, _ := c.get(path); res.StatusCode >= 500 || res.StatusCode == http.StatusOK {
			t.Errorf("%s: %d, want a refusal of the request", path, res.StatusCode)
		}
	}
}

// The trend's table and chart, and an account's series, from the API's
// functions.
func TestChartAndSeriesShowTheAPIsFigures(t *testing.T) {
	t.Parallel()
	f, srv := setup(t)
	c := signedIn(t, srv, f.read)
	_, page := c.get("/console/chart?to=2026-09")
	for _, m := range months(sep2026) {
		if m.Before(aug2026) { // before the books' first month: neither listed nor drawn
			if strings.Contains(page, `data-month="`+m.String()+`"`) {
				t.Errorf("the trend lists %s, before the first month with postings", m)
			}
			continue
		}
		var inc reports.Income
		c.api(f.read, "/v1/reports/income-statement/"+m.String(), &inc)
		wantFigures(t, page, "data-month", m.String(), "trend "+m.String(),
			map[string]int64{"sales": inc.Sales, "refunds": inc.Refunds, "commission": inc.Commission, "net_income": inc.NetIncome})
	}
	if !strings.Contains(page, `src="/console/chart.svg?to=2026-09"`) {
		t.Error("no chart image on the trend page")
	}
	res, svg := c.get("/console/chart.svg?to=2026-09")
	if res.StatusCode != 200 || res.Header.Get("Content-Type") != "image/svg+xml" || !strings.Contains(svg, "<svg") {
		t.Fatalf("chart: %d %s %.100s", res.StatusCode, res.Header.Get("Content-Type"), svg)
	}
	for _, want := range []string{"Vendas", "Estornos", "Comissões", "Resultado"} {
		if !strings.Contains(svg, ">"+want+"<") {
			t.Errorf("chart lacks %q", want)
		}
	}
	if got := axisMonths(svg); !slices.Equal(got, []string{"ago/2026", "set/2026"}) {
		t.Errorf("chart draws months %v, want ago/2026 and set/2026", got)
	}

	_, page = c.get("/console/accounts/income:revenue?to=2026-09")
	var s reports.Series
	c.api(f.read, "/v1/accounts/income:revenue/series?from=2026-08&to=2026-09", &s)
	for _, p := range s.Points {
		for name, want := range map[string]string{"opening": dc(p.Opening), "debits": brl(p.Debits), "credits": brl(p.Credits),
			"change": dc(p.Change), "cumulative": dc(p.Cumulative), "historical": dc(p.Historical)} {
			if got := field(t, page, "data-month", p.Month, name); got != want {
				t.Errorf("series %s %s: page %q, API %s", p.Month, name, got, want)
			}
		}
	}
	if strings.Contains(page, `data-month="2026-07"`) || !strings.Contains(page, "Receita de vendas") || !strings.Contains(page, "natureza credora") {
		t.Error("the account page lists a month before the first with postings, or does not name the account and its nature in Portuguese")
	}
	if res, svg := c.get("/console/accounts/income:revenue/chart.svg?to=2026-09"); res.StatusCode != 200 || !strings.Contains(svg, "<svg") {
		t.Errorf("account chart: %d", res.StatusCode)
	}
	c.wantStatuses(map[string]int{"/console/accounts/nope:nope": 404, "/console/accounts/%3Cscript%3E": 404, "/console/chart?to=9999-99": 400})
}

func TestDivergencesOpenFirstWithDeliveryResolvedByAdminOnly(t *testing.T) {
	t.Parallel()
	f, srv := setup(t)
	first := divergence(t, f.db, "ev-1", `<img src=x onerror=alert(1)>`, `detail <script>alert("x")</script>`)
	second := divergence(t, f.db, "ev-2", "c9", "second")

	reader := signedIn(t, srv, f.read)
	_, page := reader.get("/console/divergences")
	if strings.Contains(page, "<img src=x") || strings.Contains(page, `<script>alert("x")`) ||
		!strings.Contains(page, "&lt;img src=x onerror=alert(1)&gt;") || !strings.Contains(page, "&lt;script&gt;") {
		t.Error("a charge id or detail with HTML is not shown escaped")
	}
	if !strings.Contains(page, "Entrega do webhook") || !strings.Contains(page, "ev-1") {
		t.Error("the delivery behind the divergence is not shown")
	}
	if strings.Contains(page, `action="/console/divergences/`) {
		t.Error("a read token is offered the resolve form")
	}
	if res, _ := reader.postForm(fmt.Sprintf("/console/divergences/%d/resolve", first), url.Values{"csrf": {csrfOf(t, page)}, "note": {"x"}}); res.StatusCode != http.StatusForbidden {
		t.Errorf("read token resolving: %d, want 403", res.StatusCode)
	}

	admin := signedIn(t, srv, f.admin)
	_, page = admin.get("/console/divergences")
	csrf := csrfOf(t, page)
	if res, _ := admin.postForm(fmt.Sprintf("/console/divergences/%d/resolve", first), url.Values{"csrf": {csrf}, "note": {"  "}}); res.StatusCode != http.StatusBadRequest {
		t.Errorf("empty note: %d", res.StatusCode)
	}
	res, _ := admin.postForm(fmt.Sprintf("/console/divergences/%d/resolve", first), url.Values{"csrf": {csrf}, "note": {"charge <b>registered</b> late"}})
	if res.StatusCode != http.StatusSeeOther {
		t.Fatalf("resolve: %d", res.StatusCode)
	}
	if res, _ := admin.postForm(fmt.Sprintf("/console/divergences/%d/resolve", first), url.Values{"csrf": {csrf}, "note": {"again"}}); res.StatusCode != http.StatusConflict {
		t.Errorf("resolve twice: %d", res.StatusCode)
	}
	for _, id := range []string{"0", "-1", "99999", "x", "9223372036854775808"} {
		if res, _ := admin.postForm("/console/divergences/"+id+"/resolve", url.Values{"csrf": {csrf}, "note": {"n"}}); res.StatusCode != http.StatusNotFound {
			t.Errorf("resolve %s: %d", id, res.StatusCode)
		}
	}
	var page2 struct{ Divergences []divergences.Divergence }
	admin.api(f.admin, "/v1/divergences?status=resolved", &page2)
	if len(page2.Divergences) != 1 || page2.Divergences[0].ID != first || page2.Divergences[0].ResolutionNote != "charge <b>registered</b> late" {
		t.Fatalf("API after resolve: %+v", page2)
	}
	_, page = admin.get("/console/divergences")
	openAt := strings.Index(page, fmt.Sprintf(`id="divergence-%d" data-status="open"`, second))
	resolvedAt := strings.Index(page, fmt.Sprintf(`id="divergence-%d" data-status="resolved"`, first))
	if openAt < 0 || resolvedAt < 0 || openAt > resolvedAt || strings.Contains(page, "<b>registered</b>") {
		t.Errorf("open first, then resolved, note escaped: open at %d, resolved at %d", openAt, resolvedAt)
	}
}

func TestClosingAMonthShowsWhatIsFrozenAndNeedsAdmin(t *testing.T) {
	t.Parallel()
	f, srv := setup(t)

	reader := signedIn(t, srv, f.read)
	_, page := reader.get("/console/periods")
	if strings.Contains(page, "/close") {
		t.Error("a read token is offered to close a month")
	}
	if res, _ := reader.postForm("/console/periods/2026-08/close", url.Values{"csrf": {csrfOf(t, page)}}); res.StatusCode != http.StatusForbidden {
		t.Errorf("read token closing: %d", res.StatusCode)
	}

	admin := signedIn(t, srv, f.admin)
	_, page = admin.get("/console/periods")
	if !strings.Contains(page, `href="/console/periods/2026-08/close"`) {
		t.Fatal("no close link for August")
	}
	// Only the month a close would close now is offered.
	if n := strings.Count(page, `/close"`); n != 1 {
		t.Errorf("%d close links, want August's alone", n)
	}
	_, confirm := admin.get("/console/periods/2026-08/close")
	var inc reports.Income
	admin.api(f.admin, "/v1/reports/income-statement/2026-08", &inc)
	if !strings.Contains(confirm, `data-field="net_income">`+brl(inc.NetIncome)+`<`) || !strings.Contains(confirm, brl(inc.Sales)) {
		t.Errorf("the confirmation does not show the income statement to be frozen (%s)", brl(inc.NetIncome))
	}
	csrf := csrfOf(t, confirm)
	if res, _ := admin.postForm("/console/periods/2026-09/close", url.Values{"csrf": {csrf}}); res.StatusCode != http.StatusConflict {
		t.Errorf("closing September before August: %d", res.StatusCode)
	}
	if res, _ := admin.postForm("/console/periods/2026-10/close", url.Values{"csrf": {csrf}}); res.StatusCode != http.StatusConflict {
		t.Errorf("closing October, not over: %d", res.StatusCode)
	}
	if res, _ := admin.postForm("/console/periods/2026-08/close", url.Values{"csrf": {csrf}}); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("close: %d", res.StatusCode)
	}
	var ps struct{ Periods []periods.Period }
	admin.api(f.admin, "/v1/periods", &ps)
	found := false
	for _, p := range ps.Periods {
		if p.Month == "2026-08" {
			found = p.Status == "closed" && p.ClosedBy == "finance-admin" && p.Snapshot
		}
	}
	if !found {
		t.Fatalf("August not closed by finance-admin with a snapshot: %+v", ps)
	}
	_, page = admin.get("/console/periods")
	if field(t, page, "data-month", "2026-08", "status") != "fechado" {
		t.Error("periods page does not show August closed")
	}
	if _, month := admin.get("/console/month/2026-08"); !strings.Contains(month, ">fechado<") {
		t.Error("month page does not show August closed")
	}
}

func TestPartnersShowTheAPIsSummariesAndPayouts(t *testing.T) {
	t.Parallel()
	f, srv := setup(t)
	c := signedIn(t, srv, f.read)
	_, page := c.get("/console/partners")
	for _, id := range []string{"p1", "p2"} {
		var s partners.Summary
		c.api(f.read, "/v1/partners/"+id, &s)
		wantFigures(t, page, "data-partner", id, id,
			map[string]int64{"commissions": s.Commissions, "reversed": s.Reversed, "paid": s.Paid, "owed": s.Owed})
	}
	_, page = c.get("/console/partners/p1")
	if !strings.Contains(page, `data-field="payout">R$ 5,00<`) {
		t.Error("p1's payout of R$ 5,00 is not listed")
	}
	if strings.Contains(page, "<script>alert(1)") || !strings.Contains(page, "&lt;script&gt;alert(1)&lt;/script&gt;") {
		t.Error("a payout description with HTML is not escaped")
	}
	// A second page past partnersPerPage partners.
	for i := range partnersPerPage {
		if _, err := accounts.Ensure(context.Background(), f.db, fmt.Sprintf("liabilities:commission-payable:q%02d", i)); err != nil {
			t.Fatal(err)
		}
	}
	_, page = c.get("/console/partners")
	next := regexp.MustCompile(`href="(/console/partners\?after=[^"]+)"`).FindStringSubmatch(page)
	if n := strings.Count(page, "<tr data-partner="); n != partnersPerPage || next == nil {
		t.Fatalf("first page: %d partners, next %v", n, next)
	}
	_, page = c.get(next[1])
	if n := strings.Count(page, "<tr data-partner="); n != 2 || !strings.Contains(page, `data-partner="q19"`) || strings.Contains(page, "Mais parceiros") {
		t.Errorf("second page: %d partners", n)
	}
	c.wantStatuses(map[string]int{"/console/partners/nobody": 404, "/console/partners/a:b": 404, "/console/partners?after=" + strings.Repeat("z", 300): 400})
}

func TestASessionExpires(t *testing.T) {
	t.Parallel()
	f, srv := setup(t)
	c := signedIn(t, srv, f.read)
	f.later.Store(int64(SessionTTL - time.Second))
	if res, _ := c.get("/console/periods"); res.StatusCode != http.StatusOK {
		t.Fatalf("a second before expiry: %d", res.StatusCode)
	}
	f.later.Store(int64(SessionTTL))
	if res, _ := c.get("/console/periods"); res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/console/login" {
		t.Errorf("at expiry: %d %s", res.StatusCode, res.Header.Get("Location"))
	}
	// The next sign-in sweeps the expired row.
	c.signIn(f.read)
	if n := f.sessions(t); n != 1 {
		t.Errorf("%d sessions after a sign-in past an expired one, want 1", n)
	}
}

// A divergence a reconciliation run found shows where it was found and
// both sides: the statement's and the ledger's.
func TestDivergenceOfAReconciliationShowsBothSides(t *testing.T) {
	t.Parallel()
	f, srv := setup(t)
	f.db.MustExec(`INSERT INTO divergences (source, reconciliation_key, endpoint, run_line, line_kind, charge_id, reason, detail,
			statement_psp_id, statement_charge_ref, statement_refund_id, statement_amount, ledger_amount)
		VALUES ('reconciliation', '["bcb","amount_mismatch"]', 'bcb', 7, 'paid', 'order-9', 'amount_mismatch', 'differs',
			'E123', 'order-9', '', 9900, 10000)`)
	c := signedIn(t, srv, f.read)
	_, page := c.get("/console/divergences")
	for _, want := range []string{"Conciliação bcb, linha 7 (pagamento)", "<code>E123</code>", brl(9900), brl(10000)} {
		if !strings.Contains(page, want) {
			t.Errorf("the reconciliation's divergence does not show %q", want)
		}
	}
}
