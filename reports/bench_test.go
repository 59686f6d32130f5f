package reports_test

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/razao/razao"
	"github.com/razao/razao/internal/pgtest"
	"github.com/razao/razao/periods"
	"github.com/razao/razao/postings"
	"github.com/razao/razao/reports"
)

// The benchmark ledger: benchSales sales over the 24 months of 2024 and
// 2025, volume growing from 1× to 2× across the range, each with a PSP fee
// (3 postings); half with a partner commission (2 postings); 5% refunded by
// half in the following month, commission reversed (4 postings); and a
// monthly payout to each of benchPartners partners. About 10 million
// postings in 3.8 million sets; months 2024-01 to 2025-09 are closed
// through periods.Close (so they have snapshots), 2025-10 to 2025-12 are open.
const (
	benchSales    = 2_375_000
	benchPartners = 500
)

var (
	benchFirstMonth  = postings.Month{Year: 2024, Month: time.January}
	benchLastClosed  = postings.Month{Year: 2025, Month: time.September}
	benchLastMonth   = postings.Month{Year: 2025, Month: time.December}
	benchClosedMonth = postings.Month{Year: 2025, Month: time.June}
	benchOpenMonth   = postings.Month{Year: 2025, Month: time.October}
	// benchSmallMonth has about half the postings of benchLastMonth.
	benchSmallMonth = postings.Month{Year: 2024, Month: time.February}
)

