package razao_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
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
	// Then every function file: the old binary marked none.
	fs, err := razao.Functions()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fs {
		rest = append(rest, f.File())
	}
	applied, err := razao.Migrate(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	// A function file a later migration names is applied just before it
	// (sql/functions/README.md): the migrations in order, and every file.
	isMigration := func(name string) bool { return !strings.HasPrefix(name, "sql/functions/") }
	if got, want := slices.DeleteFunc(slices.Clone(applied), func(n string) bool { return !isMigration(n) }),
		slices.DeleteFunc(slices.Clone(rest), func(n string) bool { return !isMigration(n) }); !slices.Equal(got, want) {
		t.Errorf("applied the migrations %v, want only %v", got, want)
	}
	if got, want := slices.Sorted(slices.Values(applied)), slices.Sorted(slices.Values(rest)); !slices.Equal(got, want) {
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
	db, _ := emptyDatabaseWithURL(t)
	return db
}

// emptyDatabaseWithURL is emptyDatabase that also returns its URL.
func emptyDatabaseWithURL(t *testing.T) (*sqlx.DB, string) {
	t.Helper()
	admin := pgtest.New(t) // any connection to the server will do
	name := fmt.Sprintf("razao_old_names_%d", time.Now().UnixNano())
	admin.MustExec(`CREATE DATABASE ` + pq.QuoteIdentifier(name))
	t.Cleanup(func() { admin.Exec(`DROP DATABASE IF EXISTS ` + pq.QuoteIdentifier(name) + ` WITH (FORCE)`) })
	url := pgtest.WithDatabase(pgtest.ServerURL(t), name)
	db, err := razao.Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db, url
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
	type result struct {
		applied []string
		err     error
	}
	results := make(chan result, 4)
	for range 4 {
		go func() {
			applied, err := razao.Migrate(context.Background(), db)
			results <- result{applied, err}
		}()
	}
	var applied []string
	for range 4 {
		r := <-results
		if r.err != nil {
			t.Fatal(r.err)
		}
		applied = append(applied, r.applied...)
	}
	ms, _ := razao.Migrations()
	var n int
	if err := db.Get(&n, `SELECT count(*) FROM schema_migrations`); err != nil || n != len(ms) {
		t.Fatalf("%d migrations recorded (%v), want %d", n, err, len(ms))
	}
	// Each migration and each function file, applied by one of them.
	fs, _ := razao.Functions()
	slices.Sort(applied)
	if len(applied) != len(ms)+len(fs) || len(slices.Compact(applied)) != len(ms)+len(fs) {
		t.Fatalf("the migrators applied %d files between them, want each of %d once", len(applied), len(ms)+len(fs))
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

// functionsState is what each function of the schema is: its definition,
// owner and grants, and the file mark the migrator compares.
func functionsState(t *testing.T, db *sqlx.DB) map[string][4]string {
	t.Helper()
	var rows []struct {
		Name, Def, Owner, ACL, Mark string
	}
	if err := db.Select(&rows, `SELECT p.proname AS name, pg_get_functiondef(p.oid) AS def, p.proowner::regrole::text AS owner,
			coalesce(p.proacl::text, '') AS acl, coalesce(obj_description(p.oid, 'pg_proc'), '') AS mark
		FROM pg_proc p WHERE p.pronamespace = current_schema()::regnamespace`); err != nil {
		t.Fatal(err)
	}
	out := map[string][4]string{}
	for _, r := range rows {
		out[r.Name] = [4]string{r.Def, r.Owner, r.ACL, r.Mark}
	}
	return out
}

// A function whose mark is not its file's (an older release applied
// another version of it) is applied again from its file; CREATE OR
// REPLACE keeps its owner and the grants the migrations gave it.
func TestMigrateAppliesAFunctionFileWhoseHashChanged(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	before := functionsState(t, db)
	// What an older release left: another body, and its own mark, on one
	// function; no mark at all on the others (the releases before files).
	db.MustExec(`CREATE OR REPLACE FUNCTION ledger_refuse_change() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END; $$`)
	db.MustExec(`COMMENT ON FUNCTION ledger_refuse_change() IS 'sql/functions/ledger_refuse_change.sql sha256=older'`)
	db.MustExec(`COMMENT ON FUNCTION ledger_lock_account(text) IS NULL`)
	db.MustExec(`COMMENT ON FUNCTION month_sums_refresh(date) IS NULL`)
	applied, err := razao.Migrate(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"sql/functions/ledger_lock_account.sql", "sql/functions/ledger_refuse_change.sql", "sql/functions/month_sums_refresh.sql"}
	if !slices.Equal(applied, want) {
		t.Errorf("applied %v, want %v", applied, want)
	}
	after := functionsState(t, db)
	for name, b := range before {
		if after[name] != b {
			t.Errorf("function %s after migrate:\n%q\nwant as the migrations and its file left it:\n%q", name, after[name], b)
		}
	}
	if again, err := razao.Migrate(ctx, db); err != nil || len(again) != 0 {
		t.Errorf("second migrate: %v, %v", again, err)
	}
}

// The migrator compares hashes only: a function changed by hand keeps the
// mark of its file, and is not applied again. verify is what compares
// every function with its file, and names it.
func TestMigrateLeavesAHandChangedFunctionToVerify(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	db.MustExec(`CREATE OR REPLACE FUNCTION ledger_refuse_change() RETURNS trigger LANGUAGE plpgsql
		SET search_path = pg_catalog, public, pg_temp SET row_security = off AS $$ BEGIN RETURN NULL; END; $$`)
	if applied, err := razao.Migrate(ctx, db); err != nil || len(applied) != 0 {
		t.Fatalf("migrate: %v, %v; want nothing applied", applied, err)
	}
	r, err := verify.Run(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	r.WriteTo(&b)
	if !strings.Contains(b.String(), "function ledger_refuse_change(): body differs from the one sql/functions/ledger_refuse_change.sql defines") {
		t.Errorf("verify does not name the hand-changed function:\n%s", b.String())
	}
}

// A replica of an older release (the database records a migration it
// lacks) puts no older function back, and starts.
func TestMigrateLeavesANewerDatabasesFunctionsAlone(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	db.MustExec(`INSERT INTO schema_migrations (version, name) VALUES (9999, '9999_from_a_newer_release.sql')`)
	db.MustExec(`COMMENT ON FUNCTION ledger_refuse_change() IS 'sql/functions/ledger_refuse_change.sql sha256=newer'`)
	if applied, err := razao.Migrate(ctx, db); err != nil || len(applied) != 0 {
		t.Fatalf("migrate: %v, %v; want nothing applied", applied, err)
	}
	if err := razao.CheckSchema(ctx, db); err != nil {
		t.Errorf("CheckSchema: %v", err)
	}
}

// The service role (docs/razao-role.sql) may read schema_migrations and
// the catalogs, nothing of the bookkeeping beyond: with -migrate, on an
// up-to-date database, it applies nothing and starts. With a function
// file to apply, it may not take the migrations' lock, and says so.
func TestServiceRoleMigratesAnUpToDateDatabase(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	owner, ownerURL := pgtest.NewWithURL(t)
	roles := pgtest.NewRoles(t, owner, ownerURL)
	svc := roles.Connect(roles.Service())
	if applied, err := razao.Migrate(ctx, svc); err != nil || len(applied) != 0 {
		t.Fatalf("migrate as the service role: %v, %v; want nothing to apply", applied, err)
	}
	if err := razao.CheckSchema(ctx, svc); err != nil {
		t.Errorf("CheckSchema as the service role: %v", err)
	}
	owner.MustExec(`COMMENT ON FUNCTION ledger_refuse_change() IS NULL`)
	if _, err := razao.Migrate(ctx, svc); err == nil || !strings.Contains(err.Error(), "sql/functions/ledger_refuse_change.sql: lock schema_migrations") {
		t.Errorf("migrate as the service role with a function file to apply: %v", err)
	}
}

// A migration may create a trigger on a function no database has yet:
// the migrator creates it from its file first. A function the database
// has keeps its body while the migrations run, and gets its file's after
// the last.
func TestAMigrationGetsTheNewFunctionItNames(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := emptyDatabase(t)
	ms, fs := embedded(t)
	file := func(body string) razao.Function {
		f, err := razao.ParseFunction("t_refuse", "-- Refuses every row of t.\nCREATE OR REPLACE FUNCTION t_refuse()\n RETURNS trigger\n LANGUAGE plpgsql\nAS $function$"+body+"$function$;\n")
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	v1 := file("BEGIN RAISE 'v1'; END;")
	trigger := razao.Migration{Version: 9000, Name: "9000_t.sql", SQL: `CREATE TABLE t (id int);
		CREATE TRIGGER trg_t BEFORE INSERT ON t FOR EACH ROW EXECUTE FUNCTION t_refuse();`}
	applied, err := razao.MigrateWith(ctx, db, append(ms, trigger), append(fs, v1))
	if err != nil {
		t.Fatal(err)
	}
	at := slices.Index(applied, "9000_t.sql")
	if at < 1 || applied[at-1] != "sql/functions/t_refuse.sql" || slices.Index(applied, "sql/functions/t_refuse.sql") != at-1 {
		t.Errorf("applied %v: want t_refuse.sql once, just before 9000_t.sql", applied)
	}
	if _, err := db.Exec(`INSERT INTO t VALUES (1)`); err == nil || !strings.Contains(err.Error(), "v1") {
		t.Errorf("insert into t: %v, want v1's refusal", err)
	}

	// A later migration that names it reads the body it has, v1.
	v2 := file("BEGIN RAISE 'v2'; END;")
	seen := razao.Migration{Version: 9001, Name: "9001_seen.sql", SQL: `CREATE TABLE seen AS
		SELECT p.prosrc FROM pg_proc p WHERE p.proname = 't_refuse'`}
	applied, err = razao.MigrateWith(ctx, db, append(ms, trigger, seen), append(fs, v2))
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"9001_seen.sql", "sql/functions/t_refuse.sql"}; !slices.Equal(applied, want) {
		t.Errorf("applied %v, want %v", applied, want)
	}
	var body string
	if err := db.Get(&body, `SELECT prosrc FROM seen`); err != nil || body != v1.Body {
		t.Errorf("the migration saw %q (%v), want v1's body", body, err)
	}
	if _, err := db.Exec(`INSERT INTO t VALUES (1)`); err == nil || !strings.Contains(err.Error(), "v2") {
		t.Errorf("insert into t: %v, want v2's refusal", err)
	}
}

// A ledger in a schema other than public (sql/0012 pinned every function
// to the migrating session's schema) gets its functions pinned there from
// the files, which say public as docs/schema.sql does, and verifies clean.
func TestFunctionFilesPinTheLedgersOwnSchema(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	admin, url := emptyDatabaseWithURL(t)
	admin.MustExec(`CREATE SCHEMA ledger`)
	db, err := razao.Open(ctx, url+"&search_path=ledger")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := razao.Migrate(ctx, db); err != nil {
		t.Fatal(err)
	}
	var unpinned []string
	if err := db.Select(&unpinned, `SELECT p.proname FROM pg_proc p WHERE p.pronamespace = 'ledger'::regnamespace
		AND NOT 'search_path=pg_catalog, ledger, pg_temp' = ANY (coalesce(p.proconfig, '{}')) ORDER BY 1`); err != nil {
		t.Fatal(err)
	}
	if len(unpinned) > 0 {
		t.Errorf("functions not pinned to schema ledger: %v", unpinned)
	}
	if err := razao.CheckSchema(ctx, db); err != nil {
		t.Errorf("CheckSchema: %v", err)
	}
	r, err := verify.Run(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	if !r.OK() {
		var b strings.Builder
		r.WriteTo(&b)
		t.Errorf("verify of a ledger in schema ledger:\n%s", b.String())
	}
}

// embedded returns the binary's migrations and function files.
func embedded(t *testing.T) ([]razao.Migration, []razao.Function) {
	t.Helper()
	ms, err := razao.Migrations()
	if err != nil {
		t.Fatal(err)
	}
	fs, err := razao.Functions()
	if err != nil {
		t.Fatal(err)
	}
	return ms, fs
}
