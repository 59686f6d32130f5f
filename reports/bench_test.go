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

	"github.com/razao/razao/internal/benchledger"
	"github.com/razao/razao/internal/pgtest"
	"github.com/razao/razao/monthsums"
	"github.com/razao/razao/periods"
	"github.com/razao/razao/postings"
	"github.com/razao/razao/reports"
	"github.com/razao/razao/verify"
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
	benchFirstMonth  = benchledger.FirstMonth
	benchLastClosed  = benchledger.LastClosed
	benchLastMonth   = benchledger.LastMonth
	benchClosedMonth = periods.Month{Year: 2025, Month: time.June}
	benchOpenMonth   = periods.Month{Year: 2025, Month: time.October}
	// benchSmallMonth has about half the postings of benchLastMonth.
	benchSmallMonth = benchledger.SmallMonth
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
	// RAZAO_BENCH_MONTHSUMS=1 stores the open months' sums first, as
	// serve does every few minutes (monthsums.Run): the open months' trial
	// balance then reads them and the sets booked after them, not every
	// posting of the month (seconds at 100 million postings).
	if os.Getenv("RAZAO_BENCH_MONTHSUMS") != "" {
		t := time.Now()
		n, err := monthsums.Refresh(ctx, db)
		if err != nil {
			b.Fatal(err)
		}
		b.Logf("month sums of %d months stored in %v", n, time.Since(t).Round(time.Millisecond))
	}

	b.Run("trial-balance/closed-month-snapshot", func(b *testing.B) {
		for b.Loop() {
			tb, err := reports.TrialBalance(ctx, db, monthsums.Books{}, benchClosedMonth)
			if err != nil || !tb.Snapshot {
				b.Fatal(err, tb.Snapshot)
			}
		}
	})
	for _, m := range []periods.Month{benchOpenMonth, benchLastMonth} {
		b.Run("trial-balance/open-month-"+m.String(), func(b *testing.B) {
			for b.Loop() {
				tb, err := reports.TrialBalance(ctx, db, monthsums.Books{}, m)
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
			if _, err := monthsums.Cached.Lines(ctx, db, benchLastMonth, sql.NullTime{}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("income-statement/closed-month-snapshot", func(b *testing.B) {
		for b.Loop() {
			if _, err := reports.IncomeStatement(ctx, db, monthsums.Books{}, benchClosedMonth); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("income-statement/open-month", func(b *testing.B) {
		for b.Loop() {
			if _, err := reports.IncomeStatement(ctx, db, monthsums.Books{}, benchLastMonth); err != nil {
				b.Fatal(err)
			}
		}
	})
	for _, code := range []string{"assets:cash", "liabilities:commission-payable", "liabilities:commission-payable:bp-042"} {
		b.Run("series-24-months/"+code, func(b *testing.B) {
			for b.Loop() {
				s, err := reports.AccountSeries(ctx, db, monthsums.Books{}, code, benchFirstMonth, benchLastMonth)
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
			cal, _ := periods.NewCalendar(periods.DefaultTimeZone)
			if ps, err := periods.List(ctx, db, cal, benchLastMonth.First().AddDate(0, 0, 15)); err != nil || len(ps) != 24 {
				b.Fatal(err, len(ps))
			}
		}
	})
	b.Run("balances-all-time", func(b *testing.B) {
		for b.Loop() {
			if _, err := reports.Balances(ctx, db, monthsums.Books{}); err != nil {
				b.Fatal(err)
			}
		}
	})

	// What verify would pay to recompute every snapshot from postings;
	// it also proves the benchmark's snapshots right.
	b.Run("check-snapshots", func(b *testing.B) {
		for b.Loop() {
			bad, err := verify.CheckSnapshots(ctx, db)
			if err != nil || len(bad) > 0 {
				b.Fatal(err, bad)
			}
		}
	})

	// The journal export next to PostgreSQL's own COPY of the same query,
	// run alternately in each iteration so both see the same load, on a
	// month and on one with twice its rows (memory must not grow).
	for _, m := range []periods.Month{benchSmallMonth, benchLastMonth} {
		for _, d := range []reports.Dialect{reports.RFC4180, reports.Brazil} {
			b.Run(fmt.Sprintf("journal-csv-vs-copy/%s/%s", m, d), func(b *testing.B) {
				benchExportVsCopy(b, url, m,
					func(w io.Writer) (int64, error) {
						return reports.WriteCSV(ctx, db, monthsums.Books{}, w, reports.ExportJournal, m, d)
					})
			})
		}
	}
}

// benchExportVsCopy runs export and then psql's COPY of the same rows in
// every iteration and reports each one's rows per second, their ratio, the
// export's bytes, the peak of the Go heap in use during the run (sampled
// every 5 ms after a GC) and the bytes the export allocates per row.
func benchExportVsCopy(b *testing.B, url string, m periods.Month, export func(io.Writer) (int64, error)) {
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
func psqlCopy(url string, m periods.Month) (int64, error) {
	query := strings.ReplaceAll(postings.MonthPostingsSQL, "$1", "'"+m.First().Format(time.DateOnly)+"'")
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

func journalRowCount(url string, m periods.Month) (int64, error) {
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
	return pgtest.KeptDatabase(b, func(db *sqlx.DB) bool {
		var built bool
		db.Get(&built, `SELECT EXISTS (SELECT 1 FROM month_snapshots WHERE month = $1)`, benchLastClosed.First())
		return built
	}, func(db *sqlx.DB) { buildBenchLedger(b, db) })
}

func buildBenchLedger(b *testing.B, db *sqlx.DB) {
	b.Helper()
	benchledger.Build(b, db, benchledger.Sales(b), benchPartners)
}
