package verify

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/razao/razao"
)

// The ledger's guards are trigger functions; an owner (or an attacker with
// the owner's rights) can switch them off without touching a row: replace
// a body by a no-op, disable or repoint a trigger, widen a function's
// search_path. verify compares every function with its file in
// sql/functions, and every trigger with the schema the migrations build
// (docs/schema.sql), both written as PostgreSQL prints them
// (pg_get_functiondef, pg_get_triggerdef): no SQL is parsed, only the
// ledger's schema is taken out of what the catalog prints. A new function
// file or migration is compared without a list to keep in step.

// wantFunction is a function as its file defines it.
type wantFunction struct {
	name, file string
	// header is the statement's lines before its body (name and
	// arguments, result, language, security, settings), without the
	// schema; body is the text between the dollar quotes (pg_proc.prosrc).
	header []string
	body   string
	// searchPath and rowSecurityOff say whether the file pins the
	// function's search_path and sets row_security = off (every ledger
	// function does, sql/0012 and sql/0035): each has a check of its own,
	// whose line says what a changed setting lets through.
	searchPath, rowSecurityOff bool
}

// wantTrigger is a trigger as the migrations leave it.
type wantTrigger struct {
	table, name, function string
	// state is pg_trigger.tgenabled: 'A' enabled ALWAYS (it fires under
	// session_replication_role = replica too), 'O' enabled for origin
	// sessions, 'R' for replica sessions only, 'D' disabled.
	state byte
	// def is pg_get_triggerdef without the table's schema.
	def string
}

// wantSchema is what verify holds the catalog to.
type wantSchema struct {
	functions map[string]wantFunction
	triggers  map[[2]string]wantTrigger // by (table, name)
}

// embeddedSchema is the schema of the function files and of
// docs/schema.sql embedded in the binary.
func embeddedSchema() (wantSchema, error) {
	fs, err := razao.Functions()
	if err != nil {
		return wantSchema{}, err
	}
	return newWantSchema(fs, razao.SchemaDump())
}

// The lines of a function's statement that its own checks compare.
const (
	searchPathLine  = " SET search_path TO "
	rowSecurityLine = " SET row_security TO "
)

// triggersHeading opens docs/schema.sql's last section, one trigger a
// line (schema_test.go's dumpSchema writes it).
const triggersHeading = "\n-- Triggers (every one enabled ALWAYS unless said)\n"

// An identifier as PostgreSQL prints one, and a name of one or two.
const (
	pgIdent = `(?:"(?:[^"]|"")*"|[^\s."(]+)`
	pgName  = pgIdent + `(?:\.` + pgIdent + `)?`
)

// triggerLine is a line of that section: pg_get_triggerdef, ';', and the
// state when it is not ALWAYS.
var triggerLine = regexp.MustCompile(`^(CREATE (?:CONSTRAINT )?TRIGGER (` + pgIdent + `) .*? ON (` + pgName + `) .*EXECUTE FUNCTION (` + pgName + `)\(.*\));(?: -- (.*))?$`)

// triggerStates are the states docs/schema.sql writes after a trigger.
var triggerStates = map[string]byte{"": 'A', "enabled (origin)": 'O', "enabled (replica)": 'R', "DISABLED": 'D'}

