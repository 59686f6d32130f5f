package pgtest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/binary"
	"fmt"
	"regexp"
	"sync"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
	"github.com/razao/razao"
)

// Why the test databases are dropped in batches, after their tests:
// PostgreSQL (15) forces an immediate checkpoint for every DROP DATABASE,
// and that checkpoint writes and fsyncs every other test database the
// server holds at that moment (each ~650 files when fresh). Dropped one
// by one in each test's cleanup, on a server with fsync on (CI's), the
// drops took about a third of the console's test time, each test waiting
// for a checkpoint of the others' databases. Drops issued together share
// a checkpoint, and a database dropped before any checkpoint wrote it is
// never written at all. So a test's database is handed to its test
// binary's run, which drops its databases dropBatch at a time, together,
// in the background.
//
// A test binary cannot be told it is about to exit, so up to dropBatch
// databases are left when it does. Each run holds an advisory lock for as
// long as its process lives, and its id is in its databases' names; the
// next run on the server (another package's test binary in the same `go
// test ./...`, or the next test run) drops the databases of runs whose
// lock is free, that is whose process has ended. A database kept by
// RAZAO_KEEP_TEST_DB carries a comment that keeps it from that sweep.

// dropBatch is how many databases a run drops together, dropConns
// drops at a time (a few connections of the server's, briefly: the
// tests' own connections come first).
const (
	dropBatch = 8
	dropConns = 4
)

// runLockClass is the first key of the runs' advisory locks, in the
// two-key form (pg_advisory_lock(int, int)), whose keys never collide
// with the one-key ids of razao.go; the second key is the run's id.
const runLockClass = razao.TestRunLockClass

// keptComment marks a database RAZAO_KEEP_TEST_DB kept.
const keptComment = "pgtest: kept (RAZAO_KEEP_TEST_DB)"

// runDatabase is the name of a run's test database: the run's id, then
// the database's own random part.
var runDatabase = regexp.MustCompile(`^razao_test_([0-9a-f]{8})_[0-9a-f]+$`)

// run is this test binary's use of the server: the lock that says it is
// alive, and the databases it has yet to drop.
type run struct {
	id    uint32
	admin *sqlx.DB  // creates the databases
	drops *sqlx.DB  // drops them, dropConns at a time
	lock  *sql.Conn // holds the run's advisory lock until the process ends

	lockMu sync.Mutex // lock is one session: one query at a time

	mu       sync.Mutex
	pending  []string
	dropping bool
}

var (
	runOnce sync.Once
	theRunV *run
	runErr  error
)

// theRun returns this process's run on the server at base, starting it
// (and a sweep of the databases of runs that have ended) on first use.
func theRun(base string) (*run, error) {
	runOnce.Do(func() { theRunV, runErr = startRun(base) })
	return theRunV, runErr
}

func startRun(base string) (*run, error) {
	admin, err := sqlx.Open("postgres", base)
	if err != nil {
		return nil, err
	}
	drops, err := sqlx.Open("postgres", base)
	if err != nil {
		admin.Close()
		return nil, err
	}
	drops.SetMaxOpenConns(dropConns)
	ctx := context.Background()
	r := &run{admin: admin, drops: drops}
	if r.lock, err = admin.Conn(ctx); err != nil {
		admin.Close()
		drops.Close()
		return nil, err
	}
	for {
		var b [4]byte
		rand.Read(b[:])
		r.id = binary.BigEndian.Uint32(b[:]) & 0x7fffffff
		var got bool
		if err := r.lock.QueryRowContext(ctx, `SELECT pg_try_advisory_lock($1, $2)`, runLockClass, int32(r.id)).Scan(&got); err != nil {
			r.lock.Close()
			admin.Close()
			drops.Close()
			return nil, fmt.Errorf("take the run's lock: %w", err)
		}
		if got {
			break
		}
	}
	go r.sweep()
	return r, nil
}

func (r *run) databaseName() string {
	return fmt.Sprintf("razao_test_%08x_%s", r.id, randomSuffix())
}

// release hands a test's database, no longer used, to be dropped.
func (r *run) release(name string) {
	r.mu.Lock()
	r.pending = append(r.pending, name)
	r.mu.Unlock()
	r.dropSome()
}

// dropSome starts dropping a batch if one is full and none is being
// dropped.
func (r *run) dropSome() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.dropping || len(r.pending) < dropBatch {
		return
	}
	batch := r.pending
	r.pending = nil
	r.dropping = true
	go func() {
		dropAll(r.drops, batch)
		r.mu.Lock()
		r.dropping = false
		r.mu.Unlock()
		r.dropSome()
	}()
}

// dropAll drops the databases, together (as many at once as the pool
// lets) so that their drops share checkpoints. A failure leaves the
// database to a later sweep.
func dropAll(drops *sqlx.DB, names []string) {
	var wg sync.WaitGroup
	for _, name := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			drops.ExecContext(ctx, fmt.Sprintf(`DROP DATABASE IF EXISTS %s WITH (FORCE)`, pq.QuoteIdentifier(name)))
		}()
	}
	wg.Wait()
}

// sweep drops the databases of runs that have ended (their lock is free),
// except the kept ones.
func (r *run) sweep() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var names []string
	err := r.admin.SelectContext(ctx, &names, `SELECT datname FROM pg_database
		WHERE datname LIKE 'razao\_test\_%' AND shobj_description(oid, 'pg_database') IS DISTINCT FROM $1`, keptComment)
	if err != nil {
		return
	}
	ended := map[string]bool{}
	var orphans []string
	for _, name := range names {
		m := runDatabase.FindStringSubmatch(name)
		if m == nil || m[1] == fmt.Sprintf("%08x", r.id) {
			continue
		}
		dead, seen := ended[m[1]]
		if !seen {
			var id uint32
			fmt.Sscanf(m[1], "%08x", &id)
			dead = r.runEnded(ctx, id)
			ended[m[1]] = dead
		}
		if dead {
			orphans = append(orphans, name)
		}
	}
	for len(orphans) > 0 {
		n := min(len(orphans), dropBatch)
		dropAll(r.drops, orphans[:n])
		orphans = orphans[n:]
	}
}

// runEnded says whether run id's process has ended: its lock is free.
// The lock is taken on the run's own connection and given back at once.
func (r *run) runEnded(ctx context.Context, id uint32) bool {
	r.lockMu.Lock()
	defer r.lockMu.Unlock()
	var free bool
	if err := r.lock.QueryRowContext(ctx, `SELECT pg_try_advisory_lock($1, $2)`, runLockClass, int32(id)).Scan(&free); err != nil || !free {
		return false
	}
	r.lock.ExecContext(ctx, `SELECT pg_advisory_unlock($1, $2)`, runLockClass, int32(id))
	return true
}

// keep marks a database RAZAO_KEEP_TEST_DB keeps, so that no sweep
// drops it.
func (r *run) keep(name string) error {
	_, err := r.admin.Exec(fmt.Sprintf(`COMMENT ON DATABASE %s IS %s`, pq.QuoteIdentifier(name), pq.QuoteLiteral(keptComment)))
	return err
}
