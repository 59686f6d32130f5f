package postings

import (
	"context"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/razao/razao"
	"github.com/razao/razao/internal/pgtest"
)

func TestParseMigrationsKeepsEachFunctionsLastDefinition(t *testing.T) {
	t.Parallel()
	ms := []razao.Migration{{Version: 1, Name: "0001_a.sql", SQL: `
		-- CREATE FUNCTION in_a_comment() RETURNS trigger AS $$ x $$;
		/* CREATE FUNCTION in_a_block_comment() /* nested */ AS $$ x $$; */
		CREATE FUNCTION f() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END; $$;
		CREATE FUNCTION g(a int, b text DEFAULT 'x;y') RETURNS int LANGUAGE sql AS 'SELECT 1';
		CREATE TRIGGER trg_a BEFORE UPDATE OR DELETE ON t FOR EACH ROW EXECUTE FUNCTION f();
		CREATE CONSTRAINT TRIGGER trg_b AFTER INSERT ON public.t DEFERRABLE INITIALLY DEFERRED
			FOR EACH ROW EXECUTE PROCEDURE public.f();
		CREATE TRIGGER trg_c AFTER INSERT ON u REFERENCING NEW TABLE AS n FOR EACH STATEMENT EXECUTE FUNCTION f();
		ALTER TABLE t ENABLE ALWAYS TRIGGER trg_a, ENABLE ALWAYS TRIGGER trg_b;`},
		{Version: 2, Name: "0002_b.sql", SQL: `
		CREATE OR REPLACE FUNCTION public.f() RETURNS trigger LANGUAGE plpgsql
			AS $body$ BEGIN RAISE 'a $$ and a ; inside'; END; $body$;
		DROP FUNCTION IF EXISTS g(int, text);
		DO $$ BEGIN EXECUTE format('CREATE FUNCTION h() RETURNS int AS %L LANGUAGE sql', 'SELECT 1'); END $$;
		ALTER TRIGGER trg_c ON u RENAME TO trg_d;
		ALTER TABLE ONLY t DISABLE TRIGGER trg_b;`},
	}
	w := parseMigrations(ms)
	if got := w.functions["f"]; got.body != " BEGIN RAISE 'a $$ and a ; inside'; END; " || got.file != "0002_b.sql" {
		t.Errorf("f = %+v, want 0002's body", got)
	}
	if len(w.functions) != 1 {
		t.Errorf("functions = %+v, want only f (g dropped; comments and DO bodies are not statements)", w.functions)
	}
	want := map[[2]string]wantTrigger{
		{"t", "trg_a"}: {table: "t", name: "trg_a", function: "f", always: true, file: "0001_a.sql"},
		{"t", "trg_b"}: {table: "t", name: "trg_b", function: "f", disabled: true, file: "0001_a.sql"},
		{"u", "trg_d"}: {table: "u", name: "trg_d", function: "f", file: "0001_a.sql"},
	}
	if len(w.triggers) != len(want) {
		t.Errorf("triggers = %+v, want %+v", w.triggers, want)
	}
	for k, tw := range want {
		got := w.triggers[k]
		got.def = nil
		if !reflect.DeepEqual(got, tw) {
			t.Errorf("trigger %v = %+v, want %+v", k, got, tw)
		}
	}
	// Each trigger keeps its statement, canonical, under its last name.
	for k, def := range map[[2]string]string{
		{"t", "trg_b"}: "create constraint trigger trg_b after insert on t deferrable initially deferred for each row execute function f",
		{"u", "trg_d"}: "create trigger trg_d after insert on u referencing new table as n for each statement execute function f",
	} {
		if got := canonTrigger(w.triggers[k].def, "public"); got != def {
			t.Errorf("trigger %v's definition reads %q, want %q", k, got, def)
		}
	}
	if w.pinnedSearchPath {
		t.Error("no migration sets a search_path, yet it reads as pinned")
	}
	for _, pin := range []string{
		`ALTER FUNCTION f() SET search_path = pg_catalog, public, pg_temp`,
		`CREATE OR REPLACE FUNCTION f() RETURNS trigger LANGUAGE plpgsql SET search_path = pg_catalog, public, pg_temp AS $$ x $$`,
		`DO $$ BEGIN EXECUTE format('ALTER FUNCTION %I() SET search_path = pg_catalog, %I, pg_temp', 'f', current_schema()); END $$`,
	} {
		if !parseMigrations(append(ms, razao.Migration{Version: 3, Name: "0003_pin.sql", SQL: pin})).pinnedSearchPath {
			t.Errorf("%s: not read as pinning the search_path", pin)
		}
	}
}

