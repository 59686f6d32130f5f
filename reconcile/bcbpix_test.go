package reconcile_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/razao/razao/reconcile/bcbpix"
)

// client is a bcbpix client of the fake PSP with the given client
// certificate and secret, recording its waits in w.
func (f *fakePSP) client(t *testing.T, cert tls.Certificate, secret string, w *waits) *bcbpix.Client {
	t.Helper()
	c, err := bcbpix.New(bcbpix.Config{BaseURL: f.srv.URL, TokenURL: f.srv.URL + "/oauth/token", ClientID: fakeClientID,
		ClientSecret: secret, TLS: &tls.Config{Certificates: []tls.Certificate{cert}, RootCAs: f.ca.pool()},
		PageSize: 2, MaxRetries: 3, Wait: w.wait})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestPixAPIAuth: the token is fetched once and reused across requests;
// a wrong client secret is refused (and the error carries no secret); a
// client certificate that does not chain to the PSP's CA gets no answer.
func TestPixAPIAuth(t *testing.T) {
	t.Parallel()
	f := newFakePSP(t)
	f.add(pixItem{E2E: e2e(1), Txid: "c1", Valor: "1.00", Horario: at(1)})
	cert, _, _ := f.ca.leaf(t, "razao", false)
	c := f.client(t, cert, fakeClientSecret, &waits{})
	ctx := context.Background()
	for range 3 {
		if _, err := c.Page(ctx, bcbpix.Query{Inicio: winFrom, Fim: winTo}, 0); err != nil {
			t.Fatal(err)
		}
	}
	if raw, err := c.Pix(ctx, e2e(1)); err != nil || !strings.Contains(string(raw), `"txid":"c1"`) {
		t.Fatalf("GET /pix/{e2eid}: %s %v", raw, err)
	}
	if _, err := c.Pix(ctx, e2e(2)); !errors.Is(err, bcbpix.ErrNotFound) {
		t.Fatalf("unknown e2eid: %v", err)
	}
	if tokens, pages := f.counts(); tokens != 1 || pages != 3 {
		t.Fatalf("%d tokens for %d pages, want 1 for 3", tokens, pages)
	}

	wrong := f.client(t, cert, "not-the-secret-at-all", &waits{})
	_, err := wrong.Page(ctx, bcbpix.Query{Inicio: winFrom, Fim: winTo}, 0)
	if err == nil || !strings.Contains(err.Error(), "token refused (401 invalid_client)") || strings.Contains(err.Error(), "not-the-secret") {
		t.Fatalf("wrong secret: %v", err)
	}

	stranger, _, _ := newTestCA(t, "another ca").leaf(t, "razao", false)
	_, err = f.client(t, stranger, fakeClientSecret, &waits{}).Page(ctx, bcbpix.Query{Inicio: winFrom, Fim: winTo}, 0)
	if err == nil || !strings.Contains(err.Error(), "certificate") && !strings.Contains(err.Error(), "tls") {
		t.Fatalf("client certificate of another CA: %v", err)
	}
	if _, pages := f.counts(); pages != 3 {
		t.Fatalf("the refused clients were served %d pages", pages-3)
	}
}

// TestPixAPIRetriesHonouringRetryAfter: 429 with Retry-After waits what
// it says, 503 without it backs off, and a PSP that keeps refusing is
// given up after MaxRetries.
func TestPixAPIRetriesHonouringRetryAfter(t *testing.T) {
	t.Parallel()
	f := newFakePSP(t)
	cert, _, _ := f.ca.leaf(t, "razao", false)
	w := &waits{}
	c := f.client(t, cert, fakeClientSecret, w)
	f.failNext(failure{status: 429, retryAfter: "7"}, failure{status: 503}, failure{status: 503, retryAfter: "86400"})
	if _, err := c.Page(context.Background(), bcbpix.Query{Inicio: winFrom, Fim: winTo}, 0); err != nil {
		t.Fatal(err)
	}
	if got, want := w.all(), []time.Duration{7 * time.Second, 2 * time.Second, bcbpix.DefaultMaxWait}; !slices.Equal(got, want) {
		t.Fatalf("waits %v, want %v", got, want)
	}
	f.failNext(failure{status: 503}, failure{status: 503}, failure{status: 503}, failure{status: 503})
	_, err := c.Page(context.Background(), bcbpix.Query{Inicio: winFrom, Fim: winTo}, 0)
	var se *bcbpix.StatusError
	if !errors.As(err, &se) || se.Status != 503 || !strings.Contains(err.Error(), "gave up after 3 retries") {
		t.Fatalf("a PSP that stays down: %v", err)
	}
}

// TestPixRunPagesTheWholeWindow: a run follows the pages by inicio, fim,
// paginaAtual and itensPorPagina to the last one, and an item added
// between two page fetches (which shifts the later pages) is read once,
// the pass read again because the statement's totals moved.
func TestPixRunPagesTheWholeWindow(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var items []pixItem
	for i := 1; i <= 5; i++ {
		id := "p" + string(rune('0'+i))
		e.charge(id, 100, "")
		items = append(items, pixItem{E2E: e2e(i), Txid: id, Valor: "1.00", Horario: at(10 * i)})
	}
	e.charge("late", 100, "")
	e.psp.add(items...)
	added := false
	e.psp.beforePage = func(page int) {
		if page == 1 && !added {
			added = true
			// Listed late, dated before everything: every page shifts.
			e.psp.add(pixItem{E2E: e2e(99), Txid: "late", Valor: "1.00", Horario: at(1)})
		}
	}
	run := e.runPix(winFrom, winTo)
	if run.Booked != 6 || run.Divergences != 0 {
		t.Fatalf("run %+v", run)
	}
	if e.sales() != 6 {
		t.Fatalf("%d sales, want 6", e.sales())
	}
	e.psp.mu.Lock()
	served := append([]int(nil), e.psp.pagesServed...)
	e.psp.mu.Unlock()
	// Pass 0 read 3 pages of 5 items (page 0 stated 3 pages, later pages
	// 6 items in 3 pages); pass 1 read the 3 pages of 6.
	if want := []int{0, 1, 2, 0, 1, 2}; !slices.Equal(served, want) {
		t.Fatalf("pages served %v, want %v", served, want)
	}
	var pages []struct {
		Pass  int `db:"pass"`
		Page  int `db:"page"`
		Total int `db:"total"`
	}
	if err := e.db.Select(&pages, `SELECT pass, page, total FROM reconciliation_pages WHERE run_id = $1 ORDER BY pass, page`, run.ID); err != nil {
		t.Fatal(err)
	}
	if len(pages) != 6 || pages[0].Total != 5 || pages[5].Total != 6 {
		t.Fatalf("kept pages %+v", pages)
	}
	var kept []byte
	e.psp.mu.Lock()
	body := e.psp.served[3] // pass 1's page 0
	e.psp.mu.Unlock()
	e.db.Get(&kept, `SELECT sha256 FROM reconciliation_pages WHERE run_id = $1 AND pass = 1 AND page = 0`, run.ID)
	if sum := sha256.Sum256(body); !bytes.Equal(kept, sum[:]) {
		t.Fatalf("kept page digest %x, the page served was %x", kept, sum)
	}
}

// TestPixRunWithAWrongSecretFails: the run fails with the token's refusal
// in its history, and books nothing.
func TestPixRunWithAWrongSecretFails(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.psp.add(pixItem{E2E: e2e(1), Txid: "c1", Valor: "1.00", Horario: at(1)})
	rec := e.reconciler("wrong-secret-of-thirty-characters")
	run, err := rec.ReconcileWindow(context.Background(), "bcb", winFrom, winTo)
	if err == nil || run.Status != "failed" || run.Error == nil || !strings.Contains(*run.Error, "invalid_client") {
		t.Fatalf("run %+v: %v", run, err)
	}
}

// TestPixOneDoubt: GET /pix/{e2eid} through the reconciler reads the item
// as the statement's lines are read, and books nothing.
func TestPixOneDoubt(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.psp.add(pixItem{E2E: e2e(7), Txid: "d1", Valor: "12.34", Horario: at(1),
		Devolucoes: []devolucao{{ID: "R7", Valor: "1.00", Status: "DEVOLVIDO", Liquidacao: at(2)}}})
	raw, lines, err := e.rec.Pix(context.Background(), "bcb", e2e(7))
	if err != nil || !strings.Contains(string(raw), `"txid":"d1"`) || len(lines) != 2 ||
		lines[0].Amount != 1234 || lines[1].RefundID != "R7" || lines[1].EventID != e2e(7)+":R7:DEVOLVIDO" {
		t.Fatalf("%s %+v %v", raw, lines, err)
	}
	if _, _, err := e.rec.Pix(context.Background(), "bcb", e2e(8)); !errors.Is(err, bcbpix.ErrNotFound) {
		t.Fatalf("unknown e2eid: %v", err)
	}
	if _, _, err := e.rec.Pix(context.Background(), "bcb", "short|\x00"); err == nil {
		t.Fatal("a hostile e2eid was sent")
	}
	if e.count(`SELECT count(*) FROM inbox`) != 0 {
		t.Fatal("settling a doubt stored something")
	}
}
