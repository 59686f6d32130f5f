package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/razao/razao/internal/pgtest"
	"github.com/razao/razao/verify"
)

// A month's partitions moved to slower storage as docs/partitions.md
// says (ALTER TABLE ... SET TABLESPACE, then each index) keep every row
// and every guard: the barrier is the triggers, not the storage. The
// moved partition still refuses each change of what it holds, whether
// written by name or through its parent, the service role still books
// into its month through the parents, and verify finds nothing new.
func TestAMonthMovedToAnotherTablespaceKeepsItsRowsAndItsBarrier(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newBarrierEnv(t)

	// The tablespace's directory must belong to the server's user: the
	// server is on this machine (the tests' own), and the test can give
	// it a directory only as root or as that user.
	var dataDir string
	if err := e.owner.Get(&dataDir, `SHOW data_directory`); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(dataDir)
	if err != nil {
		t.Skipf("the server's data directory is not on this machine (%v): a tablespace needs a directory the server can write", err)
	}
	owner := st.Sys().(*syscall.Stat_t)
	dir, err := os.MkdirTemp("", "razao-tablespace-")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(dir, int(owner.Uid), int(owner.Gid)); err != nil {
		os.RemoveAll(dir)
		t.Skipf("cannot give the server's user (uid %d) a directory: %v", owner.Uid, err)
	}
	var dbName string
	if err := e.owner.Get(&dbName, `SELECT current_database()`); err != nil {
		t.Fatal(err)
	}
	ts := "slow_" + dbName // tablespaces are the cluster's: one per test database
	e.owner.MustExec(fmt.Sprintf(`CREATE TABLESPACE %s LOCATION %s`, pq.QuoteIdentifier(ts), pq.QuoteLiteral(dir)))
	// The test's database is dropped here, not later with the others
	// (internal/pgtest drops them in batches): its files in the
	// tablespace, and their dirty pages in the server's shared buffers,
	// must be gone before the directory is. A page of a removed file
	// that the server later evicts fails every backend that evicts it.
	// The directory is removed only once the tablespace is dropped.
	server := pgtest.ServerURL(t)
	t.Cleanup(func() {
		admin, err := sqlx.Open("postgres", server)
		if err != nil {
			t.Errorf("drop tablespace %s: %v", ts, err)
			return
		}
		defer admin.Close()
		for _, stmt := range []string{`DROP DATABASE IF EXISTS ` + pq.QuoteIdentifier(dbName) + ` WITH (FORCE)`,
			`DROP TABLESPACE IF EXISTS ` + pq.QuoteIdentifier(ts)} {
			if _, err := admin.Exec(stmt); err != nil {
				t.Errorf("%s: %v (the directory %s is left)", stmt, err, dir)
				return
			}
		}
		os.RemoveAll(dir)
	})

	// A month with a partition of its own and a set in it.
	sets := e.firstMonthPartition(t)
	legs := strings.Replace(sets, "posting_sets", "postings", 1)
	first := strings.Replace(strings.TrimPrefix(sets, "posting_sets_"), "_", "-", 1) + "-01"
	day := first[:8] + "10"
	tx := e.owner.MustBegin()
	if err := rawSetIn(tx, "before-the-move", day); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	before := e.count(t, `SELECT count(*) FROM `+legs)
	breachedBefore := breachedChecks(t, ctx, e)

	// The move, as docs/partitions.md prints it.
	for _, table := range []string{sets, legs} {
		e.owner.MustExec(fmt.Sprintf(`ALTER TABLE %s SET TABLESPACE %s`, pq.QuoteIdentifier(table), pq.QuoteIdentifier(ts)))
		var indexes []string
		if err := e.owner.Select(&indexes, `SELECT indexrelid::regclass::text FROM pg_index WHERE indrelid = $1::regclass`, table); err != nil {
			t.Fatal(err)
		}
		for _, ix := range indexes {
			e.owner.MustExec(fmt.Sprintf(`ALTER INDEX %s SET TABLESPACE %s`, ix, pq.QuoteIdentifier(ts)))
		}
	}
	var moved int
	if err := e.owner.Get(&moved, `SELECT count(*) FROM pg_class c JOIN pg_tablespace s ON s.oid = c.reltablespace
		WHERE s.spcname = $1 AND (c.oid IN ($2::regclass, $3::regclass)
			OR c.oid IN (SELECT indexrelid FROM pg_index WHERE indrelid IN ($2::regclass, $3::regclass)))`, ts, sets, legs); err != nil {
		t.Fatal(err)
	}
	var want int
	if err := e.owner.Get(&want, `SELECT 2 + count(*) FROM pg_index WHERE indrelid IN ($1::regclass, $2::regclass)`, sets, legs); err != nil {
		t.Fatal(err)
	}
	if moved != want || moved < 4 {
		t.Fatalf("%d of the month's tables and indexes are in %s, want all %d", moved, ts, want)
	}
	if n := e.count(t, `SELECT count(*) FROM `+legs); n != before {
		t.Fatalf("%d postings in %s after the move, want the %d from before", n, legs, before)
	}

	row := `(SELECT id FROM posting_sets WHERE idempotency_key = 'before-the-move')`
	for _, c := range []struct{ name, step, want string }{
		{"UPDATE a set by name", `UPDATE ` + sets + ` SET amount = amount + 1 WHERE id = ` + row, "trg_posting_sets_append_only"},
		{"DELETE a set through the parent", `DELETE FROM posting_sets WHERE id = ` + row, "trg_posting_sets_append_only"},
		{"UPDATE a posting by name", `UPDATE ` + legs + ` SET amount = 0 WHERE posting_set_id = ` + row, "trg_postings_append_only"},
		{"TRUNCATE the month's postings", `TRUNCATE ` + legs, "trg_postings_no_truncate"},
		{"legs added to its sealed set", legsSQL(row, first, "assets:cash", "equity:adjustments", 7), "trg_postings_sealed_set"},
	} {
		if got := refusal(e.ownerAttack(t, c.step)); got != c.want {
			t.Errorf("%s, as the owner: %s, want refused by %s", c.name, got, c.want)
		}
	}

	// The service role books into the moved month through the parents.
	svc := e.svc.MustBegin()
	if err := rawSetIn(svc, "after-the-move", day); err != nil {
		t.Fatalf("a set in the moved month, as the service role: %v", err)
	}
	if err := svc.Commit(); err != nil {
		t.Fatal(err)
	}
	var where string
	if err := e.owner.Get(&where, `SELECT tableoid::regclass::text FROM posting_sets WHERE idempotency_key = 'after-the-move'`); err != nil {
		t.Fatal(err)
	}
	if where != sets {
		t.Errorf("the set booked after the move is in %s, want %s", where, sets)
	}

	// verify names the same breaches as before the move, and no other:
	// the barrier env's sets are raw (a sale of no registered charge, a
	// set months ahead), which verify rightly names, moved or not.
	if got := breachedChecks(t, ctx, e); got != breachedBefore {
		t.Errorf("razao verify after the move names %q, want only what it named before: %q", got, breachedBefore)
	}
}

// breachedChecks is the names of the checks razao verify finds breached.
func breachedChecks(t *testing.T, ctx context.Context, e *barrierEnv) string {
	t.Helper()
	report, err := verify.Run(ctx, e.owner)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range report.Checks {
		if c.Breaches > 0 {
			names = append(names, c.Name)
		}
	}
	return strings.Join(names, "; ")
}
