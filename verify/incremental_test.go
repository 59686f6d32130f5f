package verify_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/razao/razao/internal/ledgertest"
	"github.com/razao/razao/internal/pgtest"
	"github.com/razao/razao/periods"
	"github.com/razao/razao/postings"
	"github.com/razao/razao/verify"
)

// incremental runs verify -incremental and returns its report as printed.
func incremental(t *testing.T, db *sqlx.DB) (verify.Report, string) {
	t.Helper()
	r, err := verify.RunIncremental(context.Background(), db)
	if err != nil {
		t.Fatalf("verify -incremental: %v", err)
	}
	var b strings.Builder
	r.WriteTo(&b)
	return r, b.String()
}

// assertNamed checks that the report out fails and has a line holding
// each of want.
func assertNamed(t *testing.T, r verify.Report, out string, want ...string) {
	t.Helper()
	if r.OK() {
		t.Fatalf("verify says clean, want %q:\n%s", want, out)
	}
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Errorf("report lacks %q:\n%s", w, out)
		}
	}
}

// A full run seals the closed months; an incremental run after it checks
// set by set only the months after the last one closed then (September
// here: August is closed), holds August to its seal, leaves the three
// checks that need every posting to a full run and says all of it.
func TestIncrementalVerifyChecksTheOpenMonthsAndTheSeals(t *testing.T) {
	t.Parallel()
	_, db := seededWithAugustClosed(t) // a full run, clean, recorded
	full := ledgertest.Count(t, db, `SELECT id FROM verify_runs WHERE mode = 'full' AND breaches = 0 ORDER BY id DESC LIMIT 1`)
	if n := ledgertest.Count(t, db, `SELECT count(*) FROM verify_month_seals WHERE month = '2026-08-01' AND run_id <= $1`, full); n != 1 {
		t.Fatalf("August sealed %d times by the full run, want 1", n)
	}
	r, out := incremental(t, db)
	if !r.OK() {
		t.Fatalf("incremental run on a clean ledger:\n%s", out)
	}
	september := ledgertest.Count(t, db, `SELECT count(*) FROM posting_sets WHERE competence_month = '2026-09-01'`)
	if r.Mode != verify.ModeIncremental || r.From != "2026-09" || r.Since != full || r.Sets != september || r.NewSets != 0 ||
		r.MonthsSealed != 1 || r.NewSeals != 0 || r.Run == 0 {
		t.Errorf("incremental run: %+v, want from 2026-09 after run %d, %d sets, 0 new, 1 month sealed", r, full, september)
	}
	left := []string{"all postings sum to zero per currency", "cash equals sales - psp fees - rebates and discounts - refunds - payouts (+ adjustments)",
		"every balance and monthly total fits in int64"}
	if !slices.Equal(r.FullOnly, left) {
		t.Errorf("left to a full run: %q, want %q", r.FullOnly, left)
	}
	for _, want := range []string{"razao verify (incremental, after run", "of 2026-09 on checked one by one", "1 closed month(s) held to their seals",
		"--    all postings sum to zero per currency (left to a full run)"} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	// A full run leaves nothing out.
	if r, out := verifyText(t, db); r.Mode != verify.ModeFull || len(r.FullOnly) != 0 || !r.OK() || r.MonthsSealed != 1 {
		t.Errorf("full run: %+v\n%s", r, out)
	}
}

// With no clean run recorded, an incremental run is a full one.
func TestIncrementalVerifyWithNoCleanRunRunsInFull(t *testing.T) {
	t.Parallel()
	l, db := ledgertest.New(t)
	seedVerified(t, l, db)
	r, out := incremental(t, db)
	if !r.OK() || r.Mode != verify.ModeFull || len(r.FullOnly) != 0 {
		t.Errorf("first incremental run: %+v\n%s", r, out)
	}
}

