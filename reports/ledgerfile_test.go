package reports_test

import (
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jmoiron/sqlx"

	"github.com/razao/razao/internal/ledgertest"
	"github.com/razao/razao/money"
	"github.com/razao/razao/monthsums"
	"github.com/razao/razao/periods"
	"github.com/razao/razao/postings"
	"github.com/razao/razao/reports"
)

// The ledger files are checked by the tools themselves, hledger and
// beancount's bean-check and bean-query (Debian: apt-get install hledger
// beancount; .ci/run installs them). Without them these tests fail: a
// file no tool has read proves nothing.

// runTool runs a ledger tool and returns its standard output, failing the
// test when the tool is missing or exits non-zero. hledger reads files in
// the locale's encoding: the files are UTF-8, so the locale is.
func runTool(t *testing.T, name string, args ...string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		t.Fatalf("%s is not installed: the ledger file tests run the real tools (Debian: apt-get install hledger beancount)", name)
	}
	cmd := exec.Command(path, args...)
	cmd.Env = append(os.Environ(), "LANG=C.UTF-8", "LC_ALL=C.UTF-8")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s%s", name, strings.Join(args, " "), err, stderr.String(), stdout.String())
	}
	if name == "bean-check" && strings.TrimSpace(stdout.String()+stderr.String()) != "" {
		t.Fatalf("bean-check reports:\n%s%s", stderr.String(), stdout.String())
	}
	return stdout.String()
}

