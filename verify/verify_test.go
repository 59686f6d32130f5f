package verify_test

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/razao/razao/internal/ledgertest"
	"github.com/razao/razao/monthsums"
	"github.com/razao/razao/periods"
	"github.com/razao/razao/postings"
	"github.com/razao/razao/verify"
)

// The tests below corrupt a real ledger the way only its owner can
// (switching a trigger off inside a transaction, replacing a function,
// editing a charge) and check that verify names each breach on a line.

// seedVerified books a small, complete ledger through the Go that writes
// it, with the charges rows the webhook front would leave: ch-1 paid with
// a 10% commission and refunded 2000 of 4990, ch-2 paid with a PSP fee and
// no partner, a payout to partner-42.
// aug is a time in August 2026, the month the verify tests book in.
var aug = time.Date(2026, 8, 10, 15, 0, 0, 0, time.UTC)

func seedVerified(t *testing.T, l *postings.Ledger, db *sqlx.DB) {
	t.Helper()
	sep := aug.AddDate(0, 1, 0)
	s, err := postings.Sale("ch-1", "BRL", 4990, 0, aug)
	ledgertest.Post(t, l, s, err)
	s, err = postings.Sale("ch-2", "BRL", 10000, 120, aug)
	ledgertest.Post(t, l, s, err)
	c, _, err := postings.CommissionSet("ch-1", "partner-42", "BRL", 4990, 1000, aug)
	ledgertest.Post(t, l, c, err)
	s, err = postings.Refund("ch-1", "rf-1", "BRL", 2000, sep)
	ledgertest.Post(t, l, s, err)
	c, _, err = postings.CommissionReversalSet("ch-1", "rf-1", "partner-42", "BRL", postings.ReversalAmount(499, 4990, 0, 2000), sep)
	ledgertest.Post(t, l, c, err)
	s, err = postings.Payout("partner-42", "po-1", "BRL", 100, sep)
	ledgertest.Post(t, l, s, err)
	db.MustExec(`INSERT INTO charges (id, amount, partner, commission_bp, state, paid_amount, fee, commission, refunded_amount, request_hash)
		VALUES ('ch-1', 4990, 'partner-42', 1000, 'partially_refunded', 4990, 0, 499, 2000, 'h1'),
		       ('ch-2', 10000, NULL, 0, 'paid', 10000, 120, 0, 0, 'h2'),
		       ('ch-3', 700, NULL, 0, 'pending', NULL, NULL, 0, 0, 'h3')`)
}

// verifyText runs verify and returns its report as razao verify prints it.
func verifyText(t *testing.T, db *sqlx.DB) (verify.Report, string) {
	t.Helper()
	r, err := verify.Run(context.Background(), db)
	if err != nil {
		t.Fatalf("verify: %v", err)
	}
	var b strings.Builder
	r.WriteTo(&b)
	return r, b.String()
}

// assertBreaches checks that verify fails and prints each wanted line (a
// substring of one line of the report).
func assertBreaches(t *testing.T, db *sqlx.DB, want ...string) {
	t.Helper()
	r, out := verifyText(t, db)
	if r.OK() {
		t.Fatalf("verify says clean, want %q:\n%s", want, out)
	}
	lines := strings.Split(out, "\n")
	for _, w := range want {
		found := false
		for _, l := range lines {
			if strings.Contains(l, w) {
				found = true
			}
		}
		if !found {
			t.Errorf("no line of the report has %q:\n%s", w, out)
		}
	}
}

func assertClean(t *testing.T, db *sqlx.DB) {
	t.Helper()
	if r, out := verifyText(t, db); !r.OK() {
		t.Fatalf("verify on a clean ledger:\n%s", out)
	}
}

