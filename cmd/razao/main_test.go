package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/razao/razao/auth"
	"github.com/razao/razao/internal/pgtest"
	"github.com/razao/razao/monthsums"
	"github.com/razao/razao/periods"
	"github.com/razao/razao/postings"
)

// TestMain makes this test binary three things:
//   - razao itself when called by that name: the docs test links it as
//     bin/razao, so that the shell blocks run it as a person would;
//   - razao serve, as is, when serveAsIsEnv is 1: the root refusal's test
//     runs it in a child process without the opt-in;
//   - otherwise the tests, opted into serving as root: CI and the
//     development machines run them as root, and many start serve.
func TestMain(m *testing.M) {
	if filepath.Base(os.Args[0]) == "razao" {
		main()
		return
	}
	if os.Getenv(serveAsIsEnv) == "1" {
		os.Exit(run(context.Background(), append([]string{"serve"}, os.Args[1:]...), os.Stdout, os.Stderr))
	}
	os.Setenv(allowRootEnv, "1")
	// The razao processes the tests start (this binary, or a razao built
	// with -race) skip the second a -race binary sleeps before it exits
	// (GORACE's atexit_sleep_ms, for goroutines still running to report a
	// race; a race is reported when it happens): the storm's setup and
	// shutdown waited for three of them. As the docs test did already.
	if os.Getenv("GORACE") == "" {
		os.Setenv("GORACE", "atexit_sleep_ms=0")
	}
	os.Exit(m.Run())
}

func runCmd(t *testing.T, args ...string) (int, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(context.Background(), args, &out, &errOut)
	return code, out.String() + errOut.String()
}

