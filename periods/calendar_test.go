package periods_test

import (
	"errors"
	"testing"
	"time"

	"github.com/razao/razao/internal/ledgertest"
	"github.com/razao/razao/periods"
)

func TestCompetenceIsTheSaoPauloDate(t *testing.T) {
	t.Parallel()
	cal, _ := periods.NewCalendar(periods.DefaultTimeZone)
	paid := ledgertest.SaoPaulo(2026, 8, 31, 22, 30)
	if paid.UTC().Month() != time.September {
		t.Fatalf("precondition: %v should be September in UTC", paid.UTC())
	}
	if got := cal.Month(paid).String(); got != "2026-08" {
		t.Fatalf("competence month = %s, want 2026-08", got)
	}
}

// A refused month says why: missing, not YYYY-MM, or before 1900 (it used
// to say "want YYYY-MM" of "0001-01", which is YYYY-MM).
func TestParseMonthSaysWhyItRefuses(t *testing.T) {
	for in, want := range map[string]string{
		"":        "invalid month: a month is required, as YYYY-MM",
		"2026-13": `invalid month: "2026-13" is not a month written YYYY-MM (months 01 to 12)`,
		"2026-00": `invalid month: "2026-00" is not a month written YYYY-MM (months 01 to 12)`,
		"2026-8":  `invalid month: "2026-8" is not a month written YYYY-MM (months 01 to 12)`,
		"0001-01": `invalid month: "0001-01" is before 1900`,
	} {
		_, err := periods.ParseMonth(in)
		if !errors.Is(err, periods.ErrInvalidMonth) || err.Error() != want {
			t.Errorf("ParseMonth(%q) = %v, want %q", in, err, want)
		}
	}
}