// asOwner runs stmts in one transaction with every user trigger of tables
// switched off, then puts each trigger back as it was: what an owner can
// do, and what the triggers cannot stop.
func asOwner(t *testing.T, db *sqlx.DB, tables []string, stmts ...string) {
	t.Helper()
	tx := db.MustBegin()
	defer tx.Rollback()
	restore := triggersOff(t, tx, tables...)
	for _, s := range stmts {
		if _, err := tx.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	restore()
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
}

// triggersOff disables every user trigger of tables inside tx and returns
// what puts each back as it was. Restoring by the catalog's own list keeps
// it true whatever the triggers are called.
func triggersOff(t *testing.T, tx *sqlx.Tx, tables ...string) (restore func()) {
	t.Helper()
	var back []string
	for _, table := range tables {
		var trgs []struct {
			Name    string `db:"tgname"`
			Enabled string `db:"tgenabled"`
		}
		if err := tx.Select(&trgs, `SELECT tgname, tgenabled::text AS tgenabled FROM pg_trigger
			WHERE tgrelid = $1::regclass AND NOT tgisinternal`, table); err != nil {
			t.Fatal(err)
		}
		for _, g := range trgs {
			mode := map[string]string{"A": "ENABLE ALWAYS", "O": "ENABLE", "R": "ENABLE REPLICA", "D": "DISABLE"}[g.Enabled]
			back = append(back, fmt.Sprintf(`ALTER TABLE %s %s TRIGGER %s`, table, mode, g.Name))
		}
		tx.MustExec(`ALTER TABLE ` + table + ` DISABLE TRIGGER USER`)
	}
	return func() {
		t.Helper()
		for _, s := range back {
			tx.MustExec(s)
		}
	}
}

func setID(t *testing.T, db *sqlx.DB, key string) int64 {
	t.Helper()
	return ledgertest.Count(t, db, `SELECT id FROM posting_sets WHERE idempotency_key = $1`, key)
}

func TestVerifyFindsSeededLedgerClean(t *testing.T) {
	t.Parallel()
	seededWithAugustClosed(t)
}

// seededWithAugustClosed is seedVerified's ledger with August closed, and
// verify finding it clean.
func seededWithAugustClosed(t *testing.T) (*postings.Ledger, *sqlx.DB) {
	t.Helper()
	l, db := ledgertest.New(t)
	seedVerified(t, l, db)
	if err := periods.Close(context.Background(), db, l.Calendar(), periods.MonthOf(aug), aug.AddDate(0, 1, 0), "", monthsums.Closing); err != nil {
		t.Fatal(err)
	}
	assertClean(t, db)
	return l, db
}

// Postings whose set does not exist, written by an owner with the sealed
// set guard off for one transaction (it leaves no trace in the catalog),
// and rows of tables inheriting from the ledger's, which no ledger
// trigger sees: verify names both.
func TestVerifyNamesOrphanPostingsAndInheritingTables(t *testing.T) {
	t.Parallel()
	l, db := ledgertest.New(t)
	seedVerified(t, l, db)
	assertClean(t, db)
	tx := db.MustBegin()
	tx.MustExec(`ALTER TABLE postings DISABLE TRIGGER trg_postings_sealed_set`)
	tx.MustExec(`INSERT INTO postings (id, posting_set_id, account_id, currency, amount, competence_month)
		SELECT 666666 + n, 999999, a.id, 'BRL', v, '2026-08-01'
		FROM (VALUES (0, 'expenses:commission', 500), (1, 'income:revenue', -500)) AS x (n, code, v) JOIN accounts a ON a.code = x.code`)
	tx.MustExec(`ALTER TABLE postings ENABLE ALWAYS TRIGGER trg_postings_sealed_set`)
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	db.MustExec(`CREATE TABLE shadow_accounts () INHERITS (accounts)`)
	assertBreaches(t, db, "posting 666666 of no set", "posting 666667 of no set", "shadow_accounts inherits from accounts")
}

func TestVerifyNamesLegsAppendedToACommittedSet(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, key string
		legs      string // (account code, currency, amount) rows to append
		want      func(id int64) []string
	}{
		{"a balanced pair on the sale's own accounts", "sale:ch-1",
			`('assets:cash', 'BRL', 500), ('income:revenue', 'BRL', -500)`,
			func(id int64) []string {
				return []string{
					fmt.Sprintf("set %d (sale of charge ch-1): amount 4990 but its BRL debits sum to 5490", id),
					fmt.Sprintf("set %d (sale of charge ch-1): legs [C income:revenue, C income:revenue, D assets:cash, D assets:cash] are not a sale", id),
				}
			}},
		{"a balanced pair in another currency", "sale:ch-1",
			`('assets:usd', 'USD', 500), ('equity:usd', 'USD', -500)`,
			func(id int64) []string {
				return []string{fmt.Sprintf("set %d (sale of charge ch-1): legs [C USD equity:usd, C income:revenue, D USD assets:usd, D assets:cash] are not a sale", id)}
			}},
		{"a balanced pair moving a payout to another partner", "payout:partner-42:po-1",
			`('liabilities:commission-payable:partner-7', 'BRL', 100), ('liabilities:commission-payable:partner-42', 'BRL', -100)`,
			func(id int64) []string {
				return []string{
					fmt.Sprintf("set %d (payout for partner partner-42): amount 100 but its BRL debits sum to 200", id),
					fmt.Sprintf("set %d (payout for partner partner-42): legs [C assets:cash, C liabilities:commission-payable:partner-42, "+
						"D liabilities:commission-payable:partner-42, D liabilities:commission-payable:partner-7] are not a payout", id),
				}
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			l, db := ledgertest.New(t)
			seedVerified(t, l, db)
			db.MustExec(`INSERT INTO accounts (code, type, normal_side, currency) VALUES
				('assets:usd', 'asset', 'debit', 'USD'), ('equity:usd', 'equity', 'credit', 'USD'),
				('liabilities:commission-payable:partner-7', 'liability', 'credit', 'BRL')`)
			assertClean(t, db)
			id := setID(t, db, c.key)
			asOwner(t, db, []string{"postings"}, fmt.Sprintf(`INSERT INTO postings (posting_set_id, account_id, currency, amount, competence_month)
				SELECT s.id, a.id, v.currency, v.amount, s.competence_month
				FROM (VALUES %s) AS v (code, currency, amount) JOIN accounts a ON a.code = v.code
				JOIN posting_sets s ON s.idempotency_key = '%s'`, c.legs, c.key))
			assertBreaches(t, db, c.want(id)...)
		})
	}
}