// An owner (triggers off) edits sets of a sealed, closed month after a
// clean run: a set's description (no figure moves), a posting moved to
// another set of the same account and month (every account's month
// figures, and so the snapshot, unchanged), and a set forged into the
// month, and its snapshot edited. The incremental run reads none of August's sets one by one, but
// its seal no longer matches; a full run says so too.
func TestIncrementalVerifyFindsAClosedMonthEditedAfterItsSeal(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		edits []string
	}{
		{"description", []string{`UPDATE posting_sets SET description = 'edited' WHERE kind = 'sale' AND charge_id = 'ch-1'`}},
		{"posting moved", []string{`UPDATE postings SET posting_set_id = (SELECT id FROM posting_sets WHERE kind = 'sale' AND charge_id = 'ch-2')
			WHERE posting_set_id = (SELECT id FROM posting_sets WHERE kind = 'sale' AND charge_id = 'ch-1')
			AND account_id = (SELECT id FROM accounts WHERE code = 'assets:cash')`}},
		{"set forged", []string{`INSERT INTO posting_sets (id, kind, idempotency_key, amount, currency, competence, event_at, content_hash)
			VALUES (777777, 'adjustment', 'forged', 5, 'BRL', '2026-08-20', '2026-08-20T12:00:00Z', 'x')`,
			`INSERT INTO postings (posting_set_id, account_id, currency, amount, competence_month)
			SELECT 777777, a.id, 'BRL', v, '2026-08-01' FROM (VALUES ('assets:cash', 5), ('income:revenue', -5)) x (code, v) JOIN accounts a ON a.code = x.code`}},
		// An incremental run compares only the snapshots of months closed
		// since the run it continues with their postings.
		{"snapshot", []string{`UPDATE trial_balance_snapshots SET debits = debits + 1, closing = closing + 1
			WHERE month = '2026-08-01' AND account_id = (SELECT id FROM accounts WHERE code = 'assets:cash')`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, db := seededWithAugustClosed(t)
			asOwner(t, db, []string{"posting_sets", "postings", "trial_balance_snapshots"}, tc.edits...)
			r, out := incremental(t, db)
			assertNamed(t, r, out, "FAIL  every closed month's sets, postings and snapshot are those a clean run sealed",
				"month 2026-08: its sets, postings and snapshot are not those verify run")
			if r.Mode != verify.ModeIncremental || r.From != "2026-09" {
				t.Errorf("not an incremental run from 2026-09: %+v", r)
			}
			// A full run holds the month to its seal too.
			r, out = verifyText(t, db)
			assertNamed(t, r, out, "month 2026-08: its sets, postings and snapshot are not those verify run")
		})
	}
}

// An owner edits a set of the open month, already verified by a clean
// run: the incremental run checks the open months' sets again, and names
// it.
func TestIncrementalVerifyFindsAVerifiedSetOfAnOpenMonthEdited(t *testing.T) {
	t.Parallel()
	_, db := seededWithAugustClosed(t)
	payout := setID(t, db, "payout:partner-42:po-1")
	asOwner(t, db, []string{"postings"}, fmt.Sprintf(`UPDATE postings SET amount = amount + 1 WHERE posting_set_id = %d AND amount > 0`, payout))
	r, out := incremental(t, db)
	assertNamed(t, r, out, fmt.Sprintf("set %d (payout for partner partner-42): its BRL legs sum to 1", payout))
	if r.Mode != verify.ModeIncremental {
		t.Errorf("not an incremental run: %+v", r)
	}
}

