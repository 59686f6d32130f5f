package razao

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"regexp"
	"strings"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
)

//go:embed sql/functions/*.sql
var functionFiles embed.FS

// LastMigrationWithFunctions is the last numbered migration that defines
// database functions itself: sql/0001 to sql/0042 are history, applied on
// real databases, and stay as they are. Every later migration leaves
// functions to their files (TestNoMigrationAfter0042DefinesAFunction).
const LastMigrationWithFunctions = 42

// Function is one file of sql/functions: the one definition of the
// database function of its name (sql/functions/README.md).
type Function struct {
	// Name is the function's, and the file's: sql/functions/<Name>.sql.
	Name string
	// SQL is the whole file, the reasons' comments included: what the
	// migrator runs and hashes.
	SQL string
	// Definition is the file's CREATE OR REPLACE FUNCTION statement
	// without its ';': as pg_get_functiondef prints the function, but for
	// the function's schema.
	Definition string
	// Body is the text between the dollar quotes (pg_proc.prosrc).
	Body string
}

// File is the function's file, as the migrator and verify name it.
func (f Function) File() string { return "sql/functions/" + f.Name + ".sql" }

// SHA256 is the hex SHA-256 of the file.
func (f Function) SHA256() string {
	sum := sha256.Sum256([]byte(f.SQL))
	return hex.EncodeToString(sum[:])
}

// mark is what the migrator writes as the function's comment once it has
// applied the file, and compares the next time: the file and its hash. A
// comment rather than a table of its own: every role may read it (a
// service role starting with -migrate applies nothing and needs no right
// for that), a function dropped loses it and is created again, and the
// schema (docs/schema.sql) keeps no bookkeeping of its own.
func (f Function) mark() string { return f.File() + " sha256=" + f.SHA256() }

// Functions returns the embedded function files, by name.
func Functions() ([]Function, error) {
	entries, err := fs.ReadDir(functionFiles, "sql/functions")
	if err != nil {
		return nil, fmt.Errorf("read embedded functions: %w", err)
	}
	var out []Function
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), ".sql")
		if !ok {
			continue
		}
		body, err := fs.ReadFile(functionFiles, "sql/functions/"+e.Name())
		if err != nil {
			return nil, fmt.Errorf("read function %q: %w", e.Name(), err)
		}
		f, err := parseFunction(name, string(body))
		if err != nil {
			return nil, err
		}
		out = append(out, f)
	}
	return out, nil
}

// parseFunction reads a function file, which has one strict shape: lines
// of comments (or blank), then one statement,
//
//	CREATE OR REPLACE FUNCTION <name>(<arguments>)
//	 <attributes, one a line, as pg_get_functiondef prints them>
//	AS $function$<body>$function$;
//
// and nothing after it. The dollar quote may be any $tag$ the body does
// not contain.
func parseFunction(name, text string) (Function, error) {
	f := Function{Name: name, SQL: text}
	bad := func(why string) (Function, error) {
		return Function{}, fmt.Errorf("function file %s: %s", f.File(), why)
	}
	rest := text
	for rest != "" {
		line, after, _ := strings.Cut(rest, "\n")
		if t := strings.TrimSpace(line); t != "" && !strings.HasPrefix(t, "--") {
			break
		}
		rest = after
	}
	head := "CREATE OR REPLACE FUNCTION " + name + "("
	if !strings.HasPrefix(rest, head) {
		return bad("after its comments, want " + head + "...")
	}
	as := strings.Index(rest, "\nAS $")
	if as < 0 {
		return bad(`want the body on a line of its own starting "AS $tag$"`)
	}
	open := rest[as+len("\nAS "):]
	tag := open[:1+strings.IndexByte(open[1:], '$')+1]
	if len(tag) < 2 || strings.Trim(tag[1:len(tag)-1], "abcdefghijklmnopqrstuvwxyz_") != "" {
		return bad("want a dollar quote such as $function$ after AS")
	}
	stmt := strings.TrimRight(rest, " \t\n")
	if !strings.HasSuffix(stmt, tag+";") {
		return bad("want the file to end with " + tag + ";")
	}
	f.Definition = strings.TrimSuffix(stmt, ";")
	f.Body = strings.TrimSuffix(open[len(tag):len(f.Definition)-as-len("\nAS ")], tag)
	if strings.Contains(f.Body, tag) {
		return bad("its body contains " + tag + ": quote it with another tag, as pg_get_functiondef does")
	}
	return f, nil
}

