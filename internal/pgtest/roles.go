package pgtest

import (
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/razao/razao"
)

// Roles makes server-wide roles for one test database, named after it so
// that tests in parallel never share one, and drops them when the test ends.
type Roles struct {
	t        testing.TB
	owner    *sqlx.DB
	ownerURL string
	suffix   string
}

// NewRoles returns the roles of the test database owner is connected to.
func NewRoles(t testing.TB, owner *sqlx.DB, ownerURL string) *Roles {
	t.Helper()
	var dbName string
	if err := owner.Get(&dbName, `SELECT current_database()`); err != nil {
		t.Fatal(err)
	}
	return &Roles{t: t, owner: owner, ownerURL: ownerURL, suffix: strings.TrimPrefix(dbName, "razao_test_")}
}

// Service creates the service role exactly as docs/razao-role.sql does,
// under a name of its own, and returns the name.
func (r *Roles) Service() string {
	r.t.Helper()
	script, err := os.ReadFile(filepath.Join(ProjectRoot(), "docs", "razao-role.sql"))
	if err != nil {
		r.t.Fatal(err)
	}
	role := "razao_" + r.suffix
	sqlText := strings.NewReplacer(" razao ", " "+role+" ", " razao;", " "+role+";", " razao\n", " "+role+"\n",
		"'razao'", "'"+role+"'").Replace(string(script))
	r.dropAtEnd(role)
	if _, err := r.owner.Exec(sqlText); err != nil {
		r.t.Fatalf("role script: %v", err)
	}
	return role
}

// Create runs CREATE ROLE <name> LOGIN <options>, grants it CONNECT on the
// test database unless options say NOCONNECT, then runs each of grants
// with %s standing for the role, and returns the role's name.
func (r *Roles) Create(name, options string, grants ...string) string {
	r.t.Helper()
	role := name + "_" + r.suffix
	r.dropAtEnd(role)
	q := pq.QuoteIdentifier(role)
	connect := !strings.Contains(options, "NOCONNECT")
	options = strings.ReplaceAll(options, "NOCONNECT", "")
	stmts := []string{`CREATE ROLE ` + q + ` LOGIN ` + options}
	if connect {
		stmts = append(stmts, `GRANT CONNECT ON DATABASE `+pq.QuoteIdentifier("razao_test_"+r.suffix)+` TO `+q)
	}
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

func (r *Roles) dropAtEnd(role string) {
	r.t.Cleanup(func() {
		r.owner.Exec(`DROP OWNED BY ` + pq.QuoteIdentifier(role))
		r.owner.Exec(`DROP ROLE IF EXISTS ` + pq.QuoteIdentifier(role))
	})
}

// Connect opens a pool to the test database as role, closed when the test
// ends (before the role is dropped). Each call opens new sessions.
func (r *Roles) Connect(role string) *sqlx.DB {
	r.t.Helper()
	db, err := sqlx.Open("postgres", razao.DriverURL(r.URL(role)))
	if err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(func() { db.Close() })
	return db
}

// URL is the test database's URL as role.
func (r *Roles) URL(role string) string {
	r.t.Helper()
	u, err := url.Parse(r.ownerURL)
	if err != nil {
		r.t.Fatal(err)
	}
	u.User = url.User(role)
	return u.String()
}