// newWantSchema reads the function files fs, and the triggers of dump,
// docs/schema.sql.
func newWantSchema(fs []razao.Function, dump string) (wantSchema, error) {
	w := wantSchema{functions: map[string]wantFunction{}, triggers: map[[2]string]wantTrigger{}}
	for _, f := range fs {
		wf := wantFunction{name: f.Name, file: f.File(), header: functionHeader(f.Definition, ""), body: f.Body}
		for _, l := range wf.header {
			wf.searchPath = wf.searchPath || strings.HasPrefix(l, searchPathLine)
			wf.rowSecurityOff = wf.rowSecurityOff || l == rowSecurityLine+"'off'"
		}
		w.functions[f.Name] = wf
	}
	_, section, ok := strings.Cut(dump, triggersHeading)
	if !ok {
		return wantSchema{}, fmt.Errorf("docs/schema.sql has no section %q", strings.TrimSpace(triggersHeading))
	}
	for _, line := range strings.Split(section, "\n") {
		if line == "" {
			continue
		}
		m := triggerLine.FindStringSubmatch(line)
		if m == nil {
			return wantSchema{}, fmt.Errorf("docs/schema.sql: not a trigger as pg_get_triggerdef prints one: %s", line)
		}
		state, known := triggerStates[m[5]]
		if !known {
			return wantSchema{}, fmt.Errorf("docs/schema.sql: trigger %s in state %q", m[2], m[5])
		}
		def, table := unqualifiedTrigger(m[1], "public")
		w.triggers[[2]string{table, m[2]}] = wantTrigger{table: table, name: m[2], function: m[4], state: state, def: def}
	}
	return w, nil
}

// functionHeader returns the lines of a function's definition before its
// body, with the function's schema (quoted as pg_get_functiondef quotes
// it, "" when there is none) taken out of the first.
func functionHeader(def, schema string) []string {
	head, _, _ := strings.Cut(def, "\nAS ")
	lines := strings.Split(head, "\n")
	if schema != "" {
		lines[0] = strings.Replace(lines[0], " "+schema+".", " ", 1)
	}
	return lines
}

// unqualifiedTrigger returns def, a pg_get_triggerdef, with schema (quoted
// as pg_get_triggerdef quotes it) taken out of its table's name, and the
// table. pg_get_triggerdef qualifies the table always, the function only
// when the search_path does not find it; verify's search_path does.
func unqualifiedTrigger(def, schema string) (string, string) {
	loc := triggerTable.FindStringSubmatchIndex(def)
	if loc == nil {
		return def, ""
	}
	table := strings.TrimPrefix(def[loc[2]:loc[3]], schema+".")
	return def[:loc[2]] + table + def[loc[3]:], table
}

// triggerTable finds the table in a pg_get_triggerdef: its first ON.
var triggerTable = regexp.MustCompile(`^CREATE (?:CONSTRAINT )?TRIGGER ` + pgIdent + ` .*? ON (` + pgName + `) `)

// ledgerSchema returns the schema that holds posting_sets.
func ledgerSchema(ctx context.Context, q sqlx.QueryerContext) (string, error) {
	var schema string
	if err := sqlx.GetContext(ctx, q, &schema, `SELECT n.nspname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE c.oid = 'posting_sets'::regclass`); err != nil {
		return "", fmt.Errorf("find the ledger's schema: %w", err)
	}
	return schema, nil
}

