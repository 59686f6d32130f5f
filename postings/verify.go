package postings

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/jmoiron/sqlx"
)

// Check is one invariant re-checked over the whole ledger.
type Check struct {
	Name     string
	Breaches int64
	// Examples names a few breaching rows so a human can start looking.
	Examples string
}

// OK reports whether the check found no breach.
func (c Check) OK() bool { return c.Breaches == 0 }

// Report is the outcome of Verify.
type Report struct {
	Sets     int64
	Postings int64
	Checks   []Check
}

// OK reports whether every check passed.
func (r Report) OK() bool {
	for _, c := range r.Checks {
		if !c.OK() {
			return false
		}
	}
	return true
}

// WriteTo prints the report for a human.
func (r Report) WriteTo(w io.Writer) (int64, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "razao verify: %d posting sets, %d postings\n", r.Sets, r.Postings)
	for _, c := range r.Checks {
		if c.OK() {
			fmt.Fprintf(&b, "  ok    %s\n", c.Name)
			continue
		}
		fmt.Fprintf(&b, "  FAIL  %s: %d breach(es): %s\n", c.Name, c.Breaches, c.Examples)
	}
	if r.OK() {
		b.WriteString("ledger is clean\n")
	} else {
		b.WriteString("LEDGER BREACHED\n")
	}
	n, err := io.WriteString(w, b.String())
	return int64(n), err
}

