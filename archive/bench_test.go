package archive

import (
	"context"
	"io"
	"log/slog"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/razao/razao/internal/pgtest"
)

// BenchmarkArchiveInboxBodies archives the bodies of RAZAO_BENCH_DELIVERIES
// (default 200,000) applied deliveries of a closed month, each with a
// body of about 700 bytes and its headers as a PSP sends them, and
// reports rows archived a second, archive bytes a row, and the inbox's
// bytes on disk a delivery (inbox and inbox_bodies, with indexes and
// TOAST) before, after the purge and a VACUUM (the space new rows reuse),
// and after VACUUM FULL (what the table converges to). Run it alone:
//
//	go test -run '^$' -bench ArchiveInboxBodies -benchtime 1x ./archive/
func BenchmarkArchiveInboxBodies(b *testing.B) {
	n := 200000
	if v, err := strconv.Atoi(os.Getenv("RAZAO_BENCH_DELIVERIES")); err == nil && v > 0 {
		n = v
	}
	for range b.N {
		b.StopTimer()
		db := pgtest.New(b)
		fillInbox(b, db, n)
		before := inboxBytes(b, db)
		a := &Archiver{DB: db, Config: Config{Dir: b.TempDir(), Location: saoPaulo}, Now: func() time.Time { return now },
			Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
		b.StartTimer()
		start := time.Now()
		s, err := a.Run(context.Background(), time.Hour)
		elapsed := time.Since(start)
		b.StopTimer()
		if err != nil || !s.Done {
			b.Fatal(err)
		}
		var rows, bytes int64
		for _, f := range s.Files {
			rows, bytes = rows+f.Rows, bytes+f.Bytes
		}
		if rows != int64(n) {
			b.Fatalf("%d rows archived, want %d", rows, n)
		}
		db.MustExec(`VACUUM inbox`)
		afterVacuum := inboxBytes(b, db)
		db.MustExec(`VACUUM FULL inbox`)
		afterFull := inboxBytes(b, db)
		b.ReportMetric(float64(rows)/elapsed.Seconds(), "rows/s")
		b.ReportMetric(float64(bytes)/float64(rows), "archive-bytes/row")
		b.ReportMetric(float64(before)/float64(n), "disk-bytes/delivery-before")
		b.ReportMetric(float64(afterVacuum)/float64(n), "disk-bytes/delivery-after-vacuum")
		b.ReportMetric(float64(afterFull)/float64(n), "disk-bytes/delivery-after-vacuum-full")
		b.Logf("%d deliveries: %d files, %d archive bytes in %v; inbox on disk %d bytes before, %d after VACUUM, %d after VACUUM FULL",
			n, len(s.Files), bytes, elapsed.Round(time.Millisecond), before, afterVacuum, afterFull)
	}
}

// fillInbox stores n applied deliveries of January 2027, closed, each
// with a body and headers shaped as a Hodle payment's.
func fillInbox(b *testing.B, db *sqlx.DB, n int) {
	b.Helper()
	db.MustExec(`INSERT INTO inbox (delivery_key, endpoint, scheme, merchant, event_type, event_id, kind, charge_ref, event, body, headers,
		status, attempts, received_at, processed_at)
		SELECT '5:hodle4:PAID' || length(g::text) || ':' || g, 'hodle', 'hodle', 'm1', 'PAID', g::text, 'paid', 'order-' || g,
			jsonb_build_object('Kind', 'paid', 'Type', 'PAID', 'EventID', g::text, 'ChargeID', 'order-' || g, 'PSPRef', md5(g::text),
				'Amount', 4990, 'HasAmount', true, 'Fee', 99, 'HasFee', true, 'OccurredAt', '2027-01-10T12:00:00Z'),
			convert_to(json_build_object('event', 'PAID', 'trackId', md5(g::text), 'externalId', 'order-' || g,
				'amount', '49.90', 'fee', '0.99', 'paidAt', '2027-01-10T12:00:00Z',
				'payer', json_build_object('name', 'Cliente ' || g, 'document', lpad(g::text, 11, '0'), 'bank', '00000000',
					'endToEndId', 'E' || md5(g::text || 'e2e') || '202701101200'),
				'merchant', json_build_object('id', 'm1', 'name', 'Loja Exemplo LTDA'),
				'metadata', json_build_object('order', 'order-' || g, 'sku', 'SKU-' || (g % 977), 'note', md5(g::text || 'n')))::text, 'UTF8'),
			jsonb_build_object('Content-Type', 'application/json', 'User-Agent', 'Hodle-Webhooks/2.3',
				'X-Hodle-Signature', encode(sha256(g::text::bytea), 'hex'), 'X-Hodle-Timestamp', '1799582400',
				'X-Request-Id', md5(g::text || 'r')),
			'processed', 1, '2027-01-10 12:00-03'::timestamptz + g * interval '1 millisecond',
			'2027-01-10 12:00-03'::timestamptz + g * interval '1 millisecond'
		FROM generate_series(1, $1) g`, n)
	db.MustExec(`INSERT INTO closed_periods (month, closed_by) VALUES ('2027-01-01', 'bench')`)
	db.MustExec(`VACUUM ANALYZE inbox`)
}

// inboxBytes is the inbox's size on disk, with its shared bodies.
func inboxBytes(b *testing.B, db *sqlx.DB) int64 {
	b.Helper()
	var n int64
	if err := db.Get(&n, `SELECT pg_total_relation_size('inbox') + pg_total_relation_size('inbox_bodies')`); err != nil {
		b.Fatal(err)
	}
	return n
}
