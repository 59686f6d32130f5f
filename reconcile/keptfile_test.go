package reconcile_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/razao/razao/reconcile"
)

// keptStatement is a Hodle statement file of more than one kept chunk
// (1 MiB): 20 payments whose webhooks were lost, one of a differing
// amount, each line carrying 60,000 bytes of a column no mapping reads.
func keptStatement(e *env) string {
	var sb strings.Builder
	sb.WriteString("trackId,externalId,type,amount,date,refundId,note\n")
	note := strings.Repeat("x", 60_000)
	for i := 1; i <= 21; i++ {
		id := fmt.Sprintf("k%d", i)
		e.charge(id, 1000, "")
		amount := "10.00"
		if i == 21 {
			amount = "10.01"
		}
		fmt.Fprintf(&sb, "trk-%s,%s,DEPOSIT,%s,%s,,%s\n", id, id, amount, at(i).Format(time.RFC3339), note)
	}
	return sb.String()
}

// TestFileRunKilledBeforeItsLinesResumes: a statement file is kept as it
// is uploaded, before any line is loaded. A run that dies right after
// (a test hook, as a crash there would) is resumed by another replica
// once its lease runs out, from the kept file, and ends as an
// uninterrupted run of the same file does; the kept file reads back byte
// for byte. Before, the run failed: "the statement file was not kept;
// upload it again".
func TestFileRunKilledBeforeItsLinesResumes(t *testing.T) {
	t.Parallel()
	whole := newEnv(t)
	file := keptStatement(whole)
	want := whole.runCSV("hodle", file)
	if want.Booked != 20 || want.Divergences != 1 {
		t.Fatalf("uninterrupted run %+v", want)
	}

	e := newEnv(t)
	keptStatement(e)
	e.rec.StopAfterFileKept()
	ctx := context.Background()
	killed, err := e.rec.ReconcileFile(ctx, "hodle", strings.NewReader(file), winFrom, winTo)
	if !errors.Is(err, reconcile.ErrStopped) {
		t.Fatalf("killed run: %v", err)
	}
	if r, _ := reconcile.GetRun(ctx, e.db, killed.ID); r.Status != "running" || r.Lines != 0 {
		t.Fatalf("after the kill: %+v", r)
	}
	var kept []byte
	if err := e.db.Get(&kept, `SELECT string_agg(data, ''::bytea ORDER BY chunk) FROM reconciliation_files WHERE run_id = $1`, killed.ID); err != nil {
		t.Fatal(err)
	}
	if chunks := e.count(`SELECT count(*) FROM reconciliation_files`); chunks < 2 || !bytes.Equal(kept, []byte(file)) {
		t.Fatalf("kept %d bytes in %d chunks, want the file's %d bytes in at least 2", len(kept), chunks, len(file))
	}
	e.db.MustExec(`UPDATE reconciliation_runs SET lease_until = now() - interval '1 second' WHERE id = $1`, killed.ID)
	if err := e.reconciler(fakeClientSecret).ResumeDue(ctx); err != nil {
		t.Fatal(err)
	}
	e.drain()
	got, err := reconcile.GetRun(ctx, e.db, killed.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != "succeeded" || got.Attempts != 2 || got.Lines != want.Lines || got.Matched != want.Matched ||
		got.Booked != want.Booked || got.Divergences != want.Divergences || got.FileSHA256 == nil || *got.FileSHA256 != *want.FileSHA256 {
		t.Fatalf("resumed %+v\nwhole   %+v", got, want)
	}
	if a, b := e.outcomes(got.ID), whole.outcomes(want.ID); !slices.Equal(a, b) {
		t.Fatalf("resumed lines %q, whole %q", a, b)
	}
	if e.sales() != 20 {
		t.Fatalf("%d sales, want 20", e.sales())
	}
}

// TestEmptyStatementFileIsRefusedAsEmpty: an empty upload keeps nothing
// and says so, rather than that its file was not kept.
func TestEmptyStatementFileIsRefusedAsEmpty(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	run, err := e.rec.ReconcileFile(context.Background(), "hodle", strings.NewReader(""), winFrom, winTo)
	if !errors.Is(err, reconcile.ErrInput) || !strings.Contains(err.Error(), "empty") || run.Status != "failed" {
		t.Fatalf("empty file: run %+v, %v; want a failed run, an input error saying the file is empty", run, err)
	}
}

// cutShort reads the first half of a file, then fails as a request body
// does when its client goes away mid-upload.
type cutShort struct{ r io.Reader }

func (c *cutShort) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	if errors.Is(err, io.EOF) {
		return n, io.ErrUnexpectedEOF
	}
	return n, err
}

// TestStatementFileCutShortKeepsNothing: an upload whose body ends early
// (io.ErrUnexpectedEOF, which net/http gives for a client gone mid-body)
// fails its run and keeps nothing. Kept as if whole, its first half would
// be reconciled and the missing half's payments would be phantoms.
func TestStatementFileCutShortKeepsNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	file := keptStatement(e)
	half := &cutShort{r: strings.NewReader(file[:len(file)/2])}
	run, err := e.rec.ReconcileFile(context.Background(), "hodle", half, winFrom, winTo)
	if !errors.Is(err, io.ErrUnexpectedEOF) || run.Status != "failed" {
		t.Fatalf("an upload cut short: run %+v, %v; want a failed run and the body's error", run, err)
	}
	if n := e.count(`SELECT count(*) FROM reconciliation_files`); n != 0 || e.sales() != 0 {
		t.Fatalf("%d chunks kept, %d sales booked; want none", n, e.sales())
	}
}

// TestStatementFileRefusedByItsHeaderIsNotKept: a file whose header lacks
// a mapped column is refused before any of it is stored.
func TestStatementFileRefusedByItsHeaderIsNotKept(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	file := "trackId,amount\n" + strings.Repeat("t1,1.00\n", 200_000)
	run, err := e.rec.ReconcileFile(context.Background(), "hodle", strings.NewReader(file), winFrom, winTo)
	if !errors.Is(err, reconcile.ErrInput) || run.Status != "failed" {
		t.Fatalf("a file without the mapped columns: run %+v, %v; want a failed run and an input error", run, err)
	}
	if n := e.count(`SELECT count(*) FROM reconciliation_files`); n != 0 {
		t.Fatalf("%d chunks kept of a file its header refuses, want none", n)
	}
}
