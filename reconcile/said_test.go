package reconcile_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/razao/razao/divergences"
)

// A run's divergences store their detail's kind and arguments beside the
// English, which they say again word for word: an amount that differs,
// an unknown txid, a phantom, a fee that differs and a line that could
// not be read, each with a Portuguese sentence for the console.
func TestReconciliationDivergencesStoreTheirDetailsKind(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	csv := divergentScene(t, e)
	csv = strings.Replace(csv, ",80,", ",99,", 1) + "ch_2,ab-2,not-a-number,0," + at(2).Format(time.RFC3339) + "\n"
	e.runPix(winFrom, winTo)
	e.runCSV("abacate", csv)

	list, err := divergences.List(context.Background(), e.db, divergences.StatusOpen, "", 100)
	if err != nil {
		t.Fatal(err)
	}
	codes := map[string]bool{}
	for _, d := range list.Divergences {
		codes[d.Said.Code] = true
		if d.Said.Code == "" || d.Said.English() != d.Detail {
			t.Errorf("%s divergence %d: detail %q, said %s %v as %q", d.Reason, d.ID, d.Detail, d.Said.Code, d.Said.Args, d.Said.English())
		}
		if pt := d.DetailPT(); pt == d.Detail || pt == "" {
			t.Errorf("%s divergence %d: no Portuguese for %q", d.Reason, d.ID, d.Detail)
		}
	}
	for _, want := range []string{divergences.CodeStatementAmount, divergences.CodeStatementFee, divergences.CodeStatementLine,
		divergences.CodePhantom, divergences.CodeLineText} {
		if !codes[want] {
			t.Errorf("no divergence said %s (%v)", want, codes)
		}
	}
}
