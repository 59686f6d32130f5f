package periods_test

import (
	"testing"

	"github.com/razao/razao/periods"
)

// FuzzParseMonth: whatever the input, ParseMonth either refuses it or
// returns a month that formats back to exactly the input.
func FuzzParseMonth(f *testing.F) {
	for _, s := range []string{"2026-08", "2026-8", "1899-12", "2026-13", "2026-00", "0000-01", "9999-12", " 2026-08", "2026-08\n", "２０２６-08", "+026-08", "2026-0x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		m, err := periods.ParseMonth(s)
		if err != nil {
			return
		}
		if m.String() != s {
			t.Fatalf("ParseMonth(%q) = %v, which formats as %q", s, m, m.String())
		}
		if m.Month < 1 || m.Month > 12 {
			t.Fatalf("ParseMonth(%q) month %d", s, m.Month)
		}
		if n := m.Next(); !m.Before(n) || n.Prev() != m {
			t.Fatalf("Next/Prev of %v inconsistent", m)
		}
	})
}
