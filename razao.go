// Package razao holds what every part of the ledger service shares: the
// embedded SQL migrations and function files, and the way to open and
// migrate a database.
//
// Each database function is one file, sql/functions/<name>.sql, with its
// reasons: to change a function, edit its file, and the migrator applies
// it again (its hash changed). Numbered migrations, sql/NNNN_*.sql, keep
// tables, indexes, constraints, triggers, grants and data moves, one topic
// each, and never define a function (sql/functions/README.md).
//
// The domain lives in plain packages named for what they hold (the Layout
// table of docs/ledger.md has one line each): accounts, postings, periods, charges,
// partners, divergences, webhook, events, reports, exports, verify. api and cmd/razao
// are the edges that wire them together. docs/schema.sql is the schema the
// migrations build, readable in one place.
package razao

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	neturl "net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/XSAM/otelsql"
	"github.com/jmoiron/sqlx"
	"github.com/lib/pq" // the PostgreSQL driver, registered as "postgres"
)

//go:embed sql/*.sql
var migrationFiles embed.FS

//go:embed docs/schema.sql
var schemaDump string

// SchemaDump returns docs/schema.sql: the schema the migrations and the
// function files build, as PostgreSQL prints it (TestSchemaDumpIsCurrent
// keeps it so). verify holds the database's triggers to it.
func SchemaDump() string { return schemaDump }

// The advisory lock ids razao takes, all of them, so that none is reused:
// advisory locks share one namespace per database with every other client.
const (
	// MigrationLockID serialises migrations when several replicas start
	// at once.
	MigrationLockID = 7261_0001
	// TestTemplateLockID serialises the test harness's creation of its
	// migrated template database (internal/pgtest).
	TestTemplateLockID = 7261_0002
	// 7261_0003 was the month-close lock of sql/0007 and sql/0009,
	// replaced by the month_close_lock table (sql/0012) because any role
	// may take an advisory lock. Never reuse it.

	// TestRunLockClass is the first key of the test harness's per-run
	// locks (internal/pgtest), in the two-key form, the run's id the
	// second: a run's databases are dropped by a later run only once its
	// lock is free.
	TestRunLockClass = 7261_0004
	// ArchiveLockID is held by a retention run for its length (package
	// archive): two replicas, or a replica and `razao archive run`, never
	// archive at once.
	ArchiveLockID int64 = 0x72617a61_6f617263 // "razaoarc"
)

// Migration is one numbered SQL file from sql/.
type Migration struct {
	Version int
	Name    string
	SQL     string
	// OldestBinary is what a contract migration declares in its header
	// (-- razao: contract NNNN): the last migration of the oldest binary
	// that may still run once it is applied. 0: an expand migration,
	// which any binary that has its own migrations applied may run on.
	OldestBinary int
}

// Migrations returns the embedded migrations in the order they apply.
func Migrations() ([]Migration, error) {
	entries, err := fs.ReadDir(migrationFiles, "sql")
	if err != nil {
		return nil, fmt.Errorf("read embedded migrations: %w", err)
	}
	var ms []Migration
	for _, e := range entries {
		name := e.Name()
		prefix, _, ok := strings.Cut(name, "_")
		if !ok || !strings.HasSuffix(name, ".sql") {
			return nil, fmt.Errorf("migration %q: want NNNN_name.sql", name)
		}
		v, err := strconv.Atoi(prefix)
		if err != nil {
			return nil, fmt.Errorf("migration %q: version: %w", name, err)
		}
		body, err := fs.ReadFile(migrationFiles, "sql/"+name)
		if err != nil {
			return nil, fmt.Errorf("read migration %q: %w", name, err)
		}
		m := Migration{Version: v, Name: name, SQL: string(body)}
		if m.OldestBinary, err = parseContract(m); err != nil {
			return nil, err
		}
		ms = append(ms, m)
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].Version < ms[j].Version })
	for i := 1; i < len(ms); i++ {
		if ms[i].Version == ms[i-1].Version {
			return nil, fmt.Errorf("migrations %q and %q share version %d", ms[i-1].Name, ms[i].Name, ms[i].Version)
		}
	}
	return ms, nil
}

