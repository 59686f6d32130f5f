package razao_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/jmoiron/sqlx"

	"github.com/razao/razao"
	"github.com/razao/razao/internal/pgtest"
)

// lastMigration is this binary's last migration.
func lastMigration(t *testing.T) razao.Migration {
	t.Helper()
	ms, err := razao.Migrations()
	if err != nil {
		t.Fatal(err)
	}
	return ms[len(ms)-1]
}

// recordNewer records in db what a newer release's migrations would:
// version v, its name, and the floor it declares (0: an expand).
func recordNewer(t *testing.T, db *sqlx.DB, v, floor int) string {
	t.Helper()
	name := fmt.Sprintf("%04d_from_a_newer_release.sql", v)
	db.MustExec(`INSERT INTO schema_migrations (version, name, oldest_binary) VALUES ($1, $2, $3)`, v, name, floor)
	return name
}

func countMigrations(t *testing.T, db *sqlx.DB) int {
	t.Helper()
	var n int
	if err := db.Get(&n, `SELECT count(*) FROM schema_migrations`); err != nil {
		t.Fatal(err)
	}
	return n
}

// A newer release's expand migrations, and a contract whose floor is this
// binary: this binary still runs (a rolling upgrade), applies nothing, and
// knows the database is ahead of it, by both names.
func TestAnOlderBinaryRunsOnASchemaExpandedPastIt(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	last := lastMigration(t)
	recordNewer(t, db, last.Version+1, 0)
	newest := recordNewer(t, db, last.Version+2, last.Version)
	if err := razao.CheckSchema(ctx, db); err != nil {
		t.Fatalf("CheckSchema: %v", err)
	}
	if applied, err := razao.Migrate(ctx, db); err != nil || len(applied) != 0 {
		t.Fatalf("Migrate: %v, %v; want nothing applied", applied, err)
	}
	c, err := razao.SchemaCompatibility(ctx, db)
	if err != nil || !c.Ahead() || c.DatabaseName != newest || c.BinaryName != last.Name || c.Floor != last.Version {
		t.Fatalf("SchemaCompatibility: %+v, %v", c, err)
	}
}

// A contract migration whose floor is past this binary: every way in
// refuses, names both versions and the contract, and applies nothing.
func TestAnOlderBinaryRefusesASchemaAContractMadeTooNew(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	last := lastMigration(t)
	recordNewer(t, db, last.Version+1, 0)
	contract := recordNewer(t, db, last.Version+2, last.Version+1)
	before := countMigrations(t, db)
	for name, check := range map[string]func() error{
		"CheckSchema": func() error { return razao.CheckSchema(ctx, db) },
		"Migrate":     func() error { _, err := razao.Migrate(ctx, db); return err },
		"SchemaCompatibility": func() error {
			_, err := razao.SchemaCompatibility(ctx, db)
			return err
		},
	} {
		err := check()
		if !errors.Is(err, razao.ErrSchemaNewer) {
			t.Errorf("%s: %v, want ErrSchemaNewer", name, err)
			continue
		}
		for _, want := range []string{fmt.Sprintf("last migration is %04d or later", last.Version+1), contract, last.Name, "run a newer release"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%s: %v\nwant it to name %q", name, err, want)
			}
		}
	}
	if n := countMigrations(t, db); n != before {
		t.Errorf("%d migrations recorded after the refusals, want %d", n, before)
	}
}

// A database that records, under a number this binary has, another
// migration (another branch's build migrated it) is refused, naming both;
// a former name of the same migration is not another migration.
func TestAnotherBranchsMigrationUnderAKnownNumberIsRefused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	last := lastMigration(t)
	db.MustExec(`UPDATE schema_migrations SET name = '0009_review_fixes.sql' WHERE version = 9`)
	if err := razao.CheckSchema(ctx, db); err != nil {
		t.Fatalf("CheckSchema with migration 9 under its former name: %v", err)
	}
	db.MustExec(`UPDATE schema_migrations SET name = $1 WHERE version = $2`, fmt.Sprintf("%04d_of_another_branch.sql", last.Version), last.Version)
	for name, err := range map[string]error{
		"CheckSchema": razao.CheckSchema(ctx, db),
		"Migrate":     func() error { _, err := razao.Migrate(ctx, db); return err }(),
	} {
		if !errors.Is(err, razao.ErrSchemaNewer) || !strings.Contains(err.Error(), fmt.Sprintf("%04d_of_another_branch.sql", last.Version)) ||
			!strings.Contains(err.Error(), last.Name) || !strings.Contains(err.Error(), "another branch") {
			t.Errorf("%s: %v, want the refusal naming both migrations", name, err)
		}
	}
}

