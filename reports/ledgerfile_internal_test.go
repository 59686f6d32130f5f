package reports

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/razao/razao/periods"
	"github.com/razao/razao/postings"
)

func TestLedgerAccountNames(t *testing.T) {
	t.Parallel()
	tests := []struct {
		code, typ, hledger, beancount string
	}{
		{"assets:cash", "asset", "assets:cash", "Assets:Cash"},
		{"expenses:psp-fees", "expense", "expenses:psp-fees", "Expenses:Psp-fees"},
		{"liabilities:commission-payable:p_1.x", "liability", "liabilities:commission-payable:p_1.x", "Liabilities:Commission-payable:PX5F1X2Ex"},
		{"liabilities:commission-payable:p-1-x", "liability", "liabilities:commission-payable:p-1-x", "Liabilities:Commission-payable:P-1-x"},
		{"liabilities:commission-payable:2026", "liability", "liabilities:commission-payable:2026", "Liabilities:Commission-payable:2026"},
		{"liabilities:customer-credit", "liability", "liabilities:customer-credit", "Liabilities:Customer-credit"},
		{"equity:adjustments", "equity", "equity:adjustments", "Equity:Adjustments"},
		{"income:revenue", "income", "income:revenue", "Income:Revenue"},
		// A root that is not its type's usual name stays a component.
		{"receivables:pix", "asset", "receivables:pix", "Assets:Receivables:Pix"},
		{"assets", "asset", "assets", "Assets"},
	}
	for _, tt := range tests {
		if got, err := LedgerAccount(Hledger, tt.code, tt.typ); err != nil || got != tt.hledger {
			t.Errorf("hledger %s = %q, %v; want %q", tt.code, got, err, tt.hledger)
		}
		if got, err := LedgerAccount(Beancount, tt.code, tt.typ); err != nil || got != tt.beancount {
			t.Errorf("beancount %s = %q, %v; want %q", tt.code, got, err, tt.beancount)
		}
	}
	for _, bad := range []struct{ code, typ string }{
		{"assets:ca sh", "asset"}, {"assets:cash;x", "asset"}, {"Assets:Cash", "asset"}, {"assets:cash\n", "asset"},
		{"(assets:cash)", "asset"}, {"assets::cash", "asset"}, {"assets:cash", "contra"}, {"", "asset"},
	} {
		for _, f := range []LedgerFormat{Hledger, Beancount} {
			if got, err := LedgerAccount(f, bad.code, bad.typ); !errors.Is(err, ErrLedgerAccount) {
				t.Errorf("%s %q (%s) = %q, %v; want ErrLedgerAccount", f, bad.code, bad.typ, got, err)
			}
		}
	}
}

// Two codes one beancount name would merge are refused, not merged.
func TestLedgerWriterRefusesTwoCodesOfOneName(t *testing.T) {
	t.Parallel()
	lines := []periods.Line{
		{AccountID: 1, Code: "assets:pix", Type: "asset", Currency: "BRL", Debits: 1},
		{AccountID: 2, Code: "pix", Type: "asset", Currency: "BRL", Credits: 1},
	}
	if _, err := newLedgerWriter(&bytes.Buffer{}, Beancount, periods.Month{Year: 2026, Month: 8}, lines); !errors.Is(err, ErrLedgerAccount) {
		t.Fatalf("err %v, want ErrLedgerAccount", err)
	}
}

