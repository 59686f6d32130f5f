package main

import (
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/razao/razao/adjustments"
)

// The console's acting pages as razao serve wires them: the
// reconciliation pages without a reconciliation section (the history
// readable, an unknown run an HTML 404 in Portuguese rather than the
// API's JSON), and the config's approval policy (off here: a proposal
// made in the console is booked at once).
func TestConsoleActsAsServeWiresThem(t *testing.T) {
	t.Parallel()
	base, token, _, stop := startServer(t, func(c *serveConfig) { c.adjustments = adjustments.Config{ApprovalOff: true} })
	defer stop()
	jar, _ := cookiejar.New(nil)
	hc := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	get := func(path string) (*http.Response, string) {
		t.Helper()
		res, err := hc.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res, string(b)
	}
	post := func(path string, form url.Values) *http.Response {
		t.Helper()
		res, err := hc.PostForm(base+path, form)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res
	}
	csrf := regexp.MustCompile(`name="csrf" value="([^"]+)"`)
	_, page := get("/console/login")
	if res := post("/console/login", url.Values{"csrf": {csrf.FindStringSubmatch(page)[1]}, "token": {token}}); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("sign in: %d", res.StatusCode)
	}

	res, page := get("/console/reconciliation")
	if res.StatusCode != 200 || !strings.Contains(page, `aria-current="page">Conciliação`) || strings.Contains(page, "upload-form") {
		t.Fatalf("runs page without a reconciler: %d\n%s", res.StatusCode, page)
	}
	res, page = get("/console/reconciliation/1")
	if res.StatusCode != http.StatusNotFound || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/html") ||
		!strings.Contains(page, "Execução de conciliação desconhecida") {
		t.Fatalf("an unknown run: %d %s\n%s", res.StatusCode, res.Header.Get("Content-Type"), page)
	}

	_, page = get("/console/adjustments")
	key := regexp.MustCompile(`name="key" value="([^"]+)"`).FindStringSubmatch(page)
	if key == nil || !strings.Contains(page, "está desligada") {
		t.Fatalf("the adjustments page does not say approval is off:\n%s", page)
	}
	res = post("/console/adjustments", url.Values{"csrf": {csrf.FindStringSubmatch(page)[1]}, "key": {key[1]},
		"conta": {"assets:cash", "equity:adjustments"}, "lado": {"debito", "credito"}, "valor": {"1,00", "1,00"},
		"nota": {"acerto"}, "competencia": {"01/09/2026"}})
	if res.StatusCode != http.StatusSeeOther || !strings.Contains(res.Header.Get("Location"), "feito=lancado") {
		t.Fatalf("propose with approval off: %d %s", res.StatusCode, res.Header.Get("Location"))
	}
}
