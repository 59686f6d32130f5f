package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	neturl "net/url"
	"os"
	"os/signal"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/gorilla/mux"
	"github.com/jmoiron/sqlx"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/razao/razao"
	"github.com/razao/razao/adjustments"
	"github.com/razao/razao/api"
	"github.com/razao/razao/charges"
	"github.com/razao/razao/console"
	"github.com/razao/razao/events"
	"github.com/razao/razao/exports"
	"github.com/razao/razao/inbox"
	"github.com/razao/razao/internal/httplog"
	"github.com/razao/razao/internal/logsink"
	"github.com/razao/razao/internal/reqid"
	"github.com/razao/razao/internal/tracing"
	"github.com/razao/razao/metrics"
	"github.com/razao/razao/monthsums"
	"github.com/razao/razao/outgoing"
	"github.com/razao/razao/periods"
	"github.com/razao/razao/postings"
	"github.com/razao/razao/reads"
	"github.com/razao/razao/reconcile"
	"github.com/razao/razao/webhook"
)

func cmdServe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg, err := parseServeConfig(args, newFlagSet("serve", stderr), os.Getenv, true)
	if err != nil {
		return err
	}
	if err := refuseRoot(os.Geteuid(), cfg.allowRoot); err != nil {
		return err
	}
	// One write a few milliseconds rather than one per request line;
	// closed (and so written out) when serve returns, errors included.
	sink := logsink.New(stderr)
	defer sink.Close()
	logger := newLogger(sink, cfg.logLevel)
	tuneGC(os.Getenv)
	var hup chan os.Signal
	if cfg.tls != nil {
		// Only with TLS: without, SIGHUP keeps its default (it ends the
		// process), as before. Taken before the wait for the database, so
		// a reload sent then is not a kill; it reloads once serving.
		hup = make(chan os.Signal, 1)
		signal.Notify(hup, syscall.SIGHUP)
		defer signal.Stop(hup)
	}
	srv, err := newServer(ctx, cfg, logger, time.Now)
	if err != nil {
		return err
	}
	defer srv.Close()
	srv.reload = hup
	ln, err := net.Listen("tcp", cfg.listen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", cfg.listen, err)
	}
	admin := "off"
	if cfg.adminListen != adminOff {
		if srv.adminLn, err = net.Listen("tcp", cfg.adminListen); err != nil {
			ln.Close()
			return fmt.Errorf("admin_listen on %s: %w", cfg.adminListen, err)
		}
		admin = srv.scheme() + "://" + srv.adminLn.Addr().String()
	}
	// In the log's JSON stream, like every other line the service writes.
	logger.Info("razao listening", "url", srv.scheme()+"://"+ln.Addr().String(), "admin_url", admin,
		"webhook_endpoints", len(cfg.endpoints), "stop", "Ctrl-C or SIGTERM")
	return srv.Serve(ctx, ln)
}

// newLogger is the service's one log stream: JSON lines on w from level
// up, each carrying the request id of the context it was logged with.
func newLogger(w io.Writer, level slog.Level) *slog.Logger {
	return slog.New(reqid.LogHandler{Handler: slog.NewJSONHandler(w, &slog.HandlerOptions{Level: level})})
}

// tuneGC collects garbage less often than Go's default, unless GOGC says
// otherwise: the service's live heap is small (every input is bounded)
// and it allocates per request, so at the default the collector takes a
// visible share of its CPU, which PostgreSQL on the same machine can use
// (docs/performance.md, "GOGC"). Under a cgroup memory limit, and
// unless GOMEMLIMIT says otherwise, the heap is held to three quarters of
// it: near that, the collector runs as often as it must.
func tuneGC(getenv func(string) string) {
	if getenv("GOGC") == "" {
		debug.SetGCPercent(400)
	}
	if getenv("GOMEMLIMIT") == "" {
		if limit, ok := cgroupMemoryLimit(); ok {
			debug.SetMemoryLimit(limit / 4 * 3)
		}
	}
}

// cgroupMemoryLimit reads the memory limit of the process's cgroup (v2,
// else v1). "max", v1's near-2^63 "unlimited", or no file: no limit.
func cgroupMemoryLimit() (int64, bool) {
	for _, path := range []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"} {
		b, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		if err != nil || n <= 0 || n >= 1<<60 {
			return 0, false
		}
		return n, true
	}
	return 0, false
}