func TestVerifyNamesSetsBookedOffTheirTemplate(t *testing.T) {
	t.Parallel()
	at := aug
	cases := []struct {
		name string
		set  postings.Set
		want string // "" for a set verify must accept
	}{
		{"a sale into commission expense instead of cash", postings.Set{Kind: postings.KindSale, IdempotencyKey: "sale:x",
			ChargeID: "x", Amount: 100, Currency: "BRL", EventAt: at,
			Legs: []postings.Leg{{Account: "expenses:commission", Amount: 100}, {Account: "income:revenue", Amount: -100}}},
			"(sale of charge x): legs [C income:revenue, D expenses:commission] are not a sale ([C income:revenue, D assets:cash] with any of [C assets:till:pix-change, C assets:till:pix-withdrawals, " +
				"C income:fines, C income:interest, D expenses:discounts, D expenses:psp-fees, D expenses:rebates])"},
		{"a commission owed to another partner than the set's", postings.Set{Kind: postings.KindCommission, IdempotencyKey: "commission:x",
			ChargeID: "x", Partner: "partner-42", Amount: 10, Currency: "BRL", EventAt: at,
			Legs: []postings.Leg{{Account: "expenses:commission", Amount: 10}, {Account: "liabilities:commission-payable:partner-7", Amount: -10}}},
			"(commission of charge x for partner partner-42): legs [C liabilities:commission-payable:partner-7, D expenses:commission] are not a commission ([C liabilities:commission-payable:{partner}, D expenses:commission])"},
		{"a payout booked the wrong way round", postings.Set{Kind: postings.KindPayout, IdempotencyKey: "payout:p",
			Partner: "partner-42", Amount: 10, Currency: "BRL", EventAt: at,
			Legs: []postings.Leg{{Account: "assets:cash", Amount: 10}, {Account: "liabilities:commission-payable:partner-42", Amount: -10}}},
			"(payout for partner partner-42): legs [C liabilities:commission-payable:partner-42, D assets:cash] are not a payout"},
		{"a commission reversal that reverses nothing", postings.Set{Kind: postings.KindCommissionReversal, IdempotencyKey: "commission_reversal:x",
			ChargeID: "x", RefundID: "r", Partner: "partner-42", Amount: 10, Currency: "BRL", EventAt: at,
			Legs: []postings.Leg{{Account: "expenses:commission", Amount: 10}, {Account: "liabilities:commission-payable:partner-42", Amount: -10}}},
			"(commission_reversal of charge x for partner partner-42): legs [C liabilities:commission-payable:partner-42, D expenses:commission] are not a commission_reversal"},
		{"an adjustment of any balanced legs", postings.Set{Kind: postings.KindAdjustment, IdempotencyKey: "adjustment:x",
			Amount: 10, Currency: "BRL", EventAt: at,
			Legs: []postings.Leg{{Account: "expenses:commission", Amount: 10}, {Account: "equity:adjustments", Amount: -10}}},
			""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			l, db := ledgertest.New(t)
			db.MustExec(`INSERT INTO accounts (code, type, normal_side) VALUES ('liabilities:commission-payable:partner-7', 'liability', 'credit')`)
			// Go validates balance and amount, not shape; nor do the triggers.
			p := ledgertest.Post(t, l, c.set, nil)
			if c.want == "" {
				assertClean(t, db)
				return
			}
			assertBreaches(t, db, fmt.Sprintf("set %d %s", p.ID, c.want))
		})
	}
}

func TestVerifyNamesBalancesBeyondInt64(t *testing.T) {
	t.Parallel()
	const max = math.MaxInt64
	cases := []struct {
		name string
		sets [][3]any // kind, month, legs (code, amount)
		want []string
	}{
		{"an all-time balance", [][3]any{
			{"payout", "2026-08-10", `('liabilities:commission-payable:partner-42', 9223372036854775807), ('assets:cash', -9223372036854775807)`},
			{"payout", "2026-09-10", `('liabilities:commission-payable:partner-42', 9223372036854775807), ('assets:cash', -9223372036854775807)`},
		}, []string{
			"account assets:cash: balance at the end of 2026-09 is -18446744073709551614, beyond int64",
			"account liabilities:commission-payable:partner-42: balance at the end of 2026-09 is 18446744073709551614, beyond int64",
			"account liabilities: balance at the end of 2026-09 is 18446744073709551614, beyond int64",
		}},
		{"one month's debits of an account", [][3]any{
			{"adjustment", "2026-08-10", `('assets:cash', 9223372036854775807), ('equity:adjustments', -9223372036854775807)`},
			{"adjustment", "2026-08-11", `('equity:adjustments', 9223372036854775807), ('assets:cash', -9223372036854775807)`},
			{"adjustment", "2026-08-12", `('assets:cash', 9223372036854775807), ('equity:adjustments', -9223372036854775807)`},
		}, []string{
			"account assets:cash: debits in 2026-08 total 18446744073709551614, beyond int64",
			"account equity:adjustments: credits in 2026-08 total 18446744073709551614, beyond int64",
			"all accounts together: debits in 2026-08 total 27670116110564327421, beyond int64",
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			_, db := ledgertest.New(t)
			db.MustExec(`INSERT INTO accounts (code, type, normal_side, parent_id) SELECT
				'liabilities:commission-payable:partner-42', 'liability', 'credit', id FROM accounts WHERE code = 'liabilities:commission-payable'`)
			// A ledger written before the amount ceiling (sql/0016) existed.
			db.MustExec(`ALTER TABLE posting_sets DROP CONSTRAINT ck_posting_sets_amount_ceiling`)
			db.MustExec(`ALTER TABLE postings DROP CONSTRAINT ck_postings_amount_ceiling`)
			// Written as SQL, past any bound the Go may put on amounts: the
			// triggers accept them (each balances) and no bigint overflows.
			for i, s := range c.sets {
				tx := db.MustBegin()
				var id int64
				if err := tx.Get(&id, `INSERT INTO posting_sets (kind, idempotency_key, amount, currency, competence, event_at, partner, content_hash)
					VALUES ($1, $2, $3, 'BRL', $4, $4::date, CASE WHEN $1 = 'payout' THEN 'partner-42' END, 'x') RETURNING id`,
					s[0], fmt.Sprint("k", i), int64(max), s[1]); err != nil {
					t.Fatal(err)
				}
				tx.MustExec(fmt.Sprintf(`INSERT INTO postings (posting_set_id, account_id, currency, amount, competence_month)
					SELECT $1, a.id, 'BRL', v.amount, date_trunc('month', $2::date)::date
					FROM (VALUES %s) AS v (code, amount) JOIN accounts a ON a.code = v.code`, s[2]), id, s[1])
				if err := tx.Commit(); err != nil {
					t.Fatal(err)
				}
			}
			assertBreaches(t, db, c.want...)
		})
	}
}

