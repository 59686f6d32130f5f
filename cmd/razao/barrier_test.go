package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/razao/razao/internal/pgtest"
	"github.com/razao/razao/monthsums"
	"github.com/razao/razao/partners"
	"github.com/razao/razao/periods"
	"github.com/razao/razao/postings"
)

// The database barrier, tried as an attacker connected as the service
// role: the ledger's triggers hold whatever the session sets up.

var (
	aug10 = time.Date(2026, 8, 10, 15, 0, 0, 0, time.UTC)
	sep10 = time.Date(2026, 9, 10, 15, 0, 0, 0, time.UTC)
)

// barrierEnv is a ledger with a sale of 100 on charge c1 in August,
// August closed, and a pool connected as the documented service role.
type barrierEnv struct {
	owner, svc *sqlx.DB
	roles      *pgtest.Roles
	url, role  string
	l          *postings.Ledger
	saleID     int64
}

func newBarrierEnv(t *testing.T) *barrierEnv {
	t.Helper()
	owner, url := pgtest.NewWithURL(t)
	roles := pgtest.NewRoles(t, owner, url)
	role := roles.Service()
	svc := roles.Connect(role)
	cal, _ := periods.NewCalendar(periods.DefaultTimeZone)
	e := &barrierEnv{owner: owner, svc: svc, roles: roles, url: url, role: role, l: postings.New(svc, cal)}
	sale, _ := postings.Sale("c1", "BRL", 100, 0, aug10)
	p, err := e.l.Post(context.Background(), sale)
	if err != nil {
		t.Fatal(err)
	}
	e.saleID = p.ID
	if err := periods.Close(context.Background(), svc, e.l.Calendar(), periods.Month{Year: 2026, Month: 8}, sep10, "", monthsums.Closing); err != nil {
		t.Fatal(err)
	}
	return e
}

// attack runs steps in one transaction on a new session of the service
// role and returns the first error, of a step or of COMMIT, mapped to the
// ledger's errors. A new session: one that ran the triggers before has
// their plans cached, bound to the tables it saw then.
func (e *barrierEnv) attack(t *testing.T, steps ...string) error {
	t.Helper()
	ctx := context.Background()
	conn, err := e.roles.Connect(e.role).Connx(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	tx, err := conn.BeginTxx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	for _, s := range steps {
		if _, err := tx.ExecContext(ctx, s); err != nil {
			return postings.MapError(err)
		}
	}
	return postings.MapError(tx.Commit())
}

func (e *barrierEnv) count(t *testing.T, query string) int {
	t.Helper()
	var n int
	if err := e.owner.Get(&n, query); err != nil {
		t.Fatal(err)
	}
	return n
}

// legsSQL inserts, in one statement, legs on set id (from the statement
// before it: currval of the sets' sequence) in month, debit on debitCode.
func legsSQL(set, month, debitCode, creditCode string, amount int64) string {
	return fmt.Sprintf(`INSERT INTO public.postings (posting_set_id, account_id, currency, amount, competence_month)
		SELECT %s, a.id, 'BRL', CASE a.code WHEN '%s' THEN %d ELSE %d END, '%s'
		FROM public.accounts a WHERE a.code IN ('%s', '%s')`, set, debitCode, amount, -amount, month, debitCode, creditCode)
}

const lastSet = `currval('public.posting_sets_id_seq')`

// Temporary tables named like the ledger's would answer the triggers'
// unqualified queries if pg_temp came first in their search path. Each
// of the four writes they could steer is refused, for the service role,
// which has TEMP (docs/razao-role.sql grants it to the service alone:
// statement files are staged in a temporary table).
func TestShadowTablesCannotSteerTheLedgerTriggers(t *testing.T) {
	t.Parallel()
	e := newBarrierEnv(t)
	sets := e.count(t, `SELECT count(*) FROM posting_sets`)

	tests := []struct {
		name  string
		steps []string
		want  error
	}{
		{"a one-leg set of R$ 1,000,000", []string{
			`CREATE TEMP TABLE postings (id bigint, posting_set_id bigint, amount bigint, currency char(3)) ON COMMIT DROP`,
			`INSERT INTO public.posting_sets (kind, idempotency_key, amount, currency, competence, event_at, content_hash)
				VALUES ('adjustment', 'shadow-1', 100000000, 'BRL', '2026-09-10', now(), 'x')`,
			`INSERT INTO public.postings (posting_set_id, account_id, currency, amount, competence_month)
				SELECT ` + lastSet + `, id, 'BRL', 100000000, '2026-09-01' FROM public.accounts WHERE code = 'assets:cash'`,
			`INSERT INTO postings (posting_set_id, amount, currency) VALUES (` + lastSet + `, 100000000, 'BRL'), (` + lastSet + `, -100000000, 'BRL')`,
		}, postings.ErrUnbalanced},
		{"a set in a closed month", []string{
			`CREATE TEMP TABLE closed_periods (month date) ON COMMIT DROP`,
			`INSERT INTO public.posting_sets (kind, idempotency_key, amount, currency, competence, event_at, content_hash)
				VALUES ('adjustment', 'shadow-2', 500, 'BRL', '2026-08-20', now(), 'x')`,
			legsSQL(lastSet, "2026-08-01", "assets:cash", "equity:adjustments", 500),
		}, postings.ErrClosedMonth},
		{"legs appended to a sealed set", []string{
			`CREATE TEMP TABLE posting_sets (id bigint, created_xid xid8) ON COMMIT DROP`,
			fmt.Sprintf(`INSERT INTO posting_sets VALUES (%d, pg_current_xact_id())`, e.saleID),
			legsSQL(fmt.Sprint(e.saleID), "2026-08-01", "assets:cash", "income:revenue", 1000000),
		}, postings.ErrSealed},
		{"a refund above its sale", []string{
			`CREATE TEMP TABLE posting_sets (id bigint, created_xid xid8, kind text, charge_id text, amount bigint) ON COMMIT DROP`,
			`INSERT INTO public.posting_sets (kind, idempotency_key, amount, currency, competence, event_at, charge_id, refund_id, content_hash)
				VALUES ('refund', 'shadow-4', 1000, 'BRL', '2026-09-10', now(), 'c1', 'rf-1', 'x')`,
			`INSERT INTO posting_sets VALUES (` + lastSet + `, pg_current_xact_id(), 'refund', 'c1', 1000), (0, pg_current_xact_id(), 'sale', 'c1', 1000000000)`,
			legsSQL(lastSet, "2026-09-01", "income:revenue", "assets:cash", 1000),
		}, postings.ErrRefundExceedsSale},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := e.attack(t, tc.steps...); !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
		})
	}
	if n := e.count(t, `SELECT count(*) FROM posting_sets`); n != sets {
		t.Fatalf("%d posting sets, want the %d from before the attacks", n, sets)
	}
	if n := e.count(t, `SELECT count(*) FROM postings WHERE posting_set_id = `+fmt.Sprint(e.saleID)); n != 2 {
		t.Fatalf("the sale has %d legs, want 2", n)
	}
}

