package reconcile_test

import (
	"errors"
	"testing"

	"github.com/lib/pq"

	"github.com/razao/razao/internal/pgtest"
)

// A statement line names a run that exists, and stays in it; deleting a
// run deletes its lines: what the foreign key did, checked once per
// statement (migration 0029).
func TestStatementLinesBelongToTheirRun(t *testing.T) {
	db := pgtest.New(t)
	fk := func(err error) bool {
		var pe *pq.Error
		return errors.As(err, &pe) && pe.Code == "23503"
	}
	if _, err := db.Exec(`INSERT INTO reconciliation_lines (run_id, line, kind) VALUES (999, 1, 'paid')`); !fk(err) {
		t.Fatalf("a line of no run: %v, want a foreign key violation", err)
	}
	var run, other int64
	for _, id := range []*int64{&run, &other} {
		if err := db.Get(id, `INSERT INTO reconciliation_runs (endpoint, source, window_from, window_to, final, claimed_by, lease_until)
			VALUES ('hodle', 'csv', now() - interval '1 hour', now(), false, 'test', now()) RETURNING id`); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.Exec(`INSERT INTO reconciliation_lines (run_id, line, kind) SELECT $1, i, 'paid' FROM generate_series(1, 3) i`, run); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`INSERT INTO reconciliation_lines (run_id, line, kind) VALUES ($1, 1, 'paid'), (999, 1, 'paid')`, other); !fk(err) {
		t.Fatalf("lines of a run and of no run: %v, want a foreign key violation", err)
	}
	if _, err := db.Exec(`UPDATE reconciliation_lines SET run_id = $2 WHERE run_id = $1`, run, other); !fk(err) {
		t.Fatalf("a line moved to another run: %v, want a foreign key violation", err)
	}
	if _, err := db.Exec(`UPDATE reconciliation_lines SET outcome = 'matched' WHERE run_id = $1`, run); err != nil {
		t.Fatalf("deciding lines: %v", err)
	}
	if _, err := db.Exec(`DELETE FROM reconciliation_runs WHERE id = $1`, run); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := db.Get(&n, `SELECT count(*) FROM reconciliation_lines WHERE run_id = $1`, run); err != nil || n != 0 {
		t.Fatalf("%d lines left of a deleted run (%v), want 0", n, err)
	}
}
