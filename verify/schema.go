package verify

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/razao/razao"
)

// The ledger's guards are trigger functions; an owner (or an attacker with
// the owner's rights) can switch them off without touching a row: replace
// a body by a no-op, disable or repoint a trigger, widen a function's
// search_path. verify compares the catalog with what the embedded
// migrations define, read from their SQL, so the comparison follows every
// new migration without a list to keep in step.

// wantFunction is the last definition of a function in the migrations.
type wantFunction struct {
	name string
	// body is the text between the dollar quotes (pg_proc.prosrc); hasBody
	// is false for a definition verify cannot read (a SQL-standard body).
	body    string
	hasBody bool
	file    string // the migration that defines it last
}

// wantTrigger is the state the migrations leave a trigger in.
type wantTrigger struct {
	table, name, function string
	// always is true when a migration enables the trigger ALWAYS (it then
	// fires under session_replication_role = replica too); disabled when a
	// migration disables it on purpose.
	always, disabled bool
	file             string
	// def is the CREATE [CONSTRAINT] TRIGGER statement, as tokens, that
	// pg_get_triggerdef must reproduce (canonTrigger compares the two).
	def []token
}

// wantSchema is what the migrations define, as verify compares it.
type wantSchema struct {
	functions map[string]wantFunction
	triggers  map[[2]string]wantTrigger // by (table, name)
	// pinnedSearchPath is true once a migration sets a function's
	// search_path (in CREATE/ALTER FUNCTION or inside a DO block, which
	// verify does not execute): from then on every ledger function must
	// carry one.
	pinnedSearchPath bool
	// pinnedRowSecurity is true once a migration sets a function's
	// row_security (sql/0035): from then on every ledger function must
	// run with row_security = off, so that no policy hides rows from it.
	pinnedRowSecurity bool
	// operators are the names of the operators the migrations create.
	operators map[string]bool
}

// parseMigrations reads the functions and triggers that ms define, in
// order: the last CREATE [OR REPLACE] FUNCTION of a name wins, DROP
// removes, ALTER TABLE ... ENABLE ALWAYS / DISABLE TRIGGER sets a trigger's
// state. Statements are tokenised as PostgreSQL does (comments, quoted
// strings and dollar-quoted bodies are skipped as units), so a DO block's
// body or a comment never reads as a statement.
func parseMigrations(ms []razao.Migration) wantSchema {
	w := wantSchema{functions: map[string]wantFunction{}, triggers: map[[2]string]wantTrigger{}, operators: map[string]bool{}}
	for _, m := range ms {
		for _, st := range statements(m.SQL) {
			w.apply(st, m.Name)
		}
	}
	return w
}

func (w *wantSchema) apply(st []token, file string) {
	p := &tokens{st: st}
	switch {
	case p.words("CREATE"):
		p.words("OR", "REPLACE")
		switch {
		case p.words("FUNCTION"):
			w.createFunction(p, file)
		case p.words("CONSTRAINT", "TRIGGER"), p.words("TRIGGER"):
			w.createTrigger(p, st, file)
		case p.words("OPERATOR"):
			w.operators[operatorName(p)] = true
		}
	case p.words("DROP", "OPERATOR"):
		p.words("IF", "EXISTS")
		delete(w.operators, operatorName(p))
	case p.words("DROP", "FUNCTION"):
		p.words("IF", "EXISTS")
		for {
			delete(w.functions, p.name())
			p.skipParens()
			if !p.punct(",") {
				break
			}
		}
	case p.words("DROP", "TRIGGER"):
		p.words("IF", "EXISTS")
		name := p.name()
		if p.words("ON") {
			delete(w.triggers, [2]string{p.name(), name})
		}
	case p.words("ALTER", "TRIGGER"):
		name := p.name()
		if p.words("ON") {
			table := p.name()
			if p.words("RENAME", "TO") {
				key := [2]string{table, name}
				if t, ok := w.triggers[key]; ok {
					delete(w.triggers, key)
					t.name = p.name()
					t.def = renamedTrigger(t.def, t.name)
					w.triggers[[2]string{table, t.name}] = t
				}
			}
		}
	case p.words("ALTER", "TABLE"):
		p.words("IF", "EXISTS")
		p.words("ONLY")
		w.alterTable(p, p.name())
	case p.words("ALTER", "FUNCTION"):
		w.pinnedSearchPath = w.pinnedSearchPath || p.hasWord("SEARCH_PATH")
		w.pinnedRowSecurity = w.pinnedRowSecurity || p.hasWord("ROW_SECURITY")
	case p.words("DO"):
		for _, t := range st {
			if t.kind == tokString && strings.Contains(strings.ToLower(t.text), "search_path") {
				w.pinnedSearchPath = true
			}
			if t.kind == tokString && strings.Contains(strings.ToLower(t.text), "row_security") {
				w.pinnedRowSecurity = true
			}
		}
	}
}

