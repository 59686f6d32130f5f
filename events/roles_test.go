package events_test

import (
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/razao/razao"
)

// roles makes server-wide roles for one test database, named after it, and
// drops them when the test ends.
type roles struct {
	t        *testing.T
	owner    *sqlx.DB
	ownerURL string
	suffix   string
}

func newRoles(t *testing.T, owner *sqlx.DB, ownerURL string) *roles {
	t.Helper()
	var dbName string
	if err := owner.Get(&dbName, `SELECT current_database()`); err != nil {
		t.Fatal(err)
	}
	return &roles{t: t, owner: owner, ownerURL: ownerURL, suffix: strings.TrimPrefix(dbName, "razao_test_")}
}

// service creates the service role as docs/razao-role.sql does, under a
// name of its own, and returns the name.
func (r *roles) service() string {
	r.t.Helper()
	script, err := os.ReadFile("../docs/razao-role.sql")
	if err != nil {
		r.t.Fatal(err)
	}
	role := "razao_" + r.suffix
	sqlText := strings.NewReplacer(" razao ", " "+role+" ", " razao;", " "+role+";", " razao\n", " "+role+"\n").Replace(string(script))
	r.dropAtEnd(role)
	if _, err := r.owner.Exec(sqlText); err != nil {
		r.t.Fatalf("role script: %v", err)
	}
	return role
}

// create runs CREATE ROLE <name> LOGIN <options> and grants it CONNECT, then
// each of grants (with %s standing for the role).
func (r *roles) create(name, options string, grants ...string) string {
	r.t.Helper()
	role := name + "_" + r.suffix
	r.dropAtEnd(role)
	q := pq.QuoteIdentifier(role)
	stmts := []string{`CREATE ROLE ` + q + ` LOGIN ` + options, `GRANT CONNECT ON DATABASE ` + pq.QuoteIdentifier("razao_test_"+r.suffix) + ` TO ` + q}
	for _, g := range grants {
		stmts = append(stmts, strings.ReplaceAll(g, "%s", q))
	}
	for _, s := range stmts {
		if _, err := r.owner.Exec(s); err != nil {
			r.t.Fatalf("%s: %v", s, err)
		}
	}
	return role
}

func (r *roles) dropAtEnd(role string) {
	r.t.Cleanup(func() {
		r.owner.Exec(`DROP OWNED BY ` + pq.QuoteIdentifier(role))
		r.owner.Exec(`DROP ROLE IF EXISTS ` + pq.QuoteIdentifier(role))
	})
}

// connect opens a pool to the test database as role, closed when the test
// ends (before the role is dropped).
func (r *roles) connect(role string) *sqlx.DB {
	r.t.Helper()
	u, err := url.Parse(r.ownerURL)
	if err != nil {
		r.t.Fatal(err)
	}
	u.User = url.User(role)
	db, err := sqlx.Open("postgres", razao.DriverURL(u.String()))
	if err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(func() { db.Close() })
	return db
}
