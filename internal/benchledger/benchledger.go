// Package benchledger builds the large ledger the benchmarks read (the
// reports' and the console's): plain SQL from generate_series, with the
// ledger's triggers, foreign key checks and secondary indexes off for the
// bulk load only, then every trigger enabled ALWAYS again, the indexes
// rebuilt from their own definitions, VACUUM ANALYZE, and the months
// FirstMonth to LastClosed closed through the close function given (so
// they have snapshots).
//
// The ledger: benchSales sales over the 24 months of 2024 and 2025,
// volume growing from 1× to 2× across the range, each with a PSP fee (3
// postings); half with a partner commission (2 postings); 5% refunded by
// half in the following month, commission reversed (4 postings); and a
// monthly payout to each of benchPartners partners (bp-000, bp-001...).
// 2,375,000 sales make about 10 million postings in 3.8 million sets.
package benchledger

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/razao/razao/monthsums"
	"github.com/razao/razao/periods"
	"github.com/razao/razao/postings"
)

// The months of the ledger: FirstMonth to LastClosed are closed, the
// three after open. SmallMonth has about half the postings of LastMonth.
var (
	FirstMonth = periods.Month{Year: 2024, Month: time.January}
	LastClosed = periods.Month{Year: 2025, Month: time.September}
	LastMonth  = periods.Month{Year: 2025, Month: time.December}
	SmallMonth = periods.Month{Year: 2024, Month: time.February}
)

// DefaultSales is the ledger's size in sales unless RAZAO_BENCH_SALES
// says otherwise: about 10 million postings.
const DefaultSales = 2_375_000

