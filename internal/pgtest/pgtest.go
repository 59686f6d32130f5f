// Package pgtest gives each test its own PostgreSQL database, cloned from a
// migrated template, on a real server: a mock has no locks, no triggers and
// no deferred constraints, which is where a ledger's guarantees live.
//
// The server is found once per test binary, in this order: DATABASE_URL;
// 127.0.0.1:5432 when it answers; a postgres container through dockertest
// when a Docker engine runs; a throwaway cluster started from the machine's
// initdb/pg_ctl by scripts/localpg.sh. If none works the test fails with a
// message saying what was tried; it never skips.
package pgtest

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
	"github.com/ory/dockertest/v3"

	"github.com/razao/razao"
)

var (
	serverOnce sync.Once
	serverURL  string
	serverErr  error

	templateOnce sync.Once
	templateName string
	templateErr  error
)

// New returns a connection pool to a fresh, migrated database of its own,
// dropped after the test ends (see drops.go: in batches, off the test's
// time).
func New(t testing.TB) *sqlx.DB {
	t.Helper()
	db, _ := NewWithURL(t)
	return db
}

// NewWithURL is New that also returns the database's URL, for tests that
// open their own connections (a lock gate, LISTEN, a child process).
func NewWithURL(t testing.TB) (*sqlx.DB, string) {
	t.Helper()
	base := ServerURL(t)
	tmpl, err := template(base)
	if err != nil {
		t.Fatalf("pgtest: template database: %v", err)
	}
	r, err := theRun(base)
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	name := r.databaseName()
	if _, err := r.admin.Exec(fmt.Sprintf(`CREATE DATABASE %s TEMPLATE %s`, pq.QuoteIdentifier(name), pq.QuoteIdentifier(tmpl))); err != nil {
		t.Fatalf("pgtest: create database %s: %v", name, err)
	}
	dbURL := WithDatabase(base, name)
	db, err := sqlx.Open("postgres", razao.DriverURL(dbURL))
	if err != nil {
		t.Fatalf("pgtest: open %s: %v", name, err)
	}
	t.Cleanup(func() {
		db.Close()
		if os.Getenv("RAZAO_KEEP_TEST_DB") != "" && t.Failed() {
			if err := r.keep(name); err != nil {
				t.Logf("pgtest: kept database %s, but could not mark it kept (%v): a later test run may drop it", name, err)
				return
			}
			t.Logf("pgtest: kept database %s", name)
			return
		}
		r.release(name)
	})
	return db, dbURL
}

// ServerURL returns the URL of the server the tests use (its maintenance
// database), finding or starting one on first use.
func ServerURL(t testing.TB) string {
	t.Helper()
	serverOnce.Do(func() { serverURL, serverErr = findServer() })
	if serverErr != nil {
		t.Fatalf("pgtest: no PostgreSQL server: %v", serverErr)
	}
	return serverURL
}

// WithDatabase returns url pointing at database name instead.
func WithDatabase(raw, name string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	u.Path = "/" + name
	return u.String()
}

func findServer() (string, error) {
	var tried []string
	if env := os.Getenv("DATABASE_URL"); env != "" {
		if err := ping(env); err != nil {
			return "", fmt.Errorf("DATABASE_URL is set but does not answer: %w", err)
		}
		return env, nil
	}
	local := "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
	if err := ping(local); err == nil {
		return local, nil
	} else {
		tried = append(tried, "127.0.0.1:5432: "+err.Error())
	}
	if u, err := startDocker(); err == nil {
		return u, nil
	} else {
		tried = append(tried, "docker: "+err.Error())
	}
	if u, err := startLocalCluster(); err == nil {
		return u, nil
	} else {
		tried = append(tried, "local initdb: "+err.Error())
	}
	return "", fmt.Errorf("set DATABASE_URL or install PostgreSQL; tried: %s", strings.Join(tried, "; "))
}

