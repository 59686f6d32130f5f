package reconcile

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/razao/razao/inbox"
)

// BenchmarkReconcileStatement reconciles a CSV statement of n lines
// (RAZAO_BENCH_LINES, default 100,000) against a ledger holding the same
// n Hodle payments, 1% of them missing (lost webhooks, booked from the
// statement) and 1% differing in amount. It reports lines/s of load
// (the file kept, s(keep-file), then read back and streamed through its
// parser into COPY, and the payments
// decided as they are written) + match (the rest of matching), COPY's own
// rate for the same rows into the same staging table as the ceiling, the
// time to book the missing 1% (stored into the inbox, then booked by the
// delivery path's worker), and the process's peak RSS (VmHWM). RAZAO_BENCH_VERBOSE=1 logs each step of
// the load with its time.
func BenchmarkReconcileStatement(b *testing.B) {
	n := benchLines()
	ctx := context.Background()
	log := slog.New(slog.DiscardHandler)
	if os.Getenv("RAZAO_BENCH_VERBOSE") != "" {
		// Each step of a file's load, timed.
		log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	env := newBenchEnv(b, log)
	db, proc, r, ep, at := env.db, env.proc, env.r, env.ep, env.at
	// Every 100th charge is unpaid (its webhook lost); every 100th from
	// the 50th was paid another amount than the statement's.
	db.MustExec(`INSERT INTO charges (id, psp_ref, amount, access, request_hash, merchant, state, paid_amount, fee, paid_at, paid_ref)
		SELECT 'c' || i, NULL, 1000, 'x', 'h', 'm',
			CASE WHEN i % 100 = 0 THEN 'pending' ELSE 'paid' END,
			CASE WHEN i % 100 = 0 THEN NULL WHEN i % 100 = 50 THEN 999 ELSE 1000 END,
			CASE WHEN i % 100 = 0 THEN NULL ELSE 0 END,
			CASE WHEN i % 100 = 0 THEN NULL ELSE $1::timestamptz END,
			CASE WHEN i % 100 = 0 THEN NULL ELSE 'hodle:t' || i END
		FROM generate_series(1, $2) i`, at, n)
	db.MustExec(`ANALYZE charges`)
	stamp := at.Format(time.RFC3339)
	statement := func() io.Reader {
		pr, pw := io.Pipe()
		go func() {
			var sb strings.Builder
			sb.WriteString("trackId,externalId,amount,date\n")
			for i := 1; i <= n; i++ {
				fmt.Fprintf(&sb, "t%d,c%d,1000,%s\n", i, i, stamp)
				if sb.Len() > 64<<10 {
					pw.Write([]byte(sb.String()))
					sb.Reset()
				}
			}
			pw.Write([]byte(sb.String()))
			pw.Close()
		}()
		return pr
	}
	b.ResetTimer()
	for range b.N {
		run, err := r.create(ctx, ep, at.Add(-time.Hour), at.Add(time.Hour), false, false)
		if err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		if err := r.keepFile(ctx, run.ID, statement(), nil); err != nil {
			b.Fatal(err)
		}
		kept := time.Since(start)
		if err := r.loadFile(ctx, &run, ep); err != nil {
			b.Fatal(err)
		}
		loaded := time.Since(start)
		if err := match(ctx, db, run, ep.info()); err != nil {
			b.Fatal(err)
		}
		matched := time.Since(start)
		booked, err := r.book(ctx, run, ep)
		if err != nil {
			b.Fatal(err)
		}
		bookTime := time.Since(start) - matched
		// The delivery path books what was stored, as the service's
		// workers do.
		applyStart := time.Now()
		w := inbox.NewWorker(proc, time.Hour)
		for {
			k, err := w.RunOnce(ctx)
			if err != nil {
				b.Fatal(err)
			}
			if k == 0 {
				break
			}
		}
		applyTime := time.Since(applyStart)
		var sales int
		db.Get(&sales, `SELECT count(*) FROM posting_sets WHERE kind = 'sale'`)
		if sales != n/100 {
			b.Fatalf("the delivery path booked %d sales, want %d", sales, n/100)
		}
		copyRate := rawCopyRate(b, r, n, at)
		b.ReportMetric(float64(n)/matched.Seconds(), "lines/s(load+match)")
		b.ReportMetric(float64(n)/loaded.Seconds(), "lines/s(load)")
		b.ReportMetric(kept.Seconds(), "s(keep-file)")
		b.ReportMetric(copyRate, "lines/s(raw-COPY)")
		b.ReportMetric(bookTime.Seconds(), "s(store-1%)")
		b.ReportMetric(applyTime.Seconds(), "s(apply-1%)")
		b.ReportMetric((bookTime + applyTime).Seconds(), "s(book-1%)")
		b.ReportMetric(float64(booked), "booked")
		b.ReportMetric(peakRSSMiB(), "MiB(peak-RSS)")
		var div int
		db.Get(&div, `SELECT count(*) FROM reconciliation_lines WHERE run_id = $1 AND outcome = 'divergence'`, run.ID)
		if booked != n/100 || div != n/100 {
			b.Fatalf("booked %d, %d divergences; want %d each", booked, div, n/100)
		}
	}
}

// rawCopyRate is COPY's own rate for n rows like the statement's, by
// the same binary COPY into the same staging table as a file's load,
// without reading any CSV: the ceiling of loading.
func rawCopyRate(b *testing.B, r *Reconciler, n int, at time.Time) float64 {
	ctx := context.Background()
	conn, err := pgx.ConnectConfig(ctx, r.copyCfg)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close(ctx)
	start := time.Now()
	tx, err := conn.Begin(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `CREATE TEMP TABLE `+stagedLines+` (LIKE reconciliation_lines INCLUDING DEFAULTS) ON COMMIT DROP`); err != nil {
		b.Fatal(err)
	}
	i := 0
	var row []any
	src := pgx.CopyFromFunc(func() ([]any, error) {
		if i == n {
			return nil, nil
		}
		i++
		id := "t" + strconv.Itoa(i)
		row = lineRow(row, 1, int64(i), Line{Kind: KindPaid, EventType: csvPaidType, EventID: id, PSPID: id,
			ChargeRef: "c" + strconv.Itoa(i), Amount: 1000, At: at})
		return row, nil
	})
	if _, err := tx.CopyFrom(ctx, pgx.Identifier{"pg_temp", stagedName}, lineColumns, src); err != nil {
		b.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		b.Fatal(err)
	}
	return float64(n) / time.Since(start).Seconds()
}

func peakRSSMiB() float64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			return kb / 1024
		}
	}
	return 0
}
