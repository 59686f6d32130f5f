package reconcile_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/razao/razao/reconcile"
)

// TestCSVStrayQuoteStatementIsReadAsTheParserReadsIt: one bare quote in
// an uploaded statement changes nothing about where its records end,
// which is encoding/csv's call alone. A quoted field of the rest of the
// file after it is one record longer than the limit and refuses the
// file; short lines after it are lines (the stray one invalid), however
// many.
func TestCSVStrayQuoteStatementIsReadAsTheParserReadsIt(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.charge("ok-1", 100, "")
	ts := at(1).Format(time.RFC3339)
	header := "trackId,externalId,type,amount,date,refundId\n"
	stray := "t0,o\"0,DEPOSIT,1.00," + ts + ",\n"

	field := header + stray + "\"" + strings.Repeat("x\n", 512<<10) + "\",x,DEPOSIT,1.00," + ts + ",\n"
	_, err := e.rec.ReconcileFile(context.Background(), "hodle", strings.NewReader(field), winFrom, winTo)
	if !errors.Is(err, reconcile.ErrInput) || !strings.Contains(err.Error(), "longer than 65536 bytes") {
		t.Fatalf("a stray quote, then a quoted field of 1 MiB: %v, want ErrInput saying a record is longer than 65536 bytes", err)
	}
	if n := e.count(`SELECT count(*) FROM reconciliation_runs WHERE status <> 'failed'`); n != 0 {
		t.Fatalf("%d runs not failed", n)
	}

	var b strings.Builder
	b.WriteString(header + stray)
	for i := range 2000 { // 2000 invalid lines of 50 bytes: 100 KB after the stray quote
		fmt.Fprintf(&b, "t%d,x,DEPOSIT,-1.00,%s,\n", i+1, ts)
	}
	b.WriteString("t-ok,ok-1,DEPOSIT,1.00," + ts + ",\n")
	run := e.runCSV("hodle", b.String())
	if n := e.count(`SELECT count(*) FROM reconciliation_lines WHERE run_id = $1 AND kind = 'invalid'`, run.ID); run.Lines != 2002 || n != 2001 {
		t.Fatalf("%d lines, %d invalid; want 2002, 2001 (the stray quote's line and the negative amounts)", run.Lines, n)
	}
	if e.sales() != 1 {
		t.Fatalf("%d sales, want 1", e.sales())
	}
}
