package razao

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
)

// ErrSchemaNewer says the database holds a razao schema this binary must
// not run on: a contract migration raised its floor past this binary, or
// it records, under a number this binary knows, another migration than
// this binary's (another branch's build migrated it).
var ErrSchemaNewer = errors.New("database schema")

// formerNames are the names migrations had before they were renamed for
// what they do: databases migrated then record these, and they are the
// same migrations (migrate_test.go's TestDatabaseMigratedUnderOldNames…).
var formerNames = map[int][]string{
	2: {"0002_webhooks.sql"},
	3: {"0003_reports.sql"},
	4: {"0004_tokens.sql"},
	5: {"0005_exports.sql"},
	9: {"0009_review_fixes.sql"},
}

// contractHeader is the line of a contract migration's leading comments
// that names the oldest binary (by its last migration) that may still run
// once it is applied: -- razao: contract 0052.
var contractHeader = regexp.MustCompile(`^--\s*razao:\s*(.*)$`)

// parseContract reads a migration's header: the number a "-- razao:
// contract NNNN" line among its leading comments declares, or 0 (an
// expand migration). Any other "-- razao:" line there is an error, so a
// misspelt declaration is never silently an expand.
func parseContract(m Migration) (int, error) {
	floor := 0
	for _, line := range strings.Split(m.SQL, "\n") {
		t := strings.TrimSpace(line)
		if t == "" {
			continue
		}
		if !strings.HasPrefix(t, "--") {
			break
		}
		sub := contractHeader.FindStringSubmatch(t)
		if sub == nil {
			continue
		}
		f := strings.Fields(sub[1])
		n, err := 0, error(nil)
		if len(f) == 2 && f[0] == "contract" {
			n, err = strconv.Atoi(f[1])
		}
		if len(f) != 2 || f[0] != "contract" || err != nil || n < 1 || n > m.Version {
			return 0, fmt.Errorf("migration %s: header %q: want -- razao: contract NNNN, the last migration of the oldest binary that may still run once it is applied (1 to %d)",
				m.Name, t, m.Version)
		}
		if floor != 0 {
			return 0, fmt.Errorf("migration %s: two -- razao: contract lines", m.Name)
		}
		floor = n
	}
	return floor, nil
}

// Compatibility is what schema_migrations says of the database against
// this binary's migrations.
type Compatibility struct {
	// Binary and BinaryName are this binary's last migration.
	Binary     int
	BinaryName string
	// Database and DatabaseName are the last migration the database
	// records (0, "": none, or no schema yet).
	Database     int
	DatabaseName string
	// Floor is the last migration of the oldest binary that may run on
	// the schema (0: any); FloorName is the contract migration that set it.
	Floor     int
	FloorName string
}

// Ahead reports whether the database records migrations newer than this
// binary's: a newer release migrated it (a rolling upgrade, or a rollback
// of the binary).
func (c Compatibility) Ahead() bool { return c.Database > c.Binary }

// SchemaCompatibility reads schema_migrations and refuses, with
// ErrSchemaNewer, a database this binary must not run on: one whose floor
// is above this binary's last migration, or one that records another
// migration under a number this binary knows. A database with no schema
// yet, or a role that may not read schema_migrations, is compatible (the
// migrator or the queries say what is wrong).
func SchemaCompatibility(ctx context.Context, q sqlx.QueryerContext) (Compatibility, error) {
	ms, err := Migrations()
	if err != nil {
		return Compatibility{}, err
	}
	return checkCompatible(ctx, q, ms)
}

// schemaRecord is one row of schema_migrations.
type schemaRecord struct {
	Version      int    `db:"version"`
	Name         string `db:"name"`
	OldestBinary int    `db:"oldest_binary"`
}

// hasFloorColumn reports whether schema_migrations has oldest_binary
// (floorColumn). Catalogs only: any role may ask.
func hasFloorColumn(ctx context.Context, q sqlx.QueryerContext) (bool, error) {
	var has bool
	err := sqlx.GetContext(ctx, q, &has, `SELECT EXISTS (SELECT 1 FROM pg_attribute
		WHERE attrelid = to_regclass('schema_migrations') AND attname = 'oldest_binary' AND NOT attisdropped)`)
	return has, err
}

func checkCompatible(ctx context.Context, q sqlx.QueryerContext, ms []Migration) (Compatibility, error) {
	var c Compatibility
	if len(ms) > 0 {
		c.Binary, c.BinaryName = ms[len(ms)-1].Version, ms[len(ms)-1].Name
	}
	var present bool
	if err := sqlx.GetContext(ctx, q, &present, `SELECT to_regclass('schema_migrations') IS NOT NULL`); err != nil {
		return c, fmt.Errorf("check schema: %w", err)
	}
	if !present {
		return c, nil
	}
	// Without the column (a database only older releases migrated), every
	// migration was an expand.
	hasFloor, err := hasFloorColumn(ctx, q)
	if err != nil {
		return c, fmt.Errorf("check schema: %w", err)
	}
	floor := "0"
	if hasFloor {
		floor = "oldest_binary"
	}
	var rows []schemaRecord
	if err := sqlx.SelectContext(ctx, q, &rows, `SELECT version, name, `+floor+` AS oldest_binary FROM schema_migrations ORDER BY version`); err != nil {
		var pqErr *pq.Error
		if errors.As(err, &pqErr) && pqErr.Code == "42501" { // insufficient_privilege: as CheckSchema
			return c, nil
		}
		return c, fmt.Errorf("check schema: %w", err)
	}
	known := make(map[int]string, len(ms))
	for _, m := range ms {
		known[m.Version] = m.Name
	}
	for _, r := range rows {
		c.Database, c.DatabaseName = r.Version, r.Name
		if r.OldestBinary > c.Floor {
			c.Floor, c.FloorName = r.OldestBinary, r.Name
		}
		name, ok := known[r.Version]
		if ok && r.Name != name && !slices.Contains(formerNames[r.Version], r.Name) {
			return c, fmt.Errorf("%w: the database records migration %d as %s, which this binary's %s is not: "+
				"a build of another branch migrated it. Run that build, or restore a database this release migrated",
				ErrSchemaNewer, r.Version, r.Name, name)
		}
	}
	if c.Floor > c.Binary {
		return c, fmt.Errorf("%w: this database's schema is for razao binaries whose last migration is %04d or later "+
			"(the contract migration %s dropped what older ones use; the database is at %s), and this binary's last migration is %s: "+
			"run a newer release",
			ErrSchemaNewer, c.Floor, c.FloorName, c.DatabaseName, c.BinaryName)
	}
	return c, nil
}