func TestVerifyNamesChargeFiguresThatDisagreeWithTheirSets(t *testing.T) {
	t.Parallel()
	cases := []struct{ name, corrupt, want string }{
		{"refunded_amount above its refund sets", `UPDATE charges SET refunded_amount = 2500 WHERE id = 'ch-1'`,
			"charge ch-1: refunded_amount 2500 but its refund sets total 2000"},
		{"refunded_amount without any refund set", `UPDATE charges SET refunded_amount = 10, state = 'partially_refunded' WHERE id = 'ch-2'`,
			"charge ch-2: refunded_amount 10 but its refund sets total 0"},
		{"commission other than the commission set's", `UPDATE charges SET commission = 500 WHERE id = 'ch-1'`,
			"charge ch-1: commission 500 but its commission set"},
		{"commission without a commission set", `UPDATE charges SET commission = 100 WHERE id = 'ch-2'`,
			"charge ch-2: commission 100 but it has no commission set"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			l, db := ledgertest.New(t)
			seedVerified(t, l, db)
			assertClean(t, db)
			db.MustExec(c.corrupt)
			assertBreaches(t, db, c.want)
		})
	}
}

func TestVerifyNamesReplacedFunctionsAndTriggers(t *testing.T) {
	t.Parallel()
	const noop = `CREATE FUNCTION razao_noop() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END; $$`
	assertEachCorruptionNamed(t, []corruption{
		{"the balance check replaced by a no-op", []string{
			`CREATE OR REPLACE FUNCTION ledger_check_posting_set() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END; $$`},
			[]string{"function ledger_check_posting_set(): body differs from the one "}},
		{"append-only replaced by a no-op", []string{
			`CREATE OR REPLACE FUNCTION ledger_refuse_change() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NEW; END; $$`},
			[]string{"function ledger_refuse_change(): body differs from the one "}},
		{"a search_path that searches pg_temp first", []string{
			`ALTER FUNCTION ledger_refuse_closed_month() SET search_path = pg_temp, public`},
			[]string{`function ledger_refuse_closed_month(): search_path "pg_temp, public" puts pg_temp before public`}},
		{"a search_path without pg_temp", []string{
			`ALTER FUNCTION ledger_refuse_sealed_set() SET search_path = public`},
			[]string{`function ledger_refuse_sealed_set(): search_path "public" does not list pg_temp, so pg_temp is searched first`}},
		{"the sealed-set function dropped with its trigger", []string{
			`DROP FUNCTION ledger_refuse_sealed_set() CASCADE`},
			[]string{"function ledger_refuse_sealed_set (defined by ", "is missing from schema public",
				"trigger trg_postings_sealed_set on postings (defined by "}},
		{"a trigger disabled", []string{`ALTER TABLE posting_sets DISABLE TRIGGER trg_posting_sets_open_month`},
			[]string{"trigger trg_posting_sets_open_month on posting_sets is disabled; the migrations enable it ALWAYS"}},
		{"a trigger left to origin sessions", []string{`ALTER TABLE postings ENABLE TRIGGER trg_postings_append_only`},
			[]string{"trigger trg_postings_append_only on postings is enabled only for origin sessions"}},
		{"a trigger left to replica sessions", []string{`ALTER TABLE accounts ENABLE REPLICA TRIGGER trg_accounts_immutable`},
			[]string{"trigger trg_accounts_immutable on accounts is enabled only for replica sessions"}},
		{"a trigger repointed to a no-op", []string{noop,
			`CREATE OR REPLACE TRIGGER trg_posting_sets_append_only BEFORE UPDATE OR DELETE ON posting_sets FOR EACH ROW EXECUTE FUNCTION razao_noop()`,
			`ALTER TABLE posting_sets ENABLE ALWAYS TRIGGER trg_posting_sets_append_only`},
			[]string{"trigger trg_posting_sets_append_only on posting_sets calls public.razao_noop; ", " has it call ledger_refuse_change"}},
		{"a trigger no migration defines", []string{noop,
			`CREATE TRIGGER trg_extra BEFORE INSERT ON postings FOR EACH ROW EXECUTE FUNCTION razao_noop()`},
			[]string{"trigger trg_extra on postings (calls public.razao_noop) is not defined by any migration"}},
	})
}

// corruption is statements run as the ledger's owner, and the lines of
// verify's report that must name what they did.
type corruption struct {
	name    string
	corrupt []string
	want    []string
}