// publicSearchPath is the search_path line of every file (README.md).
const publicSearchPath = "\n SET search_path TO 'pg_catalog', 'public', 'pg_temp'"

// pinnedTo returns the file's SQL to apply in schema: the file says
// public, as docs/schema.sql does, and a ledger in another schema resolves
// names in its own instead (sql/0012 pinned it with current_schema()
// likewise). In the statement itself: a LANGUAGE sql body is checked with
// the function's own settings when it is created.
func (f Function) pinnedTo(schema string) string {
	if schema == "public" {
		return f.SQL
	}
	at := strings.Index(f.SQL, f.Definition)
	head, rest, _ := strings.Cut(f.SQL[at:], "\nAS $")
	head = strings.Replace(head, publicSearchPath,
		"\n SET search_path TO 'pg_catalog', "+pq.QuoteLiteral(schema)+", 'pg_temp'", 1)
	return f.SQL[:at] + head + "\nAS $" + rest
}

// namedIn reports whether sql names the function, as a word: a trigger's
// EXECUTE FUNCTION, a GRANT, a call, or a comment.
func (f Function) namedIn(sql string) bool {
	return regexp.MustCompile(`(?i)\b` + regexp.QuoteMeta(f.Name) + `\b`).MatchString(sql)
}

// functionsAhead reports whether the database records a migration newer
// than every one in ms: a newer binary migrated it, and its function files
// are newer than ours. Such a binary's replica (a rolling deploy) leaves
// them alone, and never puts an older body back.
func functionsAhead(ctx context.Context, q sqlx.QueryerContext, ms []Migration) (bool, error) {
	if len(ms) == 0 {
		return false, nil
	}
	var newest int
	if err := sqlx.GetContext(ctx, q, &newest, `SELECT coalesce(max(version), 0) FROM schema_migrations`); err != nil {
		return false, err
	}
	return newest > ms[len(ms)-1].Version, nil
}

// functionApplied is true when a function of the name in the migrating
// session's schema carries the file's mark. Catalogs only: any role may
// ask.
const functionApplied = `SELECT EXISTS (SELECT 1 FROM pg_proc p
	WHERE p.proname = $1 AND p.pronamespace = current_schema()::regnamespace
	  AND obj_description(p.oid, 'pg_proc') = $2)`

// unappliedFunctions returns the files of fs whose function lacks their
// mark.
func unappliedFunctions(ctx context.Context, q sqlx.QueryerContext, fs []Function) ([]string, error) {
	var out []string
	for _, f := range fs {
		var done bool
		if err := sqlx.GetContext(ctx, q, &done, functionApplied, f.Name, f.mark()); err != nil {
			return nil, fmt.Errorf("check %s: %w", f.File(), err)
		}
		if !done {
			out = append(out, f.File())
		}
	}
	return out, nil
}

// functionMissing is true when the migrating session's schema has no
// function of the name.
const functionMissing = `SELECT NOT EXISTS (SELECT 1 FROM pg_proc p
	WHERE p.proname = $1 AND p.pronamespace = current_schema()::regnamespace)`

