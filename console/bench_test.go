package console

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/razao/razao/postings"
	"github.com/razao/razao/reports"
)

// The console's pages on a large ledger: the reports benchmark's ledger
// (reports/bench_test.go, whose builder is copied below, as test code
// cannot be imported across packages), by default at a tenth of its size:
// 237,500 sales over 2024–2025, about 1 million postings, 500 partners,
// months 2024-01 to 2025-09 closed with snapshots. Set
// RAZAO_CONSOLE_BENCH_SALES=2375000 for the 10-million-posting ledger.
//
//	go test -run '^$' -bench Pages -benchtime 20x ./console/
const benchPartners = 500

var (
	benchFirstMonth = postings.Month{Year: 2024, Month: time.January}
	benchLastClosed = postings.Month{Year: 2025, Month: time.September}
	benchLastMonth  = postings.Month{Year: 2025, Month: time.December}
	benchSmallMonth = postings.Month{Year: 2024, Month: time.February}
)

func BenchmarkPages(b *testing.B) {
	sales := 237_500
	if s := os.Getenv("RAZAO_CONSOLE_BENCH_SALES"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1000 {
			b.Fatalf("RAZAO_CONSOLE_BENCH_SALES=%q: want a number of sales, at least 1000", s)
		}
		sales = n
	}
	f := newBareFixture(b)
	buildBenchLedger(b, f.db, sales)
	f.console.Now = func() time.Time { return time.Date(2026, 1, 2, 12, 0, 0, 0, time.UTC) }
	srv := httptest.NewServer(f.router)
	defer srv.Close()
	c := newClient(b, srv)
	c.signIn(f.admin)
	for i := 0; i < 30; i++ {
		divergence(b, f.db, "bench-"+strconv.Itoa(i), "b"+strconv.Itoa(i), "bench")
	}
	for _, p := range []struct{ name, path string }{
		{"month/open-2025-12", "/console/month/2025-12"},
		{"month/closed-2025-06", "/console/month/2025-06"},
		{"chart/12-months-to-2025-12", "/console/chart?to=2025-12"},
		{"chart.svg/12-months-to-2025-12", "/console/chart.svg?to=2025-12"},
		{"account/income:revenue", "/console/accounts/income:revenue?to=2025-12"},
		{"account.svg/income:revenue", "/console/accounts/income:revenue/chart.svg?to=2025-12"},
		{"divergences", "/console/divergences"},
		{"periods", "/console/periods"},
		{"close-confirm/2025-10", "/console/periods/2025-10/close"},
		{"partners/first-20", "/console/partners"},
		{"partner/bp-007", "/console/partners/bp-007"},
	} {
		b.Run(p.name, func(b *testing.B) {
			req := httptest.NewRequest(http.MethodGet, p.path, nil)
			for _, ck := range c.hc.Jar.Cookies(mustURL(b, srv.URL+"/console/")) {
				req.AddCookie(ck)
			}
			for b.Loop() {
				rec := httptest.NewRecorder()
				f.router.ServeHTTP(rec, req)
				if rec.Code != http.StatusOK {
					b.Fatalf("%s: %d", p.path, rec.Code)
				}
			}
		})
	}
}

func buildBenchLedger(b *testing.B, db *sqlx.DB, benchSales int) {
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
	l := postings.New(db, cal)
	now := benchLastMonth.End(cal.Location()).Add(24 * time.Hour)
	for m := benchFirstMonth; !benchLastClosed.Before(m); m = m.Next() {
		if err := reports.CloseMonth(ctx, db, l, m, now); err != nil {
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
