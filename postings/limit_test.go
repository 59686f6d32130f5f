package postings_test

import (
	"context"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/razao/razao"
	"github.com/razao/razao/internal/ledgertest"
	"github.com/razao/razao/money"
	"github.com/razao/razao/postings"
)

// TestLedgerRefusesAmountsAboveItsLimit: a set whose amount or any leg is
// above the ledger's limit is refused before anything is written, naming
// the amount and the limit; without a configured limit the default holds;
// and no limit lets past the database's ceiling.
func TestLedgerRefusesAmountsAboveItsLimit(t *testing.T) {
	t.Parallel()
	l, db := ledgertest.New(t)
	ctx := context.Background()
	at := time.Date(2026, 8, 10, 12, 0, 0, 0, time.UTC)
	adjustment := func(key string, amount int64) postings.Set {
		return postings.Set{Kind: postings.KindAdjustment, IdempotencyKey: key, Amount: amount, Currency: "BRL", EventAt: at,
			Legs: []postings.Leg{{Account: "assets:cash", Amount: amount}, {Account: "equity:adjustments", Amount: -amount}}}
	}
	limited := postings.New(db, l.Calendar()).WithLimit(5000)
	for _, tt := range []struct {
		name   string
		ledger *postings.Ledger
		set    postings.Set
		field  string
	}{
		{"above a configured limit", limited, adjustment("a", 5001), "amount"},
		{"above the default", l, adjustment("b", money.DefaultMaxAmount+1), "amount"},
		{"int64's maximum", l, adjustment("c", math.MaxInt64), "amount"},
		{"above the ceiling, whatever the limit", postings.New(db, l.Calendar()).WithLimit(math.MaxInt64), adjustment("e", money.Ceiling+1), "amount"},
	} {
		_, err := tt.ledger.Post(ctx, tt.set)
		var above *money.AboveMaxError
		if !errors.Is(err, postings.ErrInvalid) || !errors.As(err, &above) || !strings.HasPrefix(above.Field, tt.field) {
			t.Errorf("%s: %v, want ErrInvalid with an AboveMaxError on %s", tt.name, err, tt.field)
		}
	}
	if _, err := limited.Post(ctx, adjustment("at-limit", 5000)); err != nil {
		t.Fatalf("a set at the limit: %v", err)
	}
	if n := ledgertest.Count(t, db, `SELECT count(*) FROM posting_sets`); n != 1 {
		t.Fatalf("%d sets, want the one at the limit", n)
	}
}

// hugeSet writes, in plain SQL, a balanced set of amount centavos.
func hugeSet(ctx context.Context, db *sqlx.DB, key string, amount int64) error {
	_, err := db.ExecContext(ctx, `
		WITH s AS (
			INSERT INTO posting_sets (kind, idempotency_key, amount, currency, competence, event_at, content_hash)
			VALUES ('adjustment', $1, $2, 'BRL', '2026-08-10', '2026-08-10T12:00:00Z', 'test') RETURNING id
		)
		INSERT INTO postings (posting_set_id, account_id, currency, amount, competence_month)
		SELECT s.id, a.id, 'BRL', v.amount, '2026-08-01'
		FROM s CROSS JOIN (VALUES ('assets:cash', $2::bigint), ('equity:adjustments', -$2::bigint)) AS v (code, amount)
		JOIN accounts a ON a.code = v.code`, key, amount)
	return postings.MapError(err)
}

// TestDatabaseCeilingOnAmounts: whatever Go does, the database refuses a
// posting set or a posting of more than 10^15 centavos; and its migration
// still applies to a ledger that already holds one (the constraint then
// guards new rows only).
func TestDatabaseCeilingOnAmounts(t *testing.T) {
	t.Parallel()
	_, db := ledgertest.New(t)
	ctx := context.Background()
	if err := hugeSet(ctx, db, "ceiling", money.Ceiling); err != nil {
		t.Fatalf("a set at the ceiling: %v", err)
	}
	for _, amount := range []int64{money.Ceiling + 1, math.MaxInt64} {
		if err := hugeSet(ctx, db, "above", amount); !errors.Is(err, postings.ErrInvalid) ||
			!strings.Contains(err.Error(), "_amount_ceiling") {
			t.Errorf("a set of %d: %v, want the ceiling's refusal", amount, err)
		}
	}
	// A posting alone above the ceiling (its set's amount within it).
	_, err := db.ExecContext(ctx, `
		WITH s AS (
			INSERT INTO posting_sets (kind, idempotency_key, amount, currency, competence, event_at, content_hash)
			VALUES ('adjustment', 'leg', 1, 'BRL', '2026-08-10', '2026-08-10T12:00:00Z', 'test') RETURNING id
		)
		INSERT INTO postings (posting_set_id, account_id, currency, amount, competence_month)
		SELECT s.id, a.id, 'BRL', v.amount, '2026-08-01'
		FROM s CROSS JOIN (VALUES ('assets:cash', 1::bigint), ('equity:adjustments', -1000000000000001), ('income:revenue', 1000000000000000)) AS v (code, amount)
		JOIN accounts a ON a.code = v.code`)
	if err = postings.MapError(err); !errors.Is(err, postings.ErrInvalid) || !strings.Contains(err.Error(), "ck_postings_amount_ceiling") {
		t.Errorf("a posting above the ceiling: %v", err)
	}

	// A ledger from before the ceiling, already holding 2^63−1.
	var migration string
	ms, err := razao.Migrations()
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		if m.Version == 16 {
			migration = m.SQL
		}
	}
	if migration == "" {
		t.Fatal("no migration 0016")
	}
	for _, stmt := range []string{
		`ALTER TABLE posting_sets DROP CONSTRAINT ck_posting_sets_amount_ceiling`,
		`ALTER TABLE postings DROP CONSTRAINT ck_postings_amount_ceiling`,
		`ALTER TABLE charges DROP CONSTRAINT ck_charges_amount_ceiling`,
	} {
		if _, err := db.ExecContext(ctx, stmt); err != nil {
			t.Fatal(err)
		}
	}
	if err := hugeSet(ctx, db, "before", math.MaxInt64); err != nil {
		t.Fatalf("the old ledger's set: %v", err)
	}
	if _, err := db.ExecContext(ctx, migration); err != nil {
		t.Fatalf("migration 0016 on a ledger holding 2^63-1: %v", err)
	}
	var valid []bool
	if err := db.SelectContext(ctx, &valid, `SELECT convalidated FROM pg_constraint WHERE conname IN
		('ck_posting_sets_amount_ceiling', 'ck_postings_amount_ceiling', 'ck_charges_amount_ceiling') ORDER BY conname`); err != nil {
		t.Fatal(err)
	}
	// charges holds no such row: validated; the ledger's two are not, on
	// the parents nor on their partitions (sql/0056).
	if len(valid) < 3 || !valid[0] || slices.Contains(valid[1:], true) {
		t.Fatalf("validated: %v, want charges only", valid)
	}
	if err := hugeSet(ctx, db, "after", math.MaxInt64); !errors.Is(err, postings.ErrInvalid) {
		t.Fatalf("a new set of 2^63-1 after the migration: %v", err)
	}
}
