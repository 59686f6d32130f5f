package razao_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/razao/razao"
	"github.com/razao/razao/internal/pgtest"
	"github.com/razao/razao/verify"
)

// oldNames are the names migrations had before they were renamed for what
// they do; databases migrated then record these in schema_migrations.
var oldNames = map[int]string{
	2: "0002_webhooks.sql",
	3: "0003_reports.sql",
	4: "0004_tokens.sql",
	5: "0005_exports.sql",
	9: "0009_review_fixes.sql",
}

// TestDatabaseMigratedUnderOldNamesMigratesCleanly: versions are recorded
// by number, so a database whose first twelve migrations were applied
// under their old names takes only the rest, keeps its records, and is a
// complete, clean ledger by CheckSchema and verify.
func TestDatabaseMigratedUnderOldNamesMigratesCleanly(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := emptyDatabase(t)
	ms, err := razao.Migrations()
	if err != nil {
		t.Fatal(err)
	}
	for v, name := range oldNames {
		i := slices.IndexFunc(ms, func(m razao.Migration) bool { return m.Version == v })
		if i < 0 {
			t.Fatalf("no migration %d", v)
		}
		if ms[i].Name == name {
			t.Fatalf("migration %d is still named %s", v, name)
		}
	}
	// What the old binary did for versions 1..12: apply each file and
	// record it under the name it had.
	db.MustExec(`CREATE TABLE schema_migrations (version integer PRIMARY KEY, name text NOT NULL,
		applied_at timestamptz NOT NULL DEFAULT now())`)
	var rest []string
	for _, m := range ms {
		if m.Version > 12 {
			rest = append(rest, m.Name)
			continue
		}
		name := m.Name
		if old, ok := oldNames[m.Version]; ok {
			name = old
		}
		tx := db.MustBegin()
		tx.MustExec(m.SQL)
		tx.MustExec(`INSERT INTO schema_migrations (version, name) VALUES ($1, $2)`, m.Version, name)
		if err := tx.Commit(); err != nil {
			t.Fatalf("%s: %v", m.Name, err)
		}
	}
	applied, err := razao.Migrate(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(applied, rest) {
		t.Errorf("applied %v, want only %v", applied, rest)
	}
	if again, err := razao.Migrate(ctx, db); err != nil || len(again) != 0 {
		t.Errorf("second migrate: %v, %v", again, err)
	}
	if err := razao.CheckSchema(ctx, db); err != nil {
		t.Errorf("CheckSchema: %v", err)
	}
	var recorded string
	db.Get(&recorded, `SELECT name FROM schema_migrations WHERE version = 9`)
	if recorded != oldNames[9] {
		t.Errorf("version 9 recorded as %q, want its old record %q kept", recorded, oldNames[9])
	}
	r, err := verify.Run(ctx, db)
	if err != nil || !r.OK() {
		t.Errorf("verify: %v %+v", err, r)
	}
}

// emptyDatabase creates a database with no schema at all, dropped at the
// end of the test.
func emptyDatabase(t *testing.T) *sqlx.DB {
	t.Helper()
	admin := pgtest.New(t) // any connection to the server will do
	name := fmt.Sprintf("razao_old_names_%d", time.Now().UnixNano())
	admin.MustExec(`CREATE DATABASE ` + pq.QuoteIdentifier(name))
	t.Cleanup(func() { admin.Exec(`DROP DATABASE IF EXISTS ` + pq.QuoteIdentifier(name) + ` WITH (FORCE)`) })
	db, err := razao.Open(context.Background(), pgtest.WithDatabase(pgtest.ServerURL(t), name))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// Migrate took an advisory lock every time, which any role that can
// connect may take too and hold in an idle session: every later migrate
// (a replica's start, razao migrate) then waited for ever. Now only the
// first migration of an empty database takes it; a migrate of a database
// that has schema_migrations locks that table, which only the owner can.
func TestMigrateIsNotHeldUpByAnAdvisoryLock(t *testing.T) {
	t.Parallel()
	db := emptyDatabase(t)
	if _, err := razao.Migrate(context.Background(), db); err != nil {
		t.Fatal(err)
	}
	holder, err := db.Connx(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	if _, err := holder.ExecContext(context.Background(), `SELECT pg_advisory_lock($1)`, razao.MigrationLockID); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	applied, err := razao.Migrate(ctx, db)
	if err != nil || len(applied) != 0 {
		t.Fatalf("migrate beside a held advisory lock: applied %v, %v; want nothing to apply, at once", applied, err)
	}
}

// Replicas starting together on one database apply each migration once:
// the lock on schema_migrations is what makes them take turns now.
func TestMigratorsTakeTurnsOnSchemaMigrations(t *testing.T) {
	t.Parallel()
	db := emptyDatabase(t)
	errs := make(chan error, 4)
	for range 4 {
		go func() {
			_, err := razao.Migrate(context.Background(), db)
			errs <- err
		}()
	}
	for range 4 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	ms, _ := razao.Migrations()
	var n int
	if err := db.Get(&n, `SELECT count(*) FROM schema_migrations`); err != nil || n != len(ms) {
		t.Fatalf("%d migrations recorded (%v), want %d", n, err, len(ms))
	}
}

// A binary from before the lock on schema_migrations takes only the
// advisory lock: while a migration is being applied, this one holds that
// lock too when it was free, so such a binary waits. The gate: a
// transaction holds schema_migrations until Migrate waits on it.
func TestMigrateHoldsTheAdvisoryLockWhileApplying(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := emptyDatabase(t)
	db.MustExec(`CREATE TABLE schema_migrations (version integer PRIMARY KEY, name text NOT NULL,
		applied_at timestamptz NOT NULL DEFAULT now())`)
	gate := db.MustBegin()
	defer gate.Rollback()
	gate.MustExec(`LOCK TABLE schema_migrations IN SHARE ROW EXCLUSIVE MODE`)
	done := make(chan error, 1)
	go func() {
		_, err := razao.Migrate(ctx, db)
		done <- err
	}()
	deadline := time.Now().Add(30 * time.Second) // a safety net
	for {
		var waiting bool
		if err := db.Get(&waiting, `SELECT EXISTS (SELECT 1 FROM pg_locks WHERE relation = 'schema_migrations'::regclass AND NOT granted)`); err != nil {
			t.Fatal(err)
		}
		if waiting {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("Migrate never waited on schema_migrations")
		}
		time.Sleep(5 * time.Millisecond)
	}
	var free bool
	if err := db.Get(&free, `SELECT pg_try_advisory_xact_lock($1)`, razao.MigrationLockID); err != nil {
		t.Fatal(err)
	}
	if free {
		t.Error("the advisory lock was free while a migration waited to be applied: an older binary would not wait")
	}
	gate.Rollback()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
