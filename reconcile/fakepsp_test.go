package reconcile_test

import (
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakePSP is a BCB Pix API inside the test, over real TLS: it issues
// OAuth tokens for one client (and refuses a wrong secret), takes only
// clients whose certificate chains to its CA, pages GET /pix by inicio,
// fim, paginacao.paginaAtual and paginacao.itensPorPagina, and can answer
// 429 with Retry-After or 503, and change the statement between pages.
type fakePSP struct {
	t      *testing.T
	srv    *httptest.Server
	ca     *testCA // issues the server's and the clients' certificates
	id     string
	secret string

	mu     sync.Mutex
	items  []pixItem
	tokens map[string]bool
	// failures are answered, in order, before GET /pix is served again.
	failures []failure
	// beforePage runs before a page is answered, under no lock.
	beforePage func(page int)
	// answer, when set, rewrites the body of page's answer before it is
	// sent (a hostile PSP's); served keeps each GET /pix body as sent.
	answer func(page int, body []byte) []byte
	served [][]byte
	// redirectPix and redirectToken, when set, answer GET /pix 302 and
	// the token 307 to that Location (a PSP answering for another host).
	redirectPix, redirectToken string
	// counts of requests served, by kind.
	tokenRequests, pageRequests, refused int
	pagesServed                          []int
	// refundsOnly is, for each page served, whether it was asked with
	// devolucaoPresente=true (only the Pix that carry a devolução).
	refundsOnly []bool
}

type failure struct {
	status     int
	retryAfter string
}

type pixItem struct {
	E2E, Txid, Valor string
	Horario          time.Time
	Devolucoes       []devolucao
	// Componentes is the item's componentesValor, raw; nil for none.
	Componentes json.RawMessage
	// Raw, when set, is served as the item instead (the specification's
	// own example bodies and their hostile variants); Horario still
	// places it in the statement.
	Raw map[string]any
}

type devolucao struct {
	ID, Valor, Status string
	Liquidacao        time.Time
	Natureza          string // "" for none
}

func (it pixItem) json() map[string]any {
	if it.Raw != nil {
		return it.Raw
	}
	m := map[string]any{"endToEndId": it.E2E, "valor": it.Valor, "horario": it.Horario.UTC().Format(time.RFC3339)}
	if it.Txid != "" {
		m["txid"] = it.Txid
	}
	var devs []map[string]any
	for _, d := range it.Devolucoes {
		dm := map[string]any{"id": d.ID, "rtrId": "D" + d.ID, "valor": d.Valor, "status": d.Status,
			"horario": map[string]any{"solicitacao": it.Horario.UTC().Format(time.RFC3339)}}
		if d.Natureza != "" {
			dm["natureza"] = d.Natureza
		}
		if !d.Liquidacao.IsZero() {
			dm["horario"].(map[string]any)["liquidacao"] = d.Liquidacao.UTC().Format(time.RFC3339)
		}
		devs = append(devs, dm)
	}
	if devs != nil {
		m["devolucoes"] = devs
	}
	if it.Componentes != nil {
		m["componentesValor"] = it.Componentes
	}
	return m
}

const fakeClientID, fakeClientSecret = "razao-client", "s3cret-of-the-fake-psp-0123456789"

func newFakePSP(t *testing.T) *fakePSP {
	t.Helper()
	f := &fakePSP{t: t, ca: newTestCA(t, "fake psp ca"), id: fakeClientID, secret: fakeClientSecret, tokens: map[string]bool{}}
	serverCert, _, _ := f.ca.leaf(t, "fake psp", true)
	mux := http.NewServeMux()
	mux.HandleFunc("POST /oauth/token", f.token)
	mux.HandleFunc("GET /pix", f.list)
	mux.HandleFunc("GET /pix/{e2eid}", f.one)
	f.srv = httptest.NewUnstartedServer(mux)
	f.srv.TLS = &tls.Config{Certificates: []tls.Certificate{serverCert},
		ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: f.ca.pool(), MinVersion: tls.VersionTLS12}
	f.srv.StartTLS()
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakePSP) add(items ...pixItem) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.items = append(f.items, items...)
}

func (f *fakePSP) failNext(fs ...failure) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failures = append(f.failures, fs...)
}

// set changes the fake's behaviour under its lock, between requests.
func (f *fakePSP) set(change func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	change()
}

func (f *fakePSP) counts() (tokens, pages int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.tokenRequests, f.pageRequests
}

