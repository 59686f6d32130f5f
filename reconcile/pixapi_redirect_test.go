package reconcile_test

import (
	"context"
	"crypto/tls"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/razao/razao/reconcile/bcbpix"
)

// otherHost is another origin over real TLS, its certificate issued by
// the fake PSP's CA (so that a client which followed a redirect there
// would reach it): it records the Authorization each request carried,
// issues tokens and serves a statement of its own, as a host that
// harvests credentials would.
type otherHost struct {
	srv  *httptest.Server
	mu   sync.Mutex
	auth []string // "METHOD path: Authorization"
}

func newOtherHost(t *testing.T, f *fakePSP) *otherHost {
	t.Helper()
	h := &otherHost{}
	cert, _, _ := f.ca.leaf(t, "another host", true)
	h.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.mu.Lock()
		h.auth = append(h.auth, r.Method+" "+r.URL.Path+": "+r.Header.Get("Authorization"))
		h.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/oauth/token" {
			w.Write([]byte(`{"access_token":"forged","token_type":"Bearer","expires_in":3600}`))
			return
		}
		w.Write([]byte(`{"parametros":{"inicio":"2020-01-01T00:00:00Z","fim":"2020-01-02T00:00:00Z","paginacao":` +
			`{"paginaAtual":0,"itensPorPagina":2,"quantidadeDePaginas":1,"quantidadeTotalDeItens":1}},` +
			`"pix":[{"endToEndId":"E00000000000000000000000000000001","txid":"forged","valor":"1.00","horario":"2020-01-01T10:00:00Z"}]}`))
	}))
	h.srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	h.srv.StartTLS()
	t.Cleanup(h.srv.Close)
	return h
}

func (h *otherHost) requests() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.auth...)
}

// TestPixAPIRedirectToAnotherHostIsAnErrorAndCarriesNoCredential: GET
// /pix answered 302 to another host, and the token endpoint answered
// 307 to it, are errors that name the status and the Location; the other
// host never sees the bearer token nor the client's secret. A run whose
// PSP answers so fails and books nothing of the other host's statement.
func TestPixAPIRedirectToAnotherHostIsAnErrorAndCarriesNoCredential(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	q := bcbpix.Query{Inicio: winFrom, Fim: winTo}

	f := newFakePSP(t)
	other := newOtherHost(t, f)
	cert, _, _ := f.ca.leaf(t, "razao", false)
	c := f.client(t, cert, fakeClientSecret, &waits{})
	f.set(func() { f.redirectPix = other.srv.URL + "/pix?paginacao.paginaAtual=0" })
	_, err := c.Page(ctx, q, 0)
	if err == nil || !strings.Contains(err.Error(), "302") || !strings.Contains(err.Error(), f.redirectPix) {
		t.Errorf("GET /pix answered 302: %v; want an error naming 302 and %s", err, f.redirectPix)
	}
	_, err = c.Pix(ctx, e2e(1))
	if err == nil || !strings.Contains(err.Error(), "302") {
		t.Errorf("GET /pix/{e2eid} answered 302: %v", err)
	}
	if got := other.requests(); len(got) != 0 {
		t.Errorf("the other host was asked %q", got)
	}

	g := newFakePSP(t)
	other = newOtherHost(t, g)
	cert, _, _ = g.ca.leaf(t, "razao", false)
	c = g.client(t, cert, fakeClientSecret, &waits{})
	g.set(func() { g.redirectToken = other.srv.URL + "/oauth/token" })
	_, err = c.Page(ctx, q, 0)
	if err == nil || !strings.Contains(err.Error(), "307") || !strings.Contains(err.Error(), g.redirectToken) {
		t.Errorf("the token answered 307: %v; want an error naming 307 and %s", err, g.redirectToken)
	}
	if err != nil && strings.Contains(err.Error(), fakeClientSecret) {
		t.Errorf("the error carries the client secret: %v", err)
	}
	if got := other.requests(); len(got) != 0 {
		t.Errorf("the other host was asked %q", got)
	}

	e := newEnv(t)
	other = newOtherHost(t, e.psp)
	e.charge("forged", 100, "")
	e.psp.set(func() { e.psp.redirectPix = other.srv.URL + "/pix" })
	run, err := e.rec.ReconcileWindow(ctx, "bcb", winFrom, winTo)
	if err == nil || run.Status != "failed" || run.Error == nil || !strings.Contains(*run.Error, "302") {
		t.Errorf("a run redirected: %+v: %v", run, err)
	}
	if n := e.count(`SELECT count(*) FROM inbox`) + e.sales(); n != 0 {
		t.Errorf("the other host's statement was booked (%d)", n)
	}
	if got := other.requests(); len(got) != 0 {
		t.Errorf("the other host was asked %q", got)
	}
}