// A client can set any custom setting: nothing it sets may switch a check
// off. Each variant tries to add a leg after the balance check ran early
// (SET CONSTRAINTS ALL IMMEDIATE) and to commit the unbalanced set.
func TestClientSettingsCannotSwitchOffTheBalanceCheck(t *testing.T) {
	t.Parallel()
	e := newBarrierEnv(t)
	set := `INSERT INTO public.posting_sets (kind, idempotency_key, amount, currency, competence, event_at, content_hash)
		VALUES ('adjustment', 'flag-' || gen_random_uuid(), 100, 'BRL', '2026-09-10', now(), 'x')`
	legs := legsSQL(lastSet, "2026-09-01", "assets:cash", "equity:adjustments", 100)
	extra := `INSERT INTO public.postings (posting_set_id, account_id, currency, amount, competence_month)
		SELECT ` + lastSet + `, id, 'BRL', 100000000, '2026-09-01' FROM public.accounts WHERE code = 'assets:cash'`
	tests := []struct {
		name  string
		steps []string
	}{
		{"the flag cleared", []string{set, legs, `SET CONSTRAINTS ALL IMMEDIATE`,
			`SELECT set_config('razao.balance_checked', '', true)`, extra}},
		{"the flag set to another value", []string{set, legs, `SET CONSTRAINTS ALL IMMEDIATE`,
			`SELECT set_config('razao.balance_checked', 'no', true)`, extra}},
		{"the check run in a savepoint rolled back", []string{set, legs, `SAVEPOINT s`, `SET CONSTRAINTS ALL IMMEDIATE`,
			`ROLLBACK TO SAVEPOINT s`, `SET CONSTRAINTS ALL DEFERRED`, extra}},
		{"the flag cleared in a savepoint", []string{set, legs, `SET CONSTRAINTS ALL IMMEDIATE`, `SAVEPOINT s`,
			`SELECT set_config('razao.balance_checked', '', true)`, `RELEASE SAVEPOINT s`, extra}},
		{"the flag set before the first insert", []string{`SELECT set_config('razao.balance_checked', 'yes', true)`,
			set, legs, `SET CONSTRAINTS ALL IMMEDIATE`, `SELECT set_config('razao.balance_checked', '', true)`, extra}},
		{"the legs split across statements", []string{set,
			legsSQL(lastSet, "2026-09-01", "assets:cash", "equity:adjustments", 100), extra}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := e.attack(t, tc.steps...); err == nil {
				t.Fatal("an unbalanced set was committed")
			}
		})
	}
	if n := e.count(t, `SELECT count(*) FROM (SELECT posting_set_id FROM postings GROUP BY posting_set_id HAVING sum(amount) <> 0) u`); n != 0 {
		t.Fatalf("%d unbalanced sets in the ledger", n)
	}
}