// writeLedger writes month m's file in format f into a temporary
// directory and returns its path.
func writeLedger(t *testing.T, q sqlx.QueryerContext, f reports.LedgerFormat, m periods.Month) string {
	t.Helper()
	var b bytes.Buffer
	if _, err := reports.WriteLedger(context.Background(), q, monthsums.Books{}, &b, f, m); err != nil {
		t.Fatalf("write %s %s: %v", f, m, err)
	}
	path := filepath.Join(t.TempDir(), reports.LedgerFileName(m, f))
	if err := os.WriteFile(path, b.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// centavos reads a tool's decimal amount exactly ("-98.50", "0").
func centavos(t *testing.T, s string) int64 {
	t.Helper()
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	if strings.Trim(s, "0.") == "" {
		return 0
	}
	v, err := money.ParseReais(s)
	if err != nil {
		t.Fatalf("amount %q: %v", s, err)
	}
	if neg {
		return -v
	}
	return v
}

// readCSV parses a tool's CSV output into records, header first, each
// cell trimmed of the spaces bean-query pads its columns with (the files
// escape a text's edge spaces, so no value has one).
func readCSV(t *testing.T, out string) [][]string {
	t.Helper()
	r := csv.NewReader(strings.NewReader(out))
	r.FieldsPerRecord = -1
	records, err := r.ReadAll()
	if err != nil {
		t.Fatalf("tool output is not CSV: %v\n%s", err, out)
	}
	for _, rec := range records {
		for i := range rec {
			rec[i] = strings.TrimSpace(rec[i])
		}
	}
	return records
}

// monthMoves is razao's trial balance for m as the tools see a month's
// file: every account that moved (parents rolled up), its closing less its
// opening, in centavos; BRL only, as the fixtures are.
func monthMoves(t *testing.T, q sqlx.QueryerContext, m periods.Month) (map[string]int64, reports.TrialBalanceReport) {
	t.Helper()
	tb, err := reports.TrialBalance(context.Background(), q, monthsums.Books{}, m)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int64{}
	for _, l := range tb.Lines {
		if l.Debits != 0 || l.Credits != 0 {
			want[l.Account] = l.Closing - l.Opening
		}
	}
	return want, tb
}

func compareMoves(t *testing.T, tool string, got, want map[string]int64) {
	t.Helper()
	for code, v := range want {
		if g, ok := got[code]; !ok || g != v {
			t.Errorf("%s: %s moved %d centavos, razao's trial balance says %d (listed: %v)", tool, code, g, v, ok)
		}
	}
	for code, v := range got {
		if _, ok := want[code]; !ok {
			t.Errorf("%s: %s moved %d centavos, an account razao's trial balance shows no move on", tool, code, v)
		}
	}
}

// hledgerMoves checks the file with hledger (strictly: every account and
// commodity declared) and returns its balance of every account, parents
// included, in centavos.
func hledgerMoves(t *testing.T, path string) map[string]int64 {
	t.Helper()
	runTool(t, "hledger", "-f", path, "check", "--strict")
	out := runTool(t, "hledger", "-f", path, "balance", "--tree", "--no-elide", "--empty", "--no-total",
		"--layout=bare", "--output-format=csv")
	got := map[string]int64{}
	for _, rec := range readCSV(t, out)[1:] {
		if len(rec) != 3 || rec[1] != "BRL" {
			t.Fatalf("hledger balance row %q", rec)
		}
		got[rec[0]] = centavos(t, rec[2])
	}
	return got
}

// beancountMoves checks the file with bean-check and returns bean-query's
// balance of every account, rolled up into razao's codes: each beancount
// account back to the code its open directive names (razao_account), and
// each code's balance into its ancestors'.
func beancountMoves(t *testing.T, path string) map[string]int64 {
	t.Helper()
	runTool(t, "bean-check", path)
	out := runTool(t, "bean-query", "--format=csv", path,
		`SELECT account, getitem(open_meta(account), 'razao_account') AS code, sum(number) AS amount, currency GROUP BY account, code, currency ORDER BY account`)
	got := map[string]int64{}
	for _, rec := range readCSV(t, out)[1:] {
		if len(rec) != 4 || rec[3] != "BRL" {
			t.Fatalf("bean-query row %q", rec)
		}
		code := rec[1]
		if code == "" {
			t.Fatalf("beancount account %s has no razao_account", rec[0])
		}
		v := centavos(t, rec[2])
		for c := code; c != ""; {
			got[c] += v
			i := strings.LastIndexByte(c, ':')
			if i < 0 {
				break
			}
			c = c[:i]
		}
	}
	return got
}

// TestLedgerFilesAgreeWithTheTrialBalance: August and September of the
// scripted months (sales with fees, commissions, partial refunds and
// their reversals, payouts, a sale paid on 31 August in São Paulo),
// written for hledger and beancount, pass each tool's checks, and each
// tool's balance of every account is razao's trial balance's move for the
// month, to the centavo.
func TestLedgerFilesAgreeWithTheTrialBalance(t *testing.T) {
	t.Parallel()
	l, db := ledgertest.New(t)
	ledgertest.PostAugust(t, l)
	ledgertest.PostSeptember(t, l)
	for _, m := range []periods.Month{aug2026, sep2026} {
		want, tb := monthMoves(t, db, m)
		if len(want) < 8 || !tb.Totals[0].Balanced {
			t.Fatalf("%s: the fixture moves %d accounts", m, len(want))
		}
		compareMoves(t, "hledger "+m.String(), hledgerMoves(t, writeLedger(t, db, reports.Hledger, m)), want)
		compareMoves(t, "beancount "+m.String(), beancountMoves(t, writeLedger(t, db, reports.Beancount, m)), want)
	}
}

// TestLedgerFilesOfAClosedMonthAreTheSnapshots: once August is closed its
// figures come from the snapshot taken at close, and the files, still
// the same bytes, still agree with them.
func TestLedgerFilesOfAClosedMonthAreTheSnapshots(t *testing.T) {
	t.Parallel()
	l, db := ledgertest.New(t)
	ledgertest.PostAugust(t, l)
	before := map[reports.LedgerFormat]string{}
	for _, f := range []reports.LedgerFormat{reports.Hledger, reports.Beancount} {
		before[f] = ledgerBytes(t, db, f, aug2026)
	}
	closeMonth(t, db, aug2026)
	want, tb := monthMoves(t, db, aug2026)
	if !tb.Snapshot {
		t.Fatal("August's trial balance is not its snapshot")
	}
	for _, f := range []reports.LedgerFormat{reports.Hledger, reports.Beancount} {
		if got := ledgerBytes(t, db, f, aug2026); got != before[f] {
			t.Errorf("%s: closing August changed its file:\n%s\nwas\n%s", f, got, before[f])
		}
	}
	compareMoves(t, "hledger", hledgerMoves(t, writeLedger(t, db, reports.Hledger, aug2026)), want)
	compareMoves(t, "beancount", beancountMoves(t, writeLedger(t, db, reports.Beancount, aug2026)), want)
}

func ledgerBytes(t *testing.T, q sqlx.QueryerContext, f reports.LedgerFormat, m periods.Month) string {
	t.Helper()
	var b bytes.Buffer
	if _, err := reports.WriteLedger(context.Background(), q, monthsums.Books{}, &b, f, m); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func closeMonth(t *testing.T, db *sqlx.DB, m periods.Month) {
	t.Helper()
	cal, err := periods.NewCalendar(periods.DefaultTimeZone)
	if err != nil {
		t.Fatal(err)
	}
	if err := periods.Close(context.Background(), db, cal, m, afterSeptember, "test", monthsums.Closing); err != nil {
		t.Fatalf("close %s: %v", m, err)
	}
}

// hostile are texts a PSP or a user chose that would break a ledger file
// written bare: a comment or tag separator, quotes and backslashes, line
// breaks (LF, CR, Unicode's line separator), a bidi override, edge spaces,
// an escape character, non-ASCII and an emoji. (PostgreSQL's text holds
// no NUL; the writer's own test feeds it one.)
var hostile = []string{
	`c"1;x, tag: 2 | note`,
	"c2\nnew line 2026-08-01 * \"x\"\r\n  Assets:Cash 1 BRL",
	"c3 \\ back\\slash \u2028 \u202e reversed",
	" c4 edges ",
	"c5 100% à vista 😀",
}

// TestLedgerFilesKeepHostileTextIntact: sales whose charge ids and
// descriptions are hostile are written so that both tools still check the
// file, balances still agree, and the ids and descriptions the tools read
// back are the originals once their %XX escapes are undone.
func TestLedgerFilesKeepHostileTextIntact(t *testing.T) {
	t.Parallel()
	l, db := ledgertest.New(t)
	for i, h := range hostile {
		s, err := postings.Sale(h, "BRL", int64(1000+i), 10, ledgertest.SaoPaulo(2026, 8, 3+i, 10, 0))
		s.Description = "desc " + h
		ledgertest.Post(t, l, s, err)
	}
	ledgertest.Commission(t, l, hostile[0], "p_1.x", 1000, 1000, ledgertest.SaoPaulo(2026, 8, 10, 10, 0))
	want, _ := monthMoves(t, db, aug2026)

	hl := writeLedger(t, db, reports.Hledger, aug2026)
	compareMoves(t, "hledger", hledgerMoves(t, hl), want)
	wantKeys, wantDescs := map[string]bool{}, map[string]bool{}
	for _, h := range hostile {
		wantKeys["sale:"+h] = true
		wantDescs["desc "+h] = true
	}
	wantKeys["commission:"+hostile[0]] = true
	gotKeys := map[string]bool{}
	for _, v := range strings.Split(strings.TrimSpace(runTool(t, "hledger", "-f", hl, "tags", "--values", "^idempotency_key$")), "\n") {
		gotKeys[unescape(t, v)] = true
	}
	sameSet(t, "hledger idempotency keys", gotKeys, wantKeys)
	gotDescs := map[string]bool{}
	// A set with a description is "label | description": the note is the
	// description. The commission's, without one, is its label alone.
	for _, v := range strings.Split(strings.TrimSpace(runTool(t, "hledger", "-f", hl, "notes")), "\n") {
		if !strings.HasPrefix(v, "commission ") {
			gotDescs[unescape(t, v)] = true
		}
	}
	sameSet(t, "hledger notes", gotDescs, wantDescs)

	bc := writeLedger(t, db, reports.Beancount, aug2026)
	compareMoves(t, "beancount", beancountMoves(t, bc), want)
	out := runTool(t, "bean-query", "--format=csv", bc,
		`SELECT DISTINCT entry_meta('idempotency_key') AS key, narration`)
	gotKeys, gotDescs = map[string]bool{}, map[string]bool{}
	for _, rec := range readCSV(t, out)[1:] {
		gotKeys[unescape(t, rec[0])] = true
		if rec[1] != "" {
			gotDescs[unescape(t, rec[1])] = true
		}
	}
	sameSet(t, "beancount idempotency keys", gotKeys, wantKeys)
	sameSet(t, "beancount narrations", gotDescs, wantDescs)
}

// unescape undoes the files' %XX escapes.
func unescape(t *testing.T, s string) string {
	t.Helper()
	var b []byte
	for i := 0; i < len(s); i++ {
		if s[i] == '%' {
			if i+2 >= len(s) {
				t.Fatalf("a bare %% in %q", s)
			}
			var c byte
			for _, h := range s[i+1 : i+3] {
				c = c<<4 | byte(strings.IndexRune("0123456789ABCDEF", h))
			}
			b = append(b, c)
			i += 2
			continue
		}
		b = append(b, s[i])
	}
	return string(b)
}

func sameSet(t *testing.T, what string, got, want map[string]bool) {
	t.Helper()
	for k := range want {
		if !got[k] {
			t.Errorf("%s: %q missing (got %v)", what, k, got)
		}
	}
	for k := range got {
		if !want[k] {
			t.Errorf("%s: %q unexpected", what, k)
		}
	}
}

// TestWriteLedgerRefusesBeforeWriting: a refusal leaves the writer
// untouched, so the HTTP layer can still answer with an error status.
func TestWriteLedgerRefusesBeforeWriting(t *testing.T) {
	t.Parallel()
	_, db := ledgertest.New(t)
	for _, tt := range []struct {
		name string
		f    reports.LedgerFormat
		m    periods.Month
		err  error
	}{
		{"unknown format", reports.LedgerFormat(9), aug2026, reports.ErrUnknownLedgerFormat},
		{"invalid month", reports.Hledger, periods.Month{Year: 2026}, reports.ErrInvalidMonth},
	} {
		var b bytes.Buffer
		if _, err := reports.WriteLedger(context.Background(), db, monthsums.Books{}, &b, tt.f, tt.m); !errors.Is(err, tt.err) {
			t.Errorf("%s: err %v, want %v", tt.name, err, tt.err)
		}
		if b.Len() != 0 {
			t.Errorf("%s: wrote %q", tt.name, b.String())
		}
	}
	for _, s := range []string{"ledger", "", "HLEDGER", "beancount "} {
		if _, err := reports.ParseLedgerFormat(s); !errors.Is(err, reports.ErrUnknownLedgerFormat) {
			t.Errorf("ParseLedgerFormat(%q): %v", s, err)
		}
	}
}

// TestEmptyMonthLedgerFilesCheck: a month without sets is a file each
// tool checks, with nothing in it.
func TestEmptyMonthLedgerFilesCheck(t *testing.T) {
	t.Parallel()
	_, db := ledgertest.New(t)
	compareMoves(t, "hledger", hledgerMoves(t, writeLedger(t, db, reports.Hledger, aug2026)), map[string]int64{})
	compareMoves(t, "beancount", beancountMoves(t, writeLedger(t, db, reports.Beancount, aug2026)), map[string]int64{})
}
