package benchledger

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"
)

// The charges Charges builds: charge g (1 to n) is "ch-<g>", registered
// ChargesStart + g × ChargeEvery, of merchant "m-<g mod 50>", of amount
// 1,000 + (g × 7,919 mod 49,000) centavos; every second one earns partner
// "p-<g mod 500>" a commission. One in 100 failed (g mod 100 = 1), one in
// 10 is pending (g mod 10 = 2), one in 100 refunded (g mod 100 = 3), the
// rest paid a minute after they were registered. Each paid one was paid
// through one scheme by g mod 3: 0 Hodle (trackId "track-<g>", also the
// psp_ref the app registered), 1 bcb-pix (endToEndId "E<g>"), 2 Standard
// Webhooks (webhook-id "msg_<g>"); its delivery is in the inbox under that
// id, naming the charge.
var ChargesStart = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

// ChargeEvery is the time between two charges' registrations.
const ChargeEvery = 10 * time.Second

// ChargeCreated is when charge g was registered.
func ChargeCreated(g int) time.Time { return ChargesStart.Add(time.Duration(g) * ChargeEvery) }

// ChargeAmount is charge g's amount.
func ChargeAmount(g int) int64 { return 1000 + int64(g)*7919%49000 }

// Charges loads n charges as above (and their deliveries) into db, which
// must be migrated and hold no charge: plain SQL from generate_series,
// the two tables' secondary indexes built after the load from their own
// definitions, then VACUUM ANALYZE.
func Charges(tb testing.TB, db *sqlx.DB, n int) {
	tb.Helper()
	ctx := context.Background()
	start := time.Now()
	step := func(what, query string, args ...any) {
		tb.Helper()
		t := time.Now()
		if _, err := db.ExecContext(ctx, query, args...); err != nil {
			tb.Fatalf("%s: %v", what, err)
		}
		tb.Logf("bench charges: %s in %v", what, time.Since(t).Round(time.Millisecond))
	}
	db.SetMaxOpenConns(1)
	defer db.SetMaxOpenConns(0)
	var empty bool
	if err := db.Get(&empty, `SELECT NOT EXISTS (SELECT 1 FROM charges)`); err != nil || !empty {
		tb.Fatalf("bench charges: charges not empty (%v)", err)
	}
	step("session", `SET synchronous_commit = off; SET maintenance_work_mem = '512MB'; SET work_mem = '64MB'`)
	indexes := secondaryIndexes(tb, db, "charges", "inbox")
	for _, ix := range indexes {
		step("drop "+ix.Name, `DROP INDEX `+ix.Name)
	}
	step("charges", `
		INSERT INTO charges (id, psp_ref, merchant, amount, partner, commission_bp, access, state,
			paid_amount, commission, paid_at, paid_ref, failed_at, request_hash, created_at, updated_at)
		SELECT 'ch-' || g, CASE WHEN paid AND g % 3 = 0 THEN 'track-' || g END, 'm-' || (g % 50), a,
			CASE WHEN g % 2 = 0 THEN 'p-' || (g % 500) END, CASE WHEN g % 2 = 0 THEN 1000 ELSE 0 END, '', st,
			CASE WHEN paid THEN a END, CASE WHEN paid AND g % 2 = 0 THEN a / 10 ELSE 0 END,
			CASE WHEN paid THEN c + interval '1 minute' END,
			CASE WHEN paid THEN CASE g % 3 WHEN 0 THEN 'hodle:track-' || g WHEN 1 THEN 'bcb-pix:E' || g ELSE 'standard:event:msg_' || g END END,
			CASE WHEN st = 'failed' THEN c + interval '1 minute' END,
			'bench', c, c
		FROM (
			SELECT g, 1000 + g * 7919 % 49000 AS a, $2::timestamptz + g * $3 * interval '1 second' AS c,
				CASE WHEN g % 100 = 1 THEN 'failed' WHEN g % 10 = 2 THEN 'pending' WHEN g % 100 = 3 THEN 'refunded' ELSE 'paid' END AS st,
				g % 100 <> 1 AND g % 10 <> 2 AS paid
			FROM generate_series(1, $1::bigint) g
		) s`, n, ChargesStart, int64(ChargeEvery/time.Second))
	step("refunds", `UPDATE charges SET refunded_amount = paid_amount WHERE state = 'refunded'`)
	step("deliveries", `
		INSERT INTO inbox (delivery_key, endpoint, scheme, merchant, event_type, event_id, kind, charge_ref, event, body,
			status, attempts, received_at, processed_at)
		SELECT 'k' || g, e.endpoint, e.scheme, 'loja-1', e.type, e.id, 'paid', 'ch-' || g, '{}', '\x00',
			'processed', 1, c.paid_at, c.paid_at
		FROM generate_series(1, $1::bigint) g
		JOIN charges c ON c.id = 'ch-' || g AND c.paid_at IS NOT NULL
		CROSS JOIN LATERAL (SELECT * FROM (VALUES
			(0, 'hodle', 'hodle', 'DEPOSIT_ASSET_SUCCESS', 'track-' || g),
			(1, 'pix', 'bcb-pix', 'pix', 'E' || g),
			(2, 'std', 'standard', 'charge.paid', 'msg_' || g)) v (k, endpoint, scheme, type, id) WHERE v.k = g % 3) e`, n)
	for _, ix := range indexes {
		step("build "+ix.Name, ix.Def)
	}
	step("vacuum analyze", `VACUUM (ANALYZE) charges, inbox`)
	var st struct {
		Charges int64 `db:"charges"`
		Inbox   int64 `db:"inbox"`
	}
	if err := db.Get(&st, `SELECT (SELECT count(*) FROM charges) AS charges, (SELECT count(*) FROM inbox) AS inbox`); err != nil {
		tb.Fatal(err)
	}
	tb.Logf("bench charges: %d charges, %d deliveries built in %v", st.Charges, st.Inbox, time.Since(start).Round(time.Second))
	if st.Charges != int64(n) {
		tb.Fatal(fmt.Sprintf("bench charges: %d charges, want %d", st.Charges, n))
	}
}