// schemaChecks compares the catalog of the ledger's schema with w, and
// returns one line per breach: functions, triggers, and the functions and
// operators no migration or function file defines (foreign).
func schemaChecks(ctx context.Context, q sqlx.QueryerContext, w wantSchema, schema string) (functions, triggers, foreign []string, err error) {
	names := make([]string, 0, len(w.functions))
	for n := range w.functions {
		names = append(names, n)
	}
	slices.Sort(names)
	var procs []struct {
		Name      string         `db:"proname"`
		Signature string         `db:"signature"`
		Body      string         `db:"prosrc"`
		Config    pq.StringArray `db:"proconfig"`
		Def       string         `db:"def"`
		Schema    string         `db:"schema"`
	}
	// pg_get_functiondef refuses an aggregate: one named like ours is
	// named as unlike it instead.
	if err := sqlx.SelectContext(ctx, q, &procs, `SELECT p.proname, p.oid::regprocedure::text AS signature, p.prosrc,
			coalesce(p.proconfig, '{}') AS proconfig, quote_ident(n.nspname) AS schema,
			CASE WHEN p.prokind = 'a' THEN 'an aggregate' ELSE pg_get_functiondef(p.oid) END AS def
		FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
		WHERE n.nspname = $1 AND p.proname = ANY($2) ORDER BY p.proname, p.oid`, schema, pq.Array(names)); err != nil {
		return nil, nil, nil, fmt.Errorf("read functions: %w", err)
	}
	for _, n := range names {
		f := w.functions[n]
		found := false
		for _, p := range procs {
			if p.Name != n {
				continue
			}
			found = true
			if p.Body != f.body {
				functions = append(functions, fmt.Sprintf("function %s: body differs from the one %s defines", p.Signature, f.file))
			}
			if msg := searchPathBreach(p.Config, schema, f.searchPath); msg != "" {
				functions = append(functions, fmt.Sprintf("function %s: %s", p.Signature, msg))
			}
			if f.rowSecurityOff && !slices.Contains(p.Config, "row_security=off") {
				functions = append(functions, fmt.Sprintf("function %s: does not run with row_security = off, as the migrations set it (a row-level security policy could hide rows from it)", p.Signature))
			}
			if msg := headerBreach(functionHeader(p.Def, p.Schema), f); msg != "" {
				functions = append(functions, fmt.Sprintf("function %s: %s", p.Signature, msg))
			}
		}
		if !found {
			functions = append(functions, fmt.Sprintf("function %s (defined by %s) is missing from schema %s", n, f.file, schema))
		}
	}

	// A partition carries every trigger of its parent (posting_sets and
	// postings are partitioned by month, sql/0056): the row triggers,
	// which PostgreSQL clones onto it, and the statement triggers, which
	// it does not (a partition written by name fires its own, not its
	// parent's). Each is held to its parent's line of docs/schema.sql,
	// with the partition's name for the parent's, and missing from a
	// partition is missing.
	var parts []struct {
		Table  string `db:"relname"`
		Parent string `db:"parent"`
	}
	if err := sqlx.SelectContext(ctx, q, &parts, `SELECT c.relname, p.relname AS parent
		FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid JOIN pg_class p ON p.oid = i.inhparent
		WHERE c.relispartition AND c.relnamespace = $1::regnamespace ORDER BY c.relname`, pq.QuoteIdentifier(schema)); err != nil {
		return nil, nil, nil, fmt.Errorf("read partitions: %w", err)
	}
	parentOf := map[string]string{}
	for _, p := range parts {
		parentOf[p.Table] = p.Parent
	}
	rootOf := func(table string) string {
		for i := 0; i < len(parts) && parentOf[table] != ""; i++ {
			table = parentOf[table]
		}
		return table
	}
	want := func(table, name string) (wantTrigger, bool) {
		root := rootOf(table)
		t, ok := w.triggers[[2]string{root, name}]
		if ok && root != table {
			t.table = table
			t.def = strings.Replace(t.def, " ON "+root+" ", " ON "+table+" ", 1)
		}
		return t, ok
	}
	var have []struct {
		Table    string `db:"relname"`
		Name     string `db:"tgname"`
		Enabled  string `db:"tgenabled"`
		Function string `db:"function"`
		FuncNS   string `db:"function_schema"`
		Def      string `db:"def"`
		Schema   string `db:"schema"`
	}
	if err := sqlx.SelectContext(ctx, q, &have, `SELECT c.relname, t.tgname, t.tgenabled::text AS tgenabled,
			p.proname AS function, pn.nspname AS function_schema, pg_get_triggerdef(t.oid) AS def, quote_ident(n.nspname) AS schema
		FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid JOIN pg_namespace n ON n.oid = c.relnamespace
		JOIN pg_proc p ON p.oid = t.tgfoid JOIN pg_namespace pn ON pn.oid = p.pronamespace
		WHERE n.nspname = $1 AND NOT t.tgisinternal ORDER BY c.relname, t.tgname`, schema); err != nil {
		return nil, nil, nil, fmt.Errorf("read triggers: %w", err)
	}
	seen := map[[2]string]bool{}
	for _, h := range have {
		key := [2]string{h.Table, h.Name}
		seen[key] = true
		t, ok := want(h.Table, h.Name)
		if !ok {
			triggers = append(triggers, fmt.Sprintf("trigger %s on %s (calls %s.%s) is not defined by any migration", h.Name, h.Table, h.FuncNS, h.Function))
			continue
		}
		if h.Function != t.function || h.FuncNS != schema {
			triggers = append(triggers, fmt.Sprintf("trigger %s on %s calls %s.%s; docs/schema.sql, the schema the migrations build, has it call %s",
				h.Name, h.Table, h.FuncNS, h.Function, t.function))
		} else if def, _ := unqualifiedTrigger(h.Def, h.Schema); def != t.def {
			// Same name, function and state, but another trigger: WHEN
			// (false), fewer events, FOR EACH STATEMENT, not deferred...
			triggers = append(triggers, fmt.Sprintf("trigger %s on %s is defined as %q; the migrations define %q", h.Name, h.Table, h.Def, t.def))
		}
		// 'A' fires always, 'O' only for origin sessions (a session with
		// session_replication_role = replica skips it), 'R' only for
		// replica sessions, 'D' never. One the migrations leave for
		// replica sessions, or disabled, is theirs to leave so.
		switch {
		case t.state == 'A' && h.Enabled != "A":
			triggers = append(triggers, fmt.Sprintf("trigger %s on %s is %s; the migrations enable it ALWAYS", h.Name, h.Table, triggerState(h.Enabled)))
		case t.state == 'O' && h.Enabled != "A" && h.Enabled != "O":
			triggers = append(triggers, fmt.Sprintf("trigger %s on %s is %s; the migrations enable it", h.Name, h.Table, triggerState(h.Enabled)))
		}
	}
	keys := make([][2]string, 0, len(w.triggers))
	for k := range w.triggers {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b [2]string) int { return strings.Compare(a[0]+"."+a[1], b[0]+"."+b[1]) })
	for _, k := range keys {
		if !seen[k] {
			t := w.triggers[k]
			triggers = append(triggers, fmt.Sprintf("trigger %s on %s (defined by the migrations, see docs/schema.sql) is missing", t.name, t.table))
		}
		for _, p := range parts {
			if rootOf(p.Table) == k[0] && !seen[[2]string{p.Table, k[1]}] {
				triggers = append(triggers, fmt.Sprintf("trigger %s on %s, a partition of %s, is missing (every partition carries its parent's triggers)",
					k[1], p.Table, k[0]))
			}
		}
	}

	// A function or operator razao does not create can hijack the ledger's
	// own SQL: an operator <>(numeric, integer) is a closer match for
	// sum(amount) <> 0 than pg_catalog's, whatever the search_path. razao
	// creates no operator at all.
	var extra []struct {
		What      string `db:"what"`
		Name      string `db:"name"`
		Signature string `db:"signature"`
		Detail    string `db:"detail"`
	}
	if err := sqlx.SelectContext(ctx, q, &extra, `
		WITH objects AS (
			SELECT 'pg_proc'::regclass AS catalog, p.oid, 'function' AS what, p.proname AS name,
				p.oid::regprocedure::text AS signature, '' AS detail
			FROM pg_proc p WHERE p.pronamespace = $1::regnamespace
			UNION ALL
			SELECT 'pg_operator'::regclass, o.oid, 'operator', o.oprname, o.oid::regoperator::text,
				coalesce(' (calls ' || o.oprcode::regprocedure::text || ')', '')
			FROM pg_operator o WHERE o.oprnamespace = $1::regnamespace
		)
		-- An extension installed into the ledger's schema is named: it too
		-- can shadow pg_catalog, and belongs in a schema of its own.
		SELECT o.what, o.name, o.signature, o.detail || coalesce(' (from extension ' || e.extname || ')', '') AS detail
		FROM objects o
		LEFT JOIN pg_depend d ON d.classid = o.catalog AND d.objid = o.oid AND d.deptype = 'e'
		LEFT JOIN pg_extension e ON e.oid = d.refobjid
		ORDER BY 1, 3`, pq.QuoteIdentifier(schema)); err != nil {
		return nil, nil, nil, fmt.Errorf("read functions and operators: %w", err)
	}
	for _, e := range extra {
		switch _, defined := w.functions[e.Name]; {
		case e.What == "function" && !defined:
			foreign = append(foreign, fmt.Sprintf("function %s.%s%s is not defined by any migration or file of sql/functions", schema, e.Signature, e.Detail))
		case e.What == "operator":
			foreign = append(foreign, fmt.Sprintf("operator %s.%s%s is not defined by any migration", schema, e.Signature, e.Detail))
		}
	}
	return functions, triggers, foreign, nil
}

