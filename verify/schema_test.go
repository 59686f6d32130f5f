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

// What verify holds a database to: each function file's statement split
// into the lines before the body and the body (whatever the comments above
// it or the body say), and each trigger of docs/schema.sql's last section
// with its function and state, its table's schema taken out.
func TestWantSchemaReadsFunctionFilesAndTheSchemasTriggers(t *testing.T) {
	t.Parallel()
	fs := []razao.Function{{Name: "f", SQL: "-- CREATE FUNCTION in_a_comment() AS $$ x $$;\n...",
		Definition: "CREATE OR REPLACE FUNCTION f()\n RETURNS trigger\n LANGUAGE plpgsql\n SECURITY DEFINER\n" +
			" SET search_path TO 'pg_catalog', 'public', 'pg_temp'\n SET row_security TO 'off'\nAS $function$ BEGIN RAISE 'a $$ and a ; inside'; END; $function$",
		Body: " BEGIN RAISE 'a $$ and a ; inside'; END; "},
		{Name: "g", Definition: "CREATE OR REPLACE FUNCTION g(a integer)\n RETURNS integer\n LANGUAGE sql\nAS $function$SELECT 1$function$", Body: "SELECT 1"}}
	dump := `CREATE TABLE t (
    id bigint
);

-- Functions

CREATE OR REPLACE FUNCTION public.f()
 RETURNS trigger
AS $function$ BEGIN RAISE 'a $$ and a ; inside'; END; $function$
;

-- Triggers (every one enabled ALWAYS unless said)

CREATE TRIGGER trg_a BEFORE DELETE OR UPDATE ON public.t FOR EACH ROW WHEN ((old.state)::text = 'x ON y'::text) EXECUTE FUNCTION f();
CREATE CONSTRAINT TRIGGER trg_b AFTER INSERT ON public.t DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION f(); -- DISABLED
CREATE TRIGGER trg_d AFTER INSERT ON public.u REFERENCING NEW TABLE AS n FOR EACH STATEMENT EXECUTE FUNCTION g('a'); -- enabled (origin)
CREATE TRIGGER trg_e BEFORE UPDATE OF a, b ON public.u FOR EACH ROW EXECUTE FUNCTION f(); -- enabled (replica)
`
	w, err := newWantSchema(fs, dump)
	if err != nil {
		t.Fatal(err)
	}
	f := w.functions["f"]
	if f.body != " BEGIN RAISE 'a $$ and a ; inside'; END; " || f.file != "sql/functions/f.sql" || !f.searchPath || !f.rowSecurityOff {
		t.Errorf("f = %+v", f)
	}
	if want := []string{"CREATE OR REPLACE FUNCTION f()", " RETURNS trigger", " LANGUAGE plpgsql", " SECURITY DEFINER",
		" SET search_path TO 'pg_catalog', 'public', 'pg_temp'", " SET row_security TO 'off'"}; !slices.Equal(f.header, want) {
		t.Errorf("f's header %q, want %q", f.header, want)
	}
	if g := w.functions["g"]; g.searchPath || g.rowSecurityOff || len(g.header) != 3 {
		t.Errorf("g = %+v: no settings, three lines", g)
	}
	want := map[[2]string]wantTrigger{
		{"t", "trg_a"}: {table: "t", name: "trg_a", function: "f", state: 'A',
			def: "CREATE TRIGGER trg_a BEFORE DELETE OR UPDATE ON t FOR EACH ROW WHEN ((old.state)::text = 'x ON y'::text) EXECUTE FUNCTION f()"},
		{"t", "trg_b"}: {table: "t", name: "trg_b", function: "f", state: 'D',
			def: "CREATE CONSTRAINT TRIGGER trg_b AFTER INSERT ON t DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION f()"},
		{"u", "trg_d"}: {table: "u", name: "trg_d", function: "g", state: 'O',
			def: "CREATE TRIGGER trg_d AFTER INSERT ON u REFERENCING NEW TABLE AS n FOR EACH STATEMENT EXECUTE FUNCTION g('a')"},
		{"u", "trg_e"}: {table: "u", name: "trg_e", function: "f", state: 'R',
			def: "CREATE TRIGGER trg_e BEFORE UPDATE OF a, b ON u FOR EACH ROW EXECUTE FUNCTION f()"},
	}
	if !reflect.DeepEqual(w.triggers, want) {
		t.Errorf("triggers\n%+v\nwant\n%+v", w.triggers, want)
	}
	for _, bad := range []string{
		"-- Functions\n",
		"\n-- Triggers (every one enabled ALWAYS unless said)\n\nALTER TABLE t ENABLE TRIGGER trg_a;\n",
		"\n-- Triggers (every one enabled ALWAYS unless said)\n\nCREATE TRIGGER trg_a BEFORE DELETE ON public.t FOR EACH ROW EXECUTE FUNCTION f(); -- asleep\n",
	} {
		if _, err := newWantSchema(nil, bad); err == nil {
			t.Errorf("%q read as a schema's triggers", bad)
		}
	}
}