// applyFunction applies f unless its function carries f's mark, under the
// lock migrations take, so replicas starting together apply it once. A
// function applied already needs no lock and no right (as applyMigration);
// one to apply is checked again under the lock, which a concurrent
// migrator holds until it has marked it.
func applyFunction(ctx context.Context, conn *sqlx.Conn, f Function, ms []Migration) (bool, error) {
	tx, err := conn.BeginTxx(ctx, &sql.TxOptions{Isolation: sql.LevelReadCommitted})
	if err != nil {
		return false, fmt.Errorf("%s: begin: %w", f.File(), err)
	}
	defer tx.Rollback()
	var done bool
	if err := tx.GetContext(ctx, &done, functionApplied, f.Name, f.mark()); err != nil {
		return false, fmt.Errorf("%s: check: %w", f.File(), err)
	}
	if done {
		return false, nil
	}
	if _, err := tx.ExecContext(ctx, `LOCK TABLE schema_migrations IN SHARE ROW EXCLUSIVE MODE`); err != nil {
		return false, fmt.Errorf("%s: lock schema_migrations: %w", f.File(), err)
	}
	if err := tx.GetContext(ctx, &done, functionApplied, f.Name, f.mark()); err != nil {
		return false, fmt.Errorf("%s: check: %w", f.File(), err)
	}
	if done {
		return false, nil
	}
	// Checked again under the lock: a newer binary may have migrated
	// since this one looked, unlocked, and its function files are newer.
	// An older body is never put back over them.
	ahead, err := functionsAhead(ctx, tx, ms)
	if err != nil {
		return false, fmt.Errorf("%s: %w", f.File(), err)
	}
	if ahead {
		return false, nil
	}
	var schema string
	if err := tx.GetContext(ctx, &schema, `SELECT current_schema()`); err != nil {
		return false, fmt.Errorf("%s: find the schema: %w", f.File(), err)
	}
	if _, err := tx.ExecContext(ctx, f.pinnedTo(schema)); err != nil {
		return false, fmt.Errorf("%s: apply: %w", f.File(), err)
	}
	// The function this transaction created or replaced: its catalog row
	// is this transaction's own.
	var written []string
	if err := tx.SelectContext(ctx, &written, `SELECT p.oid::regprocedure::text FROM pg_proc p
		WHERE p.proname = $1 AND p.pronamespace = current_schema()::regnamespace
		  AND p.xmin = pg_current_xact_id()::xid`, f.Name); err != nil {
		return false, fmt.Errorf("%s: find the function: %w", f.File(), err)
	}
	if len(written) == 0 {
		return false, fmt.Errorf("%s: applied, but it wrote no function %s in schema %s", f.File(), f.Name, schema)
	}
	for _, signature := range written {
		if _, err := tx.ExecContext(ctx, `COMMENT ON FUNCTION `+signature+` IS `+pq.QuoteLiteral(f.mark())); err != nil {
			return false, fmt.Errorf("%s: mark: %w", f.File(), err)
		}
	}
	if err := tx.Commit(); err != nil {
		return false, fmt.Errorf("%s: commit: %w", f.File(), err)
	}
	return true, nil
}

// createNamedFunctions creates, before the pending migration m, each
// function of fs that m names and the database does not have yet: a
// migration may create a trigger on a new function. Functions the
// database has keep their bodies until every migration has run.
func createNamedFunctions(ctx context.Context, conn *sqlx.Conn, m Migration, ms []Migration, fs []Function) ([]string, error) {
	var applied []string
	for _, f := range fs {
		if !f.namedIn(m.SQL) {
			continue
		}
		var missing bool
		if err := conn.GetContext(ctx, &missing, functionMissing, f.Name); err != nil {
			return applied, fmt.Errorf("migration %s: find %s: %w", m.Name, f.Name, err)
		}
		if !missing {
			continue
		}
		done, err := applyFunction(ctx, conn, f, ms)
		if err != nil {
			return applied, fmt.Errorf("migration %s needs %w", m.Name, err)
		}
		if done {
			applied = append(applied, f.File())
		}
	}
	return applied, nil
}

// migrationRecorded reports, without a lock, whether m is applied.
func migrationRecorded(ctx context.Context, conn *sqlx.Conn, m Migration) (bool, error) {
	var exists bool
	err := conn.GetContext(ctx, &exists, `SELECT EXISTS (SELECT 1 FROM schema_migrations WHERE version = $1)`, m.Version)
	return exists, err
}