// DriverURL returns url with the driver settings razao relies on:
// binary_parameters makes lib/pq send a parameterised statement in one
// round trip (Parse, Bind, Execute) instead of two (it otherwise prepares
// first to learn the parameter types), which halves the round trips of
// every query; []byte arguments then travel as bytea, so JSON goes as text.
// A URL naming several hosts is rewritten as lib/pq can read it
// (multiHostDSN).
func DriverURL(raw string) string {
	hosts, oneHost, multi := splitHosts(raw)
	u, err := neturl.Parse(oneHost)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return raw // a key=value DSN: left as the operator wrote it
	}
	q := u.Query()
	if q.Get("binary_parameters") == "" {
		q.Set("binary_parameters", "yes")
	}
	if multi {
		return multiHostDSN(hosts, u, q)
	}
	u.RawQuery = q.Encode()
	return u.String()
}

// Open connects to the PostgreSQL database at url and checks it answers.
func Open(ctx context.Context, url string) (*sqlx.DB, error) {
	db, err := sqlx.Open("postgres", DriverURL(url))
	if err != nil {
		return nil, fmt.Errorf("open database: %w", err)
	}
	return pool(ctx, db)
}

// OpenTraced is Open through otelsql's wrapping of the driver, with opts
// (internal/tracing.SQLOptions): each statement whose context carries a
// span gets its own span under it. Only a service with tracing configured
// opens so; Open's connections pay nothing for it.
func OpenTraced(ctx context.Context, url string, opts ...otelsql.Option) (*sqlx.DB, error) {
	sqldb, err := otelsql.Open("postgres", DriverURL(url), opts...)
	if err != nil {
		return nil, fmt.Errorf("open database: %w", err)
	}
	return pool(ctx, sqlx.NewDb(sqldb, "postgres"))
}

// pool sizes db's connection pool and checks the database answers.
func pool(ctx context.Context, db *sqlx.DB) (*sqlx.DB, error) {
	db.SetMaxOpenConns(32)
	db.SetMaxIdleConns(32)
	db.SetConnMaxIdleTime(5 * time.Minute)
	pingCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := db.PingContext(pingCtx); err != nil {
		db.Close()
		return nil, fmt.Errorf("connect to database: %w", err)
	}
	return db, nil
}

// ErrSchema says the database lacks razao's schema, or part of it.
var ErrSchema = errors.New("database schema")