// server is the running service: its database, ledger, webhook front,
// worker, event hub and HTTP handler.
type server struct {
	db       *sqlx.DB
	log      *slog.Logger
	http     *http.Server
	worker   *inbox.Worker
	hub      *events.Hub
	notifier *events.Notifier
	applier  *charges.Applier
	exports  *exports.Scheduler    // nil without a schedule
	recon    *reconcile.Reconciler // nil without a reconciliation section
	outgoing *outgoing.Dispatcher  // the webhooks razao sends
	archive  *archiveLoop          // nil: serve runs no retention
	parts    *partitionKeeper      // the months ahead partitioned
	inbox    *inbox.Inbox
	proc     *inbox.Processor
	certs    *certReloader    // nil: plain HTTP
	poll     time.Duration    // how often certs checks its files
	reload   <-chan os.Signal // SIGHUP: certs reloads
	// admin serves /metrics, health and the profiles on adminLn, when
	// set (cmdServe sets it unless admin_listen is off).
	admin    *http.Server
	adminLn  net.Listener
	inFlight inFlight         // requests of the public listener being served
	now      func() time.Time // the clock proposals expire by
	// tracer receives the spans of requests, deliveries and their SQL;
	// nil: tracing is off. traces is the provider serve built (to flush
	// at exit), nil when off or given by a test.
	tracer trace.TracerProvider
	traces *sdktrace.TracerProvider
	// reads chooses the database of reads that need not see their own
	// writes: the standby of read_database_url while fresh enough, else
	// db (package reads says what goes where, and why).
	reads   *reads.Pool
	standby *sqlx.DB // nil without read_database_url
}

// adminWriteTimeout leaves room for a CPU profile (?seconds=30 by
// default), which pprof refuses to take beyond the server's write timeout.
const adminWriteTimeout = 2 * time.Minute

// batchLoops is how many group commits the inbox runs at once: one
// batch gathers while the other commits, and on two cores more loops did
// worse, not better (docs/performance.md, "Group-commit loops").
const batchLoops = 2

