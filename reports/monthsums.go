package reports

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/razao/razao/accounts"
	"github.com/razao/razao/internal/exact"
	"github.com/razao/razao/postings"
)

// Month sums (sql/0021) are every report's reading of postings: a month's
// postings summed per account and kind of set, from the month's stored
// sums (month_sums, the sets visible in a database snapshot S) plus the
// sets S did not see, or, for a month without stored sums, from all its
// postings. Both halves are read by one statement, so a refresh that
// commits meanwhile is seen whole or not at all, in any isolation level.
// Since the sums only ever cover sealed, append-only sets, the figures are
// the same as summing the postings; only the cost differs.

// revenueAccount is the account_id of month_sum_lines' rows for the
// revenue accounts together.
const revenueAccount = 0

// monthSumsSQL returns (month, account_id, kind, debits, credits, sets)
// rows whose sums per (month, account_id, kind) are the month's: $1 the
// months (NULL: every month from the ledger's first to its last), $2 the
// accounts (NULL: all), $3 the revenue accounts, summed together as
// account 0 with their sets counted (empty: no such rows), $4 true to
// ignore stored sums (sum the postings themselves, as verify must).
//
// The branches are gated per month by conditions on the month's row only
// (one-time filters): a month with sums reads its lines and the sets its
// snapshot did not see (ix_posting_sets_month_xid, then each set's
// postings by ix_postings_set: the OFFSET 0 keeps the planner from a scan
// of postings, however many sets it guesses), one without reads
// its postings, by account (ix_postings_account_month) when accounts are
// given, else by set (ix_posting_sets_competence_month).
const monthSumsSQL = `
WITH m AS (
	SELECT d AS month FROM unnest($1::date[]) d
	UNION ALL
	SELECT d::date FROM generate_series((SELECT min(competence_month) FROM posting_sets),
		(SELECT max(competence_month) FROM posting_sets), interval '1 month') d
	WHERE $1::date[] IS NULL
), ms AS (
	SELECT m.month, s.snapshot FROM m LEFT JOIN month_sums s ON s.month = m.month AND NOT $4::boolean
		AND pg_snapshot_xmax(s.snapshot) <= pg_snapshot_xmax(pg_current_snapshot())
)
SELECT ms.month, x.account_id, x.kind, x.debits, x.credits, x.sets
FROM ms CROSS JOIN LATERAL (
	WITH r AS MATERIALIZED (
		SELECT p.account_id, s.id AS set_id, s.kind, p.amount
		FROM posting_sets s CROSS JOIN LATERAL (
			SELECT p.account_id, p.amount FROM postings p WHERE p.posting_set_id = s.id OFFSET 0) p
		WHERE ms.snapshot IS NOT NULL AND s.competence_month = ms.month
			AND s.created_xid >= pg_snapshot_xmin(ms.snapshot) AND NOT pg_visible_in_snapshot(s.created_xid, ms.snapshot)
			AND ($2::bigint[] IS NULL OR p.account_id = ANY($2::bigint[]))
		UNION ALL
		SELECT p.account_id, s.id, s.kind, p.amount
		FROM posting_sets s JOIN postings p ON p.posting_set_id = s.id AND p.competence_month = ms.month
		WHERE ms.snapshot IS NULL AND $2::bigint[] IS NULL AND s.competence_month = ms.month
		UNION ALL
		SELECT p.account_id, s.id, s.kind, p.amount
		FROM postings p JOIN posting_sets s ON s.id = p.posting_set_id
		WHERE ms.snapshot IS NULL AND p.account_id = ANY($2::bigint[]) AND p.competence_month = ms.month
	)
	SELECT r.account_id, r.kind, coalesce(sum(r.amount) FILTER (WHERE r.amount > 0), 0) AS debits,
		coalesce(-sum(r.amount) FILTER (WHERE r.amount < 0), 0) AS credits, 0::bigint AS sets
	FROM r GROUP BY r.account_id, r.kind
	UNION ALL
	SELECT 0, r.kind, coalesce(sum(r.amount) FILTER (WHERE r.amount > 0), 0),
		coalesce(-sum(r.amount) FILTER (WHERE r.amount < 0), 0), count(DISTINCT r.set_id)
	FROM r WHERE r.account_id = ANY($3::bigint[]) GROUP BY r.kind
	UNION ALL
	SELECT l.account_id, l.kind, l.debits, l.credits, l.sets FROM month_sum_lines l
	WHERE ms.snapshot IS NOT NULL AND l.month = ms.month
		AND (CASE WHEN l.account_id = 0 THEN cardinality($3::bigint[]) > 0
			ELSE $2::bigint[] IS NULL OR l.account_id = ANY($2::bigint[]) END)
) x`

