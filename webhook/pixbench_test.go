package webhook_test

import (
	"fmt"
	"syscall"
	"testing"
	"time"
)

// BenchmarkBCBPixCallback answers one bcb-pix callback of 2,000 Pix
// (about 220 KB) per iteration, group-committed as razao serve does, and
// reports the answer's time and the process's peak RSS (the test process
// holds client, handler and pool: run it alone for a meaningful figure).
// Each iteration's Pix are booked before the next one starts, off the
// clock.
func BenchmarkBCBPixCallback(b *testing.B) {
	const items = 2000
	e := newEnvWith(b, pixEndpoint(items))
	e.GroupCommit()
	var answering time.Duration
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		body, ids := pixCallback(fmt.Sprintf("r%dc", i), i, items)
		e.ChargesFor(ids)
		b.StartTimer()
		start := time.Now()
		r := e.PostPix("pix", body)
		answering += time.Since(start)
		b.StopTimer()
		if r.Code != 200 || r.Body.Status != "accepted" {
			b.Fatalf("callback: %d %s %q", r.Code, r.Body.Status, r.Body.Error)
		}
		e.Settled()
		b.StartTimer()
	}
	b.StopTimer()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err == nil {
		b.ReportMetric(float64(ru.Maxrss)/1024, "peak-RSS-MB") // Maxrss is in KiB on Linux
	}
	b.ReportMetric(answering.Seconds()*1000/float64(b.N), "ms/answer")
}