func TestEmbeddedSchemaFindsEveryLedgerGuard(t *testing.T) {
	t.Parallel()
	w, err := embeddedSchema()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"ledger_refuse_change", "ledger_refuse_closed_month", "ledger_refuse_sealed_set",
		"ledger_check_posting_set", "reports_refuse_sealed_snapshot", "api_tokens_revoke_only"} {
		if w.functions[f].body == "" || !w.functions[f].searchPath || !w.functions[f].rowSecurityOff {
			t.Errorf("function %s not found with a body, a search_path and row_security = off", f)
		}
	}
	if _, ok := w.functions["outbox_notify"]; ok {
		t.Error("outbox_notify, dropped by 0006, still expected")
	}
	for _, k := range [][2]string{{"posting_sets", "trg_posting_sets_balanced"}, {"postings", "trg_postings_sealed_set"},
		{"posting_sets", "trg_posting_sets_open_month"}, {"accounts", "trg_accounts_immutable"}} {
		if tr := w.triggers[k]; tr.state != 'A' || tr.function == "" {
			t.Errorf("trigger %v = %+v, want enabled ALWAYS with its function", k, tr)
		}
	}
	if _, ok := w.triggers[[2]string{"outbox", "trg_outbox_notify"}]; ok {
		t.Error("trg_outbox_notify, dropped by 0006, still expected")
	}
}

// A function file pins its function's search_path (every ledger function's
// since sql/0012): the function must keep a safe one. Pinning it again as
// sql/0012 did (in place) changes nothing verify sees.
func TestVerifyNamesAFunctionWhoseSearchPathIsUnpinned(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	want, err := embeddedSchema()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for n := range want.functions {
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

// Every trigger of a freshly migrated ledger reads, its schema taken out,
// as docs/schema.sql has it; every neutered one does not.
func TestTriggersReadAsTheMigrationsLeaveThemNeuteredOnesDoNot(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	w, err := embeddedSchema()
	if err != nil {
		t.Fatal(err)
	}
	var have []struct {
		Table string `db:"relname"`
		Name  string `db:"tgname"`
		Def   string `db:"def"`
	}
	if err := db.Select(&have, `SELECT c.relname, t.tgname, pg_get_triggerdef(t.oid) AS def FROM pg_trigger t
		JOIN pg_class c ON c.oid = t.tgrelid WHERE c.relnamespace = current_schema()::regnamespace AND NOT t.tgisinternal
			AND NOT c.relispartition`); err != nil {
		t.Fatal(err)
	}
	if len(have) != len(w.triggers) || len(have) < 10 {
		t.Fatalf("%d triggers in the database, %d in docs/schema.sql", len(have), len(w.triggers))
	}
	for _, h := range have {
		want := w.triggers[[2]string{h.Table, h.Name}].def
		if got, table := unqualifiedTrigger(h.Def, "public"); got != want || table != h.Table {
			t.Errorf("trigger %s on %s:\n pg_get_triggerdef %q\n reads             %q on %s\n docs/schema.sql   %q", h.Name, h.Table, h.Def, got, table, want)
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
			if got, _ := unqualifiedTrigger(def, "public"); got == w.triggers[[2]string{n.table, n.trigger}].def {
				t.Errorf("%q reads as the migrations' %q", def, got)
			}
		})
	}
}

// What the catalog prints differently for a ledger in another schema (the
// schema in the function's and the table's name) reads as the files and
// docs/schema.sql, which say public; nothing else is taken out.
func TestAnotherSchemaReadsAsTheFilesSay(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ catalog, schema, want, table string }{
		{`CREATE TRIGGER trg BEFORE DELETE OR UPDATE ON ledger.t FOR EACH ROW WHEN (((old.state)::text = 'ON ledger.x'::text)) EXECUTE FUNCTION f('a')`, "ledger",
			`CREATE TRIGGER trg BEFORE DELETE OR UPDATE ON t FOR EACH ROW WHEN (((old.state)::text = 'ON ledger.x'::text)) EXECUTE FUNCTION f('a')`, "t"},
		{`CREATE TRIGGER trg AFTER UPDATE OF a, b ON "Ledger Books".t FOR EACH ROW EXECUTE FUNCTION f()`, `"Ledger Books"`,
			`CREATE TRIGGER trg AFTER UPDATE OF a, b ON t FOR EACH ROW EXECUTE FUNCTION f()`, "t"},
		// A trigger on a table of another schema keeps it.
		{`CREATE TRIGGER trg AFTER INSERT ON shadow.t FOR EACH ROW EXECUTE FUNCTION f()`, "ledger",
			`CREATE TRIGGER trg AFTER INSERT ON shadow.t FOR EACH ROW EXECUTE FUNCTION f()`, "shadow.t"},
	} {
		if got, table := unqualifiedTrigger(c.catalog, c.schema); got != c.want || table != c.table {
			t.Errorf("%s\n reads %q on %s\n want  %q on %s", c.catalog, got, table, c.want, c.table)
		}
	}
	got := functionHeader("CREATE OR REPLACE FUNCTION ledger.f(m date)\n RETURNS text\n SET search_path TO 'pg_catalog', 'ledger', 'pg_temp'\nAS $function$ ledger.f $function$\n", "ledger")
	if want := []string{"CREATE OR REPLACE FUNCTION f(m date)", " RETURNS text", " SET search_path TO 'pg_catalog', 'ledger', 'pg_temp'"}; !slices.Equal(got, want) {
		t.Errorf("header %q, want %q", got, want)
	}
}

