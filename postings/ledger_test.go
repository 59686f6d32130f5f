package postings_test

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/razao/razao/accounts"
	"github.com/razao/razao/internal/ledgertest"
	"github.com/razao/razao/monthsums"
	"github.com/razao/razao/periods"
	"github.com/razao/razao/postings"
)

var aug = time.Date(2026, 8, 10, 15, 0, 0, 0, time.UTC)

func TestLedgerTablesAreAppendOnlyForSuperuser(t *testing.T) {
	t.Parallel()
	l, db := ledgertest.New(t)
	s, err := postings.Sale("ch-1", "BRL", 4990, 0, aug)
	ledgertest.Post(t, l, s, err)
	if err := periods.Close(context.Background(), db, l.Calendar(), periods.MonthOf(time.Date(2026, 7, 1, 0, 0, 0, 0, time.UTC)), aug, "", monthsums.Closing); err != nil {
		t.Fatal(err)
	}

	for _, stmt := range []string{
		`UPDATE postings SET amount = amount + 1`,
		`DELETE FROM postings`,
		`TRUNCATE postings`,
		`UPDATE posting_sets SET amount = 1`,
		`DELETE FROM posting_sets`,
		`TRUNCATE posting_sets CASCADE`,
		`UPDATE accounts SET code = 'assets:stolen' WHERE code = 'assets:cash'`,
		`DELETE FROM closed_periods`,
		`TRUNCATE closed_periods CASCADE`,
	} {
		t.Run(stmt, func(t *testing.T) {
			_, err := db.Exec(stmt)
			var pqErr *pq.Error
			if !errors.As(err, &pqErr) || !strings.HasPrefix(pqErr.Constraint, "trg_") {
				t.Fatalf("%s: got %v, want refusal by an append-only trigger", stmt, err)
			}
		})
	}
	// Even a session that disables ordinary triggers with replica mode.
	if _, err := db.Exec(`SET session_replication_role = replica; DELETE FROM postings`); err == nil {
		t.Fatal("DELETE under session_replication_role=replica succeeded")
	}
	db.Exec(`SET session_replication_role = origin`)
	if n := ledgertest.Count(t, db, `SELECT count(*) FROM postings`); n != 2 {
		t.Fatalf("postings = %d, want 2 untouched", n)
	}
}

func TestGoRefusesBadSets(t *testing.T) {
	t.Parallel()
	l, db := ledgertest.New(t)
	ctx := context.Background()
	if err := periods.Close(ctx, db, l.Calendar(), periods.MonthOf(time.Date(2026, 7, 1, 0, 0, 0, 0, time.UTC)), aug, "", monthsums.Closing); err != nil {
		t.Fatal(err)
	}
	base := func(legs ...postings.Leg) postings.Set {
		return postings.Set{Kind: postings.KindAdjustment, IdempotencyKey: "adj", Amount: 100, Currency: "BRL", EventAt: aug, Legs: legs}
	}
	closed := base(postings.Leg{Account: accounts.Cash, Amount: 100}, postings.Leg{Account: accounts.Adjustments, Amount: -100})
	closed.Competence = time.Date(2026, 7, 15, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		set  postings.Set
		want error
	}{
		{"unbalanced", base(postings.Leg{Account: accounts.Cash, Amount: 100}, postings.Leg{Account: accounts.Adjustments, Amount: -99}), postings.ErrUnbalanced},
		{"one leg", base(postings.Leg{Account: accounts.Cash, Amount: 100}), postings.ErrTooFewLegs},
		{"zero amount", base(postings.Leg{Account: accounts.Cash, Amount: 0}, postings.Leg{Account: accounts.Adjustments, Amount: 0}), postings.ErrZeroAmount},
		{"currency mismatch", func() postings.Set {
			s := base(postings.Leg{Account: accounts.Cash, Amount: 100}, postings.Leg{Account: accounts.Adjustments, Amount: -100})
			s.Currency = "USD" // the accounts are BRL
			return s
		}(), postings.ErrCurrencyMismatch},
		{"unknown account", base(postings.Leg{Account: "assets:nowhere", Amount: 100}, postings.Leg{Account: accounts.Adjustments, Amount: -100}), postings.ErrUnknownAccount},
		{"closed month", closed, postings.ErrClosedMonth},
		{"bad kind", postings.Set{Kind: "gift", IdempotencyKey: "k", Amount: 1, Currency: "BRL", EventAt: aug}, postings.ErrInvalid},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := l.Post(ctx, tc.set)
			if !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
		})
	}
	if n := ledgertest.Count(t, db, `SELECT count(*) FROM posting_sets`); n != 0 {
		t.Fatalf("%d sets written, want 0", n)
	}
}

