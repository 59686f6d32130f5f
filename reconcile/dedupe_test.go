package reconcile_test

import (
	"testing"
	"time"
)

// TestCSVPaymentListedTwiceIsOneLine: a statement file listing the same
// payment twice (two exports concatenated, say) keeps one line for it, its
// last copy, and books it once; a payment listed once beside it is left
// alone.
func TestCSVPaymentListedTwiceIsOneLine(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.charge("order-1", 4990, "")
	e.charge("order-2", 1000, "")
	file := "trackId,externalId,type,amount,date,refundId\n" +
		"trk-1,order-1,DEPOSIT,1.00," + at(1).Format(time.RFC3339) + ",\n" +
		"trk-2,order-2,DEPOSIT,10.00," + at(2).Format(time.RFC3339) + ",\n" +
		"trk-1,order-1,DEPOSIT,49.90," + at(3).Format(time.RFC3339) + ",\n"
	run := e.runCSV("hodle", file)
	if run.Booked != 2 || run.Divergences != 0 {
		t.Fatalf("run %+v, want both payments booked, no divergence", run)
	}
	lines, _ := linesOf(e, run.ID)
	if len(lines) != 2 {
		t.Fatalf("%d lines kept, want 2: %+v", len(lines), lines)
	}
	for _, l := range lines {
		if l.ChargeRef == "order-1" && (l.Line != 3 || l.Amount != 4990) {
			t.Fatalf("order-1's line %+v, want its last copy (line 3, 4990)", l)
		}
	}
	if e.sales() != 2 {
		t.Fatalf("%d sales, want 2", e.sales())
	}
}