func TestEscapeText(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in, reserved string
		backslash    bool
		want         string
	}{
		{"sale:c1", ",", false, "sale:c1"},
		{"a,b;c|d", ",", false, "a%2Cb;c|d"},
		{"a,b;c|d", ";|", false, "a,b%3Bc%7Cd"},
		{"100%", "", false, "100%25"},
		{"nul\x00cr\rlf\ntab\tdel\x7f", "", false, "nul%00cr%0Dlf%0Atab%09del%7F"},
		{"ls\u2028nel\u0085bidi\u202e", "", false, "ls%E2%80%A8nel%C2%85bidi%E2%80%AE"},
		{"bad\xff\xfeutf8", "", false, "bad%FF%FEutf8"},
		{" edges ", "", false, "%20edges%20"},
		{" ", "", false, "%20"},
		{"à vista 😀\u00a0nbsp", "", false, "à vista 😀\u00a0nbsp"},
		{`say "hi" \o/`, "", true, `say \"hi\" \\o/`},
		{`say "hi" \o/`, "", false, `say "hi" \o/`},
	}
	for _, tt := range tests {
		if got := string(escapeText(nil, tt.in, tt.reserved, tt.backslash)); got != tt.want {
			t.Errorf("escapeText(%q, %q) = %q, want %q", tt.in, tt.reserved, got, tt.want)
		}
	}
}

// TestLedgerFilesSurviveWhatTheDatabaseCannotHold: NUL and bytes that are
// not UTF-8 (PostgreSQL's text refuses both, so no database test can
// feed them) in every text field still make files both tools check.
func TestLedgerFilesSurviveWhatTheDatabaseCannotHold(t *testing.T) {
	t.Parallel()
	lines := []periods.Line{
		{AccountID: 1, Code: "assets:cash", Type: "asset", Currency: "BRL", Debits: 100},
		{AccountID: 2, Code: "income:revenue", Type: "income", Currency: "BRL", Credits: 100},
	}
	evil := "x\x00y\xff\xc3(\n2026-08-01 open Assets:Evil\r\n  ; evil: 1, \"q\" \\ z;"
	at := time.Date(2026, 8, 3, 13, 0, 0, 0, time.UTC).UnixMicro()
	for _, f := range []LedgerFormat{Hledger, Beancount} {
		var b bytes.Buffer
		lw, err := newLedgerWriter(&b, f, periods.Month{Year: 2026, Month: 8}, lines)
		if err != nil {
			t.Fatal(err)
		}
		for i, p := range []postings.MonthPosting{
			{SetID: 7, Kind: "sale", Competence: "2026-08-03", EventUS: at, ChargeID: evil, RefundID: evil, Partner: evil,
				IdempotencyKey: evil, Description: evil, PostingID: 1, AccountID: 1, Currency: "BRL", Amount: 100},
			{SetID: 7, Kind: "sale", Competence: "2026-08-03", EventUS: at, ChargeID: evil, RefundID: evil, Partner: evil,
				IdempotencyKey: evil, Description: evil, PostingID: 2, AccountID: 2, Currency: "BRL", Amount: -100},
		} {
			if err := lw.posting(&p); err != nil {
				t.Fatalf("posting %d: %v", i, err)
			}
		}
		if err := lw.finish(); err != nil {
			t.Fatal(err)
		}
		if bytes.IndexByte(b.Bytes(), 0) >= 0 || !strings.Contains(b.String(), "x%00y%FF%C3(%0A2026") {
			t.Fatalf("%s: not escaped:\n%q", f, b.String())
		}
		path := filepath.Join(t.TempDir(), "f."+f.String())
		if err := os.WriteFile(path, b.Bytes(), 0o600); err != nil {
			t.Fatal(err)
		}
		var out string
		if f == Hledger {
			out = tool(t, "hledger", "-f", path, "check", "--strict")
			out += tool(t, "hledger", "-f", path, "accounts")
			if out != "assets:cash\nincome:revenue\n" {
				t.Errorf("hledger sees accounts %q", out)
			}
		} else {
			out = tool(t, "bean-check", path)
			if out != "" {
				t.Errorf("bean-check: %s", out)
			}
		}
	}
}

// tool runs a ledger tool, failing (not skipping) when it is missing.
func tool(t *testing.T, name string, args ...string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		t.Fatalf("%s is not installed: the ledger file tests run the real tools (Debian: apt-get install hledger beancount)", name)
	}
	cmd := exec.Command(path, args...)
	cmd.Env = append(os.Environ(), "LANG=C.UTF-8", "LC_ALL=C.UTF-8")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}