// headerBreach compares a function's definition before its body, as the
// catalog prints it (have), with its file's: what it lacks and what it has
// beyond. The search_path and row_security, which have checks of their
// own, are left to them.
func headerBreach(have []string, f wantFunction) string {
	own := func(l string) bool {
		return strings.HasPrefix(l, searchPathLine) || (f.rowSecurityOff && strings.HasPrefix(l, rowSecurityLine))
	}
	have = slices.DeleteFunc(slices.Clone(have), own)
	want := slices.DeleteFunc(slices.Clone(f.header), own)
	if slices.Equal(have, want) {
		return ""
	}
	var diff []string
	for _, l := range want {
		if !slices.Contains(have, l) {
			diff = append(diff, fmt.Sprintf("lacks %q", strings.TrimSpace(l)))
		}
	}
	for _, l := range have {
		if !slices.Contains(want, l) {
			diff = append(diff, fmt.Sprintf("has %q", strings.TrimSpace(l)))
		}
	}
	if len(diff) == 0 {
		diff = append(diff, "its attributes are in another order")
	}
	return "is not defined as " + f.file + " defines it: " + strings.Join(diff, ", ")
}

func triggerState(enabled string) string {
	switch enabled {
	case "D":
		return "disabled"
	case "O":
		return "enabled only for origin sessions (session_replication_role = replica skips it)"
	case "R":
		return "enabled only for replica sessions"
	}
	return "in state " + enabled
}