// flowKey names one figure of month sums.
type flowKey struct {
	Month   postings.Month
	Account int64
	Kind    string
}

// flow is a month's debits and credits on an account by one kind of set,
// summed in 128 bits (checked by whoever reads them), and the sets counted
// (revenue rows only).
type flow struct {
	debits, credits exact.Wide
	sets            int64
}

// net returns the flow's debits less its credits.
func (f flow) net() exact.Wide {
	n := f.debits
	n.SubWide(f.credits)
	return n
}

// sumQuery says what sumMonths reads.
type sumQuery struct {
	// Months to sum; nil: every month of the ledger.
	Months []postings.Month
	// Accounts to sum; nil: all.
	Accounts []int64
	// Revenue, when not empty, adds the revenue rows (account 0).
	Revenue []int64
	// FromPostings ignores stored sums.
	FromPostings bool
}

// sumMonths reads month sums (monthSumsSQL) and adds their halves up.
func sumMonths(ctx context.Context, q sqlx.QueryerContext, sq sumQuery) (map[flowKey]*flow, error) {
	var months pq.StringArray
	if sq.Months != nil {
		months = make(pq.StringArray, len(sq.Months))
		for i, m := range sq.Months {
			months[i] = m.First().Format(time.DateOnly)
		}
	}
	var accts any
	if sq.Accounts != nil {
		accts = pq.Array(sq.Accounts)
	}
	revenue := sq.Revenue
	if revenue == nil {
		revenue = []int64{}
	}
	rows, err := q.QueryxContext(ctx, monthSumsSQL, months, accts, pq.Array(revenue), sq.FromPostings)
	if err != nil {
		return nil, fmt.Errorf("month sums: %w", err)
	}
	defer rows.Close()
	out := map[flowKey]*flow{}
	for rows.Next() {
		var r struct {
			Month   time.Time    `db:"month"`
			Account int64        `db:"account_id"`
			Kind    string       `db:"kind"`
			Debits  postings.Sum `db:"debits"`
			Credits postings.Sum `db:"credits"`
			Sets    int64        `db:"sets"`
		}
		if err := rows.StructScan(&r); err != nil {
			return nil, fmt.Errorf("month sums: %w", err)
		}
		k := flowKey{Month: monthOf(r.Month), Account: r.Account, Kind: r.Kind}
		// A stored sum and its delta each fit numeric; each must fit
		// int64 to be added exactly here (a ledger's figure that does
		// not is refused by the report that reads it anyway).
		if r.Debits.Overflow || r.Credits.Overflow {
			return nil, fmt.Errorf("%w: sums of account %d in %s", ErrSumOverflow, r.Account, k.Month)
		}
		f := out[k]
		if f == nil {
			f = &flow{}
			out[k] = f
		}
		f.debits.Add(r.Debits.Value)
		f.credits.Add(r.Credits.Value)
		f.sets += r.Sets
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("month sums: %w", err)
	}
	return out, nil
}

// monthsBetween returns the months after from (or from the ledger's first
// month when from is NULL) and before to.
func monthsBetween(ctx context.Context, q sqlx.QueryerContext, from sql.NullTime, to postings.Month) ([]postings.Month, error) {
	start := postings.Month{}
	if from.Valid {
		start = monthOf(from.Time).Next()
	} else {
		var first sql.NullTime
		if err := sqlx.GetContext(ctx, q, &first, `SELECT min(competence_month) FROM posting_sets`); err != nil {
			return nil, fmt.Errorf("first month of the ledger: %w", err)
		}
		if !first.Valid {
			return nil, nil
		}
		start = monthOf(first.Time)
	}
	var out []postings.Month
	for m := start; m.Before(to); m = m.Next() {
		out = append(out, m)
	}
	return out, nil
}

// RefreshMonthSums brings the stored sums of every month of the ledger
// up to date: a month without sums is summed from its postings, one whose
// snapshot missed sets gets its sums plus those sets (the same reading
// every report makes, sumMonths), each month in a transaction of its own.
// It is safe to run on every replica at once: a refresh that finds
// another in progress leaves the month to it. It returns how many months
// it stored. Run it off the hot path (razao serve does, every
// MonthSumsInterval); without it reports are right, only slower.
func RefreshMonthSums(ctx context.Context, db *sqlx.DB) (int, error) {
	var months []time.Time
	err := db.SelectContext(ctx, &months, `
		SELECT d::date FROM generate_series((SELECT min(competence_month) FROM posting_sets),
			(SELECT max(competence_month) FROM posting_sets), interval '1 month') d
		LEFT JOIN month_sums s ON s.month = d::date
		WHERE s.month IS NULL OR pg_snapshot_xmax(s.snapshot) > pg_snapshot_xmax(pg_current_snapshot())
			OR EXISTS (SELECT 1 FROM posting_sets p
			WHERE p.created_xid >= pg_snapshot_xmin(s.snapshot) AND NOT pg_visible_in_snapshot(p.created_xid, s.snapshot)
				AND p.competence_month = s.month)
		ORDER BY 1`)
	if err != nil {
		return 0, fmt.Errorf("month sums: months to refresh: %w", err)
	}
	n := 0
	var foreign error
	for _, t := range months {
		stored, err := refreshMonth(ctx, db, monthOf(t))
		if lostRace(err) {
			continue
		}
		if errors.Is(err, ErrForeignXids) {
			foreign = errors.Join(foreign, err) // the other months are still refreshed
			continue
		}
		if err != nil {
			return n, err
		}
		if stored {
			n++
		}
	}
	return n, foreign
}

