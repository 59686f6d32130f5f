package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/razao/razao/internal/standby"
)

// BenchmarkSyncStandbyCost measures what a synchronous standby costs in
// confirmed deliveries a second (answered 2xx, so durably taken): two
// pairs, one with an asynchronous standby and one with a synchronous one
// (synchronous_standby_names, synchronous_commit on), each under its own
// razao, are loaded in alternating rounds, so that the machine's drift
// (other work, caches) falls on both alike. Each round registers its
// charges, then sends one signed delivery per charge from 8 senders, and
// waits for its workers to book them before the other side's round.
//
//	go test -run '^$' -bench SyncStandbyCost -benchtime 1x ./cmd/razao
//
// RAZAO_SYNCREP_ROUNDS and RAZAO_SYNCREP_DELIVERIES change the 3 rounds
// of 2,000 deliveries each side.
func BenchmarkSyncStandbyCost(b *testing.B) {
	rounds, per := envInt("RAZAO_SYNCREP_ROUNDS", 3), envInt("RAZAO_SYNCREP_DELIVERIES", 2000)
	ctx := context.Background()
	type side struct {
		name  string
		base  string
		token string
		db    *sqlx.DB
		rates []float64
	}
	var sides []*side
	for _, sync := range []bool{false, true} {
		p := standby.Start(b, standby.Options{Sync: sync})
		primaryURL, _, token := ledgerOnPair(ctx, b, p)
		base, _ := serveOnPair(b, primaryURL, "", 0)
		name := "async"
		if sync {
			name = "sync"
		}
		db, err := sqlx.Open("postgres", primaryURL)
		if err != nil {
			b.Fatal(err)
		}
		defer db.Close()
		sides = append(sides, &side{name: name, base: base, token: token, db: db})
	}
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 16}}
	b.ResetTimer()
	for range b.N {
		for r := range rounds {
			for _, s := range sides {
				ids := make([]string, per)
				for i := range ids {
					ids[i] = fmt.Sprintf("r%d-%d-%d", r, i, time.Now().UnixNano())
					body := fmt.Sprintf(`{"id":"%s","amount":4990,"partner":"p1","commission_bp":1000,"access":"course:go"}`, ids[i])
					req, _ := http.NewRequest("POST", s.base+"/v1/charges", strings.NewReader(body))
					req.Header.Set("Authorization", "Bearer "+s.token)
					req.Header.Set("Content-Type", "application/json")
					resp, err := client.Do(req)
					if err != nil {
						b.Fatal(err)
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode != 201 {
						b.Fatalf("register: %d", resp.StatusCode)
					}
				}
				var ok atomic.Int64
				next := make(chan string)
				var wg sync.WaitGroup
				began := time.Now()
				for range 8 {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for id := range next {
							now := time.Now().Format(time.RFC3339)
							body := []byte(`{"type":"charge.paid","timestamp":"` + now + `","data":{"charge_id":"` + id + `","amount":4990,"occurred_at":"` + now + `"}}`)
							resp, err := client.Do(signedRequest(s.base, "msg-"+id, body))
							if err != nil {
								continue
							}
							io.Copy(io.Discard, resp.Body)
							resp.Body.Close()
							if resp.StatusCode/100 == 2 {
								ok.Add(1)
							}
						}
					}()
				}
				for _, id := range ids {
					next <- id
				}
				close(next)
				wg.Wait()
				rate := float64(ok.Load()) / time.Since(began).Seconds()
				s.rates = append(s.rates, rate)
				b.Logf("round %d %-5s %6.0f confirmed deliveries/s (%d of %d)", r+1, s.name, rate, ok.Load(), per)
				// Its workers book what it took before the other side's
				// round begins, so that neither round carries the
				// other's bookings.
				for {
					var pending int
					if err := s.db.GetContext(ctx, &pending, `SELECT count(*) FROM inbox WHERE status = 'pending'`); err != nil {
						b.Fatal(err)
					}
					if pending == 0 {
						break
					}
					time.Sleep(100 * time.Millisecond)
				}
			}
		}
	}
	for _, s := range sides {
		sum := 0.0
		for _, r := range s.rates {
			sum += r
		}
		b.ReportMetric(sum/float64(len(s.rates)), s.name+"-deliveries/s")
	}
}

func envInt(name string, def int) int {
	var n int
	if _, err := fmt.Sscan(os.Getenv(name), &n); err != nil || n <= 0 {
		return def
	}
	return n
}
