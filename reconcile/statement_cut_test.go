package reconcile_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// specGetPix1 is the specification's own example answer of GET /pix
// (API Pix 2.9.0, components.examples.getPix1, its three items being
// pixResponse1..3), written out as JSON. As published it lists three Pix
// under a quantidadeTotalDeItens of 2.
const specGetPix1 = `{
  "parametros": {
    "inicio": "2020-04-01T00:00:00Z",
    "fim": "2020-04-01T23:59:59Z",
    "paginacao": {"paginaAtual": 0, "itensPorPagina": 100, "quantidadeDePaginas": 1, "quantidadeTotalDeItens": 2}
  },
  "pix": [
    {
      "endToEndId": "E12345678202009091221abcdef12345",
      "txid": "cd1fe328c875481285a6f233ae41b662",
      "valor": "100.00",
      "horario": "2020-09-10T13:03:33.902Z",
      "infoPagador": "Reforma da casa",
      "devolucoes": [{"id": "000AAA111", "rtrId": "D12345678202009091000abcde123456", "valor": "11.00",
        "horario": {"solicitacao": "2020-09-10T13:03:33.902Z"}, "status": "EM_PROCESSAMENTO"}]
    },
    {
      "endToEndId": "E12345678202009091221ghijk78901234",
      "txid": "5b933948f3224266b1050ac54319e775",
      "valor": "200.00",
      "horario": "2020-09-10T13:03:33.902Z",
      "infoPagador": "Revisão do carro"
    },
    {
      "endToEndId": "E88631478202009091221ghijk78901234",
      "txid": "82433415910c47e5adb6ac3527cca160",
      "valor": "200.00",
      "componentesValor": {"original": {"valor": "180.00"},
        "saque": {"valor": "20.00", "modalidadeAgente": "AGPSS", "prestadorDeServicoDeSaque": "12345678"}},
      "horario": "2020-09-10T13:03:33.902Z",
      "infoPagador": "Saque Pix"
    }
  ]
}`

// editAnswer rewrites the answers of the pages for which edit returns
// true, as a PSP whose paging lies would.
func editAnswer(t *testing.T, edit func(page int, a map[string]any) bool) func(int, []byte) []byte {
	return func(page int, body []byte) []byte {
		var a map[string]any
		if err := json.Unmarshal(body, &a); err != nil {
			t.Errorf("the fake's own answer: %v", err)
			return body
		}
		if !edit(page, a) {
			return body
		}
		out, err := json.Marshal(a)
		if err != nil {
			t.Errorf("edited answer: %v", err)
			return body
		}
		return out
	}
}

// paging is an answer's parametros.paginacao.
func paging(a map[string]any) map[string]any {
	return a["parametros"].(map[string]any)["paginacao"].(map[string]any)
}