func newServer(ctx context.Context, cfg serveConfig, logger *slog.Logger, now func() time.Time) (_ *server, err error) {
	if cfg.timeouts == (serverTimeouts{}) {
		cfg.timeouts = defaultTimeouts
	}
	cal, err := periods.NewCalendar(cfg.timeZone)
	if err != nil {
		return nil, err
	}
	cal = cal.WithGoLive(cfg.goLive)
	var certs *certReloader
	if cfg.tls != nil {
		// Before the database: a bad pair stops the start at once.
		if certs, err = newCertReloader(cfg.tls, logger, now); err != nil {
			return nil, err
		}
	}
	tracer, traces := cfg.tracer, (*sdktrace.TracerProvider)(nil)
	if tracer == nil && cfg.tracing != nil {
		if traces, err = tracing.NewProvider(ctx, *cfg.tracing, buildVersion()); err != nil {
			return nil, err
		}
		tracer = traces
		defer func() {
			if err != nil {
				tracing.Shutdown(traces) // its exporter's goroutine
			}
		}()
		logger.Info("tracing", "otlp_endpoint", redactedEndpoint(cfg.tracing.Endpoint), "service_name", cfg.tracing.ServiceName)
	}
	db, err := openWaiting(ctx, cfg.db, tracer, logger)
	if err != nil {
		return nil, err
	}
	if cfg.migrate {
		applied, err := razao.Migrate(ctx, db)
		if err != nil {
			db.Close()
			return nil, err
		}
		for _, m := range applied {
			logger.Info("migration applied", "name", m)
		}
	} else if err := razao.CheckSchema(ctx, db); err != nil {
		db.Close()
		return nil, err
	}
	// A rolling upgrade runs the release before beside a newer schema,
	// as it may (expand, then contract); said once at start, with both.
	if c, err := razao.SchemaCompatibility(ctx, db); err != nil {
		db.Close()
		return nil, err
	} else if c.Ahead() {
		logger.Warn("the database schema is newer than this binary: fine during a rolling upgrade, not beyond it",
			"database_migration", c.DatabaseName, "binary_migration", c.BinaryName)
	}
	// A logical restore keeps the outbox's transaction ids, not the
	// counter: new events would sort behind every stream's cursor.
	if err := events.CheckXids(ctx, db); err != nil {
		db.Close()
		return nil, err
	}
	for _, ep := range cfg.endpoints {
		if ep.NoSecret {
			// Never the secret: there is none; the variables that were empty.
			logger.Warn("webhook endpoint has no secret yet: it answers only the PSP's registration test and refuses every other delivery with 401",
				"endpoint", ep.Name, "empty_variables", ep.Unset)
		}
	}
	pool, standby := openReads(ctx, cfg, db, logger)
	ledger := postings.New(db, cal).WithClock(now).WithLimit(cfg.maxAmount)
	applier := charges.NewApplier(db, ledger)
	notifier := events.NewNotifier(db, logger)
	m := metrics.New(db)
	proc := inbox.NewProcessor(db, applier, logger)
	proc.OnCommit = notifier.Kick
	proc.Metrics = m
	if tracer != nil {
		proc.Tracer = tracing.Tracer(tracer, "inbox")
	}
	s := &server{
		tracer:   tracer,
		traces:   traces,
		now:      now,
		db:       db,
		log:      logger,
		worker:   newWorker(proc, cfg),
		hub:      events.NewHub(db, razao.DriverURL(cfg.db.url), logger),
		notifier: notifier,
		applier:  applier,
		proc:     proc,
		certs:    certs,
		reads:    pool,
		standby:  standby,
	}
	if cfg.exports != nil {
		if s.exports, err = exports.NewScheduler(db, *cfg.exports, now, logger, m); err != nil {
			db.Close()
			return nil, err
		}
	}
	// Streams hold at most DBConnections of the pool's connections (see
	// events.Hub), so the webhook path keeps the rest.
	s.hub.MaxSubscribers = cfg.events.MaxStreams
	s.hub.MaxPerToken = cfg.events.MaxStreamsPerToken
	s.hub.MaxReaders = cfg.events.DBConnections
	s.hub.MaxBytesPerSecond = cfg.events.MaxBytesPerSecond
	m.EventStreams(s.hub.Wakes, s.hub.Reads, s.hub.PacedReads)
	s.inbox = inbox.NewInbox(db, proc)
	if tracer != nil {
		s.inbox.Tracer = proc.Tracer
	}
	// Webhooks to the selling app: read from the outbox after commit, so
	// the intake never waits for a subscriber; woken by the notifier's
	// NOTIFY on every replica.
	s.outgoing = outgoing.NewDispatcher(db, cfg.webhooks, logger, now)
	s.outgoing.Listen(razao.DriverURL(cfg.db.url))
	s.outgoing.OnCommit = notifier.Kick
	s.parts = newPartitionKeeper(db, now, logger)
	if err := m.Register(append(append(s.outgoing.Collectors(), pool.Collectors()...), s.parts.collectors()...)...); err != nil {
		db.Close()
		return nil, err
	}
	s.archive = newArchiveLoop(cfg.retention, db, now, logger)
	hooks := webhook.NewHandler(cfg.endpoints, s.inbox, now, logger)
	hooks.Metrics = m
	if s.recon, err = newReconciler(cfg, db, s.inbox, ledger, now, logger, m); err != nil {
		db.Close()
		return nil, err
	}
	if s.recon != nil {
		s.recon.OnCommit = notifier.Kick
	}
	v1 := &api.API{DB: db, Ledger: ledger, Log: logger, Now: now, Events: s.hub, Merchants: webhook.Merchants(cfg.endpoints),
		Reconciler: s.recon, Adjustments: cfg.adjustments, Webhooks: cfg.webhooks, Reads: pool}
	// The finance console reads through the same functions as v1.
	con, err := console.New(db, ledger, s.hub, logger, now)
	if err != nil {
		db.Close()
		return nil, err
	}
	con.BehindTLSProxy = cfg.behindProxy
	con.Reconciliations = consoleReconciliations(s.recon)
	con.Adjustments = cfg.adjustments
	con.Reads = pool
	handler := reqid.Middleware(httplog.Middleware(logger, m.HTTPRequest, time.Now)(pool.Middleware(s.routes(hooks, v1, con), "/v1/", console.Prefix)))
	if tracer != nil {
		handler = tracing.Middleware(tracer)(handler)
	}
	s.http = &http.Server{
		Handler:           s.inFlight.count(handler),
		ReadHeaderTimeout: cfg.timeouts.ReadHeader,
		ReadTimeout:       cfg.timeouts.Read,
		WriteTimeout:      cfg.timeouts.Write,
		IdleTimeout:       cfg.timeouts.Idle,
		MaxHeaderBytes:    32 << 10,
		// Go's own errors (failed handshakes and the like), in the JSON stream.
		ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
	s.admin = &http.Server{
		Handler:           s.adminRoutes(m.Handler()),
		ReadHeaderTimeout: cfg.timeouts.ReadHeader,
		ReadTimeout:       cfg.timeouts.Read,
		WriteTimeout:      adminWriteTimeout,
		IdleTimeout:       cfg.timeouts.Idle,
		MaxHeaderBytes:    8 << 10,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
	if certs != nil {
		s.http.TLSConfig = certs.serverTLS(cfg.tls.minVersion, cfg.endpoints)
		s.admin.TLSConfig = certs.serverTLS(cfg.tls.minVersion, nil)
		s.poll = cfg.tls.poll
	}
	return s, nil
}

// newWorker is the replica's claim loops, ringing the other replicas'
// doorbells through the database.
func newWorker(proc *inbox.Processor, cfg serveConfig) *inbox.Worker {
	w := inbox.NewWorker(proc, cfg.workerInterval)
	// As the pool reads it: a multi-host URL's hosts, each with its port.
	w.Listen(razao.DriverURL(cfg.db.url))
	return w
}

func (s *server) routes(hooks http.Handler, v1 *api.API, con *console.Console) http.Handler {
	// No path cleaning: a path with .. is not redirected anywhere; it
	// simply matches no route.
	r := mux.NewRouter().SkipClean(true)
	r.NotFoundHandler = api.NotFound()
	r.MethodNotAllowedHandler = api.MethodNotAllowed(r)
	r.Use(httplog.Route)
	if s.tracer != nil {
		r.Use(tracing.Route)
	}
	// Health stays here too, for a load balancer in front; /metrics and
	// the profiles are the admin listener's alone (adminRoutes).
	r.HandleFunc("/healthz", healthz).Methods(http.MethodGet)
	r.HandleFunc("/readyz", s.ready).Methods(http.MethodGet)
	r.Handle("/openapi.json", api.OpenAPIHandler()).Methods(http.MethodGet)
	r.Handle("/webhooks/{endpoint}", hooks)
	r.Handle("/webhooks/{endpoint}/pix", hooks) // bcb-pix: the Pix API appends /pix to the URL it was given
	v1.Register(r)
	if con != nil {
		con.Register(r)
	}
	return r
}

// openWaiting connects to the database, waiting for it with back-off
// while it does not answer: a replica started during a database restart
// comes up when the database does, instead of exiting.
func openWaiting(ctx context.Context, f dbFlags, tracer trace.TracerProvider, logger *slog.Logger) (*sqlx.DB, error) {
	wait := time.Second
	open := f.open
	if tracer != nil && f.url != "" {
		// Only with tracing: the driver is wrapped, each statement of a
		// traced context a span.
		open = func(ctx context.Context) (*sqlx.DB, error) {
			return razao.OpenTraced(ctx, f.url, tracing.SQLOptions(tracer)...)
		}
	}
	for {
		db, err := open(ctx)
		if err == nil || f.url == "" {
			return db, err
		}
		logger.Warn("waiting for the database", "error", err, "retry_in", wait.String())
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("gave up waiting for the database: %w", err)
		case <-time.After(wait):
		}
		wait = min(2*wait, 30*time.Second)
	}
}

// ready answers 200 only while the database answers: a replica that cannot
// reach it should get no traffic.
func (s *server) ready(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	w.Header().Set("Content-Type", "application/json")
	if err := s.db.PingContext(ctx); err != nil {
		w.WriteHeader(http.StatusServiceUnavailable)
		io.WriteString(w, `{"status":"database unreachable"}`)
		return
	}
	io.WriteString(w, `{"status":"ready"}`)
}

// Serve serves HTTP on ln, with the workers and the event hub, until ctx
// ends; then it shuts down gracefully: new requests are refused, the ones
// in flight finish (their group commits included), and the workers stop
// claiming and finish the transactions they are in. Whatever is still due
// stays in the inbox, for the next start or another replica: nothing
// answered lives only in memory.
func (s *server) Serve(ctx context.Context, ln net.Listener) error {
	bg, stopBG := context.WithCancel(context.WithoutCancel(ctx))
	// The notifier stops last, once the workers have: their last commits
	// are announced too.
	notifying, stopNotifier := context.WithCancel(context.WithoutCancel(ctx))
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); s.hub.Run(bg) }()
	go func() { defer wg.Done(); s.notifier.Run(notifying) }()
	// Month sums (sql/0021) keep the open months' reports fast, off the
	// hot path; every replica may run it (a month being refreshed by
	// another is left to it).
	wg.Add(1)
	go func() { defer wg.Done(); monthsums.Run(bg, s.db, s.log, monthsums.Interval) }()
	// The months ahead have their ledger partitions (sql/0056) before
	// their first set, closes or not; any replica may run it (the calls
	// take turns, and with nothing to make take no lock).
	wg.Add(1)
	go func() { defer wg.Done(); s.parts.run(bg) }()
	// Proposals nobody approved in time expire, each with its event; any
	// replica may run it (SKIP LOCKED).
	wg.Add(1)
	go func() { defer wg.Done(); adjustments.Run(bg, s.db, s.log, time.Minute, s.now) }()
	if s.exports != nil {
		wg.Add(1)
		go func() { defer wg.Done(); s.exports.Run(bg, 30*time.Second) }()
	}
	// Webhooks out: at shutdown each delivery in flight finishes (within
	// webhooks.timeout) and its progress is saved before the notifier
	// stops.
	wg.Add(1)
	go func() { defer wg.Done(); s.outgoing.Run(bg) }()
	if s.recon != nil {
		wg.Add(1)
		go func() { defer wg.Done(); s.recon.Run(bg, 30*time.Second) }()
	}
	// Retention: any replica may run it; one at a time, under its lock.
	if s.archive != nil {
		wg.Add(1)
		go func() { defer wg.Done(); s.archive.run(bg) }()
	}
	if s.certs != nil {
		wg.Add(1)
		go func() { defer wg.Done(); s.certs.watch(bg, s.poll, s.reload) }()
	}
	defer func() { stopBG(); stopNotifier(); wg.Wait() }()

	// The batcher and the workers outlive the HTTP server: requests still
	// in flight during shutdown wait for their group commit, and the
	// workers go on applying until then.
	intake, stopIntake := context.WithCancel(context.WithoutCancel(ctx))
	working, stopWorkers := context.WithCancel(context.WithoutCancel(ctx))
	batcher, workers := make(chan struct{}), make(chan struct{})
	go func() { s.inbox.RunBatcher(intake, batchLoops); close(batcher) }()
	go func() { s.worker.Run(working); close(workers) }()
	defer func() {
		stopIntake()
		<-batcher
		stopWorkers()
		<-workers
	}()

	errc := make(chan error, 1)
	go func() { errc <- s.serveOn(s.http, ln) }()
	adminErr := make(chan error, 1)
	if s.adminLn != nil {
		go func() { adminErr <- s.serveOn(s.admin, s.adminLn) }()
		// Last to stop: metrics are read during the drain too.
		defer s.admin.Close()
	}
	select {
	case err := <-errc:
		return err
	case err := <-adminErr:
		s.http.Close()
		return fmt.Errorf("admin listener: %w", err)
	case <-ctx.Done():
	}
	began := time.Now()
	s.log.Info("shutting down", "requests_in_flight", s.inFlight.n.Load())
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	stopBG() // ends event streams, so Shutdown does not wait on them
	if err := s.http.Shutdown(shutdownCtx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	// The workers finish the transactions they are in, then the last line
	// says what this replica leaves in the inbox for the next start or
	// another replica.
	stopIntake()
	<-batcher
	stopWorkers()
	<-workers
	// Then the background work (stopped with the streams, above) and the
	// notifier, after the workers' last commits: nothing they log may
	// follow the last line (the event hub's listener, reconnecting while
	// serve stopped, did).
	stopNotifier()
	wg.Wait()
	s.flushTraces()
	s.logStopped(began, s.inFlight.served.Load())
	return nil
}