// rawAugustSet inserts, with plain SQL in tx, an adjustment set of R$ 1.00
// dated 2026-08-10 under key, without postings, and returns its id.
func rawAugustSet(tx *sqlx.Tx, key string) int64 {
	var id int64
	tx.QueryRow(`INSERT INTO posting_sets (kind, idempotency_key, amount, currency, competence, event_at, content_hash)
		VALUES ('adjustment', $1, 100, 'BRL', '2026-08-10', now(), 'x') RETURNING id`, key).Scan(&id)
	return id
}

// rawSet inserts a posting set and its postings with plain SQL, bypassing
// every Go check, and returns the error of the statements or of COMMIT.
func rawSet(t *testing.T, db *sqlx.DB, competence string, legs [][2]any) error {
	t.Helper()
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	var id int64
	err = tx.QueryRow(`INSERT INTO posting_sets (kind, idempotency_key, amount, currency, competence, event_at, content_hash)
		VALUES ('adjustment', 'raw-' || gen_random_uuid(), 100, 'BRL', $1, now(), 'x') RETURNING id`, competence).Scan(&id)
	if err != nil {
		return postings.MapError(err)
	}
	// A set's legs are written by one statement (trg_postings_sealed_set).
	var codes []string
	var amounts []int64
	for _, leg := range legs {
		codes, amounts = append(codes, leg[0].(string)), append(amounts, int64(leg[1].(int)))
	}
	if len(legs) > 0 {
		_, err := tx.Exec(`INSERT INTO postings (posting_set_id, account_id, currency, amount, competence_month)
			SELECT $1, a.id, 'BRL', l.amount, date_trunc('month', $4::date)::date
			FROM unnest($2::text[], $3::bigint[]) AS l (code, amount) JOIN accounts a ON a.code = l.code`,
			id, pq.Array(codes), pq.Array(amounts), competence)
		if err != nil {
			return postings.MapError(err)
		}
	}
	return postings.MapError(tx.Commit())
}