// assertEachCorruptionNamed runs each corruption on a clean ledger of its
// own and checks that verify names it.
func assertEachCorruptionNamed(t *testing.T, cases []corruption) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			l, db := ledgertest.New(t)
			seedVerified(t, l, db)
			assertClean(t, db)
			for _, s := range c.corrupt {
				db.MustExec(s)
			}
			assertBreaches(t, db, c.want...)
		})
	}
}

func TestVerifyJudgesAClosedMonthBySetsCommitOrder(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	sep := aug.AddDate(0, 1, 0)
	// One posting set in August, written by raw SQL in tx as the Go would.
	insertAugustSet := func(t *testing.T, tx *sqlx.Tx, key string) {
		t.Helper()
		var id int64
		if err := tx.Get(&id, `INSERT INTO posting_sets (kind, idempotency_key, amount, currency, competence, event_at, content_hash)
			VALUES ('adjustment', $1, 10, 'BRL', '2026-08-20', '2026-08-20', 'x') RETURNING id`, key); err != nil {
			t.Fatal(err)
		}
		tx.MustExec(`INSERT INTO postings (posting_set_id, account_id, currency, amount, competence_month)
			SELECT $1, a.id, 'BRL', v.amount, '2026-08-01' FROM (VALUES ('assets:cash', 10), ('equity:adjustments', -10)) AS v (code, amount)
			JOIN accounts a ON a.code = v.code`, id)
	}

	t.Run("a set begun before the close and written after it", func(t *testing.T) {
		t.Parallel()
		l, db := ledgertest.New(t)
		seedVerified(t, l, db)
		late := db.MustBegin()
		defer late.Rollback()
		late.MustExec(`SELECT 1`) // its created_at is now: before the close
		if err := periods.Close(ctx, db, l.Calendar(), periods.MonthOf(aug), sep, "", monthsums.Closing); err != nil {
			t.Fatal(err)
		}
		// The owner switches the closed-month guard off in its own
		// transaction only, and writes into the closed month.
		restore := triggersOff(t, late, "posting_sets")
		insertAugustSet(t, late, "late")
		restore()
		if err := late.Commit(); err != nil {
			t.Fatal(err)
		}
		assertBreaches(t, db, fmt.Sprintf("set %d (adjustment) is in closed month 2026-08 but was written after its close", setID(t, db, "late")))
	})

	t.Run("a set committed while the close waits for it", func(t *testing.T) {
		t.Parallel()
		l, db := ledgertest.New(t)
		seedVerified(t, l, db)
		// The close begins first (its closed_at is its start), then a set
		// takes its share of the close lock, and the close waits for it.
		closing := db.MustBegin()
		defer closing.Rollback()
		closing.MustExec(`SELECT 1`)
		writer := db.MustBegin()
		defer writer.Rollback()
		insertAugustSet(t, writer, "in-flight")
		done := make(chan error, 1)
		go func() {
			done <- periods.CloseTx(ctx, closing, l.Calendar(), periods.MonthOf(aug), sep, "", monthsums.Closing)
		}()
		ledgertest.WaitForLockWaiters(t, db, 1)
		if err := writer.Commit(); err != nil {
			t.Fatal(err)
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if err := closing.Commit(); err != nil {
			t.Fatal(err)
		}
		assertClean(t, db)
	})
}

// The owner recreates a guard under its own name, calling its own
// function, enabled ALWAYS, but neutered; then deletes a closed month's
// sale and its legs, which the neutered guards let through. The sale of
// ch-2 carries no commission or refund, so its absence balances: only
// the triggers' definitions tell.
func TestVerifyNamesNeuteredTriggers(t *testing.T) {
	t.Parallel()
	const deleteSale = `DELETE FROM postings WHERE posting_set_id = (SELECT id FROM posting_sets WHERE idempotency_key = 'sale:ch-2');
		DELETE FROM posting_sets WHERE idempotency_key = 'sale:ch-2'`
	recreate := func(table, trigger, create string) []string {
		return []string{`DROP TRIGGER ` + trigger + ` ON ` + table, create, `ALTER TABLE ` + table + ` ENABLE ALWAYS TRIGGER ` + trigger}
	}
	cases := []struct {
		name    string
		corrupt [][]string
		act     string // what the neutered guards then let through, if anything
		want    []string
	}{
		{"append-only WHEN (false)", [][]string{
			recreate("posting_sets", "trg_posting_sets_append_only", `CREATE TRIGGER trg_posting_sets_append_only BEFORE UPDATE OR DELETE ON posting_sets
				FOR EACH ROW WHEN (false) EXECUTE FUNCTION ledger_refuse_change()`),
			recreate("postings", "trg_postings_append_only", `CREATE TRIGGER trg_postings_append_only BEFORE UPDATE OR DELETE ON postings
				FOR EACH ROW WHEN (false) EXECUTE FUNCTION ledger_refuse_change()`)},
			deleteSale,
			[]string{`trigger trg_posting_sets_append_only on posting_sets is defined as "CREATE TRIGGER trg_posting_sets_append_only BEFORE DELETE OR UPDATE ON public.posting_sets FOR EACH ROW WHEN (false) EXECUTE FUNCTION ledger_refuse_change()"; the migrations define "CREATE TRIGGER trg_posting_sets_append_only BEFORE DELETE OR UPDATE ON posting_sets FOR EACH ROW EXECUTE FUNCTION ledger_refuse_change()"`,
				`trigger trg_postings_append_only on postings is defined as "CREATE TRIGGER trg_postings_append_only BEFORE DELETE OR UPDATE ON public.postings FOR EACH ROW WHEN (false)`}},
		{"append-only on UPDATE only", [][]string{
			recreate("posting_sets", "trg_posting_sets_append_only", `CREATE TRIGGER trg_posting_sets_append_only BEFORE UPDATE ON posting_sets
				FOR EACH ROW EXECUTE FUNCTION ledger_refuse_change()`),
			recreate("postings", "trg_postings_append_only", `CREATE TRIGGER trg_postings_append_only BEFORE UPDATE ON postings
				FOR EACH ROW EXECUTE FUNCTION ledger_refuse_change()`)},
			deleteSale,
			[]string{`trigger trg_posting_sets_append_only on posting_sets is defined as "CREATE TRIGGER trg_posting_sets_append_only BEFORE UPDATE ON public.posting_sets FOR EACH ROW`,
				`trigger trg_postings_append_only on postings is defined as "CREATE TRIGGER trg_postings_append_only BEFORE UPDATE ON public.postings FOR EACH ROW`}},
		{"the balance check NOT DEFERRABLE", [][]string{
			recreate("posting_sets", "trg_posting_sets_balanced", `CREATE CONSTRAINT TRIGGER trg_posting_sets_balanced AFTER INSERT ON posting_sets
				NOT DEFERRABLE FOR EACH ROW EXECUTE FUNCTION ledger_check_posting_set()`)}, "",
			[]string{`trigger trg_posting_sets_balanced on posting_sets is defined as "CREATE CONSTRAINT TRIGGER trg_posting_sets_balanced AFTER INSERT ON public.posting_sets NOT DEFERRABLE INITIALLY IMMEDIATE FOR EACH ROW`}},
		{"the balance check INITIALLY IMMEDIATE", [][]string{
			recreate("posting_sets", "trg_posting_sets_balanced", `CREATE CONSTRAINT TRIGGER trg_posting_sets_balanced AFTER INSERT ON posting_sets
				DEFERRABLE INITIALLY IMMEDIATE FOR EACH ROW EXECUTE FUNCTION ledger_check_posting_set()`)}, "",
			[]string{`trigger trg_posting_sets_balanced on posting_sets is defined as "CREATE CONSTRAINT TRIGGER trg_posting_sets_balanced AFTER INSERT ON public.posting_sets DEFERRABLE INITIALLY IMMEDIATE FOR EACH ROW`}},
		{"the close lock FOR EACH ROW", [][]string{
			// A row trigger of posting_sets is cloned onto its partitions
			// (sql/0056), whose statement triggers of that name go first.
			{`DO $$ DECLARE p regclass; BEGIN
				FOR p IN SELECT inhrelid::regclass FROM pg_inherits WHERE inhparent = 'posting_sets'::regclass LOOP
					EXECUTE format('DROP TRIGGER trg_posting_sets_open_month ON %s', p);
				END LOOP; END $$`},
			recreate("posting_sets", "trg_posting_sets_open_month", `CREATE TRIGGER trg_posting_sets_open_month BEFORE INSERT ON posting_sets
				FOR EACH ROW EXECUTE FUNCTION ledger_refuse_closed_month()`)}, "",
			[]string{`trigger trg_posting_sets_open_month on posting_sets is defined as "CREATE TRIGGER trg_posting_sets_open_month BEFORE INSERT ON public.posting_sets FOR EACH ROW`}},
		{"the closed-month guard on UPDATE only", [][]string{
			recreate("posting_sets", "trg_posting_sets_written_open", `CREATE TRIGGER trg_posting_sets_written_open AFTER UPDATE ON posting_sets
				REFERENCING NEW TABLE AS new_sets FOR EACH STATEMENT EXECUTE FUNCTION ledger_check_new_sets()`)}, "",
			[]string{`trigger trg_posting_sets_written_open on posting_sets is defined as "CREATE TRIGGER trg_posting_sets_written_open AFTER UPDATE ON public.posting_sets`}},
		{"the sealed-set guard without REFERENCING", [][]string{
			recreate("postings", "trg_postings_sealed_set", `CREATE TRIGGER trg_postings_sealed_set AFTER INSERT ON postings
				FOR EACH STATEMENT EXECUTE FUNCTION ledger_refuse_sealed_set()`)}, "",
			[]string{`trigger trg_postings_sealed_set on postings is defined as "CREATE TRIGGER trg_postings_sealed_set AFTER INSERT ON public.postings FOR EACH STATEMENT EXECUTE FUNCTION ledger_refuse_sealed_set()"; the migrations define "CREATE TRIGGER trg_postings_sealed_set AFTER INSERT ON postings REFERENCING NEW TABLE AS new_postings FOR EACH STATEMENT EXECUTE FUNCTION ledger_refuse_sealed_set()"`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			l, db := ledgertest.New(t)
			seedVerified(t, l, db)
			if err := periods.Close(context.Background(), db, l.Calendar(), periods.MonthOf(aug), aug.AddDate(0, 1, 0), "", monthsums.Closing); err != nil {
				t.Fatal(err)
			}
			assertClean(t, db)
			for _, stmts := range c.corrupt {
				for _, s := range stmts {
					db.MustExec(s)
				}
			}
			if c.act != "" {
				db.MustExec(c.act)
				if n := ledgertest.Count(t, db, `SELECT count(*) FROM posting_sets WHERE idempotency_key = 'sale:ch-2'`); n != 0 {
					t.Fatalf("the sale is still there")
				}
			}
			assertBreaches(t, db, c.want...)
		})
	}
}

// An operator in the ledger's schema that is a closer match for numeric
// <> integer than pg_catalog's would make every sum look balanced: verify
// names it, and its own queries do not use it.
func TestVerifyNamesAForeignOperatorAndIsNotFooledByIt(t *testing.T) {
	t.Parallel()
	l, db := ledgertest.New(t)
	seedVerified(t, l, db)
	assertClean(t, db)
	db.MustExec(`CREATE FUNCTION public.never_differs(numeric, integer) RETURNS boolean LANGUAGE sql IMMUTABLE AS 'SELECT false'`)
	db.MustExec(`CREATE OPERATOR public.<> (LEFTARG = numeric, RIGHTARG = integer, FUNCTION = never_differs)`)
	asOwner(t, db, []string{"posting_sets", "postings"},
		`INSERT INTO posting_sets (kind, idempotency_key, amount, currency, competence, event_at, content_hash)
			VALUES ('adjustment', 'unbalanced', 10, 'BRL', '2026-08-20', '2026-08-20', 'x')`,
		`INSERT INTO postings (posting_set_id, account_id, currency, amount, competence_month)
			SELECT s.id, a.id, 'BRL', v.amount, '2026-08-01' FROM (VALUES ('assets:cash', 10), ('equity:adjustments', -9)) AS v (code, amount)
			JOIN accounts a ON a.code = v.code JOIN posting_sets s ON s.idempotency_key = 'unbalanced'`)
	assertBreaches(t, db,
		"operator public.<>(numeric,integer) (calls never_differs(numeric,integer)) is not defined by any migration",
		"function public.never_differs(numeric,integer) is not defined by any migration",
		fmt.Sprintf("set %d (adjustment): its BRL legs sum to 1", setID(t, db, "unbalanced")),
		"BRL 1")
}

// Months close in order and only once they have ended; a set is dated at
// most next month. The owner writes what the close refuses.
func TestVerifyNamesGapsAndFutureMonths(t *testing.T) {
	t.Parallel()
	_, db := seededWithAugustClosed(t)
	asOwner(t, db, []string{"closed_periods", "posting_sets", "postings"},
		`INSERT INTO closed_periods (month) VALUES ('2030-01-01'), ('2030-03-01')`,
		`INSERT INTO posting_sets (kind, idempotency_key, amount, currency, competence, event_at, content_hash)
			VALUES ('adjustment', 'future', 10, 'BRL', '2031-05-20', '2031-05-20', 'x')`,
		`INSERT INTO postings (posting_set_id, account_id, currency, amount, competence_month)
			SELECT s.id, a.id, 'BRL', v.amount, '2031-05-01' FROM (VALUES ('assets:cash', 10), ('equity:adjustments', -10)) AS v (code, amount)
			JOIN accounts a ON a.code = v.code JOIN posting_sets s ON s.idempotency_key = 'future'`)
	next := time.Now().In(time.FixedZone("UTC+14", 14*3600))
	next = time.Date(next.Year(), next.Month()+1, 1, 0, 0, 0, 0, time.UTC)
	assertBreaches(t, db,
		"month 2030-01 is closed but 2026-09..2029-12 before it are open",
		"month 2030-03 is closed but 2030-02 before it is open",
		"month 2030-01 is closed but has not ended yet (closed at ",
		"month 2030-03 is closed but has not ended yet",
		fmt.Sprintf("set %d (adjustment) is in competence month 2031-05, after next month %s", setID(t, db, "future"), next.Format("2006-01")))
}

// A row-level security policy could hide rows from every check (and from
// the triggers', which sql/0035 makes fail instead); a second schema
// holding the ledger's tables could be the one a role's search_path
// points verify at. verify names both before it reads anything else, and
// names a ledger function that no longer runs with row_security = off.
func TestVerifyNamesRowSecurityAndTheLedgerElsewhere(t *testing.T) {
	t.Parallel()
	assertEachCorruptionNamed(t, []corruption{
		{"a policy on postings", []string{`ALTER TABLE postings ENABLE ROW LEVEL SECURITY`,
			`CREATE POLICY hide_13 ON postings USING (amount <> 13)`},
			[]string{"table postings has row-level security on (policies: hide_13)"}},
		{"row-level security forced on closed_periods", []string{`ALTER TABLE closed_periods FORCE ROW LEVEL SECURITY`},
			[]string{"table closed_periods has row-level security forced"}},
		{"a second schema with a ledger", []string{`CREATE SCHEMA shadow`, `CREATE TABLE shadow.posting_sets (id bigint)`,
			`CREATE TABLE shadow.postings (id bigint)`, `CREATE TABLE shadow.closed_periods (month date)`,
			// Another app's table of the same name is no ledger.
			`CREATE SCHEMA blog`, `CREATE TABLE blog.postings (id bigint)`},
			[]string{"schema shadow also holds a ledger (posting_sets, postings, closed_periods; verify checked public)"}},
		{"a function without row_security", []string{`ALTER FUNCTION ledger_check_posting_set() RESET row_security`},
			[]string{"function ledger_check_posting_set(): does not run with row_security = off"}},
	})
}

// A close closes every month up to it (sql/0035): a set of a month before
// the first close, written after it, changed the closed month's opening
// balances. So did a snapshot's currency, and an amount beyond sql/0016's
// ceiling (or the ceiling's constraint gone) makes balances overflow:
// verify names each.
func TestVerifyNamesLateSetsBeforeACloseForeignSnapshotsAndAmountsBeyondTheCeiling(t *testing.T) {
	t.Parallel()
	_, db := seededWithAugustClosed(t)
	const huge = 2_000_000_000_000_000
	set := func(key, competence string, amount int64) string {
		return fmt.Sprintf(`WITH s AS (INSERT INTO posting_sets (kind, idempotency_key, amount, currency, competence, event_at, content_hash)
				VALUES ('adjustment', '%s', %d, 'BRL', '%s', now(), 'x') RETURNING id, competence_month)
			INSERT INTO postings (posting_set_id, account_id, currency, amount, competence_month)
			SELECT s.id, a.id, 'BRL', CASE a.code WHEN 'assets:cash' THEN %d ELSE %d END, s.competence_month
			FROM s, accounts a WHERE a.code IN ('assets:cash', 'equity:adjustments')`, key, amount, competence, amount, -amount)
	}
	asOwner(t, db, []string{"posting_sets", "postings", "month_snapshots"},
		`ALTER TABLE posting_sets DROP CONSTRAINT ck_posting_sets_amount_ceiling`,
		`ALTER TABLE postings DROP CONSTRAINT ck_postings_amount_ceiling`,
		// The same name on a check that checks nothing.
		`ALTER TABLE charges DROP CONSTRAINT ck_charges_amount_ceiling`,
		`ALTER TABLE charges ADD CONSTRAINT ck_charges_amount_ceiling CHECK (true)`,
		set("late-july", "2026-07-20", 500), set("huge", "2026-09-10", huge),
		`UPDATE month_snapshots SET currency = 'USD' WHERE month = '2026-08-01'`)
	assertBreaches(t, db,
		"(adjustment) is in month 2026-07, before closed month 2026-08 but was written after its close",
		"month 2026-08: its snapshot is in USD, the revenue account in BRL",
		fmt.Sprintf("(adjustment): amount %d is beyond the ceiling of 1000000000000000", huge),
		fmt.Sprintf(": amount -%d is beyond the ceiling of 1000000000000000", huge),
		"constraint ck_posting_sets_amount_ceiling on posting_sets is missing",
		"constraint ck_postings_amount_ceiling on postings is missing",
		"constraint ck_charges_amount_ceiling on charges is defined as CHECK (true), not CHECK ((amount <= '1000000000000000'::bigint))")
}

// A sale of a charge razao never registered, and a commission reversal of
// no refund (the partner's payable lowered for nothing): the triggers do
// not know charges or refunds' pairing, verify does.
func TestVerifyNamesSetsOfUnregisteredChargesAndReversalsOfNoRefund(t *testing.T) {
	t.Parallel()
	l, db := ledgertest.New(t)
	seedVerified(t, l, db)
	assertClean(t, db)
	s, err := postings.Sale("ghost", "BRL", 700, 0, aug)
	ghost := ledgertest.Post(t, l, s, err)
	c, _, err := postings.CommissionReversalSet("ch-1", "no-such-refund", "partner-42", "BRL", 99, aug.AddDate(0, 1, 0))
	reversal := ledgertest.Post(t, l, c, err)
	// A refund of ch-1 whose reversal lowers another partner's payable.
	s, err = postings.Refund("ch-1", "rf-2", "BRL", 100, aug.AddDate(0, 1, 0))
	ledgertest.Post(t, l, s, err)
	c, _, err = postings.CommissionReversalSet("ch-1", "rf-2", "partner-99", "BRL", 10, aug.AddDate(0, 1, 0))
	other := ledgertest.Post(t, l, c, err)
	assertBreaches(t, db,
		fmt.Sprintf("set %d (sale of charge ghost) names charge ghost, which is not registered", ghost.ID),
		fmt.Sprintf("set %d (commission_reversal of charge ch-1 for partner partner-42) reverses commission for refund no-such-refund, which its charge has no refund set for", reversal.ID),
		fmt.Sprintf("set %d (commission_reversal of charge ch-1 for partner partner-99) reverses commission for partner partner-99, but the charge's commission went to partner-42", other.ID))
}

// A later close's xid says nothing of the sets of months before it (after
// a logical restore it is another cluster's, and small): each set is held
// against the first close at or after its month alone. August's sets,
// written before August's close, are never reported because September's
// close carries an xid older than theirs.
func TestVerifyHoldsEachSetAgainstItsOwnClose(t *testing.T) {
	t.Parallel()
	_, db := seededWithAugustClosed(t)
	asOwner(t, db, []string{"closed_periods"}, `INSERT INTO closed_periods (month, closed_by, closed_xid) VALUES ('2026-09-01', 'restored', '1000')`)
	_, out := verifyText(t, db)
	if strings.Contains(out, "closed month 2026-08") || strings.Contains(out, "before closed month 2026-09") {
		t.Errorf("August's sets reported against September's close:\n%s", out)
	}
}

// A table named like one of the ledger's in another app's schema is no
// second ledger: verify stays clean.
func TestVerifyIgnoresAnotherAppsTableNamedLikeOurs(t *testing.T) {
	t.Parallel()
	l, db := ledgertest.New(t)
	seedVerified(t, l, db)
	db.MustExec(`CREATE SCHEMA blog`)
	db.MustExec(`CREATE TABLE blog.postings (id bigint, title text)`)
	assertClean(t, db)
}