// flushTraces sends the spans still buffered, the drain's included, and
// stops the provider serve built, within tracing.ShutdownTimeout: a
// collector that is gone costs a warning, not the exit.
func (s *server) flushTraces() {
	if s.traces == nil {
		return
	}
	if err := tracing.Shutdown(s.traces); err != nil {
		s.log.Warn("tracing: spans not flushed", "error", err)
	}
	s.traces = nil
}

// serveOn serves srv on ln, with TLS when srv has a TLS configuration
// (its certificate comes from TLSConfig.GetCertificate).
func (s *server) serveOn(srv *http.Server, ln net.Listener) error {
	if srv.TLSConfig != nil {
		return srv.ServeTLS(ln, "", "")
	}
	return srv.Serve(ln)
}

// logStopped is serve's last line: how long the drain took, how many
// requests the public listener answered in all, and what the inbox holds
// for later (read with a short deadline: a database that is gone must not
// hold the exit).
func (s *server) logStopped(began time.Time, served int64) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	attrs := []any{"drain_ms", time.Since(began).Milliseconds(), "requests_served", served}
	if b, err := inbox.ReadBacklog(ctx, s.db); err == nil {
		attrs = append(attrs, "inbox_pending", b.Pending, "inbox_parked", b.Parked)
	} else {
		attrs = append(attrs, "inbox_pending", "unknown: "+err.Error())
	}
	s.log.Info("razao stopped cleanly", attrs...)
}