func (f *fakePSP) token(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.tokenRequests++
	if f.redirectToken != "" {
		http.Redirect(w, r, f.redirectToken, http.StatusTemporaryRedirect)
		return
	}
	id, secret, ok := r.BasicAuth()
	if err := r.ParseForm(); err != nil || r.PostForm.Get("grant_type") != "client_credentials" {
		http.Error(w, `{"error":"unsupported_grant_type"}`, http.StatusBadRequest)
		return
	}
	if !ok || id != f.id || secret != f.secret {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		w.Write([]byte(`{"error":"invalid_client"}`))
		return
	}
	tok := fmt.Sprintf("tok-%d", f.tokenRequests)
	f.tokens[tok] = true
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"access_token": tok, "token_type": "Bearer", "expires_in": 3600, "scope": r.PostForm.Get("scope")})
}

func (f *fakePSP) authorized(w http.ResponseWriter, r *http.Request) bool {
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || !f.tokens[tok] {
		f.refused++
		http.Error(w, `{"title":"Não autorizado"}`, http.StatusForbidden)
		return false
	}
	return true
}

func (f *fakePSP) list(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	page, _ := strconv.Atoi(q.Get("paginacao.paginaAtual"))
	if hook := f.hook(); hook != nil {
		hook(page)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.authorized(w, r) {
		return
	}
	if f.redirectPix != "" {
		http.Redirect(w, r, f.redirectPix, http.StatusFound)
		return
	}
	if len(f.failures) > 0 {
		fl := f.failures[0]
		f.failures = f.failures[1:]
		if fl.retryAfter != "" {
			w.Header().Set("Retry-After", fl.retryAfter)
		}
		http.Error(w, `{"title":"tente mais tarde"}`, fl.status)
		return
	}
	f.pageRequests++
	inicio, err1 := time.Parse(time.RFC3339Nano, q.Get("inicio"))
	fim, err2 := time.Parse(time.RFC3339Nano, q.Get("fim"))
	per, err3 := strconv.Atoi(q.Get("paginacao.itensPorPagina"))
	if err1 != nil || err2 != nil || err3 != nil || per < 1 || per > 1000 || page < 0 {
		http.Error(w, `{"title":"parâmetros inválidos"}`, http.StatusBadRequest)
		return
	}
	refundsOnly := q.Get("devolucaoPresente") == "true"
	var in []pixItem
	for _, it := range f.items {
		if !it.Horario.Before(inicio) && !it.Horario.After(fim) && (!refundsOnly || len(it.Devolucoes) > 0) {
			in = append(in, it)
		}
	}
	sort.SliceStable(in, func(i, j int) bool { return in[i].Horario.Before(in[j].Horario) })
	pages := (len(in) + per - 1) / per
	var out []map[string]any
	for i := page * per; i < min(len(in), (page+1)*per); i++ {
		out = append(out, in[i].json())
	}
	if out == nil {
		out = []map[string]any{}
	}
	f.pagesServed = append(f.pagesServed, page)
	f.refundsOnly = append(f.refundsOnly, refundsOnly)
	body, _ := json.Marshal(map[string]any{
		"parametros": map[string]any{"inicio": q.Get("inicio"), "fim": q.Get("fim"), "paginacao": map[string]any{
			"paginaAtual": page, "itensPorPagina": per, "quantidadeDePaginas": pages, "quantidadeTotalDeItens": len(in)}},
		"pix": out})
	if f.answer != nil {
		body = f.answer(page, body)
	}
	f.served = append(f.served, body)
	w.Header().Set("Content-Type", "application/json")
	w.Write(body)
}

func (f *fakePSP) hook() func(int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.beforePage
}

func (f *fakePSP) one(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.authorized(w, r) {
		return
	}
	if f.redirectPix != "" {
		http.Redirect(w, r, f.redirectPix, http.StatusFound)
		return
	}
	for _, it := range f.items {
		if it.E2E == r.PathValue("e2eid") {
			w.Header().Set("Content-Type", "application/json")
			json.NewEncoder(w).Encode(it.json())
			return
		}
	}
	http.Error(w, `{"title":"não encontrado"}`, http.StatusNotFound)
}

// clientFiles issues a client certificate from ca and writes it, its key
// and the fake's CA where a config names them.
func (f *fakePSP) clientFiles(t *testing.T, ca *testCA) (certFile, keyFile, caFile string) {
	t.Helper()
	dir := t.TempDir()
	_, certPEM, keyPEM := ca.leaf(t, "razao", false)
	return writeFile(t, dir, "client.pem", certPEM), writeFile(t, dir, "client.key", keyPEM),
		writeFile(t, dir, "ca.pem", f.ca.pemBytes())
}