// verifyChecks are plain SQL queries, independent of the Go that writes
// the ledger and of the triggers that guard it: each returns the rows that
// break one invariant as (label) text.
var verifyChecks = []struct{ name, query string }{
	{"every posting set has at least two postings", `
		SELECT 'set ' || s.id FROM posting_sets s LEFT JOIN postings p ON p.posting_set_id = s.id
		GROUP BY s.id HAVING count(p.id) < 2`},
	{"every posting set balances per currency", `
		SELECT 'set ' || posting_set_id || ' ' || currency || ' ' || sum(amount) FROM postings
		GROUP BY posting_set_id, currency HAVING sum(amount) <> 0`},
	{"all postings sum to zero per currency", `
		SELECT currency || ' ' || sum(amount) FROM postings GROUP BY currency HAVING sum(amount) <> 0`},
	{"no posting has a zero amount", `
		SELECT 'posting ' || id FROM postings WHERE amount = 0`},
	{"every posting is on an existing account of its currency", `
		SELECT 'posting ' || p.id FROM postings p LEFT JOIN accounts a ON a.id = p.account_id
		WHERE a.id IS NULL OR a.currency <> p.currency`},
	{"every posting is in its set's competence month", `
		SELECT 'posting ' || p.id FROM postings p JOIN posting_sets s ON s.id = p.posting_set_id
		WHERE p.competence_month <> s.competence_month`},
	{"at most one sale and one commission per charge", `
		SELECT kind || ' of charge ' || charge_id FROM posting_sets WHERE kind IN ('sale', 'commission')
		GROUP BY kind, charge_id HAVING count(*) > 1`},
	{"no refund without a sale, refunds within their sale", `
		SELECT 'charge ' || r.charge_id || ' refunded ' || sum(r.amount) || ' of ' || coalesce(max(s.amount), 0)
		FROM posting_sets r LEFT JOIN posting_sets s ON s.kind = 'sale' AND s.charge_id = r.charge_id
		WHERE r.kind = 'refund' GROUP BY r.charge_id HAVING sum(r.amount) > coalesce(max(s.amount), 0)`},
	{"commission reversals within their commission", `
		SELECT 'charge ' || r.charge_id FROM posting_sets r LEFT JOIN posting_sets c ON c.kind = 'commission' AND c.charge_id = r.charge_id
		WHERE r.kind = 'commission_reversal' GROUP BY r.charge_id HAVING sum(r.amount) > coalesce(max(c.amount), 0)`},
	{"a fully refunded charge reverses exactly its commission", `
		SELECT 'charge ' || s.charge_id || ': commission ' || c.amount || ', reversed ' || coalesce(sum(r.amount), 0)
		FROM posting_sets s
		JOIN posting_sets c ON c.kind = 'commission' AND c.charge_id = s.charge_id
		LEFT JOIN posting_sets r ON r.kind = 'commission_reversal' AND r.charge_id = s.charge_id
		WHERE s.kind = 'sale'
		  AND s.amount = (SELECT coalesce(sum(f.amount), 0) FROM posting_sets f WHERE f.kind = 'refund' AND f.charge_id = s.charge_id)
		GROUP BY s.charge_id, c.amount HAVING coalesce(sum(r.amount), 0) <> c.amount`},
	{"cash equals sales - psp fees - refunds - payouts (+ adjustments)", `
		WITH cash AS (
			SELECT p.currency, sum(p.amount) AS balance FROM postings p JOIN accounts a ON a.id = p.account_id
			WHERE a.code = 'assets:cash' OR starts_with(a.code, 'assets:cash:') GROUP BY p.currency
		), fees AS (
			SELECT p.currency, sum(p.amount) AS total FROM postings p JOIN accounts a ON a.id = p.account_id
			WHERE a.code = 'expenses:psp-fees' GROUP BY p.currency
		), adjustments AS (
			SELECT p.currency, sum(p.amount) AS total FROM postings p JOIN accounts a ON a.id = p.account_id
			JOIN posting_sets s ON s.id = p.posting_set_id
			WHERE s.kind = 'adjustment' AND (a.code = 'assets:cash' OR starts_with(a.code, 'assets:cash:')) GROUP BY p.currency
		), events AS (
			SELECT currency, sum(CASE kind WHEN 'sale' THEN amount WHEN 'refund' THEN -amount WHEN 'payout' THEN -amount ELSE 0 END) AS total
			FROM posting_sets GROUP BY currency
		), currencies AS (
			SELECT currency FROM cash UNION SELECT currency FROM events
		)
		SELECT c.currency || ': cash ' || coalesce(cash.balance, 0) || ' expected ' ||
			(coalesce(e.total, 0) - coalesce(f.total, 0) + coalesce(adj.total, 0))
		FROM currencies c LEFT JOIN cash ON cash.currency = c.currency LEFT JOIN events e ON e.currency = c.currency
		LEFT JOIN fees f ON f.currency = c.currency LEFT JOIN adjustments adj ON adj.currency = c.currency
		WHERE coalesce(cash.balance, 0) <> coalesce(e.total, 0) - coalesce(f.total, 0) + coalesce(adj.total, 0)`},
	{"no posting set written into a month after it closed", `
		SELECT 'set ' || s.id || ' in ' || to_char(s.competence_month, 'YYYY-MM') FROM posting_sets s
		JOIN closed_periods c ON c.month = s.competence_month WHERE s.created_at >= c.closed_at`},
	{"append-only triggers are in place and enabled", `
		SELECT t.name FROM (VALUES ('trg_posting_sets_append_only'), ('trg_posting_sets_no_truncate'),
			('trg_postings_append_only'), ('trg_postings_no_truncate'), ('trg_posting_sets_balanced'),
			('trg_posting_sets_open_month'), ('trg_postings_sealed_set'), ('trg_accounts_immutable'),
			('trg_closed_periods_append_only'), ('trg_closed_periods_no_truncate')) AS t (name)
		LEFT JOIN pg_trigger g ON g.tgname = t.name AND g.tgenabled = 'A'
		WHERE g.oid IS NULL`},
}

// Verify re-checks every ledger invariant over the whole ledger in one
// repeatable-read snapshot, so the checks agree with each other.
func Verify(ctx context.Context, db *sqlx.DB) (Report, error) {
	tx, err := db.BeginTxx(ctx, &txReadOnlySnapshot)
	if err != nil {
		return Report{}, fmt.Errorf("verify: begin: %w", err)
	}
	defer tx.Rollback()
	var r Report
	if err := tx.QueryRowxContext(ctx, `SELECT (SELECT count(*) FROM posting_sets), (SELECT count(*) FROM postings)`).Scan(&r.Sets, &r.Postings); err != nil {
		return Report{}, fmt.Errorf("verify: count: %w", err)
	}
	for _, c := range verifyChecks {
		var rows []string
		if err := tx.SelectContext(ctx, &rows, c.query); err != nil {
			return Report{}, fmt.Errorf("verify %q: %w", c.name, err)
		}
		check := Check{Name: c.name, Breaches: int64(len(rows))}
		if len(rows) > 5 {
			rows = append(rows[:5], "...")
		}
		check.Examples = strings.Join(rows, ", ")
		r.Checks = append(r.Checks, check)
	}
	return r, nil
}
