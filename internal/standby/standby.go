// Package standby starts, for a test, a throwaway PostgreSQL primary and a
// streaming standby of it (pg_basebackup -R into a second cluster on this
// machine), and does to them what the tests of reads from a replica and
// of losing the primary need: pause replay, wait for it, measure the lag,
// kill -9 the primary, promote the standby. Both clusters are stopped and
// their directories removed when the test ends, whatever happened.
//
// PostgreSQL refuses to run as root: when the tests run as root, the
// clusters belong to, and every server tool runs as, an unprivileged user
// ($RAZAO_PG_USER, else postgres, else razao-pg), as scripts/localpg.sh
// does; their directory is then one that user can traverse (0755).
package standby

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"
	_ "github.com/lib/pq" // the driver the checks connect with

	"github.com/razao/razao/internal/pgtest"
)

// Options shapes the pair.
type Options struct {
	// Sync makes the standby synchronous: synchronous_standby_names names
	// it and synchronous_commit is on, so a commit the primary confirmed
	// is flushed on the standby too (what losing the primary must not
	// lose).
	Sync bool
	// Fsync keeps fsync on. Off by default: the tests kill PostgreSQL's
	// processes (kill -9), never the machine, and the page cache survives
	// a killed process, so fsync would only make them slower.
	Fsync bool
}

// Node is one of the two clusters.
type Node struct {
	Name string
	Dir  string // its data directory
	Port int
	// URL is its maintenance database, postgres.
	URL string
}

// Pair is a primary and its streaming standby.
type Pair struct {
	Primary, Standby *Node
	root             string
	bin              string
	cred             *syscall.Credential // nil: the tools run as ourselves
	t                testing.TB
}

// slot is the primary's physical replication slot: the primary keeps the
// WAL the standby has not received, however far behind it falls.
const slot = "standby_slot"

// Start starts the pair and returns once the standby streams from the
// primary. Everything it started is stopped when t ends.
func Start(t testing.TB, opts Options) *Pair {
	t.Helper()
	p, err := start(t, opts)
	if err != nil {
		t.Fatalf("standby: %v", err)
	}
	return p
}

func start(t testing.TB, opts Options) (*Pair, error) {
	initdb, err := pgtest.ServerTool("initdb")
	if err != nil {
		return nil, fmt.Errorf("no initdb: %w", err)
	}
	// Short, under /tmp, and 0755: its owner must be able to reach it.
	root, err := os.MkdirTemp("", "rzsb-")
	if err != nil {
		return nil, err
	}
	if err := os.Chmod(root, 0o755); err != nil {
		os.RemoveAll(root)
		return nil, err
	}
	p := &Pair{root: root, bin: filepath.Dir(initdb), t: t}
	t.Cleanup(p.close)
	if p.cred, err = runAs(); err != nil {
		return nil, err
	}
	if p.cred != nil {
		if err := os.Chown(root, int(p.cred.Uid), int(p.cred.Gid)); err != nil {
			return nil, err
		}
	}
	ports := [2]int{}
	for i := range ports {
		if ports[i], err = pgtest.FreePort(); err != nil {
			return nil, err
		}
	}
	if ports[0] == ports[1] {
		ports[1]++
	}
	p.Primary = &Node{Name: "primary", Dir: filepath.Join(root, "primary"), Port: ports[0]}
	p.Standby = &Node{Name: "standby", Dir: filepath.Join(root, "standby"), Port: ports[1]}
	for _, n := range []*Node{p.Primary, p.Standby} {
		n.URL = fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", n.Port)
	}
	if err := p.run("initdb", "-D", p.Primary.Dir, "-U", "postgres", "--auth=trust", "--encoding=UTF8", "--locale=C", "--no-sync"); err != nil {
		return nil, err
	}
	fsync := "off"
	if opts.Fsync {
		fsync = "on"
	}
	sync := ""
	if opts.Sync {
		// The standby's walreceiver reports its cluster_name as its
		// application_name.
		sync = "standby"
	}
	conf := fmt.Sprintf(`
# internal/standby
listen_addresses = '127.0.0.1'
port = %d
unix_socket_directories = ''
wal_level = replica
max_wal_senders = 4
max_replication_slots = 4
hot_standby = on
hot_standby_feedback = on
wal_receiver_status_interval = 1s
fsync = %s
synchronous_commit = on
synchronous_standby_names = '%s'
shared_buffers = 32MB
max_connections = 120
cluster_name = 'primary'
`, p.Primary.Port, fsync, sync)
	if err := appendFile(filepath.Join(p.Primary.Dir, "postgresql.conf"), conf); err != nil {
		return nil, err
	}
	hba := "host all all 127.0.0.1/32 trust\nhost replication all 127.0.0.1/32 trust\n"
	if err := os.WriteFile(filepath.Join(p.Primary.Dir, "pg_hba.conf"), []byte(hba), 0o600); err != nil {
		return nil, err
	}
	if p.cred != nil {
		os.Chown(filepath.Join(p.Primary.Dir, "pg_hba.conf"), int(p.cred.Uid), int(p.cred.Gid))
	}
	if err := p.startNode(p.Primary); err != nil {
		return nil, err
	}
	// -R writes primary_conninfo and standby.signal; -C -S the slot.
	if err := p.run("pg_basebackup", "-D", p.Standby.Dir, "-h", "127.0.0.1", "-p", strconv.Itoa(p.Primary.Port), "-U", "postgres",
		"-R", "-C", "-S", slot, "-X", "stream", "--no-sync", "-c", "fast"); err != nil {
		return nil, err
	}
	// The copied postgresql.conf is the primary's: the last line wins.
	// No synchronous standby of its own: once promoted, it would wait
	// for one that does not exist.
	if err := appendFile(filepath.Join(p.Standby.Dir, "postgresql.conf"), fmt.Sprintf(`
port = %d
cluster_name = 'standby'
synchronous_standby_names = ''
`, p.Standby.Port)); err != nil {
		return nil, err
	}
	if err := p.startNode(p.Standby); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := p.waitStreaming(ctx); err != nil {
		return nil, err
	}
	return p, nil
}