// ErrForeignXids says a month holds posting sets stamped with transaction
// ids ahead of the cluster's: its reports sum its postings, slower but
// right, and it keeps no month sums.
var ErrForeignXids = errors.New("transaction ids behind the ledger's")

// MonthSumsInterval is how often razao serve refreshes the month sums:
// a report reads about this long's sets beyond them.
const MonthSumsInterval = 10 * time.Second

// RunMonthSums refreshes the month sums at once and then every interval
// until ctx ends. A failed refresh is logged and tried again at the next
// tick: reports stay right without it, only slower.
func RunMonthSums(ctx context.Context, db *sqlx.DB, log *slog.Logger, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if n, err := RefreshMonthSums(ctx, db); err != nil && ctx.Err() == nil {
			log.Warn("month sums: refresh failed", "error", err)
		} else if n > 0 {
			log.Debug("month sums: refreshed", "months", n)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// refreshMonth stores month m's sums as of this transaction's snapshot,
// through month_sums_refresh (sql/0041): the month sums are written only
// by that function, as the owner, from the postings, never by a role
// that could hand it forged sums. REPEATABLE READ: the sums and
// pg_current_snapshot() are of one snapshot (the function refuses any
// other level).
func refreshMonth(ctx context.Context, db *sqlx.DB, m postings.Month) (bool, error) {
	tx, err := db.BeginTxx(ctx, &sql.TxOptions{Isolation: sql.LevelRepeatableRead})
	if err != nil {
		return false, fmt.Errorf("month sums %s: begin: %w", m, err)
	}
	defer tx.Rollback()
	var outcome string
	if err := tx.GetContext(ctx, &outcome, `SELECT month_sums_refresh($1)`, m.First()); err != nil {
		return false, fmt.Errorf("month sums %s: %w", m, err) // lostRace: see RefreshMonthSums
	}
	switch outcome {
	case "stored":
	case "held":
		// Another replica refreshing the same month holds its row: left
		// to it.
		return false, nil
	case "foreign":
		// Sets stamped with transaction ids this cluster has not reached
		// come from another cluster (a logical restore): which of them a
		// snapshot of this one sees cannot be told from their ids, so the
		// month keeps no sums and its reports sum its postings.
		return false, fmt.Errorf("%w: month sums %s: posting sets carry transaction ids ahead of this cluster's (restored from another?)", ErrForeignXids, m)
	case "overflow":
		return false, fmt.Errorf("%w: month sums %s: an account's debits or credits by one kind of set", ErrSumOverflow, m)
	default:
		return false, fmt.Errorf("month sums %s: month_sums_refresh answered %q", m, outcome)
	}
	if err := tx.Commit(); err != nil {
		return false, fmt.Errorf("month sums %s: commit: %w", m, err)
	}
	return true, nil
}

// lostRace is a refresh that a concurrent refresh of the same month
// serialised out (its snapshot predates the other's commit): the other's
// sums are as good.
func lostRace(err error) bool {
	var pqErr *pq.Error
	return errors.As(err, &pqErr) && pqErr.Code == "40001"
}

// revenueAccounts returns the ids of the revenue accounts: income:revenue
// and the accounts under it, in its currency.
func revenueAccounts(ctx context.Context, q sqlx.QueryerContext) ([]int64, error) {
	ids := []int64{}
	err := sqlx.SelectContext(ctx, q, &ids, `SELECT a.id FROM accounts a JOIN accounts r ON r.code = $1 AND r.currency = a.currency
		WHERE a.code = $1 OR starts_with(a.code, $1 || ':')`, accounts.Revenue)
	if err != nil {
		return nil, fmt.Errorf("revenue accounts: %w", err)
	}
	return ids, nil
}

// KindFlow is an account's debits and credits by sets of one kind, in
// centavos, both positive.
type KindFlow struct {
	Debits, Credits int64
}

// AccountFlows returns, for each account of ids, its debits and credits
// over the whole ledger by kind of set (the month sums of every month).
// Accounts without postings are absent.
func AccountFlows(ctx context.Context, q sqlx.QueryerContext, ids []int64) (map[int64]map[string]KindFlow, error) {
	return accountFlows(ctx, q, ids, false)
}

// AccountFlowsFromPostings is AccountFlows read from the postings alone:
// for a decision that moves money (a payout), which must not rest on the
// month sums, a cache that the service role writes.
func AccountFlowsFromPostings(ctx context.Context, q sqlx.QueryerContext, ids []int64) (map[int64]map[string]KindFlow, error) {
	return accountFlows(ctx, q, ids, true)
}

func accountFlows(ctx context.Context, q sqlx.QueryerContext, ids []int64, fromPostings bool) (map[int64]map[string]KindFlow, error) {
	out := map[int64]map[string]KindFlow{}
	if len(ids) == 0 {
		return out, nil
	}
	err := read(ctx, q, func(q sqlx.QueryerContext) error {
		flows, err := sumMonths(ctx, q, sumQuery{Accounts: ids, FromPostings: fromPostings})
		if err != nil {
			return err
		}
		total := map[int64]map[string]*flow{}
		for k, f := range flows {
			byKind := total[k.Account]
			if byKind == nil {
				byKind = map[string]*flow{}
				total[k.Account] = byKind
			}
			t := byKind[k.Kind]
			if t == nil {
				t = &flow{}
				byKind[k.Kind] = t
			}
			t.debits.AddWide(f.debits)
			t.credits.AddWide(f.credits)
		}
		var sum exact.Sums
		for id, byKind := range total {
			out[id] = map[string]KindFlow{}
			for kind, f := range byKind {
				of := fmt.Sprintf("account %d by %s sets", id, kind)
				out[id][kind] = KindFlow{Debits: sum.Fit(f.debits, "debits of", of), Credits: sum.Fit(f.credits, "credits of", of)}
			}
		}
		return sum.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("account flows: %w", err)
	}
	return out, nil
}

// CheckMonthSums recomputes every stored month sum from the postings
// alone and returns the figures that differ from what the reports read
// (the stored sums plus their deltas); none is the expected outcome. Like
// CheckSnapshots it reads the whole ledger: it belongs with verify.
func CheckMonthSums(ctx context.Context, q sqlx.QueryerContext) ([]SnapshotMismatch, error) {
	var out []SnapshotMismatch
	err := read(ctx, q, func(q sqlx.QueryerContext) error {
		revenue, err := revenueAccounts(ctx, q)
		if err != nil {
			return err
		}
		var months []time.Time
		if err := sqlx.SelectContext(ctx, q, &months, `SELECT month FROM month_sums ORDER BY month`); err != nil {
			return fmt.Errorf("stored months: %w", err)
		}
		if len(months) == 0 {
			return nil
		}
		sq := sumQuery{Revenue: revenue}
		for _, m := range months {
			sq.Months = append(sq.Months, monthOf(m))
		}
		read, err := sumMonths(ctx, q, sq)
		if err != nil {
			return err
		}
		sq.FromPostings = true
		ledger, err := sumMonths(ctx, q, sq)
		if err != nil {
			return err
		}
		codes, err := accountCodes(ctx, q)
		if err != nil {
			return err
		}
		keys := make([]flowKey, 0, len(ledger))
		for k := range ledger {
			keys = append(keys, k)
		}
		for k := range read {
			if _, ok := ledger[k]; !ok {
				keys = append(keys, k)
			}
		}
		slices.SortFunc(keys, func(a, b flowKey) int {
			return cmp.Or(cmp.Compare(a.Month.String(), b.Month.String()), cmp.Compare(a.Account, b.Account), cmp.Compare(a.Kind, b.Kind))
		})
		var sum exact.Sums
		for _, k := range keys {
			r, l := read[k], ledger[k]
			if r == nil {
				r = &flow{}
			}
			if l == nil {
				l = &flow{}
			}
			name := codes[k.Account]
			if k.Account == revenueAccount {
				name = "the revenue accounts"
			}
			for _, c := range []struct {
				what string
				r, l int64
			}{
				{"debits", sum.Fit(r.debits, "debits of", name), sum.Fit(l.debits, "debits of", name)},
				{"credits", sum.Fit(r.credits, "credits of", name), sum.Fit(l.credits, "credits of", name)},
				{"sets", r.sets, l.sets},
			} {
				if c.r != c.l {
					out = append(out, SnapshotMismatch{Month: k.Month.String(), What: fmt.Sprintf("month sums of %s by %s sets: %s", name, k.Kind, c.what),
						Snapshot: c.r, Ledger: c.l})
				}
			}
		}
		return sum.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("check month sums: %w", err)
	}
	return out, nil
}