// CheckSchema tells a command that needs the ledger, before it runs a
// query that would fail with `relation "…" does not exist`, that the
// database has no razao schema or misses migrations or function files this
// binary embeds, and what to do. A role that may not read
// schema_migrations is let through: its queries will say what is wrong.
// So is a database a newer binary migrated: its functions are newer. A
// schema this binary must not run on (SchemaCompatibility: a contract
// migration's floor above it, another branch's migrations) is refused
// with ErrSchemaNewer.
func CheckSchema(ctx context.Context, db *sqlx.DB) error {
	var present bool
	if err := db.GetContext(ctx, &present, `SELECT to_regclass('schema_migrations') IS NOT NULL`); err != nil {
		return fmt.Errorf("check schema: %w", err)
	}
	if !present {
		return fmt.Errorf("%w: this database has no razao schema yet: run razao migrate", ErrSchema)
	}
	ms, err := Migrations()
	if err != nil {
		return err
	}
	if _, err := checkCompatible(ctx, db, ms); err != nil {
		return err
	}
	var applied []int
	if err := db.SelectContext(ctx, &applied, `SELECT version FROM schema_migrations`); err != nil {
		var pqErr *pq.Error
		if errors.As(err, &pqErr) && pqErr.Code == "42501" { // insufficient_privilege
			return nil
		}
		return fmt.Errorf("check schema: %w", err)
	}
	done := make(map[int]bool, len(applied))
	for _, v := range applied {
		done[v] = true
	}
	var missing []string
	for _, m := range ms {
		if !done[m.Version] {
			missing = append(missing, m.Name)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%w: %d migration(s) of this binary not applied (%s): run razao migrate",
			ErrSchema, len(missing), strings.Join(missing, ", "))
	}
	// A database a newer binary migrated has newer function files than
	// this one's: they are not for this binary to ask for.
	if ahead, err := functionsAhead(ctx, db, ms); err != nil || ahead {
		if err != nil {
			return fmt.Errorf("check schema: %w", err)
		}
		return nil
	}
	fs, err := Functions()
	if err != nil {
		return err
	}
	unapplied, err := unappliedFunctions(ctx, db, fs)
	if err != nil {
		return fmt.Errorf("check schema: %w", err)
	}
	if len(unapplied) > 0 {
		return fmt.Errorf("%w: %d function file(s) of this binary not applied (%s): run razao migrate",
			ErrSchema, len(unapplied), strings.Join(unapplied, ", "))
	}
	return nil
}

// Migrate applies every embedded migration not yet recorded in
// schema_migrations, then every function file of sql/functions whose
// function does not carry the file's hash, each in its own transaction,
// so that replicas starting together apply each file exactly once: a file
// is applied under a lock on schema_migrations, which only the owner (who
// may write it) can take. It returns the names of the files it applied
// (0043_x.sql, sql/functions/f.sql).
//
// A migration after LastMigrationWithFunctions that names a function the
// database does not have yet (a new trigger's EXECUTE FUNCTION, a GRANT)
// gets it created from its file first; every other function file is
// applied after the last migration. The migrator compares hashes only: a
// function changed by hand keeps the mark of the file it came from, and
// razao verify is what compares every function with its file. A binary
// older than the database (which records a migration it lacks) applies no
// function file at all: an old replica of a rolling deploy never puts an
// older body back; it applies no migration either, and refuses, before
// applying anything, a database that lacks one of its migrations (a
// history that is not its own) or that SchemaCompatibility refuses.
func Migrate(ctx context.Context, db *sqlx.DB) ([]string, error) {
	ms, err := Migrations()
	if err != nil {
		return nil, err
	}
	fs, err := Functions()
	if err != nil {
		return nil, err
	}
	return migrate(ctx, db, ms, fs)
}

