package reconcile_test

import (
	"testing"
	"time"

	"github.com/razao/razao/internal/pgtest"
)

// TestReconcilesAsTheServiceRole: the service's role, exactly as
// docs/razao-role.sql makes it, runs reconciliation end to end: a
// bcb-pix window (pages kept, lines copied and decided in place, a lost
// payment booked, a differing amount a divergence) and a statement file
// (staged in a temporary table, decided as it is written, booked), with
// the runs' lines listed; a callback of several Pix is stored; a refund
// its statement line booked under another id is paired with its webhook. The
// role script granted nothing on the reconciliation tables, inbox_bodies
// or refund_aliases, nor TEMPORARY: every run failed with permission
// denied, and so did every callback of more than one event.
func TestReconcilesAsTheServiceRole(t *testing.T) {
	t.Parallel()
	owner, ownerURL := pgtest.NewWithURL(t)
	roles := pgtest.NewRoles(t, owner, ownerURL)
	role := roles.Service()
	e := newEnvOn(t, roles.Connect(role), roles.URL(role))
	var who string
	if err := e.db.Get(&who, `SELECT current_user`); err != nil || who != role {
		t.Fatalf("connected as %q (%v), want the service role %q", who, err, role)
	}

	e.charge("lost", 500, "")
	e.charge("differs", 700, "")
	e.psp.add(pixItem{E2E: e2e(1), Txid: "lost", Valor: "5.00", Horario: at(1)},
		pixItem{E2E: e2e(2), Txid: "differs", Valor: "7.01", Horario: at(2)})
	pix := e.runPix(winFrom, winTo)
	if pix.Status != "succeeded" || pix.Booked != 1 || pix.Divergences != 1 {
		t.Fatalf("bcb-pix run as the service role: %+v", pix)
	}

	e.charge("order-1", 4990, "")
	file := "trackId,externalId,type,amount,date,refundId\n" +
		"trk-1,order-1,DEPOSIT,49.90," + at(3).Format(time.RFC3339) + ",\n"
	csv := e.runCSV("hodle", file)
	if csv.Status != "succeeded" || csv.Booked != 1 || csv.Lines != 1 {
		t.Fatalf("statement file run as the service role: %+v", csv)
	}
	// A callback of two Pix keeps its body once (inbox_bodies).
	e.charge("cb1", 100, "")
	e.charge("cb2", 200, "")
	if code, st := e.postPix(pixItem{E2E: e2e(5), Txid: "cb1", Valor: "1.00", Horario: at(5)},
		pixItem{E2E: e2e(6), Txid: "cb2", Valor: "2.00", Horario: at(6)}); code != 200 {
		t.Fatalf("a callback of two Pix as the service role: %d %s", code, st)
	}
	e.drain()
	if e.sales() != 4 {
		t.Fatalf("%d sales booked, want 4", e.sales())
	}
	// A refund the statement booked, then its webhook under another id:
	// paired once (refund_aliases), booked once.
	e.charge("h1", 1000, "")
	if code, _ := e.postHodle("trk-h1", "h1", "10.00"); code != 200 {
		t.Fatal(code)
	}
	e.runCSV("hodle", hodleRefundFile("HR-77"))
	if code, st := e.postHodleRefund("evt-r1", "trk-h1", "h1", "3.00"); code != 200 {
		t.Fatalf("the refund's webhook as the service role: %d %s", code, st)
	}
	e.drain()
	if n := e.refunds("h1"); n != 1 {
		t.Fatalf("%d refunds of h1, want 1", n)
	}
	if got := e.outcomes(pix.ID); len(got) != 2 {
		t.Fatalf("the bcb-pix run's lines: %q, want 2", got)
	}
	// Matching refreshed the lines' statistics: the role's own ANALYZE
	// would be skipped with a warning, leaving the table never analysed
	// (-1).
	var tuples float64
	if err := e.db.Get(&tuples, `SELECT reltuples FROM pg_class WHERE oid = 'reconciliation_lines'::regclass`); err != nil || tuples < 0 {
		t.Fatalf("reconciliation_lines never analysed as the service role (reltuples %v, %v)", tuples, err)
	}
}
