// Command backlog measures the inbox as a queue under a backlog: it stores
// -backlog deliveries while no worker runs, releases the service's workers
// on them and reports the drain rate, the time of each claim over the
// drain (by decile of the drain: it must stay flat as the backlog
// shrinks) and the stored → applied lag; then it feeds a steady stream of
// -rate deliveries a second for -steady and reports, every -sample, the
// claims' times, the claim's plan (pages it touches), the inbox's dead
// tuples and autovacuum runs. -autovacuum default resets the inbox's
// autovacuum settings to the server's, to compare with the migrations'.
//
// It runs razao's own inbox.Inbox, Processor and Worker in process, on a
// fresh database razao_backlog_<pid> on a loopback server, or on a
// throwaway cluster of its own with -cluster (dropped at the end unless
// -keep), through a database/sql connector that times the workers' claim
// statement and changes nothing else.
//
//	go run ./scripts/backlog -cluster                      # 1,000,000 applied; 50,000 drained; 10 minutes at 300/s
//	go run ./scripts/backlog -cluster -autovacuum default  # the same with the server's autovacuum settings for inbox
//	go run ./scripts/backlog -steady 0                     # the drain only, on the server at -database-url
package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/razao/razao"
	"github.com/razao/razao/charges"
	"github.com/razao/razao/inbox"
	"github.com/razao/razao/internal/pgtest"
	"github.com/razao/razao/periods"
	"github.com/razao/razao/postings"
	"github.com/razao/razao/webhook"
	"github.com/razao/razao/webhook/scheme"
)

const (
	maxBacklog = 500_000
	maxHistory = 5_000_000
	maxRate    = 5_000
	maxSteady  = 30 * time.Minute
	// senders is how many goroutines store deliveries at once, as many
	// PSP connections would: the inbox group-commits them.
	senders = 64
	// claimBatch is the workers' batch (webhook's maxBatch), the probe's
	// LIMIT.
	claimBatch = 64
)

func main() { os.Exit(run()) }