// runAs is who the server tools run as: nil (ourselves) unless we are
// root, which PostgreSQL refuses.
func runAs() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	var names []string
	if n := os.Getenv("RAZAO_PG_USER"); n != "" {
		names = append(names, n)
	}
	names = append(names, "postgres", "razao-pg")
	for _, n := range names {
		u, err := user.Lookup(n)
		if err != nil || u.Uid == "0" {
			continue
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
	}
	return nil, fmt.Errorf("running as root and none of the users %s exists to run PostgreSQL (it refuses root): create one or set RAZAO_PG_USER", strings.Join(names, ", "))
}

// run runs a server tool of the pair's PostgreSQL as the clusters' owner.
func (p *Pair) run(tool string, args ...string) error {
	cmd := exec.Command(filepath.Join(p.bin, tool), args...)
	cmd.Dir = "/"
	cmd.Env = append(os.Environ(), "LC_ALL=C", "PGCONNECT_TIMEOUT=5")
	if p.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: p.cred}
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%s %s: %w\n%s", tool, strings.Join(args, " "), err, out)
	}
	return nil
}

func (p *Pair) startNode(n *Node) error {
	log := filepath.Join(p.root, n.Name+".log")
	if err := p.run("pg_ctl", "start", "-D", n.Dir, "-l", log, "-w", "-t", "60"); err != nil {
		b, _ := os.ReadFile(log)
		return fmt.Errorf("%w\nserver log:\n%s", err, tail(string(b), 25))
	}
	return nil
}

// StartStandby starts the standby again after StopStandby.
func (p *Pair) StartStandby() error { return p.startNode(p.Standby) }

// StopStandby stops the standby (fast shutdown).
func (p *Pair) StopStandby() error {
	return p.run("pg_ctl", "stop", "-D", p.Standby.Dir, "-m", "fast", "-w", "-t", "60")
}

// KillPrimary kills the primary's postmaster with SIGKILL, as a crash
// would: nothing is flushed, no client is told. Its backends notice
// their postmaster is gone and exit.
func (p *Pair) KillPrimary() error {
	pid, err := postmasterPID(p.Primary.Dir)
	if err != nil {
		return err
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		return fmt.Errorf("kill -9 the primary (pid %d): %w", pid, err)
	}
	return nil
}

// Promote makes the standby a primary (pg_ctl promote) and waits until it
// accepts writes.
func (p *Pair) Promote(ctx context.Context) error {
	if err := p.run("pg_ctl", "promote", "-D", p.Standby.Dir, "-w", "-t", "60"); err != nil {
		return err
	}
	db, err := sqlx.Open("postgres", p.Standby.URL)
	if err != nil {
		return err
	}
	defer db.Close()
	return poll(ctx, func() (bool, error) {
		var recovering bool
		err := db.GetContext(ctx, &recovering, `SELECT pg_is_in_recovery()`)
		return err == nil && !recovering, nil
	})
}

// PauseReplay pauses the standby's replay of WAL: it goes on receiving,
// and falls behind. ResumeReplay lets it catch up.
func (p *Pair) PauseReplay(ctx context.Context) error {
	return p.onStandby(ctx, `SELECT pg_wal_replay_pause()`)
}

// ResumeReplay resumes the standby's replay.
func (p *Pair) ResumeReplay(ctx context.Context) error {
	return p.onStandby(ctx, `SELECT pg_wal_replay_resume()`)
}