func migrate(ctx context.Context, db *sqlx.DB, ms []Migration, fs []Function) ([]string, error) {
	conn, err := db.Connx(ctx)
	if err != nil {
		return nil, fmt.Errorf("migrate: get connection: %w", err)
	}
	defer conn.Close()
	if err := createMigrationsTable(ctx, conn); err != nil {
		return nil, err
	}
	// A binary from before the lock on schema_migrations takes only the
	// advisory lock: hold it too while migrating, when it is free, so that
	// such a binary starting at the same moment waits for this one. Never
	// wait for it: any role that can connect may hold it.
	var held bool
	if err := conn.GetContext(ctx, &held, `SELECT pg_try_advisory_lock($1)`, MigrationLockID); err != nil {
		return nil, fmt.Errorf("migrate: %w", err)
	}
	if held {
		defer conn.ExecContext(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1)`, MigrationLockID)
	}
	if err := addFloorColumn(ctx, conn); err != nil {
		return nil, err
	}
	// Nothing is applied to a schema this binary may not run on, nor
	// half of a migration history onto a newer one.
	compat, err := checkCompatible(ctx, conn, ms)
	if err != nil {
		return nil, err
	}
	ahead := compat.Ahead()
	if ahead {
		for _, m := range ms {
			recorded, err := migrationRecorded(ctx, conn, m)
			if err != nil {
				return nil, fmt.Errorf("migration %s: check: %w", m.Name, err)
			}
			if !recorded {
				return nil, fmt.Errorf("%w: the database is at %s, newer than this binary (%s), yet lacks this binary's %s: "+
					"it was not migrated by a release after this one. Nothing applied",
					ErrSchemaNewer, compat.DatabaseName, compat.BinaryName, m.Name)
			}
		}
	}
	var applied []string
	for _, m := range ms {
		if !ahead && m.Version > LastMigrationWithFunctions {
			recorded, err := migrationRecorded(ctx, conn, m)
			if err != nil {
				return applied, fmt.Errorf("migration %s: check: %w", m.Name, err)
			}
			if !recorded {
				created, err := createNamedFunctions(ctx, conn, m, ms, fs)
				applied = append(applied, created...)
				if err != nil {
					return applied, err
				}
			}
		}
		done, err := applyMigration(ctx, conn, m)
		if err != nil {
			return applied, err
		}
		if done {
			applied = append(applied, m.Name)
		}
	}
	if ahead {
		return applied, nil
	}
	for _, f := range fs {
		done, err := applyFunction(ctx, conn, f, ms)
		if err != nil {
			return applied, err
		}
		if done {
			applied = append(applied, f.File())
		}
	}
	return applied, nil
}

// createMigrationsTable creates schema_migrations in a database that has
// none yet. Two replicas starting together on an empty database would race
// on CREATE TABLE: there, and only there, they take turns on an advisory
// lock (a lock any role that can connect could hold: it can only ever
// hold up the first migration of a new database, never a restart).
func createMigrationsTable(ctx context.Context, conn *sqlx.Conn) error {
	var exists bool
	if err := conn.GetContext(ctx, &exists, `SELECT to_regclass('schema_migrations') IS NOT NULL`); err != nil {
		return fmt.Errorf("migrate: find schema_migrations: %w", err)
	}
	if exists {
		return nil
	}
	if _, err := conn.ExecContext(ctx, `SELECT pg_advisory_lock($1)`, MigrationLockID); err != nil {
		return fmt.Errorf("migrate: take advisory lock: %w", err)
	}
	defer conn.ExecContext(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1)`, MigrationLockID)
	if _, err := conn.ExecContext(ctx, MigrationsTableDDL); err != nil {
		return fmt.Errorf("migrate: create schema_migrations: %w", err)
	}
	return nil
}

// MigrationsTableDDL is schema_migrations as the migrator creates it;
// internal/pgtest names its migrated template by it too, so that a
// change of the table's shape is a new template.
const MigrationsTableDDL = `CREATE TABLE IF NOT EXISTS schema_migrations (
		version    integer     PRIMARY KEY,
		name       text        NOT NULL,
		applied_at timestamptz NOT NULL DEFAULT now(),
		` + floorColumn + `)`

// floorColumn is schema_migrations' oldest_binary: with each migration,
// the last migration of the oldest binary that may still run on the
// schema it leaves (0: any). An expand migration records 0; a contract
// migration, what its header declares (Migration.OldestBinary). The
// schema's floor is the greatest recorded (checkCompatible). A release
// from before the column writes its rows without it: 0, as an expand,
// which is all such a release ever applied. The migrator owns the
// table's shape, as it creates it: no numbered migration alters it.
const floorColumn = `oldest_binary integer NOT NULL DEFAULT 0
		CONSTRAINT ck_schema_migrations_oldest_binary CHECK (oldest_binary >= 0 AND oldest_binary <= version)`