// TestPixRunFailsOnAStatementThatIsCutAndBooksNothing: a page whose
// paging is missing, or whose figures do not add up with its items or
// with the other pages, fails the run with an error that says which
// figure, and nothing of the statement is booked: not the bad page, nor
// the good pages read before it.
func TestPixRunFailsOnAStatementThatIsCutAndBooksNothing(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		edit func(page int, a map[string]any) bool
		raw  func(page int) []byte // the whole answer instead
		want string
	}{
		{name: "page 0 without quantidadeDePaginas", want: "quantidadeDePaginas is missing",
			edit: func(page int, a map[string]any) bool { delete(paging(a), "quantidadeDePaginas"); return page == 0 }},
		{name: "page 1 without quantidadeTotalDeItens", want: "quantidadeTotalDeItens is missing",
			edit: func(page int, a map[string]any) bool { delete(paging(a), "quantidadeTotalDeItens"); return page == 1 }},
		{name: "page 0 without itensPorPagina", want: "itensPorPagina is missing",
			edit: func(page int, a map[string]any) bool { delete(paging(a), "itensPorPagina"); return page == 0 }},
		{name: "page 0 without paginaAtual", want: "paginaAtual is missing",
			edit: func(page int, a map[string]any) bool { delete(paging(a), "paginaAtual"); return page == 0 }},
		{name: "200 {}", want: "parametros is missing", raw: func(int) []byte { return []byte(`{}`) }},
		{name: `{"pix": null}`, want: "parametros is missing", raw: func(int) []byte { return []byte(`{"pix": null}`) }},
		{name: "page 1 without parametros", want: "parametros is missing",
			edit: func(page int, a map[string]any) bool { delete(a, "parametros"); return page == 1 }},
		{name: "page 0 without paginacao", want: "paginacao is missing",
			edit: func(page int, a map[string]any) bool {
				delete(a["parametros"].(map[string]any), "paginacao")
				return page == 0
			}},
		{name: "page 2 with pix null", want: "pix is missing or null",
			edit: func(page int, a map[string]any) bool { a["pix"] = nil; return page == 2 }},
		{name: "page 0 without pix", want: "pix is missing or null",
			edit: func(page int, a map[string]any) bool { delete(a, "pix"); return page == 0 }},
		{name: "a short page before the last", want: "a page before the last must be full",
			edit: func(page int, a map[string]any) bool { a["pix"] = a["pix"].([]any)[:1]; return page == 1 }},
		{name: "a total that disagrees with the items", want: "quantidadeTotalDeItens",
			edit: func(page int, a map[string]any) bool { paging(a)["quantidadeTotalDeItens"] = 6; return true }},
		{name: "a total the pages cannot hold", want: "quantidadeDePaginas",
			edit: func(page int, a map[string]any) bool { paging(a)["quantidadeTotalDeItens"] = 4; return true }},
		{name: "a page count that changes on every pass", want: "moved during each of",
			// Page 1 says the statement ends with it: page 2 is never
			// asked for, and every pass ends at page 1 having moved.
			edit: func(page int, a map[string]any) bool {
				paging(a)["quantidadeDePaginas"], paging(a)["quantidadeTotalDeItens"] = 2, 4
				return page == 1
			}},
		{name: "more items than itensPorPagina", want: "itensPorPagina",
			edit: func(page int, a map[string]any) bool {
				a["pix"] = append(a["pix"].([]any), a["pix"].([]any)[0])
				return page == 2
			}},
		{name: "another page than the one asked for", want: "the answer is page 0",
			edit: func(page int, a map[string]any) bool { paging(a)["paginaAtual"] = 0; return page == 1 }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			fiveOverThreePages(e)
			if tt.raw != nil {
				e.psp.set(func() { e.psp.answer = func(page int, _ []byte) []byte { return tt.raw(page) } })
			} else {
				e.psp.set(func() { e.psp.answer = editAnswer(t, tt.edit) })
			}
			run, err := e.rec.ReconcileWindow(context.Background(), "bcb", winFrom, winTo)
			e.drain()
			if err == nil || run.Status != "failed" || run.Error == nil || !strings.Contains(*run.Error, tt.want) {
				t.Fatalf("run %+v: %v; want it failed saying %q", run, err, tt.want)
			}
			if n := e.sales(); n != 0 {
				t.Errorf("%d sales booked from a statement that was cut", n)
			}
			if n := e.count(`SELECT count(*) FROM inbox`); n != 0 {
				t.Errorf("%d inbox rows stored from a statement that was cut", n)
			}
			if n := e.count(`SELECT count(*) FROM reconciliation_lines WHERE run_id = $1 AND outcome IS NOT NULL`, run.ID); n != 0 {
				t.Errorf("%d lines of the cut statement were decided", n)
			}
		})
	}
}

// TestPixRunReadsAWholeStatementOnlyWhenItsFiguresAddUp: the same
// statement answered truthfully books all five; an empty statement
// stated as such (spec: one page, none of the fake's zero pages, both
// read as empty) books nothing and succeeds.
func TestPixRunReadsAWholeStatementOnlyWhenItsFiguresAddUp(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	fiveOverThreePages(e)
	if run := e.runPix(winFrom, winTo); run.Booked != 5 || run.Lines != 5 || run.Divergences != 0 {
		t.Fatalf("a whole statement: run %+v", run)
	}
	if e.sales() != 5 {
		t.Fatalf("%d sales, want 5", e.sales())
	}

	empty := newEnv(t)
	if run := empty.runPix(winFrom, winTo); run.Status != "succeeded" || run.Lines != 0 || run.Pages != 1 {
		t.Fatalf("an empty statement of 0 pages: run %+v", run)
	}
	empty.psp.set(func() {
		empty.psp.answer = editAnswer(t, func(_ int, a map[string]any) bool { paging(a)["quantidadeDePaginas"] = 1; return true })
	})
	if run := empty.runPix(winFrom, winTo); run.Status != "succeeded" || run.Lines != 0 || run.Pages != 1 {
		t.Fatalf("an empty statement of 1 page: run %+v", run)
	}
}