// inFlight counts the requests being served, and those served in all.
type inFlight struct{ n, served atomic.Int64 }

func (f *inFlight) count(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.n.Add(1)
		defer func() { f.n.Add(-1); f.served.Add(1) }()
		next.ServeHTTP(w, r)
	})
}

// scheme is the URL scheme the server answers on.
func (s *server) scheme() string {
	if s.certs != nil {
		return "https"
	}
	return "http"
}

// Close releases the database, and the tracer provider if Serve did not.
func (s *server) Close() error {
	s.flushTraces()
	if s.standby != nil {
		s.standby.Close()
	}
	return s.db.Close()
}

// openReads opens the standby of read_database_url, if any, and the pool
// that chooses between it and the primary. The standby is not waited
// for: while it does not answer, reads go to the primary. What reads
// from the pool, and what stays on the primary whatever the pool says:
//
//   - from the pool: the reports, the lists, the console's pages that
//     show them, the on-demand CSV and ledger exports;
//   - on the primary: every write; authentication and sessions (a
//     revoked token stops at once); a single object by id (a client
//     reads back what it has just created); the event stream, whose
//     doorbell is LISTEN (refused on a standby: the primary's NOTIFY
//     would ring before the standby has replayed the event, which would
//     then wait for the next one) and whose horizon reads pg_locks,
//     where a standby does not see the primary's transactions (the
//     horizon would fall back to the oldest transaction of any database,
//     correct but held back by any long one); the scheduled exports
//     (a closed month's file is written once and kept, so it is read
//     where the close is known to be); and every worker (the inbox,
//     month sums, webhooks out, reconciliation), which read in order to
//     write.
func openReads(ctx context.Context, cfg serveConfig, primary *sqlx.DB, logger *slog.Logger) (*reads.Pool, *sqlx.DB) {
	if cfg.readURL == "" || cfg.readURL == cfg.db.url {
		return reads.New(primary, nil, cfg.readMaxLag, logger), nil
	}
	// sql.Open connects lazily: a standby that is down is not a start error.
	standby, err := sqlx.Open("postgres", razao.DriverURL(cfg.readURL))
	if err != nil {
		logger.Warn("read_database_url cannot be used, every read goes to the primary", "error", err)
		return reads.New(primary, nil, cfg.readMaxLag, logger), nil
	}
	standby.SetMaxOpenConns(16)
	standby.SetMaxIdleConns(16)
	standby.SetConnMaxIdleTime(5 * time.Minute)
	pool := reads.New(primary, standby, cfg.readMaxLag, logger)
	pool.Check(ctx) // the first reads have a verdict, logged
	return pool, standby
}

// redactedEndpoint is the collector's URL without its query, for the log.
func redactedEndpoint(raw string) string {
	u, err := neturl.Parse(raw)
	if err != nil {
		return "(unparsable)"
	}
	u.RawQuery, u.User = "", nil
	return u.String()
}