func (w *wantSchema) createFunction(p *tokens, file string) {
	f := wantFunction{name: p.name(), file: file}
	p.skipParens()
	for !p.done() {
		if p.words("SET") {
			w.pinnedSearchPath = w.pinnedSearchPath || p.hasWord("SEARCH_PATH")
			w.pinnedRowSecurity = w.pinnedRowSecurity || p.hasWord("ROW_SECURITY")
		}
		if p.words("AS") && p.peek().kind == tokString {
			f.body, f.hasBody = p.next().text, true
			continue
		}
		p.next()
	}
	w.functions[f.name] = f
}

func (w *wantSchema) createTrigger(p *tokens, st []token, file string) {
	t := wantTrigger{name: p.name(), file: file, def: st}
	for !p.done() && !p.words("ON") {
		p.next()
	}
	t.table = p.name()
	for !p.done() {
		if p.words("EXECUTE", "FUNCTION") || p.words("EXECUTE", "PROCEDURE") {
			t.function = p.name()
			break
		}
		p.next()
	}
	// CREATE OR REPLACE TRIGGER leaves the trigger enabled for origin
	// sessions until a migration says otherwise.
	w.triggers[[2]string{t.table, t.name}] = t
}

// operatorName reads an operator's possibly schema-qualified name (its
// symbol, one punctuation token per character) and returns the symbol.
func operatorName(p *tokens) string {
	var b strings.Builder
	for !p.done() && !(p.peek().kind == tokPunct && p.peek().text == "(") {
		t := p.next()
		if t.kind == tokPunct && t.text == "." {
			b.Reset() // what came before was the schema
			continue
		}
		b.WriteString(t.text)
	}
	return b.String()
}

// renamedTrigger returns def, a CREATE [CONSTRAINT] TRIGGER statement,
// with the trigger's name replaced by name (ALTER TRIGGER ... RENAME TO).
func renamedTrigger(def []token, name string) []token {
	out := slices.Clone(def)
	for i, t := range out {
		if t.kind == tokWord && t.text == "trigger" && i+1 < len(out) {
			out[i+1] = token{tokIdent, name}
			break
		}
	}
	return out
}

// canonTrigger renders a CREATE [CONSTRAINT] TRIGGER statement's tokens in
// the one form both the migrations' text and pg_get_triggerdef(oid) reduce
// to, so any difference left is a difference in what the trigger does (its
// events, timing, WHEN, FOR EACH, REFERENCING, deferrability, function and
// arguments): keywords and plain identifiers in lower case, schema
// qualification by schema (or public) removed, casts removed
// (pg_get_triggerdef adds '...'::text, and (old.col)::text for a varchar
// column), parentheses and the trailing ';'
// removed, EXECUTE PROCEDURE read as EXECUTE FUNCTION, and tokens joined by
// single spaces.
func canonTrigger(st []token, schema string) string {
	var out []string
	for i := 0; i < len(st); i++ {
		t := st[i]
		switch {
		case t.kind == tokWord && t.text == "or" && i == 1 && i+1 < len(st) && st[i+1].text == "replace":
			i++ // CREATE OR REPLACE TRIGGER defines what CREATE TRIGGER does
			continue
		case t.kind == tokPunct && (t.text == "(" || t.text == ")" || t.text == ";"):
			continue
		case (t.kind == tokWord || t.kind == tokIdent) && (t.text == schema || t.text == "public") &&
			i+1 < len(st) && st[i+1].kind == tokPunct && st[i+1].text == ".":
			i++ // the schema and its dot
			continue
		case t.kind == tokPunct && t.text == ":" && i+1 < len(st) && st[i+1].kind == tokPunct && st[i+1].text == ":":
			i = skipCastType(st, i+2) - 1
			continue
		case t.kind == tokWord && t.text == "procedure" && i > 0 && st[i-1].kind == tokWord && st[i-1].text == "execute":
			out = append(out, "function")
			continue
		}
		switch t.kind {
		case tokString:
			out = append(out, "'"+strings.ReplaceAll(t.text, "'", "''")+"'")
		case tokIdent:
			if plainIdent(t.text) {
				out = append(out, t.text)
			} else {
				out = append(out, `"`+strings.ReplaceAll(t.text, `"`, `""`)+`"`)
			}
		default:
			out = append(out, t.text)
		}
	}
	return strings.Join(sortEvents(out), " ")
}

