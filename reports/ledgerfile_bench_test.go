package reports_test

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/razao/razao/internal/benchledger"
	"github.com/razao/razao/internal/pgtest"
	"github.com/razao/razao/monthsums"
	"github.com/razao/razao/periods"
	"github.com/razao/razao/reports"
)

// BenchmarkLedgerFiles writes a month's journal as each ledger file, and
// as the CSV journal beside it, on a ledger of benchledger's shape with
// 200,000 sales (about 850,000 postings; a month of up to 50,000), on a
// month and on one with about twice its postings: the bytes, the postings
// per second, the peak of the Go heap in use while it runs and the bytes
// allocated per posting, which must not grow with the month
// (go test -run '^$' -bench LedgerFiles ./reports/).
func BenchmarkLedgerFiles(b *testing.B) {
	db := pgtest.New(b)
	benchledger.Build(b, db, 200_000, 50)
	ctx := context.Background()
	for _, m := range []periods.Month{benchledger.SmallMonth, benchledger.LastMonth} {
		var postingsInMonth int64
		if err := db.Get(&postingsInMonth, `SELECT count(*) FROM postings WHERE competence_month = $1`, m.First()); err != nil {
			b.Fatal(err)
		}
		for _, f := range []string{"hledger", "beancount", "csv"} {
			b.Run(fmt.Sprintf("%s/%s", m, f), func(b *testing.B) {
				write := func(w *countingWriter) error {
					if f == "csv" {
						_, err := reports.WriteCSV(ctx, db, monthsums.Books{}, w, reports.ExportJournal, m, reports.RFC4180)
						return err
					}
					format, _ := reports.ParseLedgerFormat(f)
					_, err := reports.WriteLedger(ctx, db, monthsums.Books{}, w, format, m)
					return err
				}
				runtime.GC()
				var before runtime.MemStats
				runtime.ReadMemStats(&before)
				var peak atomic.Uint64
				peak.Store(before.HeapInuse)
				stop := make(chan struct{})
				var wg sync.WaitGroup
				wg.Go(func() {
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
				})
				var bytes, runs int64
				var took time.Duration
				for b.Loop() {
					w := &countingWriter{}
					t := time.Now()
					if err := write(w); err != nil {
						b.Fatal(err)
					}
					took += time.Since(t)
					bytes += w.n
					runs++
				}
				close(stop)
				wg.Wait()
				var after runtime.MemStats
				runtime.ReadMemStats(&after)
				b.ReportMetric(float64(postingsInMonth), "postings/op")
				b.ReportMetric(float64(postingsInMonth*runs)/took.Seconds(), "postings/s")
				b.ReportMetric(float64(bytes)/float64(runs)/(1<<20), "MB/op")
				b.ReportMetric(float64(peak.Load()-before.HeapInuse)/(1<<20), "peak-heap-growth-MB")
				b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/float64(postingsInMonth*runs), "alloc-B/posting")
			})
		}
	}
}