// A function whose body is its file's but whose definition is not (run as
// its caller instead of its owner, a setting dropped, a volatility added,
// another with its name and other arguments) is named with what differs.
func TestVerifyNamesAFunctionDefinedOtherwiseThanItsFile(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	want, err := embeddedSchema()
	if err != nil {
		t.Fatal(err)
	}
	db.MustExec(`ALTER FUNCTION month_sums_refresh(date) SECURITY INVOKER`)
	db.MustExec(`ALTER FUNCTION ledger_stamp_created_xid() RESET jit`)
	db.MustExec(`ALTER FUNCTION month_sums_refresh(date) RESET jit`)
	db.MustExec(`ALTER FUNCTION ledger_lock_account(text) STABLE`)
	var body string
	if err := db.Get(&body, `SELECT prosrc FROM pg_proc WHERE proname = 'reconciliation_analyze_lines'`); err != nil {
		t.Fatal(err)
	}
	db.MustExec(`CREATE FUNCTION reconciliation_analyze_lines(x integer) RETURNS void LANGUAGE plpgsql SECURITY DEFINER
		SET search_path = pg_catalog, public, pg_temp SET row_security = off AS $body$` + body + `$body$`)
	r, err := run(ctx, db, want)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	r.WriteTo(&b)
	for _, line := range []string{
		`function month_sums_refresh(date): is not defined as sql/functions/month_sums_refresh.sql defines it: lacks "SECURITY DEFINER", lacks "SET jit TO 'off'"`,
		`function ledger_lock_account(text): is not defined as sql/functions/ledger_lock_account.sql defines it: lacks "SECURITY DEFINER", has "STABLE SECURITY DEFINER"`,
		`function reconciliation_analyze_lines(integer): is not defined as sql/functions/reconciliation_analyze_lines.sql defines it: lacks "CREATE OR REPLACE FUNCTION reconciliation_analyze_lines()", has "CREATE OR REPLACE FUNCTION reconciliation_analyze_lines(x integer)"`,
	} {
		if !strings.Contains(b.String(), "\n        "+line+"\n") {
			t.Errorf("no line %q in:\n%s", line, b.String())
		}
	}
	// ledger_stamp_created_xid never had jit set, and the other
	// reconciliation_analyze_lines is its file's: neither is named.
	if strings.Contains(b.String(), "ledger_stamp_created_xid") || strings.Contains(b.String(), "reconciliation_analyze_lines():") {
		t.Errorf("a function as its file defines it is named:\n%s", b.String())
	}
}