// A role that may only connect can take any advisory lock and sit on it.
// None it can take holds up a posting, a refund, a payout or a close; the
// locks that do serialise the ledger need rights it lacks.
func TestUnrelatedRoleCannotFreezeTheLedger(t *testing.T) {
	t.Parallel()
	e := newBarrierEnv(t)
	ctx := context.Background()
	conn, err := e.roles.Connect(e.roles.Create("other", "")).Connx(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for _, s := range []string{
		`SELECT pg_advisory_lock(7261003)`, // the old close lock
		`SELECT pg_advisory_lock(hashtextextended('razao-refund:c1', 0))`,
		`SELECT pg_advisory_lock(hashtextextended('razao-payout:liabilities:commission-payable:p1', 0))`,
	} {
		if _, err := conn.ExecContext(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	// The locks that matter are out of its reach: it may not even name
	// our objects (PostgreSQL takes a statement's table locks while parsing
	// it, before checking rights on them, so a PREPARE that could name
	// month_close_lock would hold its lock to the end of the transaction).
	for _, s := range []string{
		`LOCK TABLE public.month_close_lock IN EXCLUSIVE MODE`,
		`LOCK TABLE public.month_close_lock IN ACCESS SHARE MODE`,
		`PREPARE p AS SELECT * FROM public.month_close_lock FOR UPDATE`,
		`PREPARE q AS SELECT * FROM public.posting_sets`,
		`SELECT public.ledger_lock_account('liabilities:commission-payable:p1')`,
		`SELECT public.ledger_last_closed_month()`,
		`SELECT 1 FROM public.posting_sets FOR NO KEY UPDATE`,
	} {
		tx, _ := conn.BeginTxx(ctx, nil)
		_, err := tx.ExecContext(ctx, s)
		tx.Rollback()
		var pqErr *pq.Error
		if !errors.As(err, &pqErr) || pqErr.Code != "42501" {
			t.Errorf("%s as an unrelated role: %v, want permission denied", s, err)
		}
	}

	// While it holds its locks, the service does its whole job.
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second) // a safety net
	defer cancel()
	comm, _, _ := postings.CommissionSet("c1", "p1", "BRL", 100, 5000, aug10.AddDate(0, 1, 0))
	refund, _ := postings.Refund("c1", "rf-1", "BRL", 40, sep10)
	for _, s := range []postings.Set{comm, refund} {
		if _, err := e.l.Post(ctx, s); err != nil {
			t.Fatalf("post %s while an unrelated role holds advisory locks: %v", s.Kind, err)
		}
	}
	if _, err := partners.Payout(ctx, e.svc, e.l, partners.PayoutRequest{Partner: "p1", IdempotencyKey: "po-1", Amount: 10, At: sep10}); err != nil {
		t.Fatalf("payout while an unrelated role holds advisory locks: %v", err)
	}
	if err := periods.Close(ctx, e.svc, e.l.Calendar(), periods.Month{Year: 2026, Month: 9}, sep10.AddDate(0, 1, 0), "", monthsums.Closing); err != nil {
		t.Fatalf("close while an unrelated role holds advisory locks: %v", err)
	}
}

// docs/razao-role.sql leaves PUBLIC no way in: a role without a grant of
// its own cannot connect, and a role given CONNECT alone (a reporting
// role, say) cannot create temporary tables. The service role may: see
// TestShadowTablesCannotSteerTheLedgerTriggers.
func TestRoleDocumentRevokesConnectAndTempFromPublic(t *testing.T) {
	t.Parallel()
	e := newBarrierEnv(t)
	nobody := e.roles.Create("nobody", "NOCONNECT")
	var pqErr *pq.Error
	if err := e.roles.Connect(nobody).Ping(); !errors.As(err, &pqErr) || pqErr.Code != "42501" {
		t.Errorf("a role without CONNECT connected: %v", err)
	}
	reader := e.roles.Connect(e.roles.Create("reader", ""))
	if _, err := reader.Exec(`CREATE TEMP TABLE postings (id bigint)`); !errors.As(err, &pqErr) || pqErr.Code != "42501" {
		t.Errorf("a role with CONNECT alone created a temporary table: %v", err)
	}
	if _, err := e.svc.Exec(`CREATE TABLE public.shadow (id bigint)`); !errors.As(err, &pqErr) || pqErr.Code != "42501" {
		t.Errorf("the service role created a table in public: %v", err)
	}
	var timeout string
	e.svc.Get(&timeout, `SHOW idle_in_transaction_session_timeout`)
	if timeout != "1min" {
		t.Errorf("idle_in_transaction_session_timeout is %q, want 1min", timeout)
	}
}

// closed_periods takes only the month after the last closed one: a close
// years ahead, or after a gap, would leave months no one could ever close
// (a month is never reopened). Whether a month has ended is periods' rule
// (CheckCloseTime), not the barrier's.
func TestDatabaseClosesOnlyTheNextMonth(t *testing.T) {
	t.Parallel()
	e := newBarrierEnv(t) // August closed
	for _, month := range []string{"2030-01-01", "2026-10-01", "2026-08-01"} {
		err := e.attack(t, `INSERT INTO public.closed_periods (month) VALUES ('`+month+`')`)
		if err == nil {
			t.Errorf("closed %s by hand after August", month)
		}
	}
	var closedXID, ownXID string
	tx := e.svc.MustBegin()
	defer tx.Rollback()
	tx.MustExec(`INSERT INTO closed_periods (month, closed_xid) VALUES ('2026-09-01', '3')`)
	tx.Get(&closedXID, `SELECT closed_xid::text FROM closed_periods WHERE month = '2026-09-01'`)
	tx.Get(&ownXID, `SELECT pg_current_xact_id()::text`)
	if closedXID != ownXID {
		t.Fatalf("closed_xid %s, want the closing transaction's %s", closedXID, ownXID)
	}
	if err := tx.Commit(); err != nil {
		t.Fatalf("closing September, the next month: %v", err)
	}
}

// An operator of exactly the types a trigger compares (numeric <> integer)
// in a schema on the search path would be chosen over pg_catalog's, which
// needs a cast: every comparison in the triggers is between one type.
func TestOperatorInTheSchemaCannotBlindTheBalanceCheck(t *testing.T) {
	t.Parallel()
	e := newBarrierEnv(t)
	e.owner.MustExec(`CREATE FUNCTION public.never_differs(numeric, integer) RETURNS boolean LANGUAGE sql AS 'SELECT false'`)
	e.owner.MustExec(`CREATE OPERATOR public.<> (LEFTARG = numeric, RIGHTARG = integer, FUNCTION = public.never_differs)`)
	e.owner.MustExec(`CREATE FUNCTION public.never_greater(numeric, bigint) RETURNS boolean LANGUAGE sql AS 'SELECT false'`)
	e.owner.MustExec(`CREATE OPERATOR public.> (LEFTARG = numeric, RIGHTARG = bigint, FUNCTION = public.never_greater)`)
	e.owner.MustExec(fmt.Sprintf(`GRANT EXECUTE ON FUNCTION public.never_differs(numeric, integer), public.never_greater(numeric, bigint) TO %s`, pq.QuoteIdentifier(e.role)))
	unbalanced := []string{
		`INSERT INTO public.posting_sets (kind, idempotency_key, amount, currency, competence, event_at, content_hash)
			VALUES ('adjustment', 'op-1', 100, 'BRL', '2026-09-10', now(), 'x')`,
		`INSERT INTO public.postings (posting_set_id, account_id, currency, amount, competence_month)
			SELECT ` + lastSet + `, id, 'BRL', CASE code WHEN 'assets:cash' THEN 100 ELSE -1 END, '2026-09-01'
			FROM public.accounts WHERE code IN ('assets:cash', 'equity:adjustments')`,
	}
	if err := e.attack(t, unbalanced...); !errors.Is(err, postings.ErrUnbalanced) {
		t.Fatalf("an unbalanced set with a hijacked <>: %v, want ErrUnbalanced", err)
	}
	refund := []string{
		`INSERT INTO public.posting_sets (kind, idempotency_key, amount, currency, competence, event_at, charge_id, refund_id, content_hash)
			VALUES ('refund', 'op-2', 1000, 'BRL', '2026-09-10', now(), 'c1', 'rf-1', 'x')`,
		legsSQL(lastSet, "2026-09-01", "income:revenue", "assets:cash", 1000),
	}
	if err := e.attack(t, refund...); !errors.Is(err, postings.ErrRefundExceedsSale) {
		t.Fatalf("a refund above its sale with a hijacked >: %v, want ErrRefundExceedsSale", err)
	}
}

// created_xid is what verify judges commit order by: a set's is its
// writer's own transaction. It is the column's default; an INSERT that
// states another is refused.
func TestPostingSetsCarryTheirWritersXid(t *testing.T) {
	t.Parallel()
	e := newBarrierEnv(t)
	write := func(tx *sqlx.Tx, key string, xid any) error {
		_, err := tx.Exec(`WITH s AS (
			INSERT INTO posting_sets (kind, idempotency_key, amount, currency, competence, event_at, content_hash, created_xid)
			VALUES ('adjustment', $1, 100, 'BRL', '2026-09-10', now(), 'x', coalesce($2::xid8, pg_current_xact_id())) RETURNING id, competence_month)
		INSERT INTO postings (posting_set_id, account_id, currency, amount, competence_month)
		SELECT s.id, a.id, 'BRL', CASE a.code WHEN 'assets:cash' THEN 100 ELSE -100 END, s.competence_month
		FROM s, accounts a WHERE a.code IN ('assets:cash', 'equity:adjustments')`, key, xid)
		return err
	}
	forged := e.svc.MustBegin()
	defer forged.Rollback()
	if err := write(forged, "xid-forged", "3"); err == nil || !strings.Contains(err.Error(), "created_xid") {
		t.Fatalf("a set stating created_xid 3: %v, want it refused", err)
	}
	tx := e.svc.MustBegin()
	defer tx.Rollback()
	if err := write(tx, "xid-1", nil); err != nil {
		t.Fatal(err)
	}
	var setXID, ownXID string
	tx.Get(&setXID, `SELECT created_xid::text FROM posting_sets WHERE idempotency_key = 'xid-1'`)
	tx.Get(&ownXID, `SELECT pg_current_xact_id()::text`)
	if setXID != ownXID {
		t.Fatalf("created_xid %s, want the writer's %s", setXID, ownXID)
	}
}

// A close waits for the postings in flight, and new postings wait behind
// it: held too long, it gives up (503, try again) instead of queueing the
// ledger's writes behind a transaction that may never end.
func TestCloseGivesUpWhilePostingsHoldTheLockTooLong(t *testing.T) {
	t.Parallel()
	e := newBarrierEnv(t)
	gate := e.svc.MustBegin()
	defer gate.Rollback()
	if err := rawSetIn(gate, "gate-1", "2026-09-10"); err != nil {
		t.Fatal(err)
	}
	sep := periods.Month{Year: 2026, Month: 9}
	err := periods.Close(context.Background(), e.svc, e.l.Calendar(), sep, sep10.AddDate(0, 1, 0), "", monthsums.Closing)
	if !errors.Is(err, periods.ErrCloseBusy) {
		t.Fatalf("close while a posting transaction holds the lock: %v, want ErrCloseBusy", err)
	}
	if err := gate.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := periods.Close(context.Background(), e.svc, e.l.Calendar(), sep, sep10.AddDate(0, 1, 0), "", monthsums.Closing); err != nil {
		t.Fatalf("close once the postings committed: %v", err)
	}
}

// rawSetIn writes a balanced adjustment of 100 on day in tx.
func rawSetIn(tx *sqlx.Tx, key, day string) error {
	_, err := tx.Exec(`WITH s AS (
		INSERT INTO posting_sets (kind, idempotency_key, amount, currency, competence, event_at, content_hash)
		VALUES ('adjustment', $1, 100, 'BRL', $2, now(), 'x') RETURNING id, competence_month)
	INSERT INTO postings (posting_set_id, account_id, currency, amount, competence_month)
	SELECT s.id, a.id, 'BRL', CASE a.code WHEN 'assets:cash' THEN 100 ELSE -100 END, s.competence_month
	FROM s, accounts a WHERE a.code IN ('assets:cash', 'equity:adjustments')`, key, day)
	return err
}

// A close closes every month up to it (migration 0035). August is the
// ledger's first close, so July and every month before it were never
// closed: a set dated in one of them, written after August's close,
// would change August's opening balances. Each is refused.
func TestSetsBeforeTheLastClosedMonthAreRefused(t *testing.T) {
	t.Parallel()
	e := newBarrierEnv(t)
	sets := e.count(t, `SELECT count(*) FROM posting_sets`)
	for _, competence := range []string{"2026-07-31", "2026-01-15", "1900-01-01"} {
		t.Run(competence, func(t *testing.T) {
			month := competence[:8] + "01"
			err := e.attack(t, `INSERT INTO public.posting_sets (kind, idempotency_key, amount, currency, competence, event_at, content_hash)
				VALUES ('adjustment', 'late-`+competence+`', 500, 'BRL', '`+competence+`', now(), 'x')`,
				legsSQL(lastSet, month, "assets:cash", "equity:adjustments", 500))
			if !errors.Is(err, postings.ErrClosedMonth) {
				t.Fatalf("got %v, want ErrClosedMonth", err)
			}
		})
	}
	// What razao books goes to the first open month, and a set stated for
	// an earlier month is refused before the database sees it.
	late, _ := postings.Sale("c-late", "BRL", 700, 0, time.Date(2026, 7, 20, 12, 0, 0, 0, time.UTC))
	p, err := e.l.Post(context.Background(), late)
	if err != nil || p.Competence.Format(time.DateOnly) != "2026-09-01" {
		t.Fatalf("a late sale: %+v, %v; want it booked on 2026-09-01", p, err)
	}
	stated, _ := postings.Sale("c-stated", "BRL", 700, 0, aug10)
	stated.Competence = time.Date(2026, 7, 20, 0, 0, 0, 0, time.UTC)
	if _, err := e.l.Post(context.Background(), stated); !errors.Is(err, postings.ErrClosedMonth) {
		t.Fatalf("a set stated for July: %v, want ErrClosedMonth", err)
	}
	if n := e.count(t, `SELECT count(*) FROM posting_sets`); n != sets+1 {
		t.Fatalf("%d posting sets, want %d (the late sale only)", n, sets+1)
	}
}

// The trigger functions run as the writer, and would see what a row-level
// security policy lets the writer see: the owner could hide a leg from the
// balance check with a policy alone, no trigger touched. Every ledger
// function runs with row_security = off (migration 0035), so a query of
// theirs that a policy would filter fails: the write is refused.
func TestRowSecurityCannotHideLegsFromTheChecks(t *testing.T) {
	t.Parallel()
	e := newBarrierEnv(t)
	sets := e.count(t, `SELECT count(*) FROM posting_sets`)
	e.owner.MustExec(`ALTER TABLE postings ENABLE ROW LEVEL SECURITY`)
	// The leg of 13 is hidden once the writer says so: after the sealed-set
	// check at INSERT, before the balance check at COMMIT.
	e.owner.MustExec(`CREATE POLICY hide_13 ON postings
		USING (current_setting('attack.hide', true) IS DISTINCT FROM 'on' OR amount <> 13) WITH CHECK (true)`)
	err := e.attack(t, `INSERT INTO public.posting_sets (kind, idempotency_key, amount, currency, competence, event_at, content_hash)
			VALUES ('adjustment', 'rls-1', 100, 'BRL', '2026-09-10', now(), 'x')`,
		`INSERT INTO public.postings (posting_set_id, account_id, currency, amount, competence_month)
			SELECT `+lastSet+`, a.id, 'BRL', v.amount, '2026-09-01'
			FROM public.accounts a JOIN (VALUES ('assets:cash', 100), ('equity:adjustments', -100), ('assets:cash', 13)) v (code, amount) ON v.code = a.code`,
		`SET LOCAL attack.hide = on`)
	var pqErr *pq.Error
	if !errors.As(err, &pqErr) || pqErr.Code != "42501" {
		t.Fatalf("got %v, want the triggers' query refused (42501: it would be affected by a row-level security policy)", err)
	}
	if n := e.count(t, `SELECT count(*) FROM posting_sets`); n != sets {
		t.Fatalf("%d posting sets, want the %d from before", n, sets)
	}
	// The service's own reads (what a partner is owed, say) run with
	// row_security off too (docs/razao-role.sql): they fail rather than
	// sum what the policy lets them see.
	err = e.attack(t, `SELECT sum(amount) FROM public.postings`)
	if !errors.As(err, &pqErr) || pqErr.Code != "42501" {
		t.Fatalf("the service's read under a policy: %v, want it refused (42501)", err)
	}
}
