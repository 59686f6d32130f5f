package reconcile_test

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"testing"
)

// padded adds to an answer a field of n incompressible bytes, one the
// specification does not define (a client reads past it): a page that is
// large for what it lists.
func padded(n int) func(int, []byte) []byte {
	pad := make([]byte, n*3/4)
	rand.Read(pad)
	field := []byte(`{"x":"` + base64.StdEncoding.EncodeToString(pad) + `",`)
	return func(_ int, body []byte) []byte {
		return append(append([]byte(nil), field...), bytes.TrimPrefix(body, []byte("{"))...)
	}
}

// pagesStored is what the run's kept pages take: their rows' bytes as
// stored (pg_column_size, after compression) and the whole table's, its
// TOAST and indexes included.
func (e *env) pagesStored(run int64) (rows, table int64) {
	e.t.Helper()
	if err := e.db.Get(&rows, `SELECT coalesce(sum(pg_column_size(p.*)), 0) FROM reconciliation_pages p WHERE run_id = $1`, run); err != nil {
		e.t.Fatal(err)
	}
	if err := e.db.Get(&table, `SELECT pg_total_relation_size('reconciliation_pages')`); err != nil {
		e.t.Fatal(err)
	}
	return rows, table
}

// fiveOverThreePages is a statement of five Pix, each paying its charge,
// over three pages of two (the env's page size).
func fiveOverThreePages(e *env) {
	e.t.Helper()
	for i := 1; i <= 5; i++ {
		id := "cut" + string(rune('0'+i))
		e.charge(id, 100, "")
		e.psp.add(pixItem{E2E: e2e(i), Txid: id, Valor: "1.00", Horario: at(10 * i)})
	}
}

// TestPixRunKeepsEachPageAsItsFiguresAndDigestNotItsBody: a page is kept
// as what the run needs of it (its paging figures, for resuming and for
// judging the pass) and as what proves what was received (its length
// and SHA-256); its items live on as lines. Three pages of five Pix, each
// padded to a megabyte, take a few hundred bytes.
func TestPixRunKeepsEachPageAsItsFiguresAndDigestNotItsBody(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	fiveOverThreePages(e)
	e.psp.set(func() { e.psp.answer = padded(1 << 20) })
	run := e.runPix(winFrom, winTo)
	if run.Status != "succeeded" || run.Booked != 5 {
		t.Fatalf("run %+v", run)
	}
	rows, table := e.pagesStored(run.ID)
	if rows > 3*256 || table > 256<<10 {
		t.Fatalf("3 pages of 1 MiB each kept in %d bytes of rows, %d of table: want under 768 and 256 KiB", rows, table)
	}
	var kept []struct {
		Page     int    `db:"page"`
		Bytes    int    `db:"bytes"`
		SHA256   []byte `db:"sha256"`
		PageSize int    `db:"page_size"`
	}
	if err := e.db.Select(&kept, `SELECT page, bytes, sha256, page_size FROM reconciliation_pages WHERE run_id = $1 ORDER BY pass, page`, run.ID); err != nil {
		t.Fatal(err)
	}
	e.psp.mu.Lock()
	served := append([][]byte(nil), e.psp.served...)
	e.psp.mu.Unlock()
	if len(kept) != len(served) || len(kept) != 3 {
		t.Fatalf("%d pages kept, %d served, want 3", len(kept), len(served))
	}
	for i, k := range kept {
		sum := sha256.Sum256(served[i])
		if k.Page != i || k.Bytes != len(served[i]) || !bytes.Equal(k.SHA256, sum[:]) || k.PageSize != 2 {
			t.Errorf("page %d kept as %d bytes, sha256 %x, page size %d; served %d bytes, sha256 %x, of 2",
				i, k.Bytes, k.SHA256, k.PageSize, len(served[i]), sum)
		}
	}
}

// TestPixRunThatReceivesMoreThanItsBoundFailsAndBooksNothing: what a run
// may receive over all its pages is bounded (its lines are drawn from
// it); a statement over the bound fails the run before the page that
// crosses it is kept, and nothing of it is booked.
func TestPixRunThatReceivesMoreThanItsBoundFailsAndBooksNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	fiveOverThreePages(e)
	e.rec.SetMaxRunBytes(5 << 19) // two and a half pages
	e.psp.set(func() { e.psp.answer = padded(1 << 20) })
	run, err := e.rec.ReconcileWindow(t.Context(), "bcb", winFrom, winTo)
	want := fmt.Sprintf("more than %d bytes", 5<<19)
	if err == nil || run.Status != "failed" || run.Error == nil || !bytes.Contains([]byte(*run.Error), []byte(want)) {
		t.Fatalf("run %+v: %v; want it failed saying %q", run, err, want)
	}
	if run.Pages != 2 || e.sales() != 0 || e.count(`SELECT count(*) FROM inbox`) != 0 {
		t.Fatalf("run %+v kept %d pages and booked %d sales, want 2 and none", run, run.Pages, e.sales())
	}
}

// TestPixRunStoresATenThousandItemStatementInBoundedSpace measures what a
// run of 10,000 Pix over 10 pages of 1,000 (the default page size)
// stores, and holds the pages to their figures: under 256 bytes a page.
func TestPixRunStoresATenThousandItemStatementInBoundedSpace(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.cfgs[0].BCBPix.PageSize = 1000
	e.rec = e.reconciler(fakeClientSecret)
	items := make([]pixItem, 10_000)
	for i := range items {
		items[i] = pixItem{E2E: e2e(i + 1), Txid: fmt.Sprintf("m%d", i+1), Valor: "1.00", Horario: at(1 + i%200)}
	}
	e.psp.add(items...)
	run := e.runPix(winFrom, winTo)
	if run.Status != "succeeded" || run.Pages != 10 || run.Lines != 10_000 {
		t.Fatalf("run %+v", run)
	}
	rows, pagesTable := e.pagesStored(run.ID)
	var lines, linesTable int64
	if err := e.db.Get(&lines, `SELECT sum(pg_column_size(l.*)) FROM reconciliation_lines l WHERE run_id = $1`, run.ID); err != nil {
		t.Fatal(err)
	}
	if err := e.db.Get(&linesTable, `SELECT pg_total_relation_size('reconciliation_lines')`); err != nil {
		t.Fatal(err)
	}
	var received int
	e.psp.mu.Lock()
	for _, b := range e.psp.served {
		received += len(b)
	}
	e.psp.mu.Unlock()
	t.Logf("10,000 Pix in 10 pages (%d bytes received): reconciliation_pages rows %d bytes, table %d; "+
		"reconciliation_lines rows %d bytes, table %d", received, rows, pagesTable, lines, linesTable)
	if rows > 10*256 {
		t.Fatalf("10 pages kept in %d bytes of rows, want under %d", rows, 10*256)
	}
}