// sortEvents puts a trigger's events (between BEFORE, AFTER or INSTEAD OF
// and ON) in one order: pg_get_triggerdef writes INSERT OR DELETE OR
// UPDATE whatever order CREATE TRIGGER gave.
func sortEvents(out []string) []string {
	from := slices.IndexFunc(out, func(w string) bool { return w == "before" || w == "after" || w == "instead" })
	if from < 0 {
		return out
	}
	if from++; out[from-1] == "instead" && from < len(out) && out[from] == "of" {
		from++
	}
	to := from + slices.Index(out[from:], "on")
	if to < from {
		return out
	}
	events := strings.Split(strings.Join(out[from:to], " "), " or ")
	slices.Sort(events)
	return slices.Concat(out[:from], strings.Fields(strings.Join(events, " or ")), out[to:])
}

// skipCastType returns the index just past the type name that starts at
// st[i] in a cast: one word, or one of SQL's multi-word names, then any [].
func skipCastType(st []token, i int) int {
	p := &tokens{st: st, i: i}
	switch {
	case p.words("character", "varying"), p.words("double", "precision"), p.words("bit", "varying"):
	case p.words("timestamp"), p.words("time"):
		if !p.words("with", "time", "zone") {
			p.words("without", "time", "zone")
		}
	default:
		p.name()
	}
	for p.punct("[") && p.punct("]") {
	}
	return p.i
}

// plainIdent reports whether a quoted identifier needs no quotes: lower
// case letters, digits and _, not starting with a digit.
func plainIdent(s string) bool {
	for i, c := range s {
		if !(c == '_' || (c >= 'a' && c <= 'z') || (i > 0 && c >= '0' && c <= '9')) {
			return false
		}
	}
	return s != ""
}

// alterTable applies each ENABLE/DISABLE TRIGGER action of an ALTER TABLE
// (actions are comma-separated).
func (w *wantSchema) alterTable(p *tokens, table string) {
	for !p.done() {
		var always, disabled bool
		switch {
		case p.words("ENABLE", "ALWAYS", "TRIGGER"):
			always = true
		case p.words("ENABLE", "REPLICA", "TRIGGER"), p.words("DISABLE", "TRIGGER"):
			disabled = true
		case p.words("ENABLE", "TRIGGER"):
		default:
			p.next()
			continue
		}
		name := p.name()
		for key, t := range w.triggers {
			if key[0] != table || (name != "all" && name != "user" && key[1] != name) {
				continue
			}
			t.always, t.disabled = always, disabled
			w.triggers[key] = t
		}
	}
}

type tokenKind int

const (
	tokWord   tokenKind = iota // a keyword or unquoted identifier, lowered
	tokIdent                   // a "quoted identifier", as written
	tokString                  // a '...' or $tag$...$tag$ string's content
	tokPunct                   // one character of anything else
)

type token struct {
	kind tokenKind
	text string
}

