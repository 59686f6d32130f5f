package razao_test

import (
	"context"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/razao/razao"
	"github.com/razao/razao/internal/pgtest"
)

// A function file is comments, then one CREATE OR REPLACE FUNCTION of the
// file's name with its body between one dollar quote, then nothing: what
// is inside the comments or the body (a CREATE, a $$, a ;) is not read as
// a statement.
func TestParseFunctionReadsOneCreateAndItsBody(t *testing.T) {
	t.Parallel()
	f, err := razao.ParseFunction("f", `-- CREATE OR REPLACE FUNCTION in_a_comment() RETURNS trigger AS $$ x $$;
--   CREATE FUNCTION indented_in_a_comment();

CREATE OR REPLACE FUNCTION f(a integer, b text DEFAULT 'x;y'::text)
 RETURNS trigger
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
BEGIN
    -- a comment in the body stays in it
    RAISE 'a $$ and a ; inside';
END;
$function$;
`)
	if err != nil {
		t.Fatal(err)
	}
	if want := "\nBEGIN\n    -- a comment in the body stays in it\n    RAISE 'a $$ and a ; inside';\nEND;\n"; f.Body != want {
		t.Errorf("body %q, want %q", f.Body, want)
	}
	if !strings.HasPrefix(f.Definition, "CREATE OR REPLACE FUNCTION f(a integer") || !strings.HasSuffix(f.Definition, "END;\n$function$") {
		t.Errorf("definition %q: want the statement from CREATE to the closing quote, without its ;", f.Definition)
	}
	// pg_get_functiondef quotes a body that holds $function$ with
	// $functionx$, and so may a file.
	g, err := razao.ParseFunction("g", "CREATE OR REPLACE FUNCTION g()\n RETURNS text\n LANGUAGE sql\nAS $functionx$SELECT '$function$'$functionx$;\n")
	if err != nil || g.Body != "SELECT '$function$'" {
		t.Errorf("g: %q, %v", g.Body, err)
	}
	for name, bad := range map[string]string{
		"another name":           "CREATE OR REPLACE FUNCTION other()\n RETURNS trigger\n LANGUAGE plpgsql\nAS $function$ x $function$;\n",
		"CREATE, not OR REPLACE": "CREATE FUNCTION f()\n RETURNS trigger\n LANGUAGE plpgsql\nAS $function$ x $function$;\n",
		"a second statement":     "CREATE OR REPLACE FUNCTION f()\n RETURNS trigger\n LANGUAGE plpgsql\nAS $function$ x $function$;\nDROP TABLE postings;\n",
		"no ; at the end":        "CREATE OR REPLACE FUNCTION f()\n RETURNS trigger\n LANGUAGE plpgsql\nAS $function$ x $function$\n",
		"AS not on its line":     "CREATE OR REPLACE FUNCTION f() RETURNS trigger LANGUAGE plpgsql AS $function$ x $function$;\n",
		"the tag in the body":    "CREATE OR REPLACE FUNCTION f()\n RETURNS trigger\n LANGUAGE plpgsql\nAS $function$ x $function$ y $function$;\n",
		"a quoted body":          "CREATE OR REPLACE FUNCTION f()\n RETURNS trigger\n LANGUAGE plpgsql\nAS 'x';\n",
		"a statement before":     "SET search_path = evil;\nCREATE OR REPLACE FUNCTION f()\n RETURNS trigger\n LANGUAGE plpgsql\nAS $function$ x $function$;\n",
	} {
		if _, err := razao.ParseFunction("f", bad); err == nil {
			t.Errorf("%s: read as a function file", name)
		}
	}
}

// Every function the migrations and the function files leave in the
// schema has exactly one file, every file one function, and each file's
// statement is what PostgreSQL prints for the function it made (so verify
// compares like with like), marked with the file's hash.
func TestEveryDatabaseFunctionHasOneFile(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	fs, err := razao.Functions()
	if err != nil {
		t.Fatal(err)
	}
	if len(fs) < 16 {
		t.Fatalf("%d function files", len(fs))
	}
	var have []struct {
		Name string `db:"proname"`
		Def  string `db:"def"`
		Mark string `db:"mark"`
	}
	if err := db.Select(&have, `SELECT p.proname, pg_get_functiondef(p.oid) AS def, coalesce(obj_description(p.oid, 'pg_proc'), '') AS mark
		FROM pg_proc p WHERE p.pronamespace = current_schema()::regnamespace ORDER BY p.proname, p.oid`); err != nil {
		t.Fatal(err)
	}
	var names, files []string
	for _, h := range have {
		names = append(names, h.Name)
	}
	for _, f := range fs {
		files = append(files, f.Name)
	}
	if !slices.Equal(names, files) {
		t.Fatalf("functions in the database %v\nfunction files            %v\n(one file per function, one function per name)", names, files)
	}
	for i, f := range fs {
		got := strings.TrimRight(strings.Replace(have[i].Def, "FUNCTION public.", "FUNCTION ", 1), "\n")
		if got != f.Definition {
			t.Errorf("%s is not written as PostgreSQL prints its function; write it as:\n%s;", f.File(), got)
		}
		if want := f.File() + " sha256=" + f.SHA256(); have[i].Mark != want {
			t.Errorf("function %s is marked %q, want %q", f.Name, have[i].Mark, want)
		}
	}
}

// The numbered migrations up to LastMigrationWithFunctions are history;
// from then on a function is its file's alone, or it would be defined in
// two places again. A comment or a DO block that says CREATE FUNCTION
// counts too.
func TestNoMigrationAfter0042DefinesAFunction(t *testing.T) {
	t.Parallel()
	if razao.LastMigrationWithFunctions != 42 {
		t.Fatalf("LastMigrationWithFunctions = %d: the history ends at 0042", razao.LastMigrationWithFunctions)
	}
	ms, err := razao.Migrations()
	if err != nil {
		t.Fatal(err)
	}
	create := regexp.MustCompile(`(?i)\bcreate\s+(or\s+replace\s+)?function\b`)
	for _, m := range ms {
		if m.Version > razao.LastMigrationWithFunctions && create.MatchString(m.SQL) {
			t.Errorf("%s defines a function: put it in sql/functions/<name>.sql (sql/functions/README.md)", m.Name)
		}
	}
	// The check itself finds what it must.
	for _, s := range []string{"CREATE FUNCTION f()", "create or replace\n  function f()", "EXECUTE 'CREATE  OR REPLACE FUNCTION f()'"} {
		if !create.MatchString(s) {
			t.Errorf("%q not read as defining a function", s)
		}
	}
}

// CheckSchema, which every command that needs the ledger runs, names a
// function file whose function does not carry its hash.
func TestCheckSchemaNamesAFunctionFileNotApplied(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	if err := razao.CheckSchema(ctx, db); err != nil {
		t.Fatalf("CheckSchema on a migrated database: %v", err)
	}
	db.MustExec(`COMMENT ON FUNCTION ledger_refuse_change() IS 'sql/functions/ledger_refuse_change.sql sha256=older'`)
	err := razao.CheckSchema(ctx, db)
	if want := "database schema: 1 function file(s) of this binary not applied (sql/functions/ledger_refuse_change.sql): run razao migrate"; err == nil || err.Error() != want {
		t.Fatalf("CheckSchema: %v, want %q", err, want)
	}
}