// posting_sets and postings are partitioned by month (sql/0056): each
// partition carries its parent's triggers, the row triggers PostgreSQL
// clones and the statement triggers it does not, and one disabled,
// enabled for origin sessions only, or missing on a single partition is
// named with the partition.
func TestVerifyHoldsEveryPartitionToItsParentsTriggers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	want, err := embeddedSchema()
	if err != nil {
		t.Fatal(err)
	}
	db.MustExec(`SELECT ledger_ensure_month_partitions((date_trunc('month', now()) + interval '3 months')::date)`)
	var month string
	if err := db.Get(&month, `SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
		WHERE i.inhparent = 'posting_sets'::regclass AND c.relname NOT IN ('posting_sets_past', 'posting_sets_default')
		ORDER BY c.relname LIMIT 1`); err != nil {
		t.Fatalf("a month's partition of posting_sets: %v", err)
	}
	report := func(t *testing.T) string {
		t.Helper()
		r, err := run(ctx, db, want)
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		r.WriteTo(&b)
		return b.String()
	}
	if r := report(t); !strings.Contains(r, "ledger is clean") {
		t.Fatalf("a freshly migrated ledger:\n%s", r)
	}
	for _, c := range []struct{ name, breach, repair, want string }{
		{"a clone disabled on one month", `ALTER TABLE ` + month + ` DISABLE TRIGGER trg_posting_sets_balanced`,
			`ALTER TABLE ` + month + ` ENABLE ALWAYS TRIGGER trg_posting_sets_balanced`,
			`trigger trg_posting_sets_balanced on ` + month + ` is disabled; the migrations enable it ALWAYS`},
		{"a statement trigger of the past partition for origin sessions only", `ALTER TABLE posting_sets_past ENABLE TRIGGER trg_posting_sets_open_month`,
			`ALTER TABLE posting_sets_past ENABLE ALWAYS TRIGGER trg_posting_sets_open_month`,
			`trigger trg_posting_sets_open_month on posting_sets_past is enabled only for origin sessions`},
		{"a statement trigger dropped from one month", `DROP TRIGGER trg_posting_sets_written_open ON ` + month,
			`CREATE TRIGGER trg_posting_sets_written_open AFTER INSERT ON ` + month + ` REFERENCING NEW TABLE AS new_sets
				FOR EACH STATEMENT EXECUTE FUNCTION ledger_check_new_sets();
			ALTER TABLE ` + month + ` ENABLE ALWAYS TRIGGER trg_posting_sets_written_open`,
			`trigger trg_posting_sets_written_open on ` + month + `, a partition of posting_sets, is missing`},
		{"the sealed-set check dropped from postings' DEFAULT partition", `DROP TRIGGER trg_postings_sealed_set ON postings_default`,
			`CREATE TRIGGER trg_postings_sealed_set AFTER INSERT ON postings_default REFERENCING NEW TABLE AS new_postings
				FOR EACH STATEMENT EXECUTE FUNCTION ledger_refuse_sealed_set();
			ALTER TABLE postings_default ENABLE ALWAYS TRIGGER trg_postings_sealed_set`,
			`trigger trg_postings_sealed_set on postings_default, a partition of postings, is missing`},
		{"a statement trigger on a month that its parent does not have", `CREATE TRIGGER trg_extra AFTER INSERT ON ` + month + `
				FOR EACH STATEMENT EXECUTE FUNCTION ledger_refuse_change()`,
			`DROP TRIGGER trg_extra ON ` + month,
			`trigger trg_extra on ` + month + ` (calls public.ledger_refuse_change) is not defined by any migration`},
	} {
		t.Run(c.name, func(t *testing.T) {
			db.MustExec(c.breach)
			r := report(t)
			db.MustExec(c.repair)
			if !strings.Contains(r, c.want) {
				t.Errorf("no line %q in:\n%s", c.want, r)
			}
			if r := report(t); !strings.Contains(r, "ledger is clean") {
				t.Fatalf("repaired:\n%s", r)
			}
		})
	}
}
