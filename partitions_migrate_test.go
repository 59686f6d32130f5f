package razao_test

import (
	"context"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/razao/razao"
	"github.com/razao/razao/verify"
)

// A ledger written before sql/0054 moves into partitions by month while a
// writer keeps posting: 0054 and 0055 never hold a posting up for long,
// 0056 holds the tables' ACCESS EXCLUSIVE lock for catalog work only (it
// reads no row: the past partition's range is implied by a check 0055
// validated). Every set and every month's trial balance reads the same
// through the partitioned tables as before, every set has its key, every
// set the writer committed is there, and verify is clean. The times are
// logged, not asserted (RAZAO_PARTITION_SALES sets the ledger's size).
func TestALoadedLedgerMovesIntoPartitionsUnderAShortLock(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := emptyDatabase(t)
	ms, fs := embedded(t)
	upTo := func(v int) []razao.Migration {
		var out []razao.Migration
		for _, m := range ms {
			if m.Version <= v {
				out = append(out, m)
			}
		}
		return out
	}
	if _, err := razao.MigrateWith(ctx, db, upTo(53), fs); err != nil {
		t.Fatal(err)
	}
	sales := 20000
	if s := os.Getenv("RAZAO_PARTITION_SALES"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			t.Fatal(err)
		}
		sales = n
	}
	loadUnpartitionedLedger(t, db, sales)
	before := ledgerDigest(t, db)

	// The writer: one balanced set a transaction, on the day the test
	// runs (an open month, inside the past partition's range), until the
	// migrations are done. It records the longest a posting took.
	stop := make(chan struct{})
	var (
		wg      sync.WaitGroup
		written int
		longest time.Duration
		werr    error
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			start := time.Now()
			_, err := db.ExecContext(ctx, `WITH s AS (
				INSERT INTO posting_sets (kind, idempotency_key, amount, currency, competence, event_at, content_hash)
				VALUES ('adjustment', 'during-' || $1, 100, 'BRL', current_date, now(), 'x') RETURNING id, competence_month)
			INSERT INTO postings (posting_set_id, account_id, currency, amount, competence_month)
			SELECT s.id, a.id, 'BRL', CASE a.code WHEN 'assets:cash' THEN 100 ELSE -100 END, s.competence_month
			FROM s, accounts a WHERE a.code IN ('assets:cash', 'equity:adjustments')`, strconv.Itoa(i))
			if err != nil {
				werr = err
				return
			}
			longest = max(longest, time.Since(start))
			written++
		}
	}()
	var took [3]time.Duration
	for i, v := range []int{54, 55, 56} {
		start := time.Now()
		if _, err := razao.MigrateWith(ctx, db, upTo(v), fs); err != nil {
			close(stop)
			wg.Wait()
			t.Fatalf("migrate to %04d: %v", v, err)
		}
		took[i] = time.Since(start)
	}
	close(stop)
	wg.Wait()
	if werr != nil {
		t.Fatalf("a posting during the migrations: %v", werr)
	}
	t.Logf("%d sales: 0054 in %v, 0055 (validate, copy keys) in %v, 0056 (the parents built, then the ACCESS EXCLUSIVE lock) in %v; %d sets written meanwhile, the slowest (the longest wait on a lock, at most) in %v",
		sales, took[0], took[1], took[2], written, longest)

	var kind string
	if err := db.Get(&kind, `SELECT relkind::text FROM pg_class WHERE oid = 'posting_sets'::regclass`); err != nil || kind != "p" {
		t.Fatalf("posting_sets is of kind %q (%v), want partitioned", kind, err)
	}
	after := ledgerDigest(t, db)
	if after.trial != before.trial || after.sets != before.sets {
		t.Fatalf("the ledger reads otherwise through the partitions:\n before %+v\n after  %+v", before, after)
	}
	var during, keyless, keys int
	if err := db.Get(&during, `SELECT count(*) FROM posting_sets WHERE idempotency_key LIKE 'during-%'`); err != nil || during != written {
		t.Fatalf("%d sets written during the migrations are in the ledger (%v), want %d", during, err, written)
	}
	if err := db.Get(&keyless, `SELECT count(*) FROM posting_sets s WHERE NOT EXISTS (
		SELECT 1 FROM posting_set_keys k WHERE k.id = s.id AND k.idempotency_key = s.idempotency_key AND k.competence = s.competence)`); err != nil || keyless != 0 {
		t.Fatalf("%d sets without their key (%v)", keyless, err)
	}
	if err := db.Get(&keys, `SELECT count(*) FROM posting_set_keys`); err != nil || keys != before.count+written {
		t.Fatalf("%d keys (%v), want %d", keys, err, before.count+written)
	}
	// The migrations after the move (verify's own tables among them),
	// then verify as the binary would.
	if _, err := razao.MigrateWith(ctx, db, ms, fs); err != nil {
		t.Fatal(err)
	}
	r, err := verify.Run(ctx, db)
	if err != nil || !r.OK() {
		t.Fatalf("verify after the move: %v\n%+v", err, r)
	}
}

// ledgerSummary is what a ledger reads: each month's trial balance (per
// account, its postings' count and sum) and its sets, as digests.
type ledgerSummary struct {
	trial, sets string
	count       int
}