// searchPathBreach checks a function's settings (pg_proc.proconfig): a
// search_path, when there is one (and there must be one once the
// migrations pin it), must name the ledger's schema with nothing but
// pg_catalog before it, and list pg_temp explicitly after it: a path
// without pg_temp searches it first, so anyone with TEMP could shadow
// the ledger's tables with temporary ones.
func searchPathBreach(config []string, schema string, required bool) string {
	var path string
	found := false
	for _, c := range config {
		if v, ok := strings.CutPrefix(c, "search_path="); ok {
			path, found = v, true
		}
	}
	if !found {
		if required {
			return "has no search_path setting; the migrations pin one (pg_catalog, " + schema + ", pg_temp)"
		}
		return ""
	}
	var parts []string
	for _, s := range strings.Split(path, ",") {
		s = strings.TrimSpace(s)
		if len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' {
			s = strings.ReplaceAll(s[1:len(s)-1], `""`, `"`)
		}
		parts = append(parts, s)
	}
	own, temp := slices.Index(parts, schema), slices.Index(parts, "pg_temp")
	switch {
	case own < 0:
		return fmt.Sprintf("search_path %q does not name the ledger's schema %s", path, schema)
	case temp < 0:
		return fmt.Sprintf("search_path %q does not list pg_temp, so pg_temp is searched first", path)
	case temp < own:
		return fmt.Sprintf("search_path %q puts pg_temp before %s", path, schema)
	}
	for _, s := range parts[:own] {
		if s != "pg_catalog" {
			return fmt.Sprintf("search_path %q puts %s before %s", path, s, schema)
		}
	}
	return ""
}
