package reconcile

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// BenchmarkOpenDivergences is the divergence-opening step of a run of n
// lines (RAZAO_BENCH_LINES, default 100,000) of which 1% differ in
// amount from the ledger: the first run opens n/100 divergences with
// their events; a second run of the same window opens none and only
// points its lines at them. It reports both times and lines/s.
func BenchmarkOpenDivergences(b *testing.B) {
	n := benchLines()
	ctx := context.Background()
	env := newBenchEnv(b, slog.New(slog.DiscardHandler))
	db, r, ep, at := env.db, env.r, env.ep, env.at
	db.MustExec(`INSERT INTO charges (id, psp_ref, amount, access, request_hash, merchant, state, paid_amount, fee, paid_at, paid_ref)
		SELECT 'c' || i, NULL, 1000, 'x', 'h', 'm', 'paid', CASE WHEN i % 100 = 50 THEN 999 ELSE 1000 END, 0, $1::timestamptz, 'hodle:t' || i
		FROM generate_series(1, $2) i`, at, n)
	db.MustExec(`ANALYZE charges`)
	var sb strings.Builder
	sb.WriteString("trackId,externalId,amount,date\n")
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&sb, "t%d,c%d,1000,%s\n", i, i, at.Format(time.RFC3339))
	}
	file := sb.String()
	matchedRun := func() Run {
		run, err := r.create(ctx, ep, at.Add(-time.Hour), at.Add(time.Hour), false, false)
		if err != nil {
			b.Fatal(err)
		}
		if err := r.keepFile(ctx, run.ID, strings.NewReader(file), nil); err != nil {
			b.Fatal(err)
		}
		if err := r.loadFile(ctx, &run, ep); err != nil {
			b.Fatal(err)
		}
		if err := match(ctx, db, run, ep.info()); err != nil {
			b.Fatal(err)
		}
		return run
	}
	b.ResetTimer()
	for range b.N {
		db.MustExec(`UPDATE reconciliation_lines SET divergence_id = NULL`)
		db.MustExec(`DELETE FROM divergences`)
		first, again := matchedRun(), matchedRun()
		start := time.Now()
		opened, err := r.openDivergences(ctx, first, ep)
		if err != nil || opened != int64(n/100) {
			b.Fatalf("opened %d, want %d: %v", opened, n/100, err)
		}
		openTime := time.Since(start)
		start = time.Now()
		if opened, err := r.openDivergences(ctx, again, ep); err != nil || opened != 0 {
			b.Fatalf("the second run opened %d: %v", opened, err)
		}
		againTime := time.Since(start)
		b.ReportMetric(openTime.Seconds(), "s(open-1%)")
		b.ReportMetric(againTime.Seconds(), "s(rerun)")
		b.ReportMetric(float64(n)/openTime.Seconds(), "lines/s(open)")
		b.ReportMetric(float64(n)/againTime.Seconds(), "lines/s(rerun)")
	}
}
