package periods_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/razao/razao/postings"
)

// How long postings wait while the months' partitions are made: posters
// book sales without a pause, and each iteration makes one more month
// (two tables) with ledger_ensure_month_partitions. Reported: the
// function's time, and the slowest and median posting that overlapped a
// call, against those that did not. At most 30 iterations (the function
// makes 36 months ahead at most): go test -run ^$ -bench
// PostingsWhileTheMonthsArePartitioned -benchtime 20x ./periods/
func BenchmarkPostingsWhileTheMonthsArePartitioned(b *testing.B) {
	if b.N > 30 {
		b.Skip("at most 30 months: -benchtime 30x or fewer")
	}
	e := newPartitionsEnv(b)
	ctx := context.Background()
	ledger := postings.New(e.db, e.cal)
	type span struct{ from, to time.Time }
	var (
		mu    sync.Mutex
		posts []span
		calls []span
		n     atomic.Int64
		stop  atomic.Bool
		wg    sync.WaitGroup
	)
	const posters = 4
	for p := range posters {
		wg.Go(func() {
			for i := 0; !stop.Load(); i++ {
				s, err := postings.Sale(fmt.Sprintf("ch-%d-%d", p, i), "BRL", 1000, 0, time.Now())
				if err != nil {
					b.Error(err)
					return
				}
				from := time.Now()
				if _, err := ledger.Post(ctx, s); err != nil {
					b.Error(err)
					return
				}
				mu.Lock()
				posts = append(posts, span{from, time.Now()})
				mu.Unlock()
				n.Add(1)
			}
		})
	}
	// Postings between calls, counted rather than slept for.
	between := func(k int64) {
		for want := n.Load() + k; n.Load() < want && !b.Failed(); {
			time.Sleep(time.Millisecond)
		}
	}
	between(100)
	b.ResetTimer()
	m := e.first
	for range b.N {
		from := time.Now()
		made, err := e.ensure(ctx, e.db, m)
		if err != nil || made != 2 {
			b.Fatalf("through %s: %d tables, %v", m, made, err)
		}
		calls = append(calls, span{from, time.Now()})
		m = m.Next()
		between(50)
	}
	b.StopTimer()
	stop.Store(true)
	wg.Wait()
	var during, outside []time.Duration
	for _, p := range posts {
		overlaps := slices.ContainsFunc(calls, func(c span) bool { return p.from.Before(c.to) && c.from.Before(p.to) })
		if overlaps {
			during = append(during, p.to.Sub(p.from))
		} else {
			outside = append(outside, p.to.Sub(p.from))
		}
	}
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	stats := func(ds []time.Duration) (max, median float64) {
		if len(ds) == 0 {
			return 0, 0
		}
		slices.Sort(ds)
		return ms(ds[len(ds)-1]), ms(ds[len(ds)/2])
	}
	calls2 := make([]time.Duration, len(calls))
	for i, c := range calls {
		calls2[i] = c.to.Sub(c.from)
	}
	cMax, cMed := stats(calls2)
	dMax, dMed := stats(during)
	oMax, oMed := stats(outside)
	b.ReportMetric(cMed, "call-median-ms")
	b.ReportMetric(cMax, "call-max-ms")
	b.ReportMetric(dMed, "post-during-median-ms")
	b.ReportMetric(dMax, "post-during-max-ms")
	b.ReportMetric(oMed, "post-outside-median-ms")
	b.ReportMetric(oMax, "post-outside-max-ms")
	b.ReportMetric(float64(len(during)), "posts-during")
}