func TestDatabaseRefusesBadSetsAtCommit(t *testing.T) {
	t.Parallel()
	l, db := ledgertest.New(t)
	if err := periods.Close(context.Background(), db, l.Calendar(), periods.MonthOf(time.Date(2026, 7, 1, 0, 0, 0, 0, time.UTC)), aug, "", monthsums.Closing); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name       string
		competence string
		legs       [][2]any
		want       error
	}{
		{"unbalanced", "2026-08-10", [][2]any{{accounts.Cash, 100}, {accounts.Adjustments, -99}}, postings.ErrUnbalanced},
		{"one leg", "2026-08-10", [][2]any{{accounts.Cash, 100}}, postings.ErrUnbalanced},
		{"no legs", "2026-08-10", nil, postings.ErrUnbalanced},
		{"zero amount", "2026-08-10", [][2]any{{accounts.Cash, 0}, {accounts.Adjustments, 0}}, postings.ErrZeroAmount},
		{"closed month", "2026-07-20", [][2]any{{accounts.Cash, 100}, {accounts.Adjustments, -100}}, postings.ErrClosedMonth},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := rawSet(t, db, tc.competence, tc.legs); !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
		})
	}
	t.Run("currency mismatch", func(t *testing.T) {
		if _, err := db.Exec(`INSERT INTO accounts (code, type, normal_side, currency, parent_id)
			SELECT 'assets:cash-usd', 'asset', 'debit', 'USD', id FROM accounts WHERE code = 'assets'`); err != nil {
			t.Fatal(err)
		}
		tx := db.MustBegin()
		defer tx.Rollback()
		id := rawAugustSet(tx, "raw-usd")
		_, err := tx.Exec(`INSERT INTO postings (posting_set_id, account_id, currency, amount, competence_month)
			SELECT $1, id, 'BRL', 100, '2026-08-01' FROM accounts WHERE code = 'assets:cash-usd'`, id)
		if err := postings.MapError(err); !errors.Is(err, postings.ErrCurrencyMismatch) {
			t.Fatalf("got %v, want ErrCurrencyMismatch", err)
		}
	})
	// What foreign keys on postings would guard, which
	// trg_postings_sealed_set checks set-based instead (migration 0034).
	for _, c := range []struct {
		name, account, set, month string
	}{
		{"an account that does not exist", "(SELECT max(id) + 1 FROM accounts)", "$1", "'2026-08-01'"},
		{"a set that does not exist", "(SELECT id FROM accounts WHERE code = 'assets:cash')", "$1 + 1000", "'2026-08-01'"},
		{"a set of another month", "(SELECT id FROM accounts WHERE code = 'assets:cash')", "$1", "'2026-09-01'"},
	} {
		t.Run("a posting on "+c.name, func(t *testing.T) {
			tx := db.MustBegin()
			defer tx.Rollback()
			id := rawAugustSet(tx, "raw-fk")
			_, err := tx.Exec(`INSERT INTO postings (posting_set_id, account_id, currency, amount, competence_month)
				VALUES (`+c.set+`, `+c.account+`, 'BRL', 100, `+c.month+`),
				       ($1, (SELECT id FROM accounts WHERE code = 'equity:adjustments'), 'BRL', -100, '2026-08-01')`, id)
			var pqErr *pq.Error
			if !errors.As(err, &pqErr) || pqErr.Code != "23503" {
				t.Fatalf("got %v, want a foreign_key_violation", err)
			}
		})
	}
	// A row of a table inheriting from accounts is no account: no trigger
	// of its ever checked it. No table can inherit from posting_sets,
	// partitioned (sql/0056); each of its partitions carries its triggers.
	t.Run("a posting on an account or a set in inheriting tables", func(t *testing.T) {
		if _, err := db.Exec(`CREATE TABLE ghost_sets () INHERITS (posting_sets)`); err == nil {
			t.Fatal("a table inherits from posting_sets")
		}
		for _, c := range []struct{ ghost, set, account, month string }{
			{`INSERT INTO ghost_accounts (id, code, type, normal_side, currency) VALUES (9999, 'assets:ghost', 'asset', 'debit', 'BRL')`,
				"(SELECT id FROM posting_sets WHERE idempotency_key = 'raw-ghost')", "9999", "2026-08-01"},
		} {
			tx := db.MustBegin()
			tx.MustExec(`CREATE TABLE ghost_accounts () INHERITS (accounts)`)
			tx.MustExec(c.ghost)
			rawAugustSet(tx, "raw-ghost")
			_, err := tx.Exec(`INSERT INTO postings (posting_set_id, account_id, currency, amount, competence_month)
				VALUES (` + c.set + `, ` + c.account + `, 'BRL', 100, '` + c.month + `'),
				       (` + c.set + `, (SELECT id FROM accounts WHERE code = 'equity:adjustments'), 'BRL', -100, '` + c.month + `')`)
			tx.Rollback()
			var pqErr *pq.Error
			if !errors.As(err, &pqErr) || pqErr.Code != "23503" {
				t.Fatalf("after %.40s: got %v, want a foreign_key_violation", c.ghost, err)
			}
		}
	})
	t.Run("a truncate of accounts", func(t *testing.T) {
		if _, err := db.Exec(`TRUNCATE accounts CASCADE`); err == nil || !strings.Contains(err.Error(), "ledger table accounts is append-only") {
			t.Fatalf("got %v, want it refused", err)
		}
	})
	t.Run("postings added to a committed set", func(t *testing.T) {
		s, err := postings.Sale("ch-sealed", "BRL", 100, 0, aug)
		p := ledgertest.Post(t, l, s, err)
		_, err = db.Exec(`INSERT INTO postings (posting_set_id, account_id, currency, amount, competence_month)
			SELECT $1, id, 'BRL', v, '2026-08-01' FROM accounts, (VALUES (5), (-5)) AS x (v) WHERE code = 'assets:cash'`, p.ID)
		if err := postings.MapError(err); !errors.Is(err, postings.ErrSealed) {
			t.Fatalf("got %v, want ErrSealed", err)
		}
		// Sealed and in another month: the month's error is the one
		// raised (sql/0036 keeps 0034's order).
		_, err = db.Exec(`INSERT INTO postings (posting_set_id, account_id, currency, amount, competence_month)
			SELECT $1, id, 'BRL', v, m::date FROM accounts, (VALUES (5, '2026-08-01'), (-5, '2026-09-01')) AS x (v, m)
			WHERE code = 'assets:cash'`, p.ID)
		var pqErr *pq.Error
		if !errors.As(err, &pqErr) || pqErr.Constraint != "fk_postings_set_month" {
			t.Fatalf("got %v, want fk_postings_set_month", err)
		}
	})
	if n := ledgertest.Count(t, db, `SELECT count(*) FROM posting_sets WHERE kind = 'adjustment'`); n != 0 {
		t.Fatalf("%d raw sets committed, want 0", n)
	}
}

