package console

import (
	"regexp"
	"testing"

	"github.com/razao/razao/internal/pgtest"
)

// Every value a CHECK constraint allows for a column the console shows has
// its Portuguese word: a value added by a migration and not named here
// fails this test instead of appearing in English on a page.
func TestEveryStoredValueHasItsPortugueseWord(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	kinds := map[string]string{
		"ck_charges_state":                     "charge",
		"ck_inbox_status":                      "delivery",
		"ck_inbox_kind":                        "event",
		"ck_posting_sets_kind":                 "set",
		"ck_divergences_status":                "divergence",
		"ck_divergences_reason":                "reason",
		"ck_divergences_resolution":            "resolution",
		"ck_adjustments_status":                "adjustment",
		"ck_adjustments_kind":                  "adjustment_kind",
		"ck_reconciliation_runs_status":        "run",
		"ck_export_runs_status":                "run",
		"ck_reconciliation_lines_outcome":      "outcome",
		"ck_reconciliation_lines_kind":         "line",
		"ck_accounts_type":                     "type",
		"ck_accounts_normal_side":              "side",
		"ck_webhook_endpoints_disabled_reason": "disabled_reason",
	}
	quoted := regexp.MustCompile(`'([a-z_]+)'`)
	for name, kind := range kinds {
		var defs []string
		// A partition's copy of its parent's constraint (posting_sets is
		// partitioned, sql/0056) is the parent's.
		if err := db.Select(&defs, `SELECT pg_get_constraintdef(c.oid) FROM pg_constraint c JOIN pg_class r ON r.oid = c.conrelid
			WHERE c.conname = $1 AND NOT r.relispartition`, name); err != nil {
			t.Fatal(err)
		}
		if len(defs) != 1 {
			t.Errorf("constraint %s: %d found, want 1 (renamed? update this test)", name, len(defs))
			continue
		}
		values := quoted.FindAllStringSubmatch(defs[0], -1)
		if len(values) == 0 {
			t.Errorf("constraint %s names no value: %s", name, defs[0])
		}
		for _, v := range values {
			if _, ok := labels[kind][v[1]]; !ok {
				t.Errorf("%s allows %q, which labels[%q] does not name in Portuguese", name, v[1], kind)
			}
		}
	}
}