// Sales is the number of sales the benchmarks build: RAZAO_BENCH_SALES
// when set (23750000 for about 100 million postings), else DefaultSales.
func Sales(tb testing.TB) int {
	tb.Helper()
	v := os.Getenv("RAZAO_BENCH_SALES")
	if v == "" {
		return DefaultSales
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1000 {
		tb.Fatalf("RAZAO_BENCH_SALES=%q: want a number of sales (at least 1000)", v)
	}
	return n
}

// Build loads the ledger into db, which must be migrated and hold no
// posting set.
func Build(b testing.TB, db *sqlx.DB, benchSales, benchPartners int) {
	b.Helper()
	ctx := context.Background()
	start := time.Now()
	step := func(what string, query string, args ...any) {
		b.Helper()
		t := time.Now()
		if _, err := db.ExecContext(ctx, query, args...); err != nil {
			b.Fatalf("%s: %v", what, err)
		}
		b.Logf("bench ledger: %s in %v", what, time.Since(t).Round(time.Millisecond))
	}
	// One connection: the session settings below must hold for every step.
	db.SetMaxOpenConns(1)
	defer db.SetMaxOpenConns(0)

	var empty bool
	if err := db.Get(&empty, `SELECT NOT EXISTS (SELECT 1 FROM posting_sets)`); err != nil || !empty {
		b.Fatalf("bench ledger: database not empty (%v)", err)
	}
	monthPartitions(b, db)
	step("partners", `INSERT INTO accounts (code, type, normal_side, currency, parent_id)
		SELECT 'liabilities:commission-payable:bp-' || lpad(g::text, 3, '0'), 'liability', 'credit', 'BRL', p.id
		FROM generate_series(0, $1 - 1) g, accounts p WHERE p.code = 'liabilities:commission-payable'`, benchPartners)

	// The ledger's triggers are off for the bulk load only (the data is
	// balanced by construction), and so is any foreign key check
	// (session_replication_role). Both come back before anything is
	// measured.
	step("session", `SET session_replication_role = replica; SET synchronous_commit = off;
		SET maintenance_work_mem = '512MB'; SET work_mem = '64MB'`)
	step("disable triggers", `ALTER TABLE posting_sets DISABLE TRIGGER USER; ALTER TABLE postings DISABLE TRIGGER USER`)
	// Secondary indexes are built once after the load (a sorted build)
	// rather than maintained row by row, from their own definitions.
	indexes := secondaryIndexes(b, db, "posting_sets", "postings")
	for _, ix := range indexes {
		step("drop "+ix.Name, `DROP INDEX `+ix.Name)
	}
	step("sale, commission, refund and reversal sets", `
		INSERT INTO posting_sets (id, kind, idempotency_key, amount, currency, competence, event_at,
			charge_id, refund_id, partner, description, content_hash)
		SELECT s.g * 4 + k.k, k.kind,
			k.kind || ':b' || s.g || CASE WHEN k.k >= 2 THEN ':r1' ELSE '' END,
			CASE k.k WHEN 0 THEN s.a WHEN 1 THEN s.a / 10 WHEN 2 THEN s.a / 2 ELSE (s.a / 10) * (s.a / 2) / s.a END,
			'BRL', c.d,
			(c.d + interval '15 hours' + (s.g % 600) * interval '1 minute') AT TIME ZONE 'UTC',
			'b' || s.g, CASE WHEN k.k >= 2 THEN 'r1' END,
			CASE WHEN k.k IN (1, 3) THEN 'bp-' || lpad(((s.g / 2) % $2)::text, 3, '0') END,
			CASE WHEN k.k = 0 THEN 'Pedido #' || s.g || ', PIX' ELSE '' END,
			'bench'
		FROM (
			SELECT g, 1000 + (g * 7919) % 49000 AS a,
				date '2024-01-01' + floor(731 * (sqrt(1 + 3 * (g - 0.5) / $1::bigint::float8) - 1))::int AS d
			FROM generate_series(1, $1::bigint) g
		) s
		CROSS JOIN LATERAL (VALUES (0, 'sale'), (1, 'commission'), (2, 'refund'), (3, 'commission_reversal')) AS k (k, kind)
		CROSS JOIN LATERAL (SELECT CASE WHEN k.k < 2 THEN s.d ELSE least(s.d + 30, date '2025-12-31') END AS d) c
		WHERE k.k = 0 OR (k.k = 1 AND s.g % 2 = 0) OR (k.k >= 2 AND s.g % 20 = 6)`, benchSales, benchPartners)
	step("payout sets", `
		INSERT INTO posting_sets (id, kind, idempotency_key, amount, currency, competence, event_at, partner, content_hash)
		SELECT $1::bigint * 4 + 4 + row_number() OVER (ORDER BY m, p), 'payout',
			'payout:bp-' || lpad(p::text, 3, '0') || ':' || to_char(m, 'YYYY-MM'), 50000, 'BRL',
			(m + interval '1 month' - interval '1 day')::date,
			(m + interval '1 month' - interval '1 day' + interval '18 hours') AT TIME ZONE 'UTC',
			'bp-' || lpad(p::text, 3, '0'), 'bench'
		FROM generate_series(date '2024-01-01', date '2025-12-01', interval '1 month') m, generate_series(0, $2 - 1) p`,
		benchSales, benchPartners)
	step("set sequence", `SELECT setval('posting_sets_id_seq', (SELECT max(id) FROM posting_sets))`)
	// Every set's unique keys (sql/0054), which the disabled trigger
	// (trg_posting_sets_keys) would have written.
	step("set keys", `INSERT INTO posting_set_keys (id, idempotency_key, kind, competence, amount, charge_id, refund_id, reverses)
		SELECT id, idempotency_key, kind, competence, amount, charge_id, refund_id, reverses FROM posting_sets`)
	step("postings", `
		WITH acc AS (
			SELECT (SELECT id FROM accounts WHERE code = 'assets:cash') AS cash,
				(SELECT id FROM accounts WHERE code = 'expenses:psp-fees') AS fees,
				(SELECT id FROM accounts WHERE code = 'income:revenue') AS revenue,
				(SELECT id FROM accounts WHERE code = 'expenses:commission') AS commission
		), pa AS (
			SELECT substr(code, length('liabilities:commission-payable:') + 1) AS partner, id
			FROM accounts WHERE starts_with(code, 'liabilities:commission-payable:')
		)
		INSERT INTO postings (posting_set_id, account_id, currency, amount, competence_month)
		SELECT s.id, v.account_id, 'BRL', v.amount, s.competence_month
		FROM posting_sets s CROSS JOIN acc LEFT JOIN pa ON pa.partner = s.partner
		CROSS JOIN LATERAL (VALUES
			(1, CASE s.kind WHEN 'sale' THEN acc.cash WHEN 'commission' THEN acc.commission WHEN 'refund' THEN acc.revenue
				ELSE pa.id END,
				CASE s.kind WHEN 'sale' THEN s.amount - s.amount / 100 ELSE s.amount END),
			(2, CASE s.kind WHEN 'sale' THEN acc.fees WHEN 'commission' THEN pa.id WHEN 'commission_reversal' THEN acc.commission
				ELSE acc.cash END,
				CASE s.kind WHEN 'sale' THEN s.amount / 100 ELSE -s.amount END),
			(3, CASE s.kind WHEN 'sale' THEN acc.revenue END, -s.amount)
		) AS v (leg, account_id, amount)
		WHERE v.account_id IS NOT NULL`)
	for _, ix := range indexes {
		step("build "+ix.Name, ix.Def)
	}
	var names []struct {
		Table string `db:"tbl"`
		Name  string `db:"tgname"`
	}
	// The parents' and each partition's own (sql/0056: a partition's
	// statement triggers are its own; its row triggers are clones, which
	// follow the parent's).
	if err := db.Select(&names, `SELECT tgrelid::regclass::text AS tbl, tgname FROM pg_trigger
		WHERE tgrelid IN (SELECT relid FROM pg_partition_tree('posting_sets') UNION ALL SELECT relid FROM pg_partition_tree('postings'))
			AND NOT tgisinternal AND tgparentid = 0 ORDER BY 1, 2`); err != nil {
		b.Fatal(err)
	}
	for _, n := range names {
		step("enable "+n.Name, fmt.Sprintf(`ALTER TABLE %s ENABLE ALWAYS TRIGGER %s`, n.Table, n.Name))
	}
	step("session back", `SET session_replication_role = origin`)
	step("vacuum analyze", `VACUUM (ANALYZE) posting_sets, postings, posting_set_keys`)
	db.SetMaxOpenConns(0)

	t := time.Now()
	cal, _ := periods.NewCalendar(periods.DefaultTimeZone)
	l := postings.New(db, cal)
	now := LastMonth.End(cal.Location()).Add(24 * time.Hour)
	for m := FirstMonth; !LastClosed.Before(m); m = m.Next() {
		if err := periods.Close(ctx, db, l.Calendar(), m, now, "", monthsums.Closing); err != nil {
			b.Fatal(err)
		}
	}
	b.Logf("bench ledger: closed %s to %s with snapshots in %v", FirstMonth, LastClosed, time.Since(t).Round(time.Millisecond))
	step("analyze", `ANALYZE`)

	var st struct {
		Sets     int64 `db:"sets"`
		Postings int64 `db:"postings"`
		Unbal    int64 `db:"unbalanced"`
		Small    int64 `db:"small"`
		Large    int64 `db:"large"`
	}
	if err := db.Get(&st, `SELECT (SELECT count(*) FROM posting_sets) AS sets, (SELECT count(*) FROM postings) AS postings,
		(SELECT count(*) FROM (SELECT 1 FROM postings GROUP BY posting_set_id HAVING sum(amount) <> 0) u) AS unbalanced,
		(SELECT count(*) FROM postings WHERE competence_month = $1) AS small,
		(SELECT count(*) FROM postings WHERE competence_month = $2) AS large`,
		SmallMonth.First(), LastMonth.First()); err != nil {
		b.Fatal(err)
	}
	if st.Unbal != 0 {
		b.Fatalf("bench ledger: %d unbalanced sets", st.Unbal)
	}
	b.Logf("bench ledger: %d sets, %d postings (%s: %d, %s: %d) built in %v",
		st.Sets, st.Postings, SmallMonth, st.Small, LastMonth, st.Large, time.Since(start).Round(time.Second))
}

// monthPartitions makes the ledger's months land in partitions of their
// own. A freshly migrated database's past partitions (sql/0056) run to the
// month after next of the day it was migrated, so 2024 and 2025 would all
// be written to posting_sets_past and postings_past, one table each, and
// nothing measured would prune. Both are empty here: they are detached
// and attached again ending at FirstMonth, and
// ledger_ensure_month_partitions makes FirstMonth onwards (to five months
// after the current one, as the migration does), each month a partition.
func monthPartitions(tb testing.TB, db *sqlx.DB) {
	tb.Helper()
	first := FirstMonth.First().Format(time.DateOnly)
	var pastEnd string
	if err := db.Get(&pastEnd, `SELECT coalesce(substring(pg_get_expr(c.relpartbound, c.oid) FROM 'TO \(''([0-9-]+)''\)'), '')
		FROM pg_class c WHERE c.oid = 'posting_sets_past'::regclass`); err != nil {
		tb.Fatalf("bench ledger: past partition's bound: %v", err)
	}
	if pastEnd != first {
		tx := db.MustBegin()
		for _, q := range []string{
			`LOCK TABLE posting_sets, postings IN ACCESS EXCLUSIVE MODE`,
			`DO $$ BEGIN
				IF EXISTS (SELECT 1 FROM posting_sets_past) OR EXISTS (SELECT 1 FROM postings_past) THEN
					RAISE EXCEPTION 'the past partitions hold rows';
				END IF;
			END $$`,
			`ALTER TABLE postings DETACH PARTITION postings_past`,
			`ALTER TABLE posting_sets DETACH PARTITION posting_sets_past`,
			// The check sql/0055 validated, at the old bound.
			`ALTER TABLE posting_sets_past DROP CONSTRAINT IF EXISTS ck_posting_sets_past`,
			`ALTER TABLE postings_past DROP CONSTRAINT IF EXISTS ck_postings_past`,
			`ALTER TABLE posting_sets ATTACH PARTITION posting_sets_past FOR VALUES FROM (MINVALUE) TO ('` + first + `')`,
			`ALTER TABLE postings ATTACH PARTITION postings_past FOR VALUES FROM (MINVALUE) TO ('` + first + `')`,
		} {
			if _, err := tx.Exec(q); err != nil {
				tx.Rollback()
				tb.Fatalf("bench ledger: past partitions to %s: %v", first, err)
			}
		}
		if err := tx.Commit(); err != nil {
			tb.Fatal(err)
		}
	}
	var made int
	if err := db.Get(&made, `SELECT ledger_ensure_month_partitions((date_trunc('month', now()) + interval '5 months')::date)`); err != nil {
		tb.Fatalf("bench ledger: month partitions: %v", err)
	}
	tb.Logf("bench ledger: past partitions end at %s (were %s), %d month partitions made", first, pastEnd, made)
}

// index is a secondary index as pg_indexes defines it.
type index struct {
	Name string `db:"indexname"`
	Def  string `db:"indexdef"`
}

// secondaryIndexes are the indexes of tables that back no constraint:
// those a bulk load drops first and builds after from their own
// definitions (a sorted build instead of one insert per row).
func secondaryIndexes(tb testing.TB, db *sqlx.DB, tables ...string) []index {
	tb.Helper()
	var indexes []index
	if err := db.Select(&indexes, `SELECT i.indexname, i.indexdef FROM pg_indexes i
		WHERE i.schemaname = current_schema() AND i.tablename = ANY($1)
		AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = (quote_ident(i.indexname))::regclass)
		ORDER BY 1`, pq.StringArray(tables)); err != nil {
		tb.Fatalf("benchledger: secondary indexes of %v: %v", tables, err)
	}
	// A partitioned table's index is defined ON ONLY the parent (sql/0056):
	// built as written, it would cover no partition and stay invalid.
	for i := range indexes {
		indexes[i].Def = strings.Replace(indexes[i].Def, " ON ONLY ", " ON ", 1)
	}
	return indexes
}