func (p *Pair) onStandby(ctx context.Context, q string) error {
	db, err := sqlx.Open("postgres", p.Standby.URL)
	if err != nil {
		return err
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, q); err != nil {
		return fmt.Errorf("standby: %s: %w", q, err)
	}
	return nil
}

// Lag is how far the standby is behind the primary.
type Lag struct {
	// Bytes of WAL the primary has written that the standby has not
	// replayed.
	Bytes int64
	// Replayed is when the last transaction the standby replayed
	// committed on the primary; zero when it replayed none since start.
	Replayed time.Time
}

// Lag measures the standby's lag now.
func (p *Pair) Lag(ctx context.Context) (Lag, error) {
	var lag Lag
	primary, err := p.primaryLSN(ctx)
	if err != nil {
		return lag, err
	}
	db, err := sqlx.Open("postgres", p.Standby.URL)
	if err != nil {
		return lag, err
	}
	defer db.Close()
	var replayed *time.Time
	err = db.QueryRowContext(ctx, `SELECT greatest(0, pg_wal_lsn_diff($1::pg_lsn, pg_last_wal_replay_lsn()))::bigint, pg_last_xact_replay_timestamp()`,
		primary).Scan(&lag.Bytes, &replayed)
	if err != nil {
		return lag, fmt.Errorf("standby lag: %w", err)
	}
	if replayed != nil {
		lag.Replayed = *replayed
	}
	return lag, nil
}

func (p *Pair) primaryLSN(ctx context.Context) (string, error) {
	db, err := sqlx.Open("postgres", p.Primary.URL)
	if err != nil {
		return "", err
	}
	defer db.Close()
	var lsn string
	if err := db.GetContext(ctx, &lsn, `SELECT pg_current_wal_lsn()::text`); err != nil {
		return "", fmt.Errorf("primary wal position: %w", err)
	}
	return lsn, nil
}

// WaitReplay waits until the standby has replayed everything the primary
// had written when it was called.
func (p *Pair) WaitReplay(ctx context.Context) error {
	lsn, err := p.primaryLSN(ctx)
	if err != nil {
		return err
	}
	db, err := sqlx.Open("postgres", p.Standby.URL)
	if err != nil {
		return err
	}
	defer db.Close()
	return poll(ctx, func() (bool, error) {
		var done bool
		err := db.GetContext(ctx, &done, `SELECT pg_last_wal_replay_lsn() >= $1::pg_lsn`, lsn)
		return done, err
	})
}

// waitStreaming waits until the primary sees the standby streaming (and,
// when synchronous, as its synchronous standby).
func (p *Pair) waitStreaming(ctx context.Context) error {
	db, err := sqlx.Open("postgres", p.Primary.URL)
	if err != nil {
		return err
	}
	defer db.Close()
	err = poll(ctx, func() (bool, error) {
		var n int
		err := db.GetContext(ctx, &n, `SELECT count(*) FROM pg_stat_replication
			WHERE state = 'streaming' AND (current_setting('synchronous_standby_names') = '' OR sync_state = 'sync')`)
		return n == 1, err
	})
	if err != nil {
		return fmt.Errorf("the standby did not stream: %w", err)
	}
	return nil
}

// DatabaseURL is the URL of database name on node n.
func (n *Node) DatabaseURL(name string) string { return pgtest.WithDatabase(n.URL, name) }

// poll calls done every 50 ms until it says so, fails, or ctx ends.
func poll(ctx context.Context, done func() (bool, error)) error {
	for {
		ok, err := done()
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// close stops both clusters (immediate: nothing in them is kept) and
// removes their directory. A server pg_ctl cannot stop is killed.
func (p *Pair) close() {
	for _, n := range []*Node{p.Standby, p.Primary} {
		if n == nil {
			continue
		}
		pid, err := postmasterPID(n.Dir)
		if err != nil {
			continue // never started, or gone
		}
		if err := p.run("pg_ctl", "stop", "-D", n.Dir, "-m", "immediate", "-w", "-t", "30"); err != nil {
			if syscall.Kill(pid, 0) == nil {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	}
	if p.t.Failed() {
		for _, n := range []string{"primary", "standby"} {
			if b, err := os.ReadFile(filepath.Join(p.root, n+".log")); err == nil {
				p.t.Logf("standby: %s server log, last lines:\n%s", n, tail(string(b), 20))
			}
		}
	}
	os.RemoveAll(p.root)
}

// postmasterPID reads the postmaster's pid from postmaster.pid, the
// file's first line.
func postmasterPID(dir string) (int, error) {
	b, err := os.ReadFile(filepath.Join(dir, "postmaster.pid"))
	if err != nil {
		return 0, err
	}
	first, _, _ := strings.Cut(string(b), "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(first))
	if err != nil || pid <= 0 {
		return 0, errors.New("postmaster.pid: no pid on its first line")
	}
	return pid, nil
}

func appendFile(path, s string) error {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(s); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
