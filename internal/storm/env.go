// Package storm drives several `razao serve` replicas on one throwaway
// PostgreSQL the way a PSP does under faults, then checks razao's promise:
// every authentic delivery that got a 2xx is applied exactly once, nothing
// forged is applied, and the books balance, whatever crashes, restarts or
// database outages happened in between.
//
// It is shared by the bounded CI test (cmd/razao/replicas_test.go) and the
// long-form program (scripts/replicas). Everything it talks to is on
// loopback: the replicas it starts and the cluster it initialises.
//
// The pieces:
//
//	Setup            build the binary, start a throwaway cluster, migrate,
//	                 mint an API token, write a config, start N replicas
//	Run              register charges and fire the storm (distinct payments,
//	                 the same delivery to two replicas at once, refunds racing
//	                 their confirmation, late redeliveries, forgeries) while
//	                 the fault schedule kills a replica and stops PostgreSQL
//	Check            wait for the inbox to drain, run `razao verify`, and
//	                 compare every 2xx the PSP received with the ledger
//	GracefulShutdown SIGTERM every replica while requests are held in
//	                 flight by a row lock; they must finish and exit 0
package storm

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/jmoiron/sqlx"
	_ "github.com/lib/pq" // PostgreSQL driver for the checks

	"github.com/razao/razao/internal/pgtest"
)

// EnvOptions configures Setup.
type EnvOptions struct {
	// Root is the project root (pgtest.ProjectRoot()).
	Root string
	// Replicas is how many `razao serve` processes to start (default 3).
	Replicas int
	// WorkerInterval is the retry worker's poll interval (default 200ms).
	WorkerInterval time.Duration
	// Bin, when set, is a razao binary to run instead of building one
	// from Root (a release build, another checkout).
	Bin string
	// RaceBinary builds razao with -race (slower, finds data races in the
	// service itself; its reports land in the replica logs).
	RaceBinary bool
	// Logf receives progress lines; nil discards them.
	Logf func(format string, args ...any)
	// KeepOnFailure leaves the work dir behind when Setup fails.
	KeepOnFailure bool
}

// Env is a running multi-replica deployment on a throwaway cluster.
type Env struct {
	Root string
	// Dir holds everything: the binary, the cluster's data, the config,
	// the replica logs. It is mode 0755 so the postgres user can traverse
	// it when we run as root.
	Dir        string
	Bin        string
	PGData     string
	PGPort     int
	AdminURL   string // maintenance database of the throwaway cluster
	DBURL      string // the service's database
	Token      string // admin bearer token
	Secret     string // the standard endpoint's whsec_ secret
	Endpoint   string // webhook endpoint name
	ConfigPath string
	Replicas   []*Replica
	// KeepDir leaves Dir behind on Close (for a post-mortem).
	KeepDir bool
	// SetupTime is how long Setup took.
	SetupTime time.Duration

	logf   func(string, ...any)
	db     *sqlx.DB
	pgMu   sync.Mutex
	closed bool
}

const (
	endpointName = "psp"
	secretEnv    = "RAZAO_STORM_STANDARD_SECRET"
	serviceDB    = "razao_storm"
)