// An older binary whose own history the newer database lacks (it was not
// migrated through this release) applies none of it: migrating it would
// put an old migration on top of a newer schema.
func TestAnOlderBinaryAppliesNothingOntoANewerSchemaThatLacksItsHistory(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := emptyDatabase(t)
	ms, fs := embedded(t)
	if _, err := razao.MigrateWith(ctx, db, ms[:3], nil); err != nil {
		t.Fatal(err)
	}
	db.MustExec(`INSERT INTO schema_migrations (version, name) VALUES (9000, '9000_from_a_newer_release.sql')`)
	applied, err := razao.MigrateWith(ctx, db, ms[:5], fs)
	if !errors.Is(err, razao.ErrSchemaNewer) || len(applied) != 0 || !strings.Contains(err.Error(), ms[3].Name) ||
		!strings.Contains(err.Error(), "9000_from_a_newer_release.sql") {
		t.Fatalf("migrate: applied %v, %v; want nothing applied and the refusal naming %s", applied, err, ms[3].Name)
	}
	if n := countMigrations(t, db); n != 4 {
		t.Errorf("%d migrations recorded, want the 4 there were", n)
	}
}

// A contract migration's header is recorded with it: a binary whose last
// migration is below its floor refuses the schema, one at the floor runs.
func TestAContractMigrationRaisesTheFloorItDeclares(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	ms, fs := embedded(t)
	last := ms[len(ms)-1]
	expand := razao.Migration{Version: 9000, Name: "9000_expand.sql", SQL: "-- adds what 9001 lets go of\nCREATE TABLE t9000 (id int)"}
	contract := razao.Migration{Version: 9001, Name: "9001_contract.sql",
		SQL: "-- drops what binaries before 9000 used\n-- razao: contract 9000\nDROP TABLE t9000"}
	for _, m := range []*razao.Migration{&expand, &contract} {
		var err error
		if m.OldestBinary, err = razao.ParseContract(*m); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := razao.MigrateWith(ctx, db, append(ms[:len(ms):len(ms)], expand), fs); err != nil {
		t.Fatal(err)
	}
	if err := razao.CheckSchema(ctx, db); err != nil {
		t.Fatalf("this binary on an expanded schema: %v", err)
	}
	if _, err := razao.MigrateWith(ctx, db, append(ms[:len(ms):len(ms)], expand, contract), fs); err != nil {
		t.Fatal(err)
	}
	var floor int
	if err := db.Get(&floor, `SELECT oldest_binary FROM schema_migrations WHERE version = 9001`); err != nil || floor != 9000 {
		t.Fatalf("9001's oldest_binary: %d, %v; want 9000", floor, err)
	}
	if err := razao.CheckSchema(ctx, db); !errors.Is(err, razao.ErrSchemaNewer) || !strings.Contains(err.Error(), last.Name) ||
		!strings.Contains(err.Error(), "9001_contract.sql") {
		t.Errorf("this binary (%s) after the contract: %v, want the refusal", last.Name, err)
	}
	if applied, err := razao.MigrateWith(ctx, db, append(ms[:len(ms):len(ms)], expand), fs); err != nil || len(applied) != 0 {
		t.Errorf("the binary at 9000 after the contract: %v, %v; want it to run, applying nothing", applied, err)
	}
}

func TestContractHeaders(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		sql     string
		want    int
		wantErr string
	}{
		{"-- an expand\nALTER TABLE t ADD COLUMN c int", 0, ""},
		{"-- drops c\n-- razao: contract 0052\nALTER TABLE t DROP COLUMN c", 52, ""},
		{"--razao:contract 60\nSELECT 1", 60, ""},
		{"SELECT 1;\n-- razao: contract 52\n", 0, ""}, // not the header: after the first statement
		{"-- razao: contracts 52\nSELECT 1", 0, "want -- razao: contract NNNN"},
		{"-- razao: contract\nSELECT 1", 0, "want -- razao: contract NNNN"},
		{"-- razao: contract 61\nSELECT 1", 0, "1 to 60"},
		{"-- razao: contract 0\nSELECT 1", 0, "1 to 60"},
		{"-- razao: contract 50\n-- razao: contract 51\nSELECT 1", 0, "two"},
	} {
		got, err := razao.ParseContract(razao.Migration{Version: 60, Name: "0060_x.sql", SQL: tc.sql})
		if got != tc.want || (err == nil) != (tc.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tc.wantErr)) {
			t.Errorf("%q: %d, %v; want %d, error %q", tc.sql, got, err, tc.want, tc.wantErr)
		}
	}
}

