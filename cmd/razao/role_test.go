package main

import (
	"context"
	"errors"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/razao/razao/internal/pgtest"
	"github.com/razao/razao/partners"
	"github.com/razao/razao/postings"
	"github.com/razao/razao/reports"
)

// The service's role, from docs/razao-role.sql, can run the business but
// has no right to rewrite the ledger: the database says no before any
// trigger is asked.
func TestServiceRoleCannotUpdateOrDeleteLedger(t *testing.T) {
	t.Parallel()
	owner, ownerURL := pgtest.NewWithURL(t)
	svc, _ := serviceRole(t, owner, ownerURL)

	// The business path works as the service role.
	cal, _ := postings.NewCalendar(postings.DefaultTimeZone)
	l := postings.New(svc, cal)
	sale, _ := postings.Sale("c1", "BRL", 4990, 0, time.Date(2026, 8, 10, 12, 0, 0, 0, time.UTC))
	if _, err := l.Post(context.Background(), sale); err != nil {
		t.Fatalf("post as service role: %v", err)
	}
	comm, _, _ := postings.CommissionSet("c1", "p1", "BRL", 4990, 1000, time.Date(2026, 8, 10, 12, 0, 0, 0, time.UTC))
	if _, err := l.Post(context.Background(), comm); err != nil {
		t.Fatalf("post with a new partner account as service role: %v", err)
	}
	if _, err := partners.Payout(context.Background(), svc, l, partners.PayoutRequest{Partner: "p1", IdempotencyKey: "po-1",
		Amount: 100, At: time.Date(2026, 8, 20, 12, 0, 0, 0, time.UTC)}); err != nil {
		t.Fatalf("payout as service role: %v", err)
	}
	if err := reports.CloseMonth(context.Background(), svc, l, postings.Month{Year: 2026, Month: 8}, time.Date(2026, 9, 2, 0, 0, 0, 0, time.UTC)); err != nil {
		t.Fatalf("close a month as service role: %v", err)
	}
	// Rewriting the ledger does not.
	for _, stmt := range []string{
		`UPDATE postings SET amount = amount + 1`,
		`DELETE FROM postings`,
		`UPDATE posting_sets SET amount = 1`,
		`DELETE FROM posting_sets`,
		`TRUNCATE postings`,
		`DELETE FROM closed_periods`,
		`UPDATE accounts SET code = 'x'`,
	} {
		_, err := svc.Exec(stmt)
		var pqErr *pq.Error
		if !errors.As(err, &pqErr) || pqErr.Code != "42501" {
			t.Errorf("%s: got %v, want permission denied (42501)", stmt, err)
		}
	}
}

// serviceRole applies docs/razao-role.sql to the test's database under a
// role name of the test's own (roles are server-wide) and returns a pool
// connected as that role, and the role's name.
func serviceRole(t *testing.T, owner *sqlx.DB, ownerURL string) (*sqlx.DB, string) {
	t.Helper()
	script, err := os.ReadFile("../../docs/razao-role.sql")
	if err != nil {
		t.Fatal(err)
	}
	var dbName string
	owner.Get(&dbName, `SELECT current_database()`)
	role := "razao_" + strings.TrimPrefix(dbName, "razao_test_")
	sqlText := strings.NewReplacer(" razao ", " "+role+" ", " razao;", " "+role+";", " razao\n", " "+role+"\n", "'razao'", "'"+role+"'").Replace(string(script))
	if _, err := owner.Exec(sqlText); err != nil {
		t.Fatalf("role script: %v", err)
	}
	t.Cleanup(func() { dropRole(owner, role) })
	return connectAs(t, ownerURL, role), role
}

// connectAs opens a pool to the database at dbURL as role.
func connectAs(t *testing.T, dbURL, role string) *sqlx.DB {
	t.Helper()
	u, _ := url.Parse(dbURL)
	u.User = url.User(role)
	db, err := sqlx.Open("postgres", u.String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func dropRole(owner *sqlx.DB, role string) {
	owner.Exec(`DROP OWNED BY ` + pq.QuoteIdentifier(role))
	owner.Exec(`DROP ROLE IF EXISTS ` + pq.QuoteIdentifier(role))
}