// Set ids are not commit order: set A takes its id, set B a higher one and
// commits, an incremental run verifies B while A's transaction is still
// open (the gate), then A commits. A high-water mark of ids would skip A
// forever; the next incremental run checks it (A names a charge never
// registered) and counts it new.
func TestIncrementalVerifyChecksASetCommittedAfterAHigherOne(t *testing.T) {
	t.Parallel()
	l, db := seededWithAugustClosed(t)
	ctx := context.Background()
	sep := aug.AddDate(0, 1, 0)
	tx := db.MustBegin()
	defer tx.Rollback()
	a, err := postings.Sale("never-registered", "BRL", 700, 0, sep)
	if err != nil {
		t.Fatal(err)
	}
	early, err := l.PostTx(ctx, tx, a)
	if err != nil {
		t.Fatal(err)
	}
	b, err := postings.Payout("partner-42", "po-2", "BRL", 50, sep)
	later := ledgertest.Post(t, l, b, err)
	if later.ID <= early.ID {
		t.Fatalf("set ids %d then %d: the test needs the later commit to hold the higher id", early.ID, later.ID)
	}
	r, out := incremental(t, db)
	if !r.OK() || r.NewSets != 1 {
		t.Fatalf("incremental run with set %d in flight and %d committed: want clean, 1 new set\n%s", early.ID, later.ID, out)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	r, out = incremental(t, db)
	assertNamed(t, r, out, fmt.Sprintf("set %d (sale of charge never-registered) names charge never-registered, which is not registered", early.ID))
	if r.NewSets != 1 {
		t.Errorf("new sets %d, want 1 (set %d, which the last clean run did not see)\n%s", r.NewSets, early.ID, out)
	}
}

// The catalog checks run in every incremental run: a trigger disabled
// after a clean run is named.
func TestIncrementalVerifyChecksTheCatalog(t *testing.T) {
	t.Parallel()
	_, db := seededWithAugustClosed(t)
	db.MustExec(`ALTER TABLE postings DISABLE TRIGGER trg_postings_sealed_set`)
	r, out := incremental(t, db)
	assertNamed(t, r, out, "trigger trg_postings_sealed_set on postings is disabled")
}

// A run with breaches is recorded but does not move the next run's start,
// and a seal removed from verify's records is a breach, not a month to
// seal again.
func TestIncrementalVerifyContinuesOnlyACleanRunAndMissesNoSeal(t *testing.T) {
	t.Parallel()
	_, db := seededWithAugustClosed(t)
	clean := ledgertest.Count(t, db, `SELECT max(id) FROM verify_runs`)
	db.MustExec(`ALTER TABLE postings DISABLE TRIGGER trg_postings_sealed_set`)
	if r, _ := incremental(t, db); r.OK() {
		t.Fatal("want a breach")
	}
	db.MustExec(`ALTER TABLE postings ENABLE ALWAYS TRIGGER trg_postings_sealed_set`)
	if n := ledgertest.Count(t, db, `SELECT count(*) FROM verify_runs WHERE breaches > 0`); n != 1 {
		t.Errorf("%d runs recorded with breaches, want 1", n)
	}
	r, out := incremental(t, db)
	if !r.OK() || r.Since != clean {
		t.Errorf("incremental run continues run %d, want %d (the last clean one)\n%s", r.Since, clean, out)
	}
	db.MustExec(`DELETE FROM verify_month_seals`)
	r, out = incremental(t, db)
	assertNamed(t, r, out, "month 2026-08: closed before the run this one continues, but has no seal")
}

// On a read-only database (a standby; here one whose sessions default to
// read-only) verify runs and is not recorded, and says so.
func TestVerifyOnAReadOnlyDatabaseIsNotRecorded(t *testing.T) {
	t.Parallel()
	db, url := pgtest.NewWithURL(t)
	cal, err := periods.NewCalendar(periods.DefaultTimeZone)
	if err != nil {
		t.Fatal(err)
	}
	seedVerified(t, postings.New(db, cal), db)
	var name string
	if err := db.Get(&name, `SELECT current_database()`); err != nil {
		t.Fatal(err)
	}
	db.MustExec(`ALTER DATABASE ` + pq.QuoteIdentifier(name) + ` SET default_transaction_read_only = on`)
	ro, err := sqlx.Open("postgres", url)
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	r, err := verify.Run(context.Background(), ro)
	if err != nil || !r.OK() || r.Run != 0 {
		t.Fatalf("verify on a read-only database: %v, ok %v, run %d; want clean and not recorded", err, r.OK(), r.Run)
	}
	var b strings.Builder
	r.WriteTo(&b)
	if !strings.Contains(b.String(), "run not recorded") {
		t.Errorf("report does not say the run was not recorded:\n%s", b.String())
	}
	if n := ledgertest.Count(t, db, `SELECT count(*) FROM verify_runs`); n != 0 {
		t.Errorf("%d runs recorded", n)
	}
}

// A posting of an open month whose set is of a closed, sealed month
// (August), and one whose set does not exist, written by an owner with the
// triggers off: the incremental run, which reads the window's partitions
// of posting_sets only, tells the one in another month from the one of no
// set, as a full run does.
func TestIncrementalVerifyNamesAPostingOutsideItsSetsMonth(t *testing.T) {
	t.Parallel()
	_, db := seededWithAugustClosed(t)
	august := ledgertest.Count(t, db, `SELECT id FROM posting_sets WHERE competence_month = '2026-08-01' ORDER BY id LIMIT 1`)
	asOwner(t, db, []string{"postings"}, fmt.Sprintf(`INSERT INTO postings (id, posting_set_id, account_id, currency, amount, competence_month)
		SELECT 777777 + n, CASE WHEN n < 2 THEN %d ELSE 999999 END, a.id, 'BRL', v, '2026-09-01'
		FROM (VALUES (0, 'expenses:commission', 500), (1, 'income:revenue', -500),
			(2, 'expenses:commission', 300), (3, 'income:revenue', -300)) AS x (n, code, v) JOIN accounts a ON a.code = x.code`, august))
	want := []string{"posting 777777 in another month than its set", "posting 777778 in another month than its set",
		"posting 777779 of no set", "posting 777780 of no set"}
	r, out := incremental(t, db)
	if r.Mode != verify.ModeIncremental || r.From != "2026-09" {
		t.Errorf("not an incremental run from 2026-09: %+v", r)
	}
	assertNamed(t, r, out, want...)
	r, out = verifyText(t, db)
	assertNamed(t, r, out, want...)
}