func ping(u string) error {
	db, err := sqlx.Open("postgres", u)
	if err != nil {
		return err
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	return db.PingContext(ctx)
}

// startDocker runs a postgres container that lives as long as the test
// binary (it is told to expire after an hour in case the binary dies).
func startDocker() (string, error) {
	pool, err := dockertest.NewPool("")
	if err != nil {
		return "", err
	}
	if err := pool.Client.Ping(); err != nil {
		return "", fmt.Errorf("no Docker engine: %w", err)
	}
	res, err := pool.Run("postgres", "16", []string{"POSTGRES_HOST_AUTH_METHOD=trust"})
	if err != nil {
		return "", err
	}
	res.Expire(3600)
	u := fmt.Sprintf("postgres://postgres@127.0.0.1:%s/postgres?sslmode=disable", res.GetPort("5432/tcp"))
	pool.MaxWait = time.Minute
	if err := pool.Retry(func() error { return ping(u) }); err != nil {
		return "", err
	}
	return u, nil
}

// ProjectRoot is the repository's root directory.
func ProjectRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// StartCluster starts a throwaway PostgreSQL cluster in dir on port with
// scripts/localpg.sh and returns its URL. Tests that stop or restart
// PostgreSQL use one of these, never the shared server.
func StartCluster(dir string, port int) (string, error) {
	cmd := exec.Command("bash", filepath.Join(ProjectRoot(), "scripts", "localpg.sh"), "start")
	cmd.Env = append(os.Environ(),
		"RAZAO_PGDATA="+dir,
		fmt.Sprintf("RAZAO_PGPORT=%d", port),
		"RAZAO_PGDB=postgres",
		"RAZAO_PG_FAST=1")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("localpg.sh start: %w: %s", err, stderr.String())
	}
	return strings.TrimSpace(string(out)), nil
}

// StopCluster stops a cluster started by StartCluster.
func StopCluster(dir string, port int) error {
	cmd := exec.Command("bash", filepath.Join(ProjectRoot(), "scripts", "localpg.sh"), "stop")
	cmd.Env = append(os.Environ(), "RAZAO_PGDATA="+dir, fmt.Sprintf("RAZAO_PGPORT=%d", port))
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("localpg.sh stop: %w: %s", err, out)
	}
	return nil
}

func startLocalCluster() (string, error) {
	// Not t.TempDir: the directory must outlive one test and be traversable
	// by the postgres user when we run as root.
	dir, err := os.MkdirTemp("", "razao-pgtest-")
	if err != nil {
		return "", err
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		return "", err
	}
	return StartCluster(filepath.Join(dir, "data"), 54000+int(time.Now().UnixNano()%900))
}

// template creates, once per server and set of migrations and function
// files, a migrated database that each test's database is cloned from.
// Test binaries of several packages run at once, so creation is
// serialised by an advisory lock.
func template(base string) (string, error) {
	templateOnce.Do(func() { templateName, templateErr = buildTemplate(base) })
	return templateName, templateErr
}

func buildTemplate(base string) (string, error) {
	ms, err := razao.Migrations()
	if err != nil {
		return "", err
	}
	fs, err := razao.Functions()
	if err != nil {
		return "", err
	}
	h := sha256.New()
	// The migrator's own table too: its shape is the migrator's, not a
	// migration's.
	fmt.Fprintf(h, "%s\n", razao.MigrationsTableDDL)
	for _, m := range ms {
		fmt.Fprintf(h, "%s\n%s\n", m.Name, m.SQL)
	}
	// A changed function file is a new template too: the migrator
	// re-applies it, and every test must see it.
	for _, f := range fs {
		fmt.Fprintf(h, "%s\n%s\n", f.File(), f.SQL)
	}
	name := "razao_tmpl_" + hex.EncodeToString(h.Sum(nil))[:16]

	ctx := context.Background()
	admin, err := sqlx.Open("postgres", base)
	if err != nil {
		return "", err
	}
	defer admin.Close()
	conn, err := admin.Connx(ctx)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `SELECT pg_advisory_lock($1)`, razao.TestTemplateLockID); err != nil {
		return "", err
	}
	defer conn.ExecContext(ctx, `SELECT pg_advisory_unlock($1)`, razao.TestTemplateLockID)

	var exists bool
	if err := conn.GetContext(ctx, &exists, `SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)`, name); err != nil {
		return "", err
	}
	if exists {
		return name, nil
	}
	// Build under a scratch name and rename at the end, so a crash midway
	// never leaves a half-migrated template under the real name.
	scratch := name + "_wip"
	conn.ExecContext(ctx, fmt.Sprintf(`DROP DATABASE IF EXISTS %s WITH (FORCE)`, pq.QuoteIdentifier(scratch)))
	if _, err := conn.ExecContext(ctx, fmt.Sprintf(`CREATE DATABASE %s`, pq.QuoteIdentifier(scratch))); err != nil {
		return "", fmt.Errorf("create %s: %w", scratch, err)
	}
	db, err := razao.Open(ctx, WithDatabase(base, scratch))
	if err != nil {
		return "", err
	}
	_, err = razao.Migrate(ctx, db)
	db.Close()
	if err != nil {
		return "", fmt.Errorf("migrate template: %w", err)
	}
	if _, err := conn.ExecContext(ctx, fmt.Sprintf(`ALTER DATABASE %s RENAME TO %s`, pq.QuoteIdentifier(scratch), pq.QuoteIdentifier(name))); err != nil {
		return "", fmt.Errorf("rename template: %w", err)
	}
	return name, nil
}

func randomSuffix() string {
	var b [6]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
