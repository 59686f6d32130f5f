package webhook_test

import (
	"context"
	"fmt"
	"os"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/mux"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/razao/razao"
	"github.com/razao/razao/internal/tracing"
)

// BenchmarkDelivery measures confirmed deliveries per second through the
// real handler — authentication, inbox commit, then the locked processing
// transaction writing sale and commission — each for a distinct charge,
// from parallel PSP connections. The clock stops once the last delivery
// is applied, not when the last request is answered. Charges, inbox and ledger are pre-loaded
// with a few hundred thousand rows and analysed first: empty tables plan
// differently (docs/performance.md, "An empty ledger in benchmarks").
//
// RAZAO_BENCH_TRACE=1 measures it traced as razao serve traces with
// tracing on: the driver wrapped (a span per statement), a span per
// request, group commit, transaction step and delivery, every span
// sampled and handed to a batching processor whose exporter drops them
// (the collector's cost is not razao's).
func BenchmarkDelivery(b *testing.B) {
	e := newEnv(b)
	if os.Getenv("RAZAO_BENCH_TRACE") == "1" {
		e = tracedEnv(b, e)
	}
	// As razao.Open does: a pool that keeps its connections, or every
	// burst pays for new PostgreSQL backends.
	e.DB.SetMaxOpenConns(32)
	e.DB.SetMaxIdleConns(32)
	if os.Getenv("NO_GROUP_COMMIT") == "" {
		e.GroupCommit()
	}
	const preload = 200_000
	e.DB.MustExec(`INSERT INTO charges (id, amount, partner, commission_bp, access, request_hash)
		SELECT 'bench-' || g, 4990, 'partner-42', 1000, 'x', 'h' FROM generate_series(1, $1) g`, 2*preload)
	// Paid charges have their grants: an empty grants table at ANALYZE
	// time plans a scan of it that lasts as long as the plan.
	e.DB.MustExec(`INSERT INTO charges (id, amount, access, request_hash, state, paid_amount, fee, paid_at)
		SELECT 'old-' || g, 4990, 'x', 'h', 'paid', 4990, 0, now() FROM generate_series(1, $1) g`, preload)
	e.DB.MustExec(`INSERT INTO access_grants (charge_id, access) SELECT 'old-' || g, 'x' FROM generate_series(1, $1) g`, preload)
	e.DB.MustExec(`INSERT INTO inbox (delivery_key, endpoint, scheme, merchant, event_type, event_id, kind, event, body, status)
		SELECT 'old|charge.paid|' || g, 'std', 'standard', 'loja-1', 'charge.paid', 'old-' || g, 'paid', '{}', '\x00', 'processed'
		FROM generate_series(1, $1) g`, preload)
	preloadLedger(b, e, preload)
	e.DB.MustExec(`ANALYZE`)
	var seq atomic.Int64
	b.SetParallelism(4) // 8 PSP connections on 2 cores
	b.ResetTimer()
	start, cpu := time.Now(), processCPU(b)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			id := fmt.Sprintf("bench-%d", seq.Add(1))
			r := e.PostStandard("msg-"+id, "charge.paid", map[string]any{"charge_id": id, "amount": 4990})
			if r.Code != 200 || r.Body.Status != "accepted" {
				b.Errorf("delivery %s: %d %+v", id, r.Code, r.Body)
				return
			}
		}
	})
	e.Settled()
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "deliveries/s")
	// This process's CPU (handler, inbox, workers; not PostgreSQL's): on
	// a machine others share, steadier than the rate, and what tracing
	// adds to.
	b.ReportMetric(float64((processCPU(b)-cpu).Microseconds())/float64(b.N), "cpu-µs/delivery")
	b.StopTimer()
	b.ReportMetric(float64(e.Count(`SELECT count(*) FROM posting_sets WHERE kind = 'sale' AND content_hash <> 'preload'`))/
		float64(e.Count(`SELECT count(DISTINCT created_xid) FROM posting_sets WHERE content_hash <> 'preload'`)), "deliveries/tx")
	if n := e.Count(`SELECT count(*) FROM inbox WHERE status = 'pending'`); n != 0 {
		b.Errorf("%d deliveries left unprocessed", n)
	}
}

// preloadLedger writes n balanced sale sets with plain SQL, the ledger's
// triggers off for the bulk load only: an empty ledger makes the planner
// scan where a real one uses its indexes.
func preloadLedger(b *testing.B, e *env, n int) {
	b.Helper()
	triggers := map[string][]string{
		"posting_sets": {"trg_posting_sets_append_only", "trg_posting_sets_no_truncate", "trg_posting_sets_open_month", "trg_posting_sets_written_open", "trg_posting_sets_balanced", "trg_refunds_within_sale"},
		"postings":     {"trg_postings_append_only", "trg_postings_no_truncate", "trg_postings_sealed_set"},
	}
	for table := range triggers {
		e.DB.MustExec(`ALTER TABLE ` + table + ` DISABLE TRIGGER USER`)
	}
	e.DB.MustExec(`INSERT INTO posting_sets (kind, idempotency_key, amount, currency, competence, event_at, charge_id, content_hash)
		SELECT 'sale', 'sale:old-' || g, 4990, 'BRL', date '2025-01-01' + (g % 600), now(), 'old-' || g, 'preload'
		FROM generate_series(1, $1) g`, n)
	e.DB.MustExec(`INSERT INTO postings (posting_set_id, account_id, currency, amount, competence_month)
		SELECT s.id, a.id, 'BRL', CASE WHEN a.code = 'assets:cash' THEN s.amount ELSE -s.amount END, s.competence_month
		FROM posting_sets s CROSS JOIN accounts a WHERE a.code IN ('assets:cash', 'income:revenue')`)
	for table, names := range triggers {
		for _, name := range names {
			e.DB.MustExec(`ALTER TABLE ` + table + ` ENABLE ALWAYS TRIGGER ` + name)
		}
	}
}

// tracedEnv is e's webhook front again, on a traced pool to e's database.
func tracedEnv(b *testing.B, e *env) *env {
	b.Helper()
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(tracetest.NewNoopExporter()))
	b.Cleanup(func() { tp.Shutdown(context.Background()) })
	db, err := razao.OpenTraced(context.Background(), e.URL, tracing.SQLOptions(tp)...)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	t := newEnvWithDB(b, db, e.URL)
	t.Proc.Tracer = tracing.Tracer(tp, "inbox")
	t.Inbox.Tracer = t.Proc.Tracer
	r := t.Router.(*mux.Router)
	r.Use(tracing.Route)
	t.Router = tracing.Middleware(tp)(r)
	return t
}

// processCPU is the CPU time, user and system, this process has used.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
