package razao_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/jmoiron/sqlx"

	"github.com/razao/razao/internal/pgtest"
)

// schemaFile is the current schema, readable in one place: what every
// table, constraint, index, function and trigger is once all the numbered
// migrations and the function files of sql/functions have run. The
// migrations stay the history (several redefine the same trigger function
// up to 0042); this file is the present. verify holds a database's
// triggers to it (razao.SchemaDump), so its trigger lines are exactly as
// dumpSchema writes them.
const schemaFile = "docs/schema.sql"

// TestSchemaDumpIsCurrent keeps docs/schema.sql equal to the schema the
// embedded migrations build. After changing a migration, rewrite it with
//
//	RAZAO_WRITE_SCHEMA=1 go test -run TestSchemaDumpIsCurrent .
func TestSchemaDumpIsCurrent(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	got, err := dumpSchema(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	if os.Getenv("RAZAO_WRITE_SCHEMA") == "1" {
		if err := os.WriteFile(schemaFile, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(schemaFile)
	if err != nil {
		t.Fatalf("%v: write it with RAZAO_WRITE_SCHEMA=1 go test -run TestSchemaDumpIsCurrent .", err)
	}
	if got != string(want) {
		gl, wl := strings.Split(got, "\n"), strings.Split(string(want), "\n")
		i := 0
		for i < len(gl) && i < len(wl) && gl[i] == wl[i] {
			i++
		}
		line := func(ls []string) string {
			if i < len(ls) {
				return ls[i]
			}
			return "(end of file)"
		}
		t.Fatalf("%s is not the schema the migrations build: first difference at line %d:\n  file:       %s\n  migrations: %s\nrewrite it with RAZAO_WRITE_SCHEMA=1 go test -run TestSchemaDumpIsCurrent .",
			schemaFile, i+1, line(wl), line(gl))
	}
}

// dumpSchema writes the current schema's objects from the catalog, each
// kind in name order, so the text depends only on the schema.
func dumpSchema(ctx context.Context, db *sqlx.DB) (string, error) {
	var b strings.Builder
	b.WriteString("-- The current schema, generated from a database the migrations in sql/\n" +
		"-- built (TestSchemaDumpIsCurrent keeps it so). Read it; never apply it:\n" +
		"-- the numbered migrations are what razao migrate runs.\n" +
		"-- Partitions are not listed: each has its parent's columns, constraints,\n" +
		"-- indexes and triggers (razao verify holds their triggers to it).\n")
	type column struct {
		Table   string `db:"tbl"`
		Name    string `db:"name"`
		Type    string `db:"type"`
		NotNull bool   `db:"not_null"`
		Default string `db:"dflt"`
		// PartitionBy is pg_get_partkeydef of a partitioned table.
		PartitionBy string `db:"partition_by"`
	}
	var cols []column
	if err := db.SelectContext(ctx, &cols, `
		SELECT c.relname AS tbl, a.attname AS name, format_type(a.atttypid, a.atttypmod) AS type,
			a.attnotnull AS not_null, coalesce(pg_get_expr(d.adbin, d.adrelid), '') AS dflt,
			CASE c.relkind WHEN 'p' THEN pg_get_partkeydef(c.oid) ELSE '' END AS partition_by
		FROM pg_class c JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
		LEFT JOIN pg_attrdef d ON d.adrelid = c.oid AND d.adnum = a.attnum
		WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind IN ('r', 'p') AND NOT c.relispartition
		ORDER BY c.relname, a.attnum`); err != nil {
		return "", fmt.Errorf("columns: %w", err)
	}
	for i, c := range cols {
		if i == 0 || cols[i-1].Table != c.Table {
			fmt.Fprintf(&b, "\nCREATE TABLE %s (\n", c.Table)
		}
		fmt.Fprintf(&b, "    %s %s", c.Name, c.Type)
		if c.NotNull {
			b.WriteString(" NOT NULL")
		}
		if c.Default != "" {
			b.WriteString(" DEFAULT " + c.Default)
		}
		if i+1 < len(cols) && cols[i+1].Table == c.Table {
			b.WriteString(",\n")
		} else if c.PartitionBy != "" {
			b.WriteString("\n) PARTITION BY " + c.PartitionBy + ";\n")
		} else {
			b.WriteString("\n);\n")
		}
	}
	sections := []struct{ title, query string }{
		{"Constraints", `
			SELECT format('ALTER TABLE %s ADD CONSTRAINT %s %s;', c.conrelid::regclass, c.conname, pg_get_constraintdef(c.oid))
			FROM pg_constraint c JOIN pg_class r ON r.oid = c.conrelid
			WHERE r.relnamespace = current_schema()::regnamespace AND c.contype <> 't' AND NOT r.relispartition
			ORDER BY r.relname, c.conname`},
		{"Indexes that back no constraint", `
			SELECT pg_get_indexdef(i.indexrelid) || ';'
			FROM pg_index i JOIN pg_class x ON x.oid = i.indexrelid JOIN pg_class r ON r.oid = i.indrelid
			WHERE r.relnamespace = current_schema()::regnamespace AND NOT r.relispartition
				AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = i.indexrelid)
			ORDER BY r.relname, x.relname`},
		{"Functions", `
			SELECT pg_get_functiondef(p.oid) || ';'
			FROM pg_proc p WHERE p.pronamespace = current_schema()::regnamespace
			ORDER BY p.proname, pg_get_function_identity_arguments(p.oid)`},
		{"Triggers (every one enabled ALWAYS unless said)", `
			SELECT pg_get_triggerdef(g.oid) || ';' ||
				CASE g.tgenabled WHEN 'A' THEN '' WHEN 'O' THEN ' -- enabled (origin)' WHEN 'R' THEN ' -- enabled (replica)' ELSE ' -- DISABLED' END
			FROM pg_trigger g JOIN pg_class r ON r.oid = g.tgrelid
			WHERE r.relnamespace = current_schema()::regnamespace AND NOT g.tgisinternal AND NOT r.relispartition
			ORDER BY r.relname, g.tgname`},
	}
	for _, s := range sections {
		var lines []string
		if err := db.SelectContext(ctx, &lines, s.query); err != nil {
			return "", fmt.Errorf("%s: %w", s.title, err)
		}
		fmt.Fprintf(&b, "\n-- %s\n\n", s.title)
		for _, l := range lines {
			b.WriteString(strings.TrimRight(l, "\n") + "\n")
			if s.title == "Functions" {
				b.WriteString("\n")
			}
		}
	}
	return b.String(), nil
}
