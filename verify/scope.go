package verify

import (
	"fmt"
	"strings"

	"github.com/razao/razao/periods"
)

// scope says what an incremental run (RunIncremental) does with a check:
//
//   - always: the check reads the catalog, closed_periods or an index,
//     never the whole ledger (functions, triggers, closed months against
//     each other and the clock): it runs in every run;
//   - perSet: the check is about one set (its legs, balance, accounts,
//     amounts, template, close) or one charge and its sets (one sale,
//     refunds within it, reversals): an incremental run checks the sets
//     of the months from window.from on, and the charges those sets name,
//     reading whatever else the check joins through its indexes;
//   - fullOnly: the check needs every posting (all postings sum to zero,
//     cash against the events, every balance fitting in int64): only a
//     full run runs it. Each is a sum over sets whose terms the perSet
//     checks and the seals hold still, so a clean full run followed by
//     clean incremental runs leaves little for it to find; the report
//     names it as left to a full run.
type scope int

const (
	always scope = iota
	perSet
	fullOnly
)

// window is the part of the ledger a run checks set by set: every set
// when full, else the sets of the months from `from` on.
type window struct {
	full bool
	from periods.Month
}

// touched is the condition, on a column holding a charge id, that the
// charge has a set in the window: the charge-wide checks (one sale per
// charge, refunds within their sale, a charge's figures against its sets)
// then read all of its sets, in any month, through ix_posting_sets_charge.
func touched(col string) string {
	return `({full} OR ` + col + ` IN (SELECT t.charge_id FROM posting_sets t
		WHERE t.competence >= {from} AND t.charge_id IS NOT NULL))`
}

// in returns c as it runs in w: {from} and {full} bound as parameters
// after c's own, so that the plan is made for their values (an unnamed
// statement's plan is): a full run's `{full} OR ...` folds to true, and a
// partitioned table's months before {from} are pruned.
func (w window) in(c sqlCheck) sqlCheck {
	from := "-infinity"
	if !w.full {
		from = w.from.First().Format("2006-01-02")
	}
	args := append([]any{}, c.args...)
	for _, p := range []struct {
		token, typ string
		value      any
	}{{"{from}", "date", from}, {"{full}", "boolean", w.full}} {
		if strings.Contains(c.query, p.token) {
			args = append(args, p.value)
			c.query = strings.ReplaceAll(c.query, p.token, fmt.Sprintf("$%d::%s", len(args), p.typ))
		}
	}
	c.args = args
	return c
}
