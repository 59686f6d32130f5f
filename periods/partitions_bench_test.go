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

// How long a posting waits behind the function, gated rather than
// sampled: a posting transaction T1 is held open, so the function waits
// for it at step 2 (SHARE ROW EXCLUSIVE); a second posting then waits
// behind the function; T1 commits, and the second posting's time from
// that commit is the function's steps 2 and 3 plus its own. Reported
// beside a posting's own time, alone. An iteration where the function
// gave up (T1 held past its lock_timeout) is counted, not measured.
func BenchmarkPostingWaitsBehindAMonthBeingMade(b *testing.B) {
	if b.N > 30 {
		b.Skip("at most 30 months: -benchtime 30x or fewer")
	}
	e := newPartitionsEnv(b)
	ctx := context.Background()
	ledger := postings.New(e.db, e.cal)
	sale := func(key string) postings.Set {
		s, err := postings.Sale(key, "BRL", 1000, 0, time.Now())
		if err != nil {
			b.Fatal(err)
		}
		return s
	}
	var waits, alone []time.Duration
	busy := 0
	m := e.first
	for i := range b.N {
		from := time.Now()
		if _, err := ledger.Post(ctx, sale(fmt.Sprintf("alone-%d", i))); err != nil {
			b.Fatal(err)
		}
		alone = append(alone, time.Since(from))
		t1, err := e.db.BeginTxx(ctx, nil)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := ledger.PostTx(ctx, t1, sale(fmt.Sprintf("held-%d", i))); err != nil {
			b.Fatal(err)
		}
		made := make(chan error, 1)
		go func() { _, err := e.ensure(ctx, e.db, m); made <- err }()
		if _, done := e.doneOrWaiting(b, made, 1); done {
			b.Fatal("the function did not wait for the posting in flight")
		}
		posted := make(chan time.Time, 1)
		go func() {
			if _, err := ledger.Post(ctx, sale(fmt.Sprintf("behind-%d", i))); err != nil {
				b.Error(err)
			}
			posted <- time.Now()
		}()
		e.doneOrWaiting(b, nil, 2)
		committed := time.Now()
		if err := t1.Commit(); err != nil {
			b.Fatal(err)
		}
		end := <-posted
		if err := <-made; err != nil {
			busy++
		} else {
			waits = append(waits, end.Sub(committed))
			m = m.Next()
		}
	}
	ms := func(ds []time.Duration) (median, max float64) {
		if len(ds) == 0 {
			return 0, 0
		}
		slices.Sort(ds)
		return float64(ds[len(ds)/2]) / float64(time.Millisecond), float64(ds[len(ds)-1]) / float64(time.Millisecond)
	}
	wMed, wMax := ms(waits)
	aMed, aMax := ms(alone)
	b.ReportMetric(wMed, "behind-median-ms")
	b.ReportMetric(wMax, "behind-max-ms")
	b.ReportMetric(aMed, "alone-median-ms")
	b.ReportMetric(aMax, "alone-max-ms")
	b.ReportMetric(float64(busy), "gave-up")
}