// addFloorColumn adds oldest_binary to a schema_migrations created before
// it. Its transaction takes the table's ACCESS EXCLUSIVE lock before
// anything else, so it holds nothing another migrator waits for while it
// waits for them (an ALTER after a read of the table, inside a
// migration's transaction, deadlocked with a migrator that had read it
// and waited for the migrations' lock). Only where the column is
// missing: a start on a database that has it takes no lock and needs no
// right.
func addFloorColumn(ctx context.Context, conn *sqlx.Conn) error {
	if has, err := hasFloorColumn(ctx, conn); err != nil || has {
		if err != nil {
			return fmt.Errorf("migrate: %w", err)
		}
		return nil
	}
	tx, err := conn.BeginTxx(ctx, nil)
	if err != nil {
		return fmt.Errorf("migrate: add schema_migrations.oldest_binary: %w", err)
	}
	defer tx.Rollback()
	for _, stmt := range []string{`LOCK TABLE schema_migrations IN ACCESS EXCLUSIVE MODE`,
		`ALTER TABLE schema_migrations ADD COLUMN IF NOT EXISTS ` + floorColumn} {
		if _, err := tx.ExecContext(ctx, stmt); err != nil {
			var pqErr *pq.Error
			if errors.As(err, &pqErr) && pqErr.Code == "42501" { // insufficient_privilege
				// The service role starting with -migrate on a database
				// the previous release migrated: it has nothing to apply,
				// and without the column every migration reads as an
				// expand. The owner's next migrate adds it.
				return nil
			}
			return fmt.Errorf("migrate: add schema_migrations.oldest_binary: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("migrate: add schema_migrations.oldest_binary: %w", err)
	}
	return nil
}

// applyMigration applies m unless schema_migrations records it. A
// migration recorded already needs no lock (and no right beyond reading
// schema_migrations: a service role that starts with -migrate on an
// up-to-date database still starts); one to apply is checked again under
// the lock, which a concurrent migrator holds until it has recorded it.
func applyMigration(ctx context.Context, conn *sqlx.Conn, m Migration) (bool, error) {
	// READ COMMITTED whatever the database's default: the check under the
	// lock must see what the migrator before it committed.
	tx, err := conn.BeginTxx(ctx, &sql.TxOptions{Isolation: sql.LevelReadCommitted})
	if err != nil {
		return false, fmt.Errorf("migration %s: begin: %w", m.Name, err)
	}
	defer tx.Rollback()
	const recorded = `SELECT EXISTS (SELECT 1 FROM schema_migrations WHERE version = $1)`
	var exists bool
	if err := tx.GetContext(ctx, &exists, recorded, m.Version); err != nil {
		return false, fmt.Errorf("migration %s: check: %w", m.Name, err)
	}
	if exists {
		return false, nil
	}
	// SHARE ROW EXCLUSIVE conflicts with itself, not with readers.
	if _, err := tx.ExecContext(ctx, `LOCK TABLE schema_migrations IN SHARE ROW EXCLUSIVE MODE`); err != nil {
		return false, fmt.Errorf("migration %s: lock schema_migrations: %w", m.Name, err)
	}
	if err := tx.GetContext(ctx, &exists, recorded, m.Version); err != nil {
		return false, fmt.Errorf("migration %s: check: %w", m.Name, err)
	}
	if exists {
		return false, nil
	}
	if _, err := tx.ExecContext(ctx, m.SQL); err != nil {
		return false, fmt.Errorf("migration %s: apply: %w", m.Name, err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations (version, name) VALUES ($1, $2)`, m.Version, m.Name); err != nil {
		return false, fmt.Errorf("migration %s: record: %w", m.Name, err)
	}
	// A contract raises the schema's floor (floorColumn). An expand
	// records the column's default, 0: the floor is the greatest recorded.
	if m.OldestBinary > 0 {
		if _, err := tx.ExecContext(ctx, `UPDATE schema_migrations SET oldest_binary = $2 WHERE version = $1`, m.Version, m.OldestBinary); err != nil {
			return false, fmt.Errorf("migration %s: record the oldest binary it lets run: %w", m.Name, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return false, fmt.Errorf("migration %s: commit: %w", m.Name, err)
	}
	return true, nil
}