func TestSecondSaleForChargeRefusedByDatabase(t *testing.T) {
	t.Parallel()
	l, db := ledgertest.New(t)
	s, err := postings.Sale("ch-1", "BRL", 4990, 0, aug)
	ledgertest.Post(t, l, s, err)

	// Another idempotency key for the same charge passes Go but not the
	// unique index.
	again, _ := postings.Sale("ch-1", "BRL", 4990, 0, aug)
	again.IdempotencyKey = "sale:ch-1:other"
	if _, err := l.Post(context.Background(), again); !errors.Is(err, postings.ErrAlreadyPosted) {
		t.Fatalf("got %v, want ErrAlreadyPosted", err)
	}
	_, err = db.Exec(`INSERT INTO posting_sets (kind, idempotency_key, amount, currency, competence, event_at, charge_id, content_hash)
		VALUES ('sale', 'raw', 4990, 'BRL', '2026-08-10', now(), 'ch-1', 'x')`)
	var pqErr *pq.Error
	if !errors.As(err, &pqErr) || pqErr.Constraint != "uq_sale_per_charge" {
		t.Fatalf("raw second sale: got %v, want uq_sale_per_charge", err)
	}
}

func TestSameIdempotencyKeyFromFiftyGoroutinesWritesOneSet(t *testing.T) {
	t.Parallel()
	l, db := ledgertest.New(t)
	s, err := postings.Sale("ch-race", "BRL", 4990, 0, aug)
	if err != nil {
		t.Fatal(err)
	}
	// Warm up: the ledger prepares its insert on first use, and preparing
	// takes the same table lock the gate holds.
	warm, _ := postings.Sale("ch-warm", "BRL", 100, 0, aug)
	ledgertest.Post(t, l, warm, nil)
	// A gate: hold the lock the inserts need, so all 50 are in flight
	// before the first can commit.
	gate := db.MustBegin()
	if _, err := gate.Exec(`LOCK TABLE posting_sets IN SHARE MODE`); err != nil {
		t.Fatal(err)
	}
	const n = 50
	ids := make([]int64, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p, err := l.Post(context.Background(), s)
			ids[i], errs[i] = p.ID, err
		}()
	}
	ledgertest.WaitForLockWaiters(t, db, n)
	gate.Rollback()
	wg.Wait()
	for i := range ids {
		if errs[i] != nil {
			t.Fatalf("caller %d: %v", i, errs[i])
		}
		if ids[i] != ids[0] {
			t.Fatalf("caller %d got set %d, caller 0 got %d", i, ids[i], ids[0])
		}
	}
	if got := ledgertest.Count(t, db, `SELECT count(*) FROM posting_sets WHERE charge_id = 'ch-race'`); got != 1 {
		t.Fatalf("%d posting sets, want 1", got)
	}
	if got := ledgertest.Count(t, db, `SELECT count(*) FROM postings p JOIN posting_sets s ON s.id = p.posting_set_id WHERE s.charge_id = 'ch-race'`); got != 2 {
		t.Fatalf("%d postings, want 2", got)
	}
}

func TestSameKeyDifferentContentIsConflict(t *testing.T) {
	t.Parallel()
	l, _ := ledgertest.New(t)
	s, err := postings.Sale("ch-1", "BRL", 4990, 0, aug)
	first := ledgertest.Post(t, l, s, err)
	again := ledgertest.Post(t, l, s, nil)
	if !again.Replayed || again.ID != first.ID {
		t.Fatalf("replay = %+v, want set %d replayed", again, first.ID)
	}
	other, _ := postings.Sale("ch-1", "BRL", 5000, 0, aug)
	if _, err := l.Post(context.Background(), other); !errors.Is(err, postings.ErrIdempotencyConflict) {
		t.Fatalf("got %v, want ErrIdempotencyConflict", err)
	}
}

func TestRetryAtAnotherTimeIsReplayNotConflict(t *testing.T) {
	t.Parallel()
	l, _ := ledgertest.New(t)
	first, err := postings.Payout("p1", "po-1", "BRL", 100, aug)
	p1 := ledgertest.Post(t, l, first, err)
	retry, _ := postings.Payout("p1", "po-1", "BRL", 100, aug.Add(time.Minute))
	p2 := ledgertest.Post(t, l, retry, nil)
	if !p2.Replayed || p2.ID != p1.ID {
		t.Fatalf("retry = %+v, want replay of set %d", p2, p1.ID)
	}
}

