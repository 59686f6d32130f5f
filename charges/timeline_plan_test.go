package charges_test

import (
	"testing"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/razao/razao/divergences"
	"github.com/razao/razao/events"
	"github.com/razao/razao/inbox"
	"github.com/razao/razao/internal/benchledger"
	"github.com/razao/razao/internal/pgtest"
	"github.com/razao/razao/reconcile"
)

// timelineRead is one owner's read of a charge's timeline and the index
// of sql/0044 it must read.
type timelineRead struct {
	name, query, table, index string
	args                      []any
}

func timelineReads() []timelineRead {
	const charge = "ch-30001"
	return []timelineRead{
		{"deliveries", inbox.ChargeDeliveriesSQL, "inbox", "ix_inbox_charge_ref", []any{pq.StringArray{charge, "track-30001"}, 201}},
		{"divergences", divergences.OfChargeSQL, "divergences", "ix_divergences_charge", []any{charge, 201}},
		{"events", events.OfChargeSQL, "outbox", "ix_outbox_charge", []any{charge, 201}},
		{"statement lines", reconcile.ChargeLinesSQL, "reconciliation_lines", "ix_reconciliation_lines_charge", []any{charge, 201}},
	}
}

// fillTimelines stores, besides benchledger.Charges' charges and
// deliveries, a divergence, an event and a statement line per charge,
// analysed.
func fillTimelines(t *testing.T, db *sqlx.DB) {
	t.Helper()
	benchledger.Charges(t, db, planCharges)
	for _, q := range []string{
		`INSERT INTO divergences (charge_id, reason, detail) SELECT 'ch-' || g, 'amount_mismatch', '' FROM generate_series(1, 60000) g`,
		`INSERT INTO outbox (topic, charge_id, payload) SELECT 'charge.paid', 'ch-' || g, '{}' FROM generate_series(1, 60000) g`,
		`INSERT INTO reconciliation_runs (id, endpoint, source, window_from, window_to, final, claimed_by, lease_until)
			VALUES (1, 'pix', 'csv', '2026-08-01', '2026-08-02', true, 'test', now())`,
		`INSERT INTO reconciliation_lines (run_id, line, kind, amount, outcome, charge_id)
			SELECT 1, g, 'paid', 4990, 'matched', 'ch-' || g FROM generate_series(1, 60000) g`,
		`ANALYZE divergences, outbox, reconciliation_runs, reconciliation_lines`,
	} {
		db.MustExec(q)
	}
}

// Each part of a charge's timeline is read through its owner's index of
// sql/0044, never by reading the table: on 60,000 charges with a
// delivery, a divergence, an event and a statement line each, analysed.
// Without its index (dropped in a transaction rolled back) each read is
// refused by the same check.
func TestTimelineReadsEachKindsIndex(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	fillTimelines(t, db)
	for _, r := range timelineReads() {
		if err := checkPlan(explainRead(t, db, r, ""), []string{r.table}, []string{r.index}); err != nil {
			t.Errorf("%s: %v", r.name, err)
		}
		err := checkPlan(explainRead(t, db, r, `DROP INDEX `+r.index), []string{r.table}, []string{r.index})
		t.Logf("%s without %s: refused: %.200v", r.name, r.index, err)
		if err == nil {
			t.Errorf("%s: the check passed a plan without %s", r.name, r.index)
		}
	}
}

// explainRead returns the EXPLAIN (FORMAT JSON) of r, after before (if
// any), in a transaction rolled back.
func explainRead(t *testing.T, db *sqlx.DB, r timelineRead, before string) string {
	t.Helper()
	tx := db.MustBegin()
	defer tx.Rollback()
	if before != "" {
		tx.MustExec(before)
	}
	var plan string
	if err := tx.Get(&plan, `EXPLAIN (FORMAT JSON) `+r.query, r.args...); err != nil {
		t.Fatalf("%s: %v", r.name, err)
	}
	return plan
}