// Setup builds razao, starts a throwaway PostgreSQL cluster, creates and
// migrates the service database, creates an admin token, writes the config
// and starts the replicas, waiting until each answers /readyz. On error
// everything it started is stopped again.
func Setup(ctx context.Context, opts EnvOptions) (_ *Env, err error) {
	start := time.Now()
	if opts.Replicas <= 0 {
		opts.Replicas = 3
	}
	if opts.WorkerInterval <= 0 {
		opts.WorkerInterval = 200 * time.Millisecond
	}
	logf := opts.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	dir, err := os.MkdirTemp("", "razao-storm-")
	if err != nil {
		return nil, err
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	e := &Env{Root: opts.Root, Dir: dir, Bin: filepath.Join(dir, "razao"), PGData: filepath.Join(dir, "pgdata"),
		Endpoint: endpointName, ConfigPath: filepath.Join(dir, "razao.yaml"), logf: logf}
	defer func() {
		if err != nil {
			e.KeepDir = opts.KeepOnFailure
			e.Close()
			if opts.KeepOnFailure {
				err = fmt.Errorf("%w (files kept in %s)", err, dir)
			}
		}
	}()
	if err := os.MkdirAll(filepath.Join(dir, "logs"), 0o755); err != nil {
		return e, err
	}

	if opts.Bin != "" {
		if e.Bin, err = filepath.Abs(opts.Bin); err != nil {
			return e, err
		}
		logf("storm: using the razao binary %s", e.Bin)
	} else {
		logf("storm: building razao into %s", e.Bin)
		if err := e.build(ctx, opts.RaceBinary); err != nil {
			return e, err
		}
	}

	if e.PGPort, err = FreePort(); err != nil {
		return e, err
	}
	logf("storm: starting a throwaway PostgreSQL on 127.0.0.1:%d (data %s)", e.PGPort, e.PGData)
	if e.AdminURL, err = pgtest.StartCluster(e.PGData, e.PGPort); err != nil {
		return e, err
	}
	if err := e.createDatabase(ctx); err != nil {
		return e, err
	}
	if out, err := e.razao(ctx, "migrate"); err != nil {
		return e, fmt.Errorf("razao migrate: %w: %s", err, out)
	}
	out, err := e.razao(ctx, "token", "create", "-name", "storm", "-scope", "admin")
	if err != nil {
		return e, fmt.Errorf("razao token create: %w: %s", err, out)
	}
	e.Token = strings.TrimSpace(out)
	if e.Token == "" || strings.ContainsAny(e.Token, " \n") {
		return e, fmt.Errorf("razao token create printed %q, want one token", out)
	}
	var key [24]byte
	if _, err := rand.Read(key[:]); err != nil {
		return e, err
	}
	e.Secret = "whsec_" + base64.StdEncoding.EncodeToString(key[:])
	if err := e.writeConfig(opts.WorkerInterval); err != nil {
		return e, err
	}
	if e.db, err = sqlx.Open("postgres", e.DBURL); err != nil {
		return e, err
	}
	e.db.SetMaxOpenConns(4)
	e.db.SetMaxIdleConns(2)

	for i := 0; i < opts.Replicas; i++ {
		port, err := FreePort()
		if err != nil {
			return e, err
		}
		r := &Replica{Index: i, Addr: fmt.Sprintf("127.0.0.1:%d", port), bin: e.Bin,
			logPath: filepath.Join(dir, "logs", fmt.Sprintf("replica-%d.log", i)),
			env: append(os.Environ(), "DATABASE_URL="+e.DBURL, "RAZAO_CONFIG="+e.ConfigPath,
				"RAZAO_LISTEN="+fmt.Sprintf("127.0.0.1:%d", port), secretEnv+"="+e.Secret,
				"RAZAO_TIME_ZONE=America/Sao_Paulo",
				// The storm runs on a development machine or CI, as root.
				"RAZAO_ALLOW_ROOT=1")}
		if err := r.Start(); err != nil {
			return e, err
		}
		e.Replicas = append(e.Replicas, r)
	}
	for _, r := range e.Replicas {
		rctx, cancel := context.WithTimeout(ctx, 60*time.Second)
		err := r.WaitReady(rctx)
		cancel()
		if err != nil {
			return e, fmt.Errorf("replica %d: %w; log tail:\n%s", r.Index, err, r.LogTail(20))
		}
		logf("storm: replica %d ready on http://%s (pid %d)", r.Index, r.Addr, r.PID())
	}
	e.SetupTime = time.Since(start)
	return e, nil
}

// build compiles ./cmd/razao into e.Bin.
func (e *Env) build(ctx context.Context, race bool) error {
	goBin, err := exec.LookPath("go")
	if err != nil {
		goBin = "/usr/local/go/bin/go"
	}
	args := []string{"build", "-buildvcs=false"}
	if race {
		args = append(args, "-race")
	}
	args = append(args, "-o", e.Bin, "./cmd/razao")
	cmd := exec.CommandContext(ctx, goBin, args...)
	cmd.Dir = e.Root
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build ./cmd/razao: %w: %s", err, out)
	}
	return nil
}