// TestPixRunRefusesTheSpecificationsExamplePageAsPublished: the
// specification's own example of GET /pix lists three Pix under a
// quantidadeTotalDeItens of 2. Read as a whole statement it would hide
// that one of the two figures is wrong: the run fails and books nothing.
// With its total set to the three it lists, the same page is read whole.
func TestPixRunRefusesTheSpecificationsExamplePageAsPublished(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.cfgs[0].BCBPix.PageSize = 100 // the example's itensPorPagina
	e.rec = e.reconciler(fakeClientSecret)
	e.psp.set(func() { e.psp.answer = func(int, []byte) []byte { return []byte(specGetPix1) } })
	run, err := e.rec.ReconcileWindow(context.Background(), "bcb", winFrom, winTo)
	if err == nil || run.Status != "failed" || run.Error == nil ||
		!strings.Contains(*run.Error, "3 items") || !strings.Contains(*run.Error, "quantidadeTotalDeItens 2") {
		t.Fatalf("the example as published: run %+v: %v", run, err)
	}
	if n := e.count(`SELECT count(*) FROM inbox`); n != 0 {
		t.Fatalf("%d inbox rows stored from the example as published", n)
	}

	fixed := strings.Replace(specGetPix1, `"quantidadeTotalDeItens": 2`, `"quantidadeTotalDeItens": 3`, 1)
	e.psp.set(func() { e.psp.answer = func(int, []byte) []byte { return []byte(fixed) } })
	run, err = e.rec.ReconcileWindow(context.Background(), "bcb", winFrom, winTo)
	if err != nil || run.Status != "succeeded" || run.Pages != 1 || run.Lines < 3 {
		t.Fatalf("the example with its total mended: run %+v: %v", run, err)
	}
}

// TestPixScheduledRunFailedOnACutPageResumesAndBooksOnce: a scheduled
// run that failed on a short page keeps the pages read before it; its
// retry, once the PSP answers truthfully, goes on from the bad page and
// books every Pix once.
func TestPixScheduledRunFailedOnACutPageResumesAndBooksOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	fiveOverThreePages(e)
	lie := true
	e.psp.set(func() {
		e.psp.answer = editAnswer(t, func(page int, a map[string]any) bool {
			if !lie || page != 1 || paging(a)["quantidadeTotalDeItens"].(float64) != 5 {
				return false
			}
			a["pix"] = a["pix"].([]any)[:1]
			return true
		})
	})
	slot := winFrom.Add(time.Hour) // its window [slot-1h, slot] holds the five
	runs, err := e.rec.RunSlot(context.Background(), "bcb", slot)
	if err == nil || len(runs) == 0 || runs[0].Status != "failed" || !strings.Contains(*runs[0].Error, "must be full") {
		t.Fatalf("first attempt: %+v: %v", runs, err)
	}
	if e.sales() != 0 {
		t.Fatalf("the failed attempt booked %d sales", e.sales())
	}
	e.psp.set(func() { lie = false })
	runs, err = e.rec.RunSlot(context.Background(), "bcb", slot)
	if err != nil || len(runs) == 0 || runs[0].Status != "succeeded" || runs[0].Booked != 5 || runs[0].Attempts != 2 {
		t.Fatalf("the retry: %+v: %v", runs, err)
	}
	if e.sales() != 5 {
		t.Fatalf("%d sales, want 5", e.sales())
	}
	var pages []int
	if err := e.db.Select(&pages, `SELECT page FROM reconciliation_pages WHERE run_id = $1 ORDER BY pass, page`, runs[0].ID); err != nil {
		t.Fatal(err)
	}
	if len(pages) != 3 {
		t.Fatalf("kept pages %v: the retry read again what was kept, or less", pages)
	}
}