// statements splits sql into statements of tokens, as PostgreSQL's lexer
// would: comments are dropped, strings and dollar-quoted bodies are one
// token each, and ';' ends a statement only outside them.
func statements(sql string) [][]token {
	var out [][]token
	var cur []token
	for i := 0; i < len(sql); {
		c := sql[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f':
			i++
		case strings.HasPrefix(sql[i:], "--"):
			if j := strings.IndexByte(sql[i:], '\n'); j >= 0 {
				i += j + 1
			} else {
				i = len(sql)
			}
		case strings.HasPrefix(sql[i:], "/*"):
			depth := 0
			for i < len(sql) {
				switch {
				case strings.HasPrefix(sql[i:], "/*"):
					depth++
					i += 2
				case strings.HasPrefix(sql[i:], "*/"):
					depth--
					i += 2
				default:
					i++
				}
				if depth == 0 {
					break
				}
			}
		case c == '\'':
			var b strings.Builder
			for i++; i < len(sql); i++ {
				if sql[i] == '\'' {
					if i+1 < len(sql) && sql[i+1] == '\'' {
						b.WriteByte('\'')
						i++
						continue
					}
					i++
					break
				}
				b.WriteByte(sql[i])
			}
			cur = append(cur, token{tokString, b.String()})
		case c == '"':
			j := strings.IndexByte(sql[i+1:], '"')
			if j < 0 {
				j = len(sql) - i - 1
			}
			cur = append(cur, token{tokIdent, sql[i+1 : i+1+j]})
			i += j + 2
		case c == '$' && dollarTag(sql[i:]) != "":
			tag := dollarTag(sql[i:])
			rest := sql[i+len(tag):]
			j := strings.Index(rest, tag)
			if j < 0 {
				j = len(rest)
			}
			cur = append(cur, token{tokString, rest[:j]})
			i += len(tag) + j + len(tag)
		case isWordStart(c):
			j := i + 1
			for j < len(sql) && (isWordStart(sql[j]) || (sql[j] >= '0' && sql[j] <= '9') || sql[j] == '$') {
				j++
			}
			cur = append(cur, token{tokWord, strings.ToLower(sql[i:j])})
			i = j
		case c == ';':
			if len(cur) > 0 {
				out = append(out, cur)
			}
			cur = nil
			i++
		default:
			cur = append(cur, token{tokPunct, string(c)})
			i++
		}
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}

// dollarTag returns the opening $tag$ at the start of s, or "".
func dollarTag(s string) string {
	for j := 1; j < len(s); j++ {
		switch c := s[j]; {
		case c == '$':
			return s[:j+1]
		case isWordStart(c) || (j > 1 && c >= '0' && c <= '9'):
		default:
			return ""
		}
	}
	return ""
}

func isWordStart(c byte) bool {
	return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c >= 0x80
}

// tokens walks one statement.
type tokens struct {
	st []token
	i  int
}

func (p *tokens) done() bool { return p.i >= len(p.st) }

func (p *tokens) peek() token {
	if p.done() {
		return token{kind: tokPunct}
	}
	return p.st[p.i]
}

func (p *tokens) next() token {
	t := p.peek()
	p.i++
	return t
}

// words consumes the keywords ws if they come next, all of them.
func (p *tokens) words(ws ...string) bool {
	for k, w := range ws {
		if p.i+k >= len(p.st) || p.st[p.i+k].kind != tokWord || p.st[p.i+k].text != strings.ToLower(w) {
			return false
		}
	}
	p.i += len(ws)
	return true
}

func (p *tokens) punct(s string) bool {
	if t := p.peek(); t.kind == tokPunct && t.text == s && !p.done() {
		p.i++
		return true
	}
	return false
}

// hasWord reports whether the keyword w appears in the rest of the statement.
func (p *tokens) hasWord(w string) bool {
	return slices.ContainsFunc(p.st[p.i:], func(t token) bool { return t.kind == tokWord && t.text == strings.ToLower(w) })
}

// name reads a possibly schema-qualified name and returns its last part:
// verify compares within the ledger's own schema.
func (p *tokens) name() string {
	var n string
	for {
		t := p.next()
		if t.kind == tokWord || t.kind == tokIdent {
			n = t.text
		}
		if !p.punct(".") {
			return n
		}
	}
}

// skipParens skips a parenthesised argument list, if one comes next.
func (p *tokens) skipParens() {
	if !p.punct("(") {
		return
	}
	for depth := 1; depth > 0 && !p.done(); {
		switch t := p.next(); {
		case t.kind == tokPunct && t.text == "(":
			depth++
		case t.kind == tokPunct && t.text == ")":
			depth--
		}
	}
}

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
// operators no migration defines (foreign).
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
	}
	if err := sqlx.SelectContext(ctx, q, &procs, `SELECT p.proname, p.oid::regprocedure::text AS signature, p.prosrc,
			coalesce(p.proconfig, '{}') AS proconfig
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
			if f.hasBody && p.Body != f.body {
				functions = append(functions, fmt.Sprintf("function %s: body differs from the one %s defines", p.Signature, f.file))
			}
			if msg := searchPathBreach(p.Config, schema, w.pinnedSearchPath); msg != "" {
				functions = append(functions, fmt.Sprintf("function %s: %s", p.Signature, msg))
			}
			if w.pinnedRowSecurity && !slices.Contains(p.Config, "row_security=off") {
				functions = append(functions, fmt.Sprintf("function %s: does not run with row_security = off, as the migrations set it (a row-level security policy could hide rows from it)", p.Signature))
			}
		}
		if !found {
			functions = append(functions, fmt.Sprintf("function %s (defined by %s) is missing from schema %s", n, f.file, schema))
		}
	}

	var have []struct {
		Table    string `db:"relname"`
		Name     string `db:"tgname"`
		Enabled  string `db:"tgenabled"`
		Function string `db:"function"`
		FuncNS   string `db:"function_schema"`
		Def      string `db:"def"`
	}
	if err := sqlx.SelectContext(ctx, q, &have, `SELECT c.relname, t.tgname, t.tgenabled::text AS tgenabled,
			p.proname AS function, pn.nspname AS function_schema, pg_get_triggerdef(t.oid) AS def
		FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid JOIN pg_namespace n ON n.oid = c.relnamespace
		JOIN pg_proc p ON p.oid = t.tgfoid JOIN pg_namespace pn ON pn.oid = p.pronamespace
		WHERE n.nspname = $1 AND NOT t.tgisinternal ORDER BY c.relname, t.tgname`, schema); err != nil {
		return nil, nil, nil, fmt.Errorf("read triggers: %w", err)
	}
	seen := map[[2]string]bool{}
	for _, h := range have {
		key := [2]string{h.Table, h.Name}
		seen[key] = true
		t, ok := w.triggers[key]
		if !ok {
			triggers = append(triggers, fmt.Sprintf("trigger %s on %s (calls %s.%s) is not defined by any migration", h.Name, h.Table, h.FuncNS, h.Function))
			continue
		}
		if h.Function != t.function || h.FuncNS != schema {
			triggers = append(triggers, fmt.Sprintf("trigger %s on %s calls %s.%s; %s has it call %s", h.Name, h.Table, h.FuncNS, h.Function, t.file, t.function))
		} else if def := statements(h.Def); len(def) != 1 || canonTrigger(def[0], schema) != canonTrigger(t.def, schema) {
			// Same name, function and state, but another trigger: WHEN
			// (false), fewer events, FOR EACH STATEMENT, not deferred...
			triggers = append(triggers, fmt.Sprintf("trigger %s on %s is defined as %q; %s defines %q",
				h.Name, h.Table, h.Def, t.file, canonTrigger(t.def, schema)))
		}
		// 'A' fires always, 'O' only for origin sessions (a session with
		// session_replication_role = replica skips it), 'R' only for
		// replica sessions, 'D' never.
		switch {
		case t.disabled:
		case t.always && h.Enabled != "A":
			triggers = append(triggers, fmt.Sprintf("trigger %s on %s is %s; the migrations enable it ALWAYS", h.Name, h.Table, triggerState(h.Enabled)))
		case !t.always && h.Enabled != "A" && h.Enabled != "O":
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
			triggers = append(triggers, fmt.Sprintf("trigger %s on %s (defined by %s) is missing", t.name, t.table, t.file))
		}
	}

	// A function or operator no migration creates can hijack the ledger's
	// own SQL: an operator <>(numeric, integer) is a closer match for
	// sum(amount) <> 0 than pg_catalog's, whatever the search_path.
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
		defined := w.operators[e.Name]
		if e.What == "function" {
			_, defined = w.functions[e.Name]
		}
		if !defined {
			foreign = append(foreign, fmt.Sprintf("%s %s.%s%s is not defined by any migration", e.What, schema, e.Signature, e.Detail))
		}
	}
	return functions, triggers, foreign, nil
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