// seedLedger writes a small but complete month of activity through the
// ledger: sales with and without fees, commissions, a partial refund with
// its reversal, and a payout; and the charges rows the webhook front
// would have left for them.
func seedLedger(t *testing.T, db *sqlx.DB, l *postings.Ledger) {
	t.Helper()
	db.MustExec(`INSERT INTO charges (id, amount, partner, commission_bp, state, paid_amount, fee, commission, refunded_amount, request_hash)
		VALUES ('ch-1', 4990, 'partner-42', 1000, 'partially_refunded', 4990, 0, 499, 2000, 'h1'),
		       ('ch-2', 10000, NULL, 0, 'paid', 10000, 120, 0, 0, 'h2')`)
	ctx := context.Background()
	at := time.Date(2026, 8, 10, 12, 0, 0, 0, time.UTC)
	post := func(s postings.Set, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.Post(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	post(postings.Sale("ch-1", "BRL", 4990, 0, at))
	post(postings.Sale("ch-2", "BRL", 10000, 120, at))
	c, _, err := postings.CommissionSet("ch-1", "partner-42", "BRL", 4990, 1000, at)
	post(c, err)
	post(postings.Refund("ch-1", "rf-1", "BRL", 2000, at.AddDate(0, 1, 0)))
	rev, _, err := postings.CommissionReversalSet("ch-1", "rf-1", "partner-42", "BRL", postings.ReversalAmount(499, 4990, 0, 2000), at.AddDate(0, 1, 0))
	post(rev, err)
	post(postings.Payout("partner-42", "po-1", "BRL", 100, at.AddDate(0, 1, 1)))
}

func TestVerifyPassesOnCleanLedgerAndNamesBreach(t *testing.T) {
	t.Parallel()
	db, url := pgtest.NewWithURL(t)
	cal, _ := periods.NewCalendar(periods.DefaultTimeZone)
	seedLedger(t, db, postings.New(db, cal))

	code, out := runCmd(t, "verify", "-database-url", url)
	if code != 0 || !strings.Contains(out, "ledger is clean") {
		t.Fatalf("verify on clean ledger: exit %d\n%s", code, out)
	}

	// Corrupt it the only way left: a superuser disables the triggers
	// and edits a posting.
	for _, stmt := range []string{
		`ALTER TABLE postings DISABLE TRIGGER USER`,
		`UPDATE postings SET amount = amount + 1 WHERE id = (SELECT min(id) FROM postings)`,
		`ALTER TABLE postings ENABLE ALWAYS TRIGGER trg_postings_append_only`,
		`ALTER TABLE postings ENABLE ALWAYS TRIGGER trg_postings_no_truncate`,
		`ALTER TABLE postings ENABLE ALWAYS TRIGGER trg_postings_sealed_set`,
	} {
		if _, err := db.Exec(stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	code, out = runCmd(t, "verify", "-database-url", url)
	if code != exitBreach {
		t.Fatalf("verify on corrupted ledger: exit %d, want %d\n%s", code, exitBreach, out)
	}
	for _, want := range []string{"FAIL  every posting set balances per currency", "FAIL  all postings sum to zero per currency", "LEDGER BREACHED"} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	// Each breach on a line of its own, naming the set.
	if !regexp.MustCompile(`(?m)^  FAIL  every posting set balances per currency: 1 breach\(es\)\n {8}set \d+ \(sale of charge ch-1\): its BRL legs sum to 1$`).MatchString(out) {
		t.Errorf("the unbalanced set is not named on a line of its own:\n%s", out)
	}
}

// verifyJSON is the report razao verify -json prints.
type verifyJSON struct {
	OK           bool     `json:"ok"`
	Mode         string   `json:"mode"`
	From         string   `json:"from"`
	Since        int64    `json:"since_run"`
	Run          int64    `json:"run"`
	Sets         int64    `json:"sets"`
	Postings     int64    `json:"postings"`
	NewSets      int64    `json:"new_sets"`
	MonthsSealed int      `json:"months_sealed_checked"`
	NewSeals     int      `json:"months_sealed_now"`
	FullOnly     []string `json:"left_to_full_run"`
	Checks       []struct {
		Name     string   `json:"name"`
		OK       bool     `json:"ok"`
		Breaches int64    `json:"breaches"`
		Examples []string `json:"examples"`
	} `json:"checks"`
}

func runVerifyJSON(t *testing.T, url string, flags ...string) (int, verifyJSON) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(context.Background(), append(append([]string{"verify", "-json"}, flags...), "-database-url", url), &out, &errOut)
	var r verifyJSON
	dec := json.NewDecoder(&out)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		t.Fatalf("verify -json: exit %d, %v\n%s%s", code, err, out.String(), errOut.String())
	}
	if dec.More() {
		t.Fatalf("verify -json printed more than one document")
	}
	return code, r
}

// razao verify is a full run, and records it; razao verify -incremental
// then checks set by set only the months after the last one closed at
// that run, holds the closed month to the seal the full run took, and
// says so, and what it left to a full run.
func TestVerifyIncrementalContinuesTheLastCleanRun(t *testing.T) {
	t.Parallel()
	db, url := pgtest.NewWithURL(t)
	cal, _ := periods.NewCalendar(periods.DefaultTimeZone)
	l := postings.New(db, cal)
	seedLedger(t, db, l)
	if err := periods.Close(context.Background(), db, l.Calendar(), periods.MonthOf(time.Date(2026, 8, 1, 0, 0, 0, 0, time.UTC)), time.Date(2026, 9, 15, 0, 0, 0, 0, time.UTC), "", monthsums.Closing); err != nil {
		t.Fatal(err)
	}
	code, full := runVerifyJSON(t, url)
	if code != 0 || full.Mode != "full" || full.Run == 0 || full.NewSeals != 1 || len(full.FullOnly) != 0 {
		t.Fatalf("verify: exit %d, %+v; want a full run, recorded, sealing August", code, full)
	}
	code, inc := runVerifyJSON(t, url, "-incremental")
	if code != 0 || !inc.OK || inc.Mode != "incremental" || inc.From != "2026-09" || inc.Since != full.Run || inc.MonthsSealed != 1 || len(inc.FullOnly) != 3 {
		t.Fatalf("verify -incremental: exit %d, %+v; want from 2026-09 after run %d, August held to its seal, 3 checks left to a full run", code, inc, full.Run)
	}
	code, out := runCmd(t, "verify", "-incremental", "-database-url", url)
	if code != 0 || !strings.Contains(out, fmt.Sprintf("razao verify (incremental, after run %d)", inc.Run)) ||
		!strings.Contains(out, "(left to a full run)") || !strings.Contains(out, "1 closed month(s) held to their seals") {
		t.Errorf("verify -incremental: exit %d\n%s", code, out)
	}
}

// TestVerifyJSONIsTheSameReportForMachines: -json prints the report that
// the text shows, one document: every check with its verdict and
// breaches, exit 0 when clean and exitBreach when not.
func TestVerifyJSONIsTheSameReportForMachines(t *testing.T) {
	t.Parallel()
	db, url := pgtest.NewWithURL(t)
	cal, _ := periods.NewCalendar(periods.DefaultTimeZone)
	seedLedger(t, db, postings.New(db, cal))

	code, clean := runVerifyJSON(t, url)
	_, text := runCmd(t, "verify", "-database-url", url)
	if code != 0 || !clean.OK || clean.Sets == 0 || clean.Postings == 0 {
		t.Fatalf("clean ledger: exit %d, %+v", code, clean)
	}
	for _, c := range clean.Checks {
		if !c.OK || c.Breaches != 0 || len(c.Examples) != 0 {
			t.Errorf("clean ledger: %+v", c)
		}
		if !strings.Contains(text, "  ok    "+c.Name+"\n") {
			t.Errorf("check %q is in -json but not in the text:\n%s", c.Name, text)
		}
	}
	if n := strings.Count(text, "  ok    "); n != len(clean.Checks) {
		t.Errorf("the text has %d checks, -json %d", n, len(clean.Checks))
	}

	db.MustExec(`ALTER TABLE postings DISABLE TRIGGER USER`)
	db.MustExec(`UPDATE postings SET amount = amount + 1 WHERE id = (SELECT min(id) FROM postings)`)
	for _, trg := range []string{"trg_postings_append_only", "trg_postings_no_truncate", "trg_postings_sealed_set"} {
		db.MustExec(`ALTER TABLE postings ENABLE ALWAYS TRIGGER ` + trg)
	}
	code, breached := runVerifyJSON(t, url)
	if code != exitBreach || breached.OK {
		t.Fatalf("breached ledger: exit %d, ok %t", code, breached.OK)
	}
	var found bool
	for _, c := range breached.Checks {
		if c.Name != "every posting set balances per currency" {
			continue
		}
		found = true
		if c.OK || c.Breaches != 1 || len(c.Examples) != 1 || !regexp.MustCompile(`^set \d+ \(sale of charge ch-1\): its BRL legs sum to 1$`).MatchString(c.Examples[0]) {
			t.Errorf("unbalanced set: %+v", c)
		}
	}
	if !found {
		t.Errorf("no balance check in %+v", breached.Checks)
	}
}

// A sum beyond int64 in a closed month also stops the snapshot comparison
// (it reads bigint sums): verify still prints every breach it found, each
// on its line, and exits 3.
func TestVerifyReportsABalanceBeyondInt64InAClosedMonth(t *testing.T) {
	t.Parallel()
	db, url := pgtest.NewWithURL(t)
	cal, _ := periods.NewCalendar(periods.DefaultTimeZone)
	l := postings.New(db, cal)
	seedLedger(t, db, l)
	if err := periods.Close(context.Background(), db, l.Calendar(), periods.MonthOf(time.Date(2026, 8, 1, 0, 0, 0, 0, time.UTC)), time.Date(2026, 9, 15, 0, 0, 0, 0, time.UTC), "", monthsums.Closing); err != nil {
		t.Fatal(err)
	}
	if code, out := runCmd(t, "verify", "-database-url", url); code != 0 {
		t.Fatalf("verify after the close: exit %d\n%s", code, out)
	}
	// The owner writes two balanced sets of 2^63-1 into the closed August,
	// past the closed-month guard and the amount ceiling (sql/0016).
	db.MustExec(`ALTER TABLE posting_sets DROP CONSTRAINT ck_posting_sets_amount_ceiling`)
	db.MustExec(`ALTER TABLE postings DROP CONSTRAINT ck_postings_amount_ceiling`)
	tx := db.MustBegin()
	defer tx.Rollback()
	tx.MustExec(`ALTER TABLE posting_sets DISABLE TRIGGER trg_posting_sets_written_open`)
	for _, key := range []string{"big-1", "big-2"} {
		tx.MustExec(`WITH s AS (
				INSERT INTO posting_sets (kind, idempotency_key, amount, currency, competence, event_at, content_hash)
				VALUES ('adjustment', $1, 9223372036854775807, 'BRL', '2026-08-20', '2026-08-20', 'x') RETURNING id)
			INSERT INTO postings (posting_set_id, account_id, currency, amount, competence_month)
			SELECT s.id, a.id, 'BRL', v.amount, '2026-08-01' FROM s,
				(VALUES ('assets:cash', 9223372036854775807), ('equity:adjustments', -9223372036854775807)) AS v (code, amount)
				JOIN accounts a ON a.code = v.code`, key)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	// Once committed: the balance checks are pending until then.
	db.MustExec(`ALTER TABLE posting_sets ENABLE ALWAYS TRIGGER trg_posting_sets_written_open`)
	code, out := runCmd(t, "verify", "-database-url", url)
	if code != exitBreach {
		t.Fatalf("verify: exit %d, want %d\n%s", code, exitBreach, out)
	}
	for _, want := range []string{
		"\n        account assets:cash: debits in 2026-08 total 18446744073709566484, beyond int64\n",
		"is in closed month 2026-08 but was written after its close",
		"\n  FAIL  closed months' snapshots equal their postings: 1 breach(es)\n        could not compare: ",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
}

func TestMigrateIsIdempotent(t *testing.T) {
	t.Parallel()
	_, url := pgtest.NewWithURL(t)
	code, out := runCmd(t, "migrate", "-database-url", url)
	if code != 0 || !strings.Contains(out, "up to date") {
		t.Fatalf("migrate on migrated db: exit %d\n%s", code, out)
	}
}

func TestExportCommandWritesFileAndChecksum(t *testing.T) {
	t.Parallel()
	db, url := pgtest.NewWithURL(t)
	cal, _ := periods.NewCalendar(periods.DefaultTimeZone)
	seedLedger(t, db, postings.New(db, cal))
	out := filepath.Join(t.TempDir(), "aug.csv")
	code, msg := runCmd(t, "export", "-database-url", url, "-kind", "journal", "-month", "2026-08", "-dialect", "br", "-out", out)
	if code != 0 || !strings.Contains(msg, "sha256") {
		t.Fatalf("export: exit %d\n%s", code, msg)
	}
	body, err := os.ReadFile(out)
	if err != nil || !strings.HasPrefix(string(body), "\ufeff") {
		t.Fatalf("file: %v %q", err, body)
	}
	if _, err := os.Stat(out + ".sha256"); err != nil {
		t.Fatal(err)
	}
	if code, _ := runCmd(t, "export", "-database-url", url, "-kind", "../../etc/passwd", "-month", "2026-08"); code == 0 {
		t.Fatal("unknown kind accepted")
	}
}

func TestTokenCommandsCreateListRevoke(t *testing.T) {
	t.Parallel()
	db, url := pgtest.NewWithURL(t)
	var out, errOut bytes.Buffer
	if code := run(context.Background(), []string{"token", "create", "-database-url", url, "-name", "finance", "-scope", "read"}, &out, &errOut); code != 0 {
		t.Fatalf("create: exit %d: %s", code, errOut.String())
	}
	plain := strings.TrimSpace(out.String())
	tok, err := auth.Authenticate(context.Background(), db, plain)
	if err != nil || !tok.Has(auth.Read) || tok.Has(auth.Write) {
		t.Fatalf("created token %+v, %v: want a read token", tok, err)
	}
	if code, msg := runCmd(t, "token", "list", "-database-url", url); code != 0 || !strings.Contains(msg, "finance\tread\tlive") || strings.Contains(msg, plain) {
		t.Fatalf("list: exit %d\n%s", code, msg)
	}
	if code, msg := runCmd(t, "token", "revoke", "-database-url", url, fmt.Sprint(tok.ID)); code != 0 {
		t.Fatalf("revoke: exit %d\n%s", code, msg)
	}
	if _, err := auth.Authenticate(context.Background(), db, plain); err == nil {
		t.Fatal("revoked token still authenticates")
	}
	if code, _ := runCmd(t, "token", "create", "-database-url", url, "-name", "x", "-scope", "root"); code == 0 {
		t.Fatal("unknown scope accepted")
	}
}