func (e *Env) createDatabase(ctx context.Context) error {
	admin, err := sqlx.Open("postgres", e.AdminURL)
	if err != nil {
		return err
	}
	defer admin.Close()
	if _, err := admin.ExecContext(ctx, `CREATE DATABASE `+serviceDB); err != nil {
		return fmt.Errorf("create database: %w", err)
	}
	e.DBURL = pgtest.WithDatabase(e.AdminURL, serviceDB)
	return nil
}

func (e *Env) writeConfig(workerInterval time.Duration) error {
	cfg := fmt.Sprintf(`# written by internal/storm; the secret is in $%s, never here
listen: 127.0.0.1:0
time_zone: America/Sao_Paulo
worker_interval: %s
endpoints:
  - name: %s
    scheme: standard
    merchant: loja-storm
    secrets_env: [%s]
`, secretEnv, workerInterval, endpointName, secretEnv)
	return os.WriteFile(e.ConfigPath, []byte(cfg), 0o644)
}

// razao runs one razao command against the service database and returns
// its stdout (stderr is appended on failure).
func (e *Env) razao(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, e.Bin, args...)
	cmd.Env = append(os.Environ(), "DATABASE_URL="+e.DBURL)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if err != nil {
		return stdout.String() + stderr.String(), err
	}
	return stdout.String(), nil
}

// Verify runs `razao verify` and returns its exit status and output.
func (e *Env) Verify(ctx context.Context) (int, string, error) {
	out, err := e.razao(ctx, "verify")
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0, out, nil
	case errors.As(err, &exit):
		return exit.ExitCode(), out, nil
	default:
		return -1, out, err
	}
}

// DB is a small pool on the service database, for the checks.
func (e *Env) DB() *sqlx.DB { return e.db }

// StopDatabase stops the throwaway cluster (fast shutdown, waits until it
// is down).
func (e *Env) StopDatabase() error {
	e.pgMu.Lock()
	defer e.pgMu.Unlock()
	if err := pgtest.StopCluster(e.PGData, e.PGPort); err != nil {
		return err
	}
	return nil
}

// StartDatabase starts the throwaway cluster again on the same data and port.
func (e *Env) StartDatabase() error {
	e.pgMu.Lock()
	defer e.pgMu.Unlock()
	if _, err := pgtest.StartCluster(e.PGData, e.PGPort); err != nil {
		return err
	}
	// Our own pool's idle connections died with the server: drop them.
	e.db.SetMaxIdleConns(0)
	e.db.SetMaxIdleConns(2)
	return nil
}

// Close kills every replica still running, stops the cluster and removes
// Dir unless KeepDir is set. It is safe to call more than once.
func (e *Env) Close() {
	if e.closed {
		return
	}
	e.closed = true
	for _, r := range e.Replicas {
		r.Kill()
	}
	if e.db != nil {
		e.db.Close()
	}
	if _, err := os.Stat(filepath.Join(e.PGData, "PG_VERSION")); err == nil {
		if err := pgtest.StopCluster(e.PGData, e.PGPort); err != nil {
			e.logf("storm: stop cluster: %v", err)
		}
	}
	if e.KeepDir {
		e.logf("storm: kept %s (replica logs in %s)", e.Dir, filepath.Join(e.Dir, "logs"))
		return
	}
	os.RemoveAll(e.Dir)
}

// URLs returns each replica's base URL.
func (e *Env) URLs() []string {
	out := make([]string, len(e.Replicas))
	for i, r := range e.Replicas {
		out[i] = r.URL()
	}
	return out
}

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago,
// below the kernel's ephemeral range (pgtest.FreePort).
func FreePort() (int, error) { return pgtest.FreePort() }

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}
