package main

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"net/url"
	"strings"
	"time"

	_ "github.com/lib/pq" // PostgreSQL driver, for the optional checks
)

// checkDBURL refuses a database that is not on this machine: a loopback
// host or a Unix socket, in the URL and in any host parameter.
func checkDBURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return fmt.Errorf("-database-url must be a postgres:// URL")
	}
	hosts := []string{u.Hostname()}
	q := u.Query()
	hosts = append(hosts, q["host"]...)
	hosts = append(hosts, q["hostaddr"]...)
	for _, h := range hosts {
		for _, one := range strings.Split(h, ",") {
			if one == "" || strings.HasPrefix(one, "/") || isLoopbackHost(one) {
				continue
			}
			return fmt.Errorf("-database-url host %q is not loopback", one)
		}
	}
	return nil
}

func (l *loader) openDB(ctx context.Context, raw string) error {
	if err := checkDBURL(raw); err != nil {
		return err
	}
	db, err := sql.Open("postgres", raw)
	if err != nil {
		return err
	}
	db.SetMaxOpenConns(2)
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := db.PingContext(pctx); err != nil {
		db.Close()
		return fmt.Errorf("-database-url: %w", err)
	}
	l.db = db
	return nil
}

// waitApplied waits until razao has processed every delivery of the
// charges whose ids start with prefix, and reports how many deliveries
// per second it applied: from the first request sent (res.started) to the
// last delivery processed. razao answers once a delivery is stored and
// applies it a moment later, so this, not accepted/s, is the rate of
// confirmed deliveries. processed_at is the start of the applying
// transaction: the last delivery counts as applied one transaction early
// (about 10 ms). It also reports the lag from storing to applying, and the
// CPU used up to the last delivery applied.
func (l *loader) waitApplied(ctx context.Context, res *result, prefix string) {
	if l.db == nil || ctx.Err() != nil || res.started.IsZero() {
		return
	}
	like := prefix + "%"
	deadline := time.Now().Add(60 * time.Second)
	for {
		// Pending rows only, through the inbox's index of due rows: a
		// count over the whole inbox would load the machine it times.
		var pending int
		err := l.db.QueryRowContext(ctx, `SELECT count(*) FROM inbox WHERE status = 'pending' AND charge_ref LIKE $1`, like).Scan(&pending)
		if err != nil {
			res.warn("applied/s: %v", err)
			return
		}
		if pending == 0 {
			break
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			res.violate("%d deliveries still pending 60 s after the last answer", pending)
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	cpuEnd := sampleCPU(l.opt.serverPID)
	if len(res.CPU) > 0 {
		res.CPU = cores(res.cpuStart, cpuEnd, l.opt.serverPID)
	}
	var done int
	var last sql.NullTime
	var p50, p90, p99, max, mean sql.NullFloat64
	err := l.db.QueryRowContext(ctx, `SELECT count(*), max(processed_at),
		percentile_cont(0.5) WITHIN GROUP (ORDER BY lag), percentile_cont(0.9) WITHIN GROUP (ORDER BY lag),
		percentile_cont(0.99) WITHIN GROUP (ORDER BY lag), max(lag), avg(lag)
		FROM (SELECT processed_at, extract(epoch FROM processed_at - received_at) * 1000 AS lag
			FROM inbox WHERE charge_ref LIKE $1 AND processed_at IS NOT NULL) l`, like).Scan(&done, &last, &p50, &p90, &p99, &max, &mean)
	if err != nil {
		res.warn("applied/s: %v", err)
		return
	}
	if !last.Valid || done == 0 {
		return
	}
	res.Applied = done
	if len(res.CPU) > 0 {
		res.CPUPerDelivery = perDelivery(res.cpuStart, cpuEnd, l.opt.serverPID, done)
	}
	if span := last.Time.Sub(res.started).Seconds(); span > 0 {
		res.AppliedS = math.Round(span*1000) / 1000
		res.AppPerS = round1(float64(done) / span)
	}
	res.ApplyLag = latency{P50: round2(p50.Float64), P90: round2(p90.Float64), P99: round2(p99.Float64),
		Max: round2(max.Float64), Mean: round2(mean.Float64)}
}

// dbChecks looks behind the API for the charges whose ids start with
// prefix: inbox rows by status (and retries), divergences, and outbox
// events by topic. outbox gives the expected count per topic; inbox the
// expected number of inbox rows.
func (l *loader) dbChecks(ctx context.Context, res *result, prefix string, outbox map[string]int, inbox int) {
	if l.db == nil || ctx.Err() != nil {
		return
	}
	like := prefix + "%"
	res.DB = map[string]map[string]int{}
	count := func(name, query string) bool {
		rows, err := l.db.QueryContext(ctx, query, like)
		if err != nil {
			res.warn("db check %s: %v", name, err)
			return false
		}
		defer rows.Close()
		m := map[string]int{}
		for rows.Next() {
			var k string
			var n int
			if err := rows.Scan(&k, &n); err != nil {
				res.warn("db check %s: %v", name, err)
				return false
			}
			m[k] = n
		}
		res.DB[name] = m
		return rows.Err() == nil
	}
	if count("inbox", `SELECT status, count(*) FROM inbox WHERE charge_ref LIKE $1 GROUP BY status`) {
		total := 0
		for st, n := range res.DB["inbox"] {
			total += n
			if st == "pending" || st == "parked" {
				res.warn("%d inbox rows still %s after the run", n, st)
			}
		}
		if total != inbox {
			res.violate("%d inbox rows for %d deliveries answered", total, inbox)
		}
	}
	// attempts > 1 without an error is a refund that was parked before its
	// payment and released by it; an error is a failed attempt retried.
	count("inbox_attempts", `SELECT 'failed_then_retried', count(*) FROM inbox WHERE charge_ref LIKE $1 AND last_error IS NOT NULL
		UNION ALL SELECT 'parked_then_released', count(*) FROM inbox WHERE charge_ref LIKE $1 AND attempts > 1 AND last_error IS NULL`)
	if n := res.DB["inbox_attempts"]["failed_then_retried"]; n > 0 {
		res.warn("%d deliveries failed at first and were retried (see razao's log)", n)
	}
	if count("divergences", `SELECT reason, count(*) FROM divergences WHERE charge_id LIKE $1 GROUP BY reason`) {
		if len(res.DB["divergences"]) > 0 {
			res.violate("divergences opened for valid deliveries: %s", mapString(res.DB["divergences"]))
		}
	}
	if count("outbox", `SELECT topic, count(*) FROM outbox WHERE charge_id LIKE $1 GROUP BY topic`) {
		got := res.DB["outbox"]
		for topic, want := range outbox {
			if got[topic] != want {
				res.violate("outbox has %d %s events, want %d", got[topic], topic, want)
			}
		}
	}
}
