package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/gorilla/mux"
	"github.com/jmoiron/sqlx"

	"github.com/razao/razao"
	"github.com/razao/razao/postings"
)

// serveConfig is what `razao serve` runs with.
type serveConfig struct {
	db       dbFlags
	listen   string
	timeZone string
	migrate  bool
}

func cmdServe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var cfg serveConfig
	fs := newFlagSet("serve", stderr)
	cfg.db.register(fs)
	fs.StringVar(&cfg.listen, "listen", envOr("RAZAO_LISTEN", "127.0.0.1:8080"), "address to listen on ($RAZAO_LISTEN)")
	fs.StringVar(&cfg.timeZone, "time-zone", envOr("RAZAO_TIME_ZONE", postings.DefaultTimeZone), "IANA time zone of competence dates ($RAZAO_TIME_ZONE)")
	fs.BoolVar(&cfg.migrate, "migrate", true, "apply migrations before serving")
	if err := fs.Parse(args); err != nil {
		return err
	}
	logger := slog.New(slog.NewJSONHandler(stderr, nil))
	srv, err := newServer(ctx, cfg, logger)
	if err != nil {
		return err
	}
	defer srv.Close()
	ln, err := net.Listen("tcp", cfg.listen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", cfg.listen, err)
	}
	fmt.Fprintf(stdout, "razao listening on http://%s (stop with Ctrl-C or SIGTERM)\n", ln.Addr())
	return srv.Serve(ctx, ln)
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

// server is the running service: its database, ledger and HTTP handler.
type server struct {
	db     *sqlx.DB
	ledger *postings.Ledger
	log    *slog.Logger
	http   *http.Server
}

func newServer(ctx context.Context, cfg serveConfig, logger *slog.Logger) (*server, error) {
	cal, err := postings.NewCalendar(cfg.timeZone)
	if err != nil {
		return nil, err
	}
	db, err := cfg.db.open(ctx)
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
	}
	s := &server{db: db, ledger: postings.New(db, cal), log: logger}
	s.http = &http.Server{
		Handler:           s.routes(),
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       15 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       60 * time.Second,
		MaxHeaderBytes:    32 << 10,
	}
	return s, nil
}

func (s *server) routes() http.Handler {
	r := mux.NewRouter()
	r.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"status":"ok"}`)
	}).Methods(http.MethodGet)
	r.HandleFunc("/readyz", s.ready).Methods(http.MethodGet)
	return r
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

// Serve serves HTTP on ln until ctx ends, then shuts down gracefully:
// in-flight requests finish, new ones are refused.
func (s *server) Serve(ctx context.Context, ln net.Listener) error {
	errc := make(chan error, 1)
	go func() { errc <- s.http.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	s.log.Info("shutting down")
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.http.Shutdown(shutdownCtx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// Close releases the database.
func (s *server) Close() error { return s.db.Close() }