// A schema_migrations from before oldest_binary gets it from the
// migrator, not from a migration: four migrators starting together on
// one take turns and none deadlocks (an ALTER of the table inside a
// migration's transaction did, with a migrator that had read the table
// and waited for the migrations' lock).
func TestMigratorsAddTheFloorColumnTogether(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := emptyDatabase(t)
	db.MustExec(`CREATE TABLE schema_migrations (version integer PRIMARY KEY, name text NOT NULL,
		applied_at timestamptz NOT NULL DEFAULT now())`)
	errs := make(chan error, 4)
	for range 4 {
		go func() {
			_, err := razao.Migrate(ctx, db)
			errs <- err
		}()
	}
	for range 4 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	var floors int
	if err := db.Get(&floors, `SELECT count(*) FROM schema_migrations WHERE oldest_binary = 0`); err != nil {
		t.Fatalf("oldest_binary after migrate: %v", err)
	}
	if ms, _ := razao.Migrations(); floors != len(ms) {
		t.Errorf("%d migrations recorded with oldest_binary 0, want every one of %d", floors, len(ms))
	}
}

// The service role, starting with -migrate on a database the previous
// release migrated (no oldest_binary yet), may not add the column: it
// starts all the same, having nothing to apply.
func TestServiceRoleMigratesADatabaseWithoutTheFloorColumn(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	owner, ownerURL := pgtest.NewWithURL(t)
	owner.MustExec(`ALTER TABLE schema_migrations DROP COLUMN oldest_binary`)
	roles := pgtest.NewRoles(t, owner, ownerURL)
	svc := roles.Connect(roles.Service())
	if applied, err := razao.Migrate(ctx, svc); err != nil || len(applied) != 0 {
		t.Fatalf("migrate as the service role: %v, %v; want nothing to apply", applied, err)
	}
	if err := razao.CheckSchema(ctx, svc); err != nil {
		t.Errorf("CheckSchema as the service role: %v", err)
	}
	if _, err := razao.Migrate(ctx, owner); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := owner.Get(&n, `SELECT count(*) FROM schema_migrations WHERE oldest_binary = 0`); err != nil || n == 0 {
		t.Errorf("the owner's migrate did not add oldest_binary: %d, %v", n, err)
	}
}

// A binary that found the schema its own, unlocked, and then applies a
// function file after a newer binary migrated meanwhile puts no older
// body back over the newer release's: the check is made again under the
// migrations' lock.
func TestAFunctionIsNotPutBackOverANewerReleases(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	ctx := context.Background()
	ms, fs := embedded(t)
	f := fs[0]
	// What a newer release's migrator leaves: its migration recorded, and
	// its own body (here, its mark) on the function.
	db.MustExec(`INSERT INTO schema_migrations (version, name) VALUES (9000, '9000_from_a_newer_release.sql')`)
	var comment string
	if err := db.Get(&comment, `SELECT format('COMMENT ON FUNCTION %s IS %L', p.oid::regprocedure, 'a newer release')
		FROM pg_proc p WHERE p.proname = $1 AND p.pronamespace = current_schema()::regnamespace`, f.Name); err != nil {
		t.Fatal(err)
	}
	db.MustExec(comment)
	conn, err := db.Connx(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	applied, err := razao.ApplyFunction(ctx, conn, f, ms)
	if err != nil {
		t.Fatal(err)
	}
	var mark string
	if err := db.Get(&mark, `SELECT obj_description(p.oid, 'pg_proc') FROM pg_proc p
		WHERE p.proname = $1 AND p.pronamespace = current_schema()::regnamespace`, f.Name); err != nil {
		t.Fatal(err)
	}
	if applied || mark != "a newer release" {
		t.Fatalf("%s applied %v over a newer release's: its mark is now %q", f.File(), applied, mark)
	}
}
