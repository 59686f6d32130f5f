package console

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/razao/razao/internal/benchledger"
	"github.com/razao/razao/monthsums"
	"github.com/razao/razao/periods"
	"github.com/razao/razao/postings"
)

// The console's pages on a large ledger: the reports benchmark's ledger
// (internal/benchledger), by default at a tenth of its size:
// 237,500 sales over 2024–2025, about 1 million postings, 500 partners,
// months 2024-01 to 2025-09 closed with snapshots, the month sums
// refreshed and then benchDelta sales booked in 2025-12. Set
// RAZAO_CONSOLE_BENCH_SALES=2375000 for the 10-million-posting ledger.
//
//	go test -run '^$' -bench Pages -benchtime 20x ./console/
const benchPartners = 500

// benchDelta is how many sales the pages read beyond the month sums: a
// refresh interval's worth (monthsums.Interval) at 100 sales a
// second.
const benchDelta = 1000

var (
	benchFirstMonth = periods.Month{Year: 2024, Month: time.January}
	benchLastClosed = periods.Month{Year: 2025, Month: time.September}
	benchLastMonth  = periods.Month{Year: 2025, Month: time.December}
	benchSmallMonth = periods.Month{Year: 2024, Month: time.February}
)

func BenchmarkPages(b *testing.B) {
	sales := 237_500
	if s := os.Getenv("RAZAO_CONSOLE_BENCH_SALES"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1000 {
			b.Fatalf("RAZAO_CONSOLE_BENCH_SALES=%q: want a number of sales, at least 1000", s)
		}
		sales = n
	}
	f := newBareFixture(b)
	benchledger.Build(b, f.db, sales, benchPartners)
	// As razao serve keeps them (monthsums.Run), then a delta the
	// pages read beyond them: sales booked since the last refresh.
	start := time.Now()
	n, err := monthsums.Refresh(context.Background(), f.db)
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("month sums of %d months in %v", n, time.Since(start).Round(time.Millisecond))
	for i := 0; i < benchDelta; i++ {
		s, err := postings.Sale("delta-"+strconv.Itoa(i), "BRL", 4990, 75, time.Date(2025, 12, 20, 15, 0, i, 0, time.UTC))
		if err != nil {
			b.Fatal(err)
		}
		if _, err := f.ledger.Post(context.Background(), s); err != nil {
			b.Fatal(err)
		}
	}
	f.console.Now = func() time.Time { return time.Date(2026, 1, 2, 12, 0, 0, 0, time.UTC) }
	srv := serve(b, f.router)
	c := signedIn(b, srv, f.admin)
	for i := 0; i < 30; i++ {
		divergence(b, f.db, "bench-"+strconv.Itoa(i), "b"+strconv.Itoa(i), "bench")
	}
	for _, p := range []struct{ name, path string }{
		{"month/open-2025-12", "/console/month/2025-12"},
		{"month/closed-2025-06", "/console/month/2025-06"},
		{"chart/12-months-to-2025-12", "/console/chart?to=2025-12"},
		{"chart.svg/12-months-to-2025-12", "/console/chart.svg?to=2025-12"},
		{"account/income:revenue", "/console/accounts/income:revenue?to=2025-12"},
		{"account.svg/income:revenue", "/console/accounts/income:revenue/chart.svg?to=2025-12"},
		{"divergences", "/console/divergences"},
		{"periods", "/console/periods"},
		{"close-confirm/2025-10", "/console/periods/2025-10/close"},
		{"partners/first-20", "/console/partners"},
		{"partner/bp-007", "/console/partners/bp-007"},
	} {
		b.Run(p.name, func(b *testing.B) {
			req := httptest.NewRequest(http.MethodGet, p.path, nil)
			for _, ck := range c.hc.Jar.Cookies(mustURL(b, srv.URL+"/console/")) {
				req.AddCookie(ck)
			}
			for b.Loop() {
				rec := httptest.NewRecorder()
				f.router.ServeHTTP(rec, req)
				if rec.Code != http.StatusOK {
					b.Fatalf("%s: %d", p.path, rec.Code)
				}
			}
		})
	}
}
