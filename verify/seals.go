package verify

import (
	"context"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/razao/razao/periods"
)

// A closed month's seal is a digest of its posting sets and postings,
// recorded (verify_month_seals, sql/0057) by the first clean run that saw
// the month closed, which had checked each of its sets. Every later run
// recomputes the digest of every sealed month and names one that
// differs: whoever edited, added or removed a set or a posting of a
// closed month (the owner, triggers off) changed it. That is what lets an
// incremental run leave the closed months' sets unread one by one.
//
// The digest is order-free, so it is one pass over each table grouped by
// month, with no sort and no join: each row's columns, each quoted
// (quote_nullable, so a NULL, an empty text and a '|' inside one read
// apart) in a fixed text form (dates and times in UTC, whatever the
// session's DateStyle and TimeZone), hashed with md5; the month's digest
// is the md5 of its counts and of the sums of its rows' hashes (two
// 64-bit halves each, summed in numeric). The columns are named, not the
// row: a column added by a later migration leaves the seals as they were.
const setDigest = `md5(concat_ws('|', quote_nullable(id::text), quote_nullable(kind), quote_nullable(idempotency_key),
	quote_nullable(amount::text), quote_nullable(currency::text), quote_nullable(to_char(competence, 'YYYY-MM-DD')),
	quote_nullable(to_char(competence_month, 'YYYY-MM-DD')),
	quote_nullable(to_char(event_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US')), quote_nullable(charge_id),
	quote_nullable(refund_id), quote_nullable(partner), quote_nullable(inbox_id::text), quote_nullable(description),
	quote_nullable(content_hash), quote_nullable(created_xid::text),
	quote_nullable(to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US')), quote_nullable(return_id),
	quote_nullable(refund_nature), quote_nullable(reverses::text)))`

const postingDigest = `md5(concat_ws('|', quote_nullable(id::text), quote_nullable(posting_set_id::text),
	quote_nullable(account_id::text), quote_nullable(currency::text), quote_nullable(amount::text),
	quote_nullable(to_char(competence_month, 'YYYY-MM-DD'))))`

// sealsQuery returns, per month up to $1, its sets, postings and digest.
var sealsQuery = `
	WITH s AS (
		SELECT competence_month AS month, count(*) AS n,
			sum(('x' || substr(h, 1, 16))::bit(64)::bigint::numeric) AS lo, sum(('x' || substr(h, 17, 16))::bit(64)::bigint::numeric) AS hi
		FROM (SELECT competence_month, ` + setDigest + ` AS h FROM posting_sets WHERE competence_month <= $1::date) r GROUP BY 1
	), p AS (
		SELECT competence_month AS month, count(*) AS n,
			sum(('x' || substr(h, 1, 16))::bit(64)::bigint::numeric) AS lo, sum(('x' || substr(h, 17, 16))::bit(64)::bigint::numeric) AS hi
		FROM (SELECT competence_month, ` + postingDigest + ` AS h FROM postings WHERE competence_month <= $1::date) r GROUP BY 1
	)
	SELECT coalesce(s.month, p.month) AS month, coalesce(s.n, 0) AS sets, coalesce(p.n, 0) AS postings,
		md5(concat_ws('|', coalesce(s.n, 0), coalesce(s.lo, 0), coalesce(s.hi, 0), coalesce(p.n, 0), coalesce(p.lo, 0), coalesce(p.hi, 0))) AS digest
	FROM s FULL JOIN p ON p.month = s.month ORDER BY 1`

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
				out.breaches = append(out.breaches, fmt.Sprintf("month %s: its sets and postings are not those verify run %d sealed (%d sets, %d postings then; %d, %d now)",
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
			out.breaches = append(out.breaches, fmt.Sprintf("month %s: its sets and postings are not those verify run %d sealed (%d sets, %d postings then; none now)",
				m, s.RunID, s.Sets, s.Postings))
		}
	}
	return out, nil
}