func ledgerDigest(t *testing.T, db *sqlx.DB) ledgerSummary {
	t.Helper()
	var s ledgerSummary
	if err := db.Get(&s.trial, `SELECT md5(string_agg(format('%s %s %s %s', m, a, n, total), ',' ORDER BY m, a)) FROM (
		SELECT competence_month AS m, account_id AS a, count(*) AS n, sum(amount) AS total FROM postings
		WHERE posting_set_id NOT IN (SELECT id FROM posting_sets WHERE idempotency_key LIKE 'during-%') GROUP BY 1, 2) b`); err != nil {
		t.Fatal(err)
	}
	if err := db.QueryRow(`SELECT count(*), md5(string_agg(format('%s %s %s %s %s %s %s %s', id, kind, idempotency_key, amount,
			competence, competence_month, charge_id, created_xid), ',' ORDER BY id))
		FROM posting_sets WHERE idempotency_key NOT LIKE 'during-%'`).Scan(&s.count, &s.sets); err != nil {
		t.Fatal(err)
	}
	return s
}

// loadUnpartitionedLedger writes sales sales over 2025-01 to 2026-11,
// each a sale of two legs and every tenth refunded by half a month later,
// with the ledger's triggers off for the load (the sets balance by
// construction) and back on, enabled ALWAYS, after it; it closes 2025's
// first half.
func loadUnpartitionedLedger(t *testing.T, db *sqlx.DB, sales int) {
	t.Helper()
	conn, err := db.Connx(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for _, q := range []struct {
		sql  string
		args []any
	}{
		{`ALTER TABLE posting_sets DISABLE TRIGGER USER`, nil},
		{`ALTER TABLE postings DISABLE TRIGGER USER`, nil},
		{`INSERT INTO posting_sets (id, kind, idempotency_key, amount, currency, competence, event_at, charge_id, refund_id, content_hash)
		SELECT s.g * 2 + k.k, k.kind, k.kind || ':p' || s.g, CASE k.k WHEN 0 THEN s.a ELSE s.a / 2 END, 'BRL', c.d,
			c.d + interval '15 hours', 'p' || s.g, CASE k.k WHEN 1 THEN 'r1' END, 'load'
		FROM (SELECT g, 1000 + (g * 7919) % 49000 AS a, date '2025-01-01' + (g % 699)::int AS d FROM generate_series(1, $1::bigint) g) s
		CROSS JOIN (VALUES (0, 'sale'), (1, 'refund')) AS k (k, kind)
		CROSS JOIN LATERAL (SELECT CASE k.k WHEN 0 THEN s.d ELSE least(s.d + 15, date '2026-11-30') END AS d) c
		WHERE k.k = 0 OR s.g % 10 = 3`, []any{sales}},
		{`SELECT setval('posting_sets_id_seq', (SELECT max(id) FROM posting_sets))`, nil},
		// The charges the sets are of, paid and refunded as they say.
		{`INSERT INTO charges (id, amount, state, paid_amount, paid_at, refunded_amount, request_hash)
		SELECT s.charge_id, s.amount, CASE WHEN r.amount IS NULL THEN 'paid' ELSE 'partially_refunded' END, s.amount, s.event_at,
			coalesce(r.amount, 0), 'load'
		FROM posting_sets s LEFT JOIN posting_sets r ON r.kind = 'refund' AND r.charge_id = s.charge_id
		WHERE s.kind = 'sale'`, nil},
		{`INSERT INTO postings (posting_set_id, account_id, currency, amount, competence_month)
		SELECT s.id, a.id, 'BRL', CASE WHEN (a.code = 'assets:cash') = (s.kind = 'sale') THEN s.amount ELSE -s.amount END, s.competence_month
		FROM posting_sets s JOIN accounts a ON a.code IN ('assets:cash', 'income:revenue')`, nil},
	} {
		if _, err := conn.ExecContext(context.Background(), q.sql, q.args...); err != nil {
			t.Fatalf("load: %v\n%s", err, q.sql)
		}
	}
	var names []struct {
		Table string `db:"tbl"`
		Name  string `db:"tgname"`
	}
	if err := conn.SelectContext(context.Background(), &names, `SELECT tgrelid::regclass::text AS tbl, tgname FROM pg_trigger
		WHERE tgrelid IN ('posting_sets'::regclass, 'postings'::regclass) AND NOT tgisinternal`); err != nil {
		t.Fatal(err)
	}
	exec := func(q string, args ...any) {
		t.Helper()
		if _, err := conn.ExecContext(context.Background(), q, args...); err != nil {
			t.Fatalf("load: %v\n%s", err, q)
		}
	}
	for _, n := range names {
		exec(`ALTER TABLE ` + n.Table + ` ENABLE ALWAYS TRIGGER ` + n.Name)
	}
	for m := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC); m.Month() <= 6 && m.Year() == 2025; m = m.AddDate(0, 1, 0) {
		exec(`INSERT INTO closed_periods (month) VALUES ($1)`, m.Format(time.DateOnly))
	}
	exec(`ANALYZE posting_sets, postings`)
}