func run() int {
	fs := flag.NewFlagSet("backlog", flag.ContinueOnError)
	dbURL := fs.String("database-url", "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable", "server to create razao_backlog_<pid> on (loopback or socket only)")
	backlog := fs.Int("backlog", 50_000, fmt.Sprintf("deliveries stored while the workers are paused (at most %d)", maxBacklog))
	history := fs.Int("history", 1_000_000, fmt.Sprintf("applied deliveries in the inbox before the run (at most %d)", maxHistory))
	steady := fs.Duration("steady", 10*time.Minute, fmt.Sprintf("steady stream after the drain (0 skips it; at most %v)", maxSteady))
	rate := fs.Int("rate", 300, fmt.Sprintf("deliveries a second of the steady stream (at most %d)", maxRate))
	sample := fs.Duration("sample", 30*time.Second, "report interval of the steady stream")
	workers := fs.Int("workers", inbox.DefaultWorkers, "claim loops (the service's default)")
	autovac := fs.String("autovacuum", "table", "table: the inbox's settings from the migrations; default: reset to the server's")
	keep := fs.Bool("keep", false, "keep the database")
	cluster := fs.Bool("cluster", false, "run on a throwaway PostgreSQL cluster of its own (scripts/localpg.sh: PostgreSQL's defaults, autovacuum on; fsync off) instead of -database-url")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: go run ./scripts/backlog [flags]\n\nDrains a backlog of deliveries through razao's workers, then runs a steady stream, timing the claim.")
		fs.PrintDefaults()
	}
	if err := fs.Parse(os.Args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	switch {
	case *backlog < 1 || *backlog > maxBacklog:
		return usage("-backlog must be in [1, %d]", maxBacklog)
	case *history < 0 || *history > maxHistory:
		return usage("-history must be in [0, %d]", maxHistory)
	case *steady < 0 || *steady > maxSteady:
		return usage("-steady must be in [0, %v]", maxSteady)
	case *rate < 1 || *rate > maxRate:
		return usage("-rate must be in [1, %d]", maxRate)
	case *sample < time.Second || *sample > 10*time.Minute:
		return usage("-sample must be in [1s, 10m]")
	case *workers < 1 || *workers > 64:
		return usage("-workers must be in [1, 64]")
	case *autovac != "table" && *autovac != "default":
		return usage("-autovacuum must be table or default")
	}
	if err := checkLoopback(*dbURL); err != nil {
		return usage("%v", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// Everything is bounded: storing and draining the largest backlog on
	// a slow machine, the steady stream, and its own drain.
	ctx, cancel := context.WithTimeout(ctx, *steady+30*time.Minute)
	defer cancel()
	if *cluster {
		url, stop, err := startCluster()
		if err != nil {
			fmt.Fprintln(os.Stderr, "backlog:", err)
			return 1
		}
		defer stop()
		*dbURL = url
	}
	b := &bench{backlog: *backlog, history: *history, steady: *steady, rate: *rate, sample: *sample,
		workers: *workers, autovac: *autovac, rec: &claims{}}
	err := b.run(ctx, *dbURL, *keep)
	if err != nil {
		fmt.Fprintln(os.Stderr, "backlog:", err)
		return 1
	}
	return 0
}

func usage(format string, args ...any) int {
	fmt.Fprintf(os.Stderr, "backlog: "+format+"\n", args...)
	return 2
}

// checkLoopback refuses a server that is not on this machine.
func checkLoopback(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return errors.New("-database-url must be a postgres:// URL")
	}
	hosts := append([]string{u.Hostname()}, u.Query()["host"]...)
	for _, h := range hosts {
		if h != "" && h != "localhost" && h != "::1" && !strings.HasPrefix(h, "127.") && !strings.HasPrefix(h, "/") {
			return fmt.Errorf("-database-url host %q is not loopback", h)
		}
	}
	return nil
}

// startCluster starts a throwaway cluster with PostgreSQL's default
// settings, as the storm of make replicas does (pgtest.StartCluster: fsync
// and synchronous_commit off, so commits cost less than on a real server):
// a shared server may run with autovacuum off (test servers often do), and
// then no setting of the inbox's can be measured.
func startCluster() (string, func(), error) {
	dir, err := os.MkdirTemp("", "razao-backlog-")
	if err != nil {
		return "", nil, err
	}
	// The server runs as an unprivileged user, who must traverse it.
	if err := os.Chmod(dir, 0o755); err != nil {
		return "", nil, err
	}
	data, port := filepath.Join(dir, "data"), 55000+os.Getpid()%900
	url, err := pgtest.StartCluster(data, port)
	if err != nil {
		os.RemoveAll(dir)
		return "", nil, err
	}
	return url, func() {
		if err := pgtest.StopCluster(data, port); err != nil {
			fmt.Fprintln(os.Stderr, "backlog:", err)
			return
		}
		os.RemoveAll(dir)
	}, nil
}

// withDatabase is raw naming database name instead.
func withDatabase(raw, name string) string {
	u, _ := url.Parse(raw)
	u.Path = "/" + name
	return u.String()
}

type bench struct {
	backlog, history, rate, workers int
	steady, sample                  time.Duration
	autovac                         string
	rec                             *claims

	db    *sqlx.DB // the service's pool, its claims timed
	plain *sqlx.DB // the tool's own reads
	url   string
	inbox *inbox.Inbox
	proc  *inbox.Processor
	ep    *webhook.Endpoint
	seq   atomic.Int64 // charges used so far
	probe *sql.Conn    // holds the claim prepared, as a worker's connection does
	claim string       // the claim's text, as the worker prepared it
}

func (b *bench) run(ctx context.Context, server string, keep bool) error {
	admin, err := razao.Open(ctx, server)
	if err != nil {
		return err
	}
	defer admin.Close()
	name := fmt.Sprintf("razao_backlog_%d", os.Getpid())
	if _, err := admin.ExecContext(ctx, `CREATE DATABASE `+name); err != nil {
		return fmt.Errorf("create database: %w", err)
	}
	if keep {
		fmt.Printf("database %s kept\n", name)
	} else {
		defer func() {
			if _, err := admin.ExecContext(context.WithoutCancel(ctx), `DROP DATABASE `+name+` WITH (FORCE)`); err != nil {
				fmt.Fprintln(os.Stderr, "backlog: drop database:", err)
			}
		}()
	}
	return b.measure(ctx, withDatabase(server, name))
}

// measure runs the measurement on the database at url.
func (b *bench) measure(ctx context.Context, url string) error {
	b.url = url
	var err error
	if b.plain, err = razao.Open(ctx, b.url); err != nil {
		return err
	}
	defer b.plain.Close()
	if _, err := razao.Migrate(ctx, b.plain); err != nil {
		return err
	}
	connector, err := pq.NewConnector(razao.DriverURL(b.url))
	if err != nil {
		return fmt.Errorf("connector: %w", err)
	}
	b.db = sqlx.NewDb(sql.OpenDB(timingConnector{Connector: connector, rec: b.rec}), "postgres")
	// As razao.Open does.
	b.db.SetMaxOpenConns(32)
	b.db.SetMaxIdleConns(32)
	defer b.db.Close()
	if err := b.setUp(ctx); err != nil {
		return err
	}
	if b.probe, err = b.plain.Conn(ctx); err != nil {
		return fmt.Errorf("probe connection: %w", err)
	}
	defer b.probe.Close()

	// The service: the inbox group-commits from the start; the workers
	// start only once the backlog is stored.
	svc, stopSvc := context.WithCancel(context.WithoutCancel(ctx))
	var wg sync.WaitGroup
	defer func() { stopSvc(); wg.Wait() }()
	wg.Add(1)
	go func() { defer wg.Done(); b.inbox.RunBatcher(svc, 2) }()
	time.Sleep(100 * time.Millisecond) // until it runs, a delivery is stored alone (as correct, slower)

	if err := b.drain(ctx, svc, &wg); err != nil {
		return err
	}
	if b.steady > 0 {
		return b.stream(ctx)
	}
	return nil
}

// setUp sets the inbox's autovacuum as asked, loads the history (applied
// deliveries, as a running inbox holds) and the charges every delivery
// will pay, analyses, and wires razao's webhook path on the timed pool.
func (b *bench) setUp(ctx context.Context) error {
	if b.autovac == "default" {
		if _, err := b.plain.ExecContext(ctx, `ALTER TABLE inbox RESET (autovacuum_vacuum_scale_factor,
			autovacuum_vacuum_threshold, autovacuum_vacuum_insert_scale_factor, autovacuum_vacuum_insert_threshold,
			autovacuum_analyze_scale_factor, autovacuum_analyze_threshold, autovacuum_vacuum_cost_delay,
			autovacuum_vacuum_cost_limit)`); err != nil {
			return fmt.Errorf("reset inbox autovacuum: %w", err)
		}
	}
	var opts, autovacuum, naptime, costDelay, costLimit string
	if err := b.plain.QueryRowContext(ctx, `SELECT coalesce(array_to_string(reloptions, ', '), '(none)'),
		current_setting('autovacuum'), current_setting('autovacuum_naptime'), current_setting('autovacuum_vacuum_cost_delay'), current_setting('autovacuum_vacuum_cost_limit')
		FROM pg_class WHERE oid = 'inbox'::regclass`).Scan(&opts, &autovacuum, &naptime, &costDelay, &costLimit); err != nil {
		return fmt.Errorf("read settings: %w", err)
	}
	fmt.Printf("inbox autovacuum (%s): %s; server: autovacuum %s, naptime %s, cost_delay %s, cost_limit %s\n", b.autovac, opts, autovacuum, naptime, costDelay, costLimit)
	if autovacuum != "on" {
		fmt.Println("the server runs no autovacuum at all: the inbox's settings do nothing here (-cluster runs on a server of its own)")
	}

	total := b.backlog + int(b.steady.Seconds()*float64(b.rate)*1.2) + 1000
	start := time.Now()
	for _, q := range []struct {
		sql string
		arg int
	}{
		{`INSERT INTO charges (id, amount, partner, commission_bp, access, request_hash)
			SELECT 'bl-' || g, 4990, 'partner-42', 1000, 'course:bl-' || g, 'h' FROM generate_series(1, $1) g`, total},
		{`INSERT INTO charges (id, amount, access, request_hash, state, paid_amount, fee, paid_at)
			SELECT 'old-' || g, 4990, 'x', 'h', 'paid', 4990, 0, now() FROM generate_series(1, $1) g`, b.history},
		{`INSERT INTO inbox (delivery_key, endpoint, scheme, merchant, event_type, event_id, kind, charge_ref, event, body, status, received_at, processed_at)
			SELECT 'std|charge.paid|old-' || g, 'std', 'standard', 'loja-1', 'charge.paid', 'old-' || g, 'paid', 'old-' || g, '{}', '\x00',
				'processed', now() - interval '1 day', now() - interval '1 day' FROM generate_series(1, $1) g`, b.history},
	} {
		if _, err := b.plain.ExecContext(ctx, q.sql, q.arg); err != nil {
			return fmt.Errorf("preload: %w", err)
		}
	}
	if _, err := b.plain.ExecContext(ctx, `VACUUM ANALYZE`); err != nil {
		return fmt.Errorf("vacuum analyze: %w", err)
	}
	fmt.Printf("preloaded %d charges, %d applied deliveries in %.1fs\n", total+b.history, b.history, time.Since(start).Seconds())

	cal, err := periods.NewCalendar(periods.DefaultTimeZone)
	if err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	b.proc = inbox.NewProcessor(b.db, charges.NewApplier(b.db, postings.New(b.db, cal)), log)
	b.inbox = inbox.NewInbox(b.db, b.proc)
	b.ep, err = webhook.NewEndpoint(webhook.EndpointConfig{Name: "std", Scheme: "standard", Merchant: "loja-1",
		Secrets: []string{"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}}, func(string) string { return "" })
	return err
}

// store stores the payment of the next charge, as the webhook handler
// would once it authenticated it.
func (b *bench) store(ctx context.Context) error {
	id := fmt.Sprintf("bl-%d", b.seq.Add(1))
	ev := scheme.Event{Kind: scheme.KindPaid, Type: "charge.paid", EventID: "msg-" + id, ChargeID: id, Amount: 4990, HasAmount: true}
	body := []byte(`{"type":"charge.paid","data":{"charge_id":"` + id + `","amount":4990}}`)
	st, err := b.inbox.Store(ctx, &b.ep.Endpoint, []scheme.Event{ev}, body, []byte(`{}`))
	if err != nil {
		return err
	}
	if len(st) != 1 || st[0].ID == 0 {
		return fmt.Errorf("delivery %s not stored as new: %+v", id, st)
	}
	return nil
}

// drain stores the backlog with no worker running, then starts the
// workers and waits until none of it is pending.
func (b *bench) drain(ctx, svc context.Context, wg *sync.WaitGroup) error {
	start := time.Now()
	var next atomic.Int64
	var failed atomic.Value
	var swg sync.WaitGroup
	for range senders {
		swg.Add(1)
		go func() {
			defer swg.Done()
			for next.Add(1) <= int64(b.backlog) && ctx.Err() == nil {
				if err := b.store(ctx); err != nil {
					failed.Store(err)
					return
				}
			}
		}()
	}
	swg.Wait()
	if err, _ := failed.Load().(error); err != nil {
		return fmt.Errorf("store backlog: %w", err)
	}
	stored := time.Since(start)
	var firstID int64
	if err := b.plain.GetContext(ctx, &firstID, `SELECT min(id) FROM inbox WHERE status = 'pending'`); err != nil {
		return err
	}
	fmt.Printf("\nbacklog: %d deliveries stored in %.1fs (%.0f/s), workers paused\n", b.backlog, stored.Seconds(), float64(b.backlog)/stored.Seconds())

	w := inbox.NewWorker(b.proc, time.Second)
	w.Workers = b.workers
	w.Listen(b.url)
	released := time.Now()
	wg.Add(1)
	go func() { defer wg.Done(); w.Run(svc) }()
	b.proc.Ring()
	var all []time.Duration
	var rows []int
	type probe struct {
		at           time.Duration
		pending      int
		pages, msecs float64
	}
	var probes []probe
	for {
		time.Sleep(time.Second)
		t, r := b.rec.take()
		all, rows = append(all, t...), append(rows, r...)
		var pending int
		if err := b.plain.GetContext(ctx, &pending, `SELECT count(*) FROM inbox WHERE status = 'pending'`); err != nil {
			return err
		}
		if pending == 0 {
			break
		}
		if len(all) > 0 {
			pages, msecs, err := b.probeClaim(ctx)
			if err != nil {
				return err
			}
			probes = append(probes, probe{time.Since(released), pending, pages, msecs})
		}
		if ctx.Err() != nil {
			return fmt.Errorf("drain: %d deliveries still pending: %w", pending, ctx.Err())
		}
	}
	var drained float64
	var lag struct {
		P50, P99, RelP50, RelP99 float64
		Failed                   int
	}
	if err := b.plain.GetContext(ctx, &drained, `SELECT extract(epoch FROM max(processed_at) - $1::timestamptz) FROM inbox WHERE id >= $2`, released, firstID); err != nil {
		return err
	}
	if err := b.plain.QueryRowContext(ctx, `SELECT
			percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM processed_at - received_at)),
			percentile_cont(0.99) WITHIN GROUP (ORDER BY extract(epoch FROM processed_at - received_at)),
			percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM processed_at - $1::timestamptz)),
			percentile_cont(0.99) WITHIN GROUP (ORDER BY extract(epoch FROM processed_at - $1::timestamptz)),
			count(*) FILTER (WHERE status <> 'processed')
		FROM inbox WHERE id >= $2`, released, firstID).Scan(&lag.P50, &lag.P99, &lag.RelP50, &lag.RelP99, &lag.Failed); err != nil {
		return fmt.Errorf("lag: %w", err)
	}
	fmt.Printf("drain: %d deliveries applied in %.1fs after release: %.0f deliveries/s (%d not 'processed')\n",
		b.backlog, drained, float64(b.backlog)/drained, lag.Failed)
	fmt.Printf("lag stored → applied (the pause included): p50 %.1fs, p99 %.1fs; release → applied: p50 %.1fs, p99 %.1fs\n",
		lag.P50, lag.P99, lag.RelP50, lag.RelP99)
	if len(all) == 0 {
		return errors.New("no claims timed: the claim statement no longer matches isClaim")
	}
	fmt.Printf("claims over the drain: %d (%.1f rows each)\n", len(all), mean(rows))
	fmt.Println("  decile of the drain   claims  rows/claim   mean     p50      p90      p99")
	for _, d := range []int{0, 1, 4, 5, 8, 9} {
		lo, hi := d*len(all)/10, (d+1)*len(all)/10
		ps := percentiles(all[lo:hi], 0.5, 0.9, 0.99)
		fmt.Printf("  %2d                   %6d  %10.1f  %7s  %7s  %7s  %7s\n", d+1, hi-lo, mean(rows[lo:hi]),
			ms(meanD(all[lo:hi])), ms(ps[0]), ms(ps[1]), ms(ps[2]))
	}
	fmt.Println("  the claim EXPLAINed (ANALYZE, BUFFERS) during the drain, once a second:")
	fmt.Println("     t  pending  pages  exec ms")
	for i, p := range probes {
		if i < 3 || i >= len(probes)-3 || i%max(len(probes)/6, 1) == 0 {
			fmt.Printf("  %4.0fs  %7d  %5.0f  %7.2f\n", p.at.Seconds(), p.pending, p.pages, p.msecs)
		}
	}
	return nil
}

// stream feeds rate deliveries a second for the steady run, and reports
// each sample interval.
func (b *bench) stream(ctx context.Context) error {
	fmt.Printf("\nsteady: %d deliveries/s for %v (%d senders), every %v:\n", b.rate, b.steady, senders, b.sample)
	fmt.Println("     t   stored/s  claims  rows/claim  claim p50   p99    probe: pages  ms     pending  dead_tup  live_tup  autovacuums  ix_inbox_due pages  lag p50   p99")
	sctx, cancel := context.WithTimeout(ctx, b.steady)
	defer cancel()
	ids := make(chan struct{}, 10*b.rate)
	var stored, dropped atomic.Int64
	var failed atomic.Value
	var swg sync.WaitGroup
	for range senders {
		swg.Add(1)
		go func() {
			defer swg.Done()
			for range ids {
				if err := b.store(context.WithoutCancel(sctx)); err != nil {
					failed.Store(err)
					continue
				}
				stored.Add(1)
			}
		}()
	}
	// The pacer: rate a second, spread over 10 ms ticks; what the senders
	// cannot take is counted, not queued without end.
	swg.Add(1)
	go func() {
		defer swg.Done()
		defer close(ids)
		t := time.NewTicker(10 * time.Millisecond)
		defer t.Stop()
		start := time.Now()
		sent := 0
		for {
			select {
			case <-sctx.Done():
				return
			case now := <-t.C:
				due := int(now.Sub(start).Seconds() * float64(b.rate))
				for ; sent < due; sent++ {
					select {
					case ids <- struct{}{}:
					default:
						dropped.Add(1)
					}
				}
			}
		}
	}()
	begin := time.Now()
	var prevID, prevPrevID int64
	if err := b.plain.GetContext(ctx, &prevID, `SELECT coalesce(max(id), 0) FROM inbox`); err != nil {
		return err
	}
	prevPrevID = prevID
	prevStored := int64(0)
	tick := time.NewTicker(b.sample)
	defer tick.Stop()
	last := begin
	for done := false; !done; {
		select {
		case <-sctx.Done():
			done = true
			if time.Since(last) < time.Second {
				continue // the interval was just reported
			}
		case <-tick.C:
		}
		interval := time.Since(last)
		last = time.Now()
		if ctx.Err() != nil {
			return ctx.Err()
		}
		t, r := b.rec.take()
		ps := percentiles(t, 0.5, 0.99)
		pages, probeMS, err := b.probeClaim(ctx)
		if err != nil {
			return err
		}
		var st struct {
			Pending, Dead, Live, Autovacuums, IndexPages int64
			MaxID                                        int64
		}
		if err := b.plain.QueryRowContext(ctx, `SELECT (SELECT count(*) FROM inbox WHERE status = 'pending'),
				n_dead_tup, n_live_tup, autovacuum_count, pg_relation_size('ix_inbox_due') / current_setting('block_size')::int,
				(SELECT coalesce(max(id), 0) FROM inbox)
			FROM pg_stat_user_tables WHERE relname = 'inbox'`).Scan(&st.Pending, &st.Dead, &st.Live, &st.Autovacuums, &st.IndexPages, &st.MaxID); err != nil {
			return fmt.Errorf("stats: %w", err)
		}
		// The lag of the deliveries stored in the interval before the
		// last one: they have had an interval to be applied.
		var lag50, lag99 sql.NullFloat64
		if err := b.plain.QueryRowContext(ctx, `SELECT
				percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM processed_at - received_at)),
				percentile_cont(0.99) WITHIN GROUP (ORDER BY extract(epoch FROM processed_at - received_at))
			FROM inbox WHERE id > $1 AND id <= $2 AND processed_at IS NOT NULL`, prevPrevID, prevID).Scan(&lag50, &lag99); err != nil {
			return fmt.Errorf("lag: %w", err)
		}
		prevPrevID, prevID = prevID, st.MaxID
		n := stored.Load()
		lagText := "     -        -"
		if lag50.Valid {
			lagText = fmt.Sprintf("%6.1fms %6.1fms", lag50.Float64*1000, lag99.Float64*1000)
		}
		fmt.Printf("%5.0fs %9.0f  %6d  %10.1f  %7s  %7s  %12.0f  %5.2f  %7d  %8d  %8d  %11d  %18d  %s\n",
			time.Since(begin).Seconds(), float64(n-prevStored)/interval.Seconds(), len(t), mean(r), ms(ps[0]), ms(ps[1]),
			pages, probeMS, st.Pending, st.Dead, st.Live, st.Autovacuums, st.IndexPages, lagText)
		prevStored = n
	}
	swg.Wait()
	if err, _ := failed.Load().(error); err != nil {
		return fmt.Errorf("steady stream: %w", err)
	}
	fmt.Printf("steady: %d stored (%.0f/s), %d not sent (the senders fell behind)\n", stored.Load(),
		float64(stored.Load())/time.Since(begin).Seconds(), dropped.Load())
	return nil
}

// probeClaim EXPLAINs the claim as the workers prepared it, on a
// connection that keeps it prepared (so it switches to the generic plan
// as theirs do), in a transaction rolled back: how many shared pages one
// claim touches now, and its execution time. It locks the batch it finds
// for a moment, which the workers skip.
func (b *bench) probeClaim(ctx context.Context) (float64, float64, error) {
	if b.claim == "" {
		b.claim = b.rec.text()
		if b.claim == "" {
			return 0, 0, errors.New("no claim prepared yet")
		}
		if _, err := b.probe.ExecContext(ctx, `PREPARE probe_claim (int) AS `+b.claim); err != nil {
			return 0, 0, fmt.Errorf("prepare probe: %w", err)
		}
	}
	tx, err := b.probe.BeginTx(ctx, nil)
	if err != nil {
		return 0, 0, err
	}
	defer tx.Rollback()
	var plan string
	if err := tx.QueryRowContext(ctx, fmt.Sprintf(`EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) EXECUTE probe_claim(%d)`, claimBatch)).Scan(&plan); err != nil {
		return 0, 0, fmt.Errorf("probe: %w", err)
	}
	var doc []struct {
		Plan struct {
			Hit  float64 `json:"Shared Hit Blocks"`
			Read float64 `json:"Shared Read Blocks"`
		} `json:"Plan"`
		ExecutionTime float64 `json:"Execution Time"`
	}
	if err := json.Unmarshal([]byte(plan), &doc); err != nil || len(doc) != 1 {
		return 0, 0, fmt.Errorf("probe plan: %v", err)
	}
	return doc[0].Plan.Hit + doc[0].Plan.Read, doc[0].ExecutionTime, nil
}

func mean(xs []int) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := 0
	for _, x := range xs {
		s += x
	}
	return float64(s) / float64(len(xs))
}

func meanD(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	var s time.Duration
	for _, d := range ds {
		s += d
	}
	return s / time.Duration(len(ds))
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2fms", float64(d)/float64(time.Millisecond)) }
