package verify

import (
	"context"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/razao/razao/periods"
)

// A closed month's seal is a digest of its posting sets and postings (and
// of its snapshot, the figures its reports read),
// recorded (verify_month_seals, sql/0057) by the first clean run that saw
// the month closed, which had checked each of its sets. Every later run
// recomputes the digest of every sealed month and names one that
// differs: whoever edited, added or removed a set or a posting of a
// closed month (the owner, triggers off) changed it. That is what lets an
// incremental run leave the closed months' sets unread one by one.
//
// The digest is order-free, so it is one pass over each table grouped by
// month, with no sort and no join: each row's columns hashed by their
// types' own hash functions (hash_record_extended: no text is built, so
// neither DateStyle nor TimeZone matters, and a NULL hashes apart from
// any value), summed per month, with the count; the month's digest is
// the md5 of the two tables' counts and sums. The columns are named, not
// the row: a column added by a later migration leaves the seals as they
// were. The hash finds an edit; it is no signature (an owner can rewrite
// the seals table itself: the digest of a run can be kept elsewhere, and
// a full run does not trust the seals).
const (
	setColumns = `id, kind, idempotency_key, amount, currency, competence, competence_month, event_at, charge_id,
		refund_id, partner, inbox_id, description, content_hash, created_xid, created_at, return_id, refund_nature, reverses`
	postingColumns = `id, posting_set_id, account_id, currency, amount, competence_month`
	// A closed month's snapshot: its reports read it, and an incremental
	// run compares only the snapshots of months closed since the run it
	// continues with their postings (checkSnapshots).
	snapshotColumns = `month, currency, sales, sales_count, refunds, refunds_count, commission, psp_fees, other, lines,
		created_xid, created_at, interest, fines, rebates, discounts, med_returns`
	balanceColumns = `month, account_id, opening, debits, credits, closing`
)

// sealsQuery returns, per month up to $1, its sets, postings and digest.
var sealsQuery = `
	WITH s AS (
		SELECT competence_month AS month, count(*) AS n, sum(hash_record_extended(ROW(` + setColumns + `), 0)) AS h
		-- competence, posting_sets' partition key (sql/0056): the open
		-- months' partitions are not read.
		FROM posting_sets WHERE competence < ($1::date + interval '1 month')::date GROUP BY 1
	), p AS (
		SELECT competence_month AS month, count(*) AS n, sum(hash_record_extended(ROW(` + postingColumns + `), 0)) AS h
		FROM postings WHERE competence_month <= $1::date GROUP BY 1
	), m AS (
		SELECT month, count(*) AS n, sum(hash_record_extended(ROW(` + snapshotColumns + `), 0)) AS h
		FROM month_snapshots WHERE month <= $1::date GROUP BY 1
	), b AS (
		SELECT month, count(*) AS n, sum(hash_record_extended(ROW(` + balanceColumns + `), 0)) AS h
		FROM trial_balance_snapshots WHERE month <= $1::date GROUP BY 1
	), months AS (
		SELECT month FROM s UNION SELECT month FROM p UNION SELECT month FROM m UNION SELECT month FROM b
	)
	SELECT x.month, coalesce(s.n, 0) AS sets, coalesce(p.n, 0) AS postings,
		md5(concat_ws('|', coalesce(s.n, 0), coalesce(s.h, 0), coalesce(p.n, 0), coalesce(p.h, 0),
			coalesce(m.n, 0), coalesce(m.h, 0), coalesce(b.n, 0), coalesce(b.h, 0))) AS digest
	FROM months x LEFT JOIN s ON s.month = x.month LEFT JOIN p ON p.month = x.month
		LEFT JOIN m ON m.month = x.month LEFT JOIN b ON b.month = x.month ORDER BY 1`

// seal is a month's digest.
type seal struct {
	Month    time.Time `db:"month"`
	Sets     int64     `db:"sets"`
	Postings int64     `db:"postings"`
	Digest   string    `db:"digest"`
	RunID    int64     `db:"run_id"`
}

// sealOutcome is what a run found of the closed months' seals.
type sealOutcome struct {
	// checked counts the sealed months compared with their seals; fresh
	// are the closed months without one, to seal once the run is clean.
	checked  int
	fresh    []seal
	breaches []string
}

// checkSeals recomputes the digest of every month up to lastClosed (the
// last closed month of the run's snapshot) and compares each with its
// seal. A closed month before from (an incremental run's window) with no
// seal, or a seal of a month that is not closed, is a breach: a clean run
// sealed every month closed in its snapshot, and months never reopen.
func checkSeals(ctx context.Context, tx *sqlx.Tx, lastClosed *periods.Month, w window) (sealOutcome, error) {
	var out sealOutcome
	var stored []seal
	if err := tx.SelectContext(ctx, &stored, `SELECT month, sets, postings, digest, run_id FROM verify_month_seals ORDER BY month`); err != nil {
		return out, fmt.Errorf("read the seals: %w", err)
	}
	byMonth := map[periods.Month]seal{}
	for _, s := range stored {
		m := periods.MonthOf(s.Month.UTC())
		byMonth[m] = s
		if lastClosed == nil || lastClosed.Before(m) {
			out.breaches = append(out.breaches, fmt.Sprintf("month %s was sealed closed by verify run %d but is not closed", m, s.RunID))
		}
	}
	if lastClosed == nil {
		return out, nil
	}
	var now []seal
	if err := tx.SelectContext(ctx, &now, sealsQuery, lastClosed.First().Format("2006-01-02")); err != nil {
		return out, fmt.Errorf("digest the closed months: %w", err)
	}
	found := map[periods.Month]bool{}
	for _, n := range now {
		m := periods.MonthOf(n.Month.UTC())
		found[m] = true
		s, sealed := byMonth[m]
		switch {
		case sealed:
			out.checked++
			if s.Digest != n.Digest {
				out.breaches = append(out.breaches, fmt.Sprintf("month %s: its sets, postings and snapshot are not those verify run %d sealed (%d sets, %d postings then; %d, %d now)",
					m, s.RunID, s.Sets, s.Postings, n.Sets, n.Postings))
			}
		case !w.full && m.Before(w.from):
			out.breaches = append(out.breaches, fmt.Sprintf("month %s: closed before the run this one continues, but has no seal", m))
		default:
			out.fresh = append(out.fresh, n)
		}
	}
	// A sealed month with no set and no posting left.
	for _, s := range stored {
		m := periods.MonthOf(s.Month.UTC())
		if lastClosed != nil && !lastClosed.Before(m) && !found[m] {
			out.checked++
			out.breaches = append(out.breaches, fmt.Sprintf("month %s: its sets, postings and snapshot are not those verify run %d sealed (%d sets, %d postings then; none now)",
				m, s.RunID, s.Sets, s.Postings))
		}
	}
	return out, nil
}
