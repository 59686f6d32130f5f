package verify

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
		r, err := run(ctx, db, want)
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

// neuteredTriggers recreate a ledger trigger under its own name, calling
// its own function and enabled ALWAYS, but doing less: what only the full
// definition tells apart.
var neuteredTriggers = []struct {
	name, table, trigger string
	create               string
}{
	{"WHEN (false)", "posting_sets", "trg_posting_sets_append_only",
		`CREATE TRIGGER trg_posting_sets_append_only BEFORE UPDATE OR DELETE ON posting_sets FOR EACH ROW WHEN (false) EXECUTE FUNCTION ledger_refuse_change()`},
	{"only BEFORE UPDATE", "postings", "trg_postings_append_only",
		`CREATE TRIGGER trg_postings_append_only BEFORE UPDATE ON postings FOR EACH ROW EXECUTE FUNCTION ledger_refuse_change()`},
	{"the balance check NOT DEFERRABLE", "posting_sets", "trg_posting_sets_balanced",
		`CREATE CONSTRAINT TRIGGER trg_posting_sets_balanced AFTER INSERT ON posting_sets NOT DEFERRABLE FOR EACH ROW EXECUTE FUNCTION ledger_check_posting_set()`},
	{"the balance check INITIALLY IMMEDIATE", "posting_sets", "trg_posting_sets_balanced",
		`CREATE CONSTRAINT TRIGGER trg_posting_sets_balanced AFTER INSERT ON posting_sets DEFERRABLE INITIALLY IMMEDIATE FOR EACH ROW EXECUTE FUNCTION ledger_check_posting_set()`},
	{"FOR EACH STATEMENT instead of ROW", "accounts", "trg_accounts_immutable",
		`CREATE TRIGGER trg_accounts_immutable BEFORE UPDATE OR DELETE ON accounts FOR EACH STATEMENT EXECUTE FUNCTION ledger_refuse_change()`},
	{"REFERENCING dropped", "postings", "trg_postings_sealed_set",
		`CREATE TRIGGER trg_postings_sealed_set AFTER INSERT ON postings FOR EACH STATEMENT EXECUTE FUNCTION ledger_refuse_sealed_set()`},
	{"a WHEN on a literal cast", "closed_periods", "trg_closed_periods_append_only",
		`CREATE TRIGGER trg_closed_periods_append_only BEFORE UPDATE OR DELETE ON public.closed_periods FOR EACH ROW WHEN ('a' = 'b') EXECUTE PROCEDURE public.ledger_refuse_change()`},
}

// Every trigger of a freshly migrated ledger reads, canonical, as its
// migration's statement; every neutered one does not.
func TestCanonTriggerMatchesMigratedTriggersAndTellsNeuteredOnes(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	ms, err := razao.Migrations()
	if err != nil {
		t.Fatal(err)
	}
	w := parseMigrations(ms)
	var have []struct {
		Table string `db:"relname"`
		Name  string `db:"tgname"`
		Def   string `db:"def"`
	}
	if err := db.Select(&have, `SELECT c.relname, t.tgname, pg_get_triggerdef(t.oid) AS def FROM pg_trigger t
		JOIN pg_class c ON c.oid = t.tgrelid WHERE c.relnamespace = current_schema()::regnamespace AND NOT t.tgisinternal`); err != nil {
		t.Fatal(err)
	}
	if len(have) != len(w.triggers) || len(have) < 10 {
		t.Fatalf("%d triggers in the database, %d in the migrations", len(have), len(w.triggers))
	}
	canon := map[[2]string]string{}
	for _, h := range have {
		st := statements(h.Def)
		if len(st) != 1 {
			t.Fatalf("%s: %d statements", h.Def, len(st))
		}
		want := canonTrigger(w.triggers[[2]string{h.Table, h.Name}].def, "public")
		canon[[2]string{h.Table, h.Name}] = want
		if got := canonTrigger(st[0], "public"); got != want {
			t.Errorf("trigger %s on %s:\n pg_get_triggerdef %q\n canonical         %q\n migration         %q", h.Name, h.Table, h.Def, got, want)
		}
	}
	for _, n := range neuteredTriggers {
		t.Run(n.name, func(t *testing.T) {
			tx := db.MustBegin()
			defer tx.Rollback()
			tx.MustExec(`DROP TRIGGER ` + n.trigger + ` ON ` + n.table)
			tx.MustExec(n.create)
			var def string
			if err := tx.Get(&def, `SELECT pg_get_triggerdef(oid) FROM pg_trigger WHERE tgrelid = $1::regclass AND tgname = $2`, n.table, n.trigger); err != nil {
				t.Fatal(err)
			}
			if got := canonTrigger(statements(def)[0], "public"); got == canon[[2]string{n.table, n.trigger}] {
				t.Errorf("%q reads as its migration's %q", def, got)
			}
		})
	}
}

// What pg_get_triggerdef adds or reorders reads as the migration wrote it.
func TestCanonTriggerIgnoresHowTheCatalogSpellsAStatement(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ migration, catalog string }{
		{`CREATE OR REPLACE TRIGGER trg BEFORE UPDATE OR DELETE ON t FOR EACH ROW WHEN (OLD.state = 'x') EXECUTE PROCEDURE f('a');`,
			`CREATE TRIGGER trg BEFORE DELETE OR UPDATE ON ledger.t FOR EACH ROW WHEN (((old.state)::text = 'x'::text)) EXECUTE FUNCTION ledger.f('a')`},
		{`create trigger "trg" after insert on "t" for each row execute function f()`,
			`CREATE TRIGGER trg AFTER INSERT ON public.t FOR EACH ROW EXECUTE FUNCTION f()`},
		{`CREATE TRIGGER trg AFTER UPDATE OF a, b ON t FOR EACH ROW WHEN (NEW.n > 0) EXECUTE FUNCTION f()`,
			`CREATE TRIGGER trg AFTER UPDATE OF a, b ON public.t FOR EACH ROW WHEN ((new.n > 0)) EXECUTE FUNCTION f()`},
	} {
		want := canonTrigger(statements(c.migration)[0], "ledger")
		if got := canonTrigger(statements(c.catalog)[0], "ledger"); got != want {
			t.Errorf("%s\n reads %q\n want  %q", c.catalog, got, want)
		}
	}
}