// BenchmarkReports measures the finance reports on the 10-million-posting
// ledger above. Building it takes about two minutes on two cores and
// happens only when this benchmark runs
// (go test -run '^$' -bench Reports -benchtime 3s ./reports/): plain SQL
// from generate_series, with the ledger's triggers, foreign key checks and
// secondary indexes off for the bulk load only, then every trigger enabled
// ALWAYS again, the indexes rebuilt from their own definitions, VACUUM
// ANALYZE, and the months closed through periods.Close. Set
// RAZAO_BENCH_DB=<database name> to build into that database on the test
// server and keep it (about 3 GB), and to reuse it on the next run.
func BenchmarkReports(b *testing.B) {
	db, url := benchLedger(b)
	ctx := context.Background()

	b.Run("trial-balance/closed-month-snapshot", func(b *testing.B) {
		for b.Loop() {
			tb, err := reports.TrialBalance(ctx, db, benchClosedMonth)
			if err != nil || !tb.Snapshot {
				b.Fatal(err, tb.Snapshot)
			}
		}
	})
	for _, m := range []postings.Month{benchOpenMonth, benchLastMonth} {
		b.Run("trial-balance/open-month-"+m.String(), func(b *testing.B) {
			for b.Loop() {
				tb, err := reports.TrialBalance(ctx, db, m)
				if err != nil || tb.Snapshot {
					b.Fatal(err)
				}
			}
		})
	}
	// The worst case, for scale: an open month with no snapshot to start
	// from, which reads every earlier posting.
	b.Run("trial-balance/open-month-no-snapshot", func(b *testing.B) {
		for b.Loop() {
			if _, err := reports.LiveOwnLines(ctx, db, benchLastMonth, sql.NullTime{}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("income-statement/closed-month-snapshot", func(b *testing.B) {
		for b.Loop() {
			if _, err := reports.IncomeStatement(ctx, db, benchClosedMonth); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("income-statement/open-month", func(b *testing.B) {
		for b.Loop() {
			if _, err := reports.IncomeStatement(ctx, db, benchLastMonth); err != nil {
				b.Fatal(err)
			}
		}
	})
	for _, code := range []string{"assets:cash", "liabilities:commission-payable", "liabilities:commission-payable:bp-042"} {
		b.Run("series-24-months/"+code, func(b *testing.B) {
			for b.Loop() {
				s, err := reports.AccountSeries(ctx, db, code, benchFirstMonth, benchLastMonth)
				if err != nil || len(s.Points) != 24 {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("journal-page-100", func(b *testing.B) {
		cursor := ""
		for b.Loop() {
			p, err := reports.Journal(ctx, db, benchLastMonth, cursor, 100)
			if err != nil {
				b.Fatal(err)
			}
			cursor = p.NextCursor
		}
	})
	b.Run("periods", func(b *testing.B) {
		for b.Loop() {
			cal, _ := postings.NewCalendar(postings.DefaultTimeZone)
			if ps, err := periods.List(ctx, db, cal, benchLastMonth.First().AddDate(0, 0, 15)); err != nil || len(ps) != 24 {
				b.Fatal(err, len(ps))
			}
		}
	})
	b.Run("balances-all-time", func(b *testing.B) {
		for b.Loop() {
			if _, err := reports.Balances(ctx, db); err != nil {
				b.Fatal(err)
			}
		}
	})

	// What verify would pay to recompute every snapshot from postings;
	// it also proves the benchmark's snapshots right.
	b.Run("check-snapshots", func(b *testing.B) {
		for b.Loop() {
			bad, err := reports.CheckSnapshots(ctx, db)
			if err != nil || len(bad) > 0 {
				b.Fatal(err, bad)
			}
		}
	})

	// The journal export next to PostgreSQL's own COPY of the same query,
	// run alternately in each iteration so both see the same load, on a
	// month and on one with twice its rows (memory must not grow).
	for _, m := range []postings.Month{benchSmallMonth, benchLastMonth} {
		for _, d := range []reports.Dialect{reports.RFC4180, reports.Brazil} {
			b.Run(fmt.Sprintf("journal-csv-vs-copy/%s/%s", m, d), func(b *testing.B) {
				benchExportVsCopy(b, url, m,
					func(w io.Writer) (int64, error) { return reports.WriteCSV(ctx, db, w, reports.ExportJournal, m, d) })
			})
		}
	}
}

// benchExportVsCopy runs export and then psql's COPY of the same rows in
// every iteration and reports each one's rows per second, their ratio, the
// export's bytes, the peak of the Go heap in use during the run (sampled
// every 5 ms after a GC) and the bytes the export allocates per row.
func benchExportVsCopy(b *testing.B, url string, m postings.Month, export func(io.Writer) (int64, error)) {
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	var peak atomic.Uint64
	peak.Store(before.HeapInuse)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		var ms runtime.MemStats
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				runtime.ReadMemStats(&ms)
				if ms.HeapInuse > peak.Load() {
					peak.Store(ms.HeapInuse)
				}
			}
		}
	}()
	var rows, copyRows, bytes, runs int64
	var exportTime, copyTime time.Duration
	for b.Loop() {
		runs++
		w := &countingWriter{}
		t := time.Now()
		n, err := export(w)
		if err != nil {
			b.Fatal(err)
		}
		exportTime += time.Since(t)
		rows += n
		bytes += w.n
		t = time.Now()
		c, err := psqlCopy(url, m)
		if err != nil {
			b.Fatal(err)
		}
		copyTime += time.Since(t)
		copyRows += c
	}
	close(stop)
	wg.Wait()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	csvRate := float64(rows) / exportTime.Seconds()
	copyRate := float64(copyRows) / copyTime.Seconds()
	b.ReportMetric(float64(rows)/float64(runs), "rows/op")
	b.ReportMetric(csvRate, "csv-rows/s")
	b.ReportMetric(copyRate, "copy-rows/s")
	b.ReportMetric(100*csvRate/copyRate, "csv/copy-%")
	b.ReportMetric(float64(bytes)/float64(runs)/(1<<20), "csv-MB/op")
	b.ReportMetric(float64(peak.Load())/(1<<20), "peak-heap-MB")
	b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/float64(max(rows, 1)), "alloc-B/row")
}

type countingWriter struct{ n int64 }

func (w *countingWriter) Write(p []byte) (int, error) {
	w.n += int64(len(p))
	return len(p), nil
}

// psqlCopy has PostgreSQL itself export the same rows with COPY … TO
// STDOUT WITH CSV through psql into /dev/null (lib/pq has no COPY TO).
func psqlCopy(url string, m postings.Month) (int64, error) {
	query := strings.ReplaceAll(reports.JournalCSVSQL, "$1", "'"+m.First().Format(time.DateOnly)+"'")
	devNull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		return 0, err
	}
	defer devNull.Close()
	// The same session settings as the reports' own reads (see read).
	cmd := exec.Command("psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", url, "-c", "SET jit = off",
		"-c", "COPY ("+query+") TO STDOUT WITH (FORMAT csv, HEADER)")
	cmd.Stdout = devNull
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return 0, fmt.Errorf("psql copy: %w: %s", err, stderr.String())
	}
	return journalRowCount(url, m)
}

var journalRowCounts sync.Map // month → rows, counted once per run

func journalRowCount(url string, m postings.Month) (int64, error) {
	if n, ok := journalRowCounts.Load(m); ok {
		return n.(int64), nil
	}
	db, err := sqlx.Open("postgres", url)
	if err != nil {
		return 0, err
	}
	defer db.Close()
	var n int64
	if err := db.Get(&n, `SELECT count(*) FROM postings WHERE competence_month = $1`, m.First()); err != nil {
		return 0, err
	}
	journalRowCounts.Store(m, n)
	return n, nil
}

// benchLedger returns the benchmark ledger, building it first unless
// RAZAO_BENCH_DB names a database that holds it already.
func benchLedger(b *testing.B) (*sqlx.DB, string) {
	b.Helper()
	name := os.Getenv("RAZAO_BENCH_DB")
	if name == "" {
		db, url := pgtest.NewWithURL(b)
		buildBenchLedger(b, db)
		return db, url
	}
	base := pgtest.ServerURL(b)
	admin := sqlx.MustOpen("postgres", base)
	defer admin.Close()
	var exists bool
	admin.Get(&exists, `SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)`, name)
	if !exists {
		admin.MustExec(`CREATE DATABASE "` + name + `"`)
	}
	url := pgtest.WithDatabase(base, name)
	db, err := razao.Open(context.Background(), url)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	if _, err := razao.Migrate(context.Background(), db); err != nil {
		b.Fatal(err)
	}
	var built bool
	db.Get(&built, `SELECT EXISTS (SELECT 1 FROM month_snapshots WHERE month = $1)`, benchLastClosed.First())
	if !built {
		buildBenchLedger(b, db)
	}
	return db, url
}

func buildBenchLedger(b *testing.B, db *sqlx.DB) {
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
	step("partners", `INSERT INTO accounts (code, type, normal_side, currency, parent_id)
		SELECT 'liabilities:commission-payable:bp-' || lpad(g::text, 3, '0'), 'liability', 'credit', 'BRL', p.id
		FROM generate_series(0, $1 - 1) g, accounts p WHERE p.code = 'liabilities:commission-payable'`, benchPartners)

	// The ledger's triggers are off for the bulk load only (the data is
	// balanced by construction), and so are the foreign key checks
	// (session_replication_role), which would otherwise cost one lookup
	// per posting. Both come back before anything is measured.
	step("session", `SET session_replication_role = replica; SET synchronous_commit = off;
		SET maintenance_work_mem = '512MB'; SET work_mem = '64MB'`)
	step("disable triggers", `ALTER TABLE posting_sets DISABLE TRIGGER USER; ALTER TABLE postings DISABLE TRIGGER USER`)
	// Secondary indexes are built once after the load (a sorted build)
	// rather than maintained row by row, from their own definitions.
	var indexes []struct {
		Name string `db:"indexname"`
		Def  string `db:"indexdef"`
	}
	if err := db.Select(&indexes, `SELECT i.indexname, i.indexdef FROM pg_indexes i
		WHERE i.schemaname = current_schema() AND i.tablename IN ('posting_sets', 'postings')
		AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = (quote_ident(i.indexname))::regclass)
		ORDER BY 1`); err != nil {
		b.Fatal(err)
	}
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
	if err := db.Select(&names, `SELECT tgrelid::regclass::text AS tbl, tgname FROM pg_trigger
		WHERE tgrelid IN ('posting_sets'::regclass, 'postings'::regclass) AND NOT tgisinternal ORDER BY 1, 2`); err != nil {
		b.Fatal(err)
	}
	for _, n := range names {
		step("enable "+n.Name, fmt.Sprintf(`ALTER TABLE %s ENABLE ALWAYS TRIGGER %s`, n.Table, n.Name))
	}
	step("session back", `SET session_replication_role = origin`)
	step("vacuum analyze", `VACUUM (ANALYZE) posting_sets, postings`)
	db.SetMaxOpenConns(0)

	t := time.Now()
	cal, _ := postings.NewCalendar(postings.DefaultTimeZone)
	now := benchLastMonth.End(cal.Location()).Add(24 * time.Hour)
	for m := benchFirstMonth; !benchLastClosed.Before(m); m = m.Next() {
		if err := periods.Close(ctx, db, cal, m, now, ""); err != nil {
			b.Fatal(err)
		}
	}
	b.Logf("bench ledger: closed %s to %s with snapshots in %v", benchFirstMonth, benchLastClosed, time.Since(t).Round(time.Millisecond))
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
		benchSmallMonth.First(), benchLastMonth.First()); err != nil {
		b.Fatal(err)
	}
	if st.Unbal != 0 {
		b.Fatalf("bench ledger: %d unbalanced sets", st.Unbal)
	}
	b.Logf("bench ledger: %d sets, %d postings (%s: %d, %s: %d) built in %v",
		st.Sets, st.Postings, benchSmallMonth, st.Small, benchLastMonth, st.Large, time.Since(start).Round(time.Second))
}