func TestParseEmbeddedMigrationsFindsEveryLedgerGuard(t *testing.T) {
	t.Parallel()
	ms, err := razao.Migrations()
	if err != nil {
		t.Fatal(err)
	}
	w := parseMigrations(ms)
	for _, f := range []string{"ledger_refuse_change", "ledger_refuse_closed_month", "ledger_refuse_sealed_set",
		"ledger_check_posting_set", "reports_refuse_sealed_snapshot", "api_tokens_revoke_only"} {
		if !w.functions[f].hasBody {
			t.Errorf("function %s not found with a body", f)
		}
	}
	if _, ok := w.functions["outbox_notify"]; ok {
		t.Error("outbox_notify, dropped by 0006, still expected")
	}
	for _, k := range [][2]string{{"posting_sets", "trg_posting_sets_balanced"}, {"postings", "trg_postings_sealed_set"},
		{"posting_sets", "trg_posting_sets_open_month"}, {"accounts", "trg_accounts_immutable"}} {
		if tr := w.triggers[k]; !tr.always || tr.function == "" {
			t.Errorf("trigger %v = %+v, want enabled ALWAYS with its function", k, tr)
		}
	}
	if _, ok := w.triggers[[2]string{"outbox", "trg_outbox_notify"}]; ok {
		t.Error("trg_outbox_notify, dropped by 0006, still expected")
	}
}

// Once a migration pins the functions' search_path (sql/0012 does it with
// ALTER FUNCTION in a DO block, which verify does not execute), every
// ledger function must keep a safe one.
func TestVerifyNamesAFunctionWhoseSearchPathIsUnpinned(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	ms, err := razao.Migrations()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for n := range parseMigrations(ms).functions {
		names = append(names, "'"+n+"'")
	}
	slices.Sort(names)
	pin := `DO $$ DECLARE f text; BEGIN
		FOREACH f IN ARRAY ARRAY[` + strings.Join(names, ", ") + `] LOOP
			EXECUTE format('ALTER FUNCTION %s SET search_path = pg_catalog, %I, pg_temp',
				(SELECT p.oid::regprocedure FROM pg_proc p WHERE p.proname = f AND p.pronamespace = current_schema()::regnamespace),
				current_schema());
		END LOOP; END $$`
	db.MustExec(pin)
	want := parseMigrations(append(ms, razao.Migration{Version: 9999, Name: "9999_pin.sql", SQL: pin}))
	check := func(t *testing.T, wantLine string) {
		t.Helper()
		r, err := verify(ctx, db, want)
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		r.WriteTo(&b)
		if wantLine == "" {
			if !r.OK() {
				t.Fatalf("verify after pinning:\n%s", b.String())
			}
			return
		}
		if !strings.Contains(b.String(), "\n        "+wantLine+"\n") {
			t.Fatalf("no line %q in:\n%s", wantLine, b.String())
		}
	}
	check(t, "")
	for _, c := range []struct{ set, want string }{
		{`RESET search_path`, `function ledger_check_posting_set(): has no search_path setting; the migrations pin one (pg_catalog, public, pg_temp)`},
		{`SET search_path = pg_catalog, evil, public, pg_temp`, `function ledger_check_posting_set(): search_path "pg_catalog, evil, public, pg_temp" puts evil before public`},
		{`SET search_path = pg_catalog, pg_temp`, `function ledger_check_posting_set(): search_path "pg_catalog, pg_temp" does not name the ledger's schema public`},
	} {
		t.Run(c.set, func(t *testing.T) {
			db.MustExec(`ALTER FUNCTION ledger_check_posting_set() ` + c.set)
			check(t, c.want)
			db.MustExec(`ALTER FUNCTION ledger_check_posting_set() SET search_path = pg_catalog, public, pg_temp`)
			check(t, "")
		})
	}
}