func TestPostAllWritesSetsInOneStatementEachIfAbsent(t *testing.T) {
	t.Parallel()
	l, db := ledgertest.New(t)
	ctx := context.Background()
	sale, _ := postings.Sale("ch-1", "BRL", 4990, 0, aug)
	comm, _, _ := postings.CommissionSet("ch-1", "p1", "BRL", 4990, 1000, aug)
	ledgertest.Post(t, l, sale, nil) // the sale exists already; the commission not
	tx := db.MustBegin()
	ps, err := l.PostAllTx(ctx, tx, sale, comm)
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(postings.MapError(err))
	}
	if !ps[0].Replayed || ps[1].Replayed || ps[1].ID == 0 {
		t.Fatalf("posted %+v, want the sale replayed and the commission new", ps)
	}
	if n := ledgertest.Count(t, db, `SELECT count(*) FROM postings`); n != 4 {
		t.Fatalf("%d postings, want 4", n)
	}
	// An unbalanced set among good ones fails the whole call.
	bad := comm
	bad.IdempotencyKey, bad.Legs = "other", []postings.Leg{{Account: "assets:cash", Amount: 1}, {Account: "income:revenue", Amount: -2}}
	tx = db.MustBegin()
	defer tx.Rollback()
	if _, err := l.PostAllTx(ctx, tx, sale, bad); !errors.Is(err, postings.ErrUnbalanced) {
		t.Fatalf("got %v, want ErrUnbalanced", err)
	}
}

// The review's ways around the barrier, each refused by the database.
func TestDatabaseClosesTheBackDoors(t *testing.T) {
	t.Parallel()
	l, db := ledgertest.New(t)
	cash, _ := accounts.Get(context.Background(), db, accounts.Cash)
	adj, _ := accounts.Get(context.Background(), db, accounts.Adjustments)
	insertSet := func(tx *sqlx.Tx, amount int64) int64 {
		var id int64
		if err := tx.Get(&id, `INSERT INTO posting_sets (kind, idempotency_key, amount, currency, competence, event_at, content_hash)
			VALUES ('adjustment', 'raw-' || gen_random_uuid(), $1, 'BRL', '2026-08-10', now(), 'x') RETURNING id`, amount); err != nil {
			t.Fatal(err)
		}
		return id
	}
	// legs writes amounts to set id in one statement, alternately on cash
	// and adjustments.
	legs := func(tx *sqlx.Tx, id int64, amounts ...int64) error {
		accts := make([]int64, len(amounts))
		for i := range amounts {
			accts[i] = cash.ID
			if i%2 == 1 {
				accts[i] = adj.ID
			}
		}
		_, err := tx.Exec(`INSERT INTO postings (posting_set_id, account_id, currency, amount, competence_month)
			SELECT $1, l.account, 'BRL', l.amount, '2026-08-01' FROM unnest($2::bigint[], $3::bigint[]) AS l (account, amount)`,
			id, pq.Array(accts), pq.Array(amounts))
		return postings.MapError(err)
	}
	t.Run("a leg added after the balance check ran early", func(t *testing.T) {
		tx := db.MustBegin()
		defer tx.Rollback()
		id := insertSet(tx, 100)
		if err := legs(tx, id, 100, -100); err != nil {
			t.Fatal(err)
		}
		tx.MustExec(`SET CONSTRAINTS ALL IMMEDIATE`)
		if err := legs(tx, id, 1_000_000); !errors.Is(err, postings.ErrSealed) {
			t.Fatalf("got %v, want ErrSealed", err)
		}
	})
	t.Run("a stated amount that is not the debits", func(t *testing.T) {
		tx := db.MustBegin()
		defer tx.Rollback()
		id := insertSet(tx, 100)
		legs(tx, id, 10000, -10000)
		if err := postings.MapError(tx.Commit()); !errors.Is(err, postings.ErrUnbalanced) {
			t.Fatalf("got %v, want a refusal at commit", err)
		}
	})
	t.Run("a set written under REPEATABLE READ", func(t *testing.T) {
		tx, err := db.BeginTxx(context.Background(), &sql.TxOptions{Isolation: sql.LevelRepeatableRead})
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback()
		sale, _ := postings.Sale("ch-rr", "BRL", 100, 0, aug)
		if _, err := l.PostTx(context.Background(), tx, sale); !errors.Is(err, postings.ErrClosedMonth) {
			t.Fatalf("got %v, want a refusal by trg_posting_sets_open_month", err)
		}
	})
	if _, err := l.Post(context.Background(), postings.Set{Kind: postings.KindAdjustment, IdempotencyKey: "k", Amount: 5, Currency: "BRL",
		EventAt: aug, Legs: []postings.Leg{{Account: accounts.Cash, Amount: 7}, {Account: accounts.Adjustments, Amount: -7}}}); !errors.Is(err, postings.ErrInvalid) {
		t.Fatalf("Go accepted an amount that is not the debits: %v", err)
	}
}
