package periods

import (
	"fmt"
	"time"

	"github.com/razao/razao/internal/kind"
)

// Month is a competence month, written YYYY-MM.
type Month struct {
	Year  int
	Month time.Month
}

// ErrInvalidMonth is returned for a month that is not YYYY-MM.
var ErrInvalidMonth = kind.New(kind.Invalid, "invalid-parameter", "Invalid parameter", "invalid month")

// ParseMonth parses "2026-08".
func ParseMonth(s string) (Month, error) {
	if s == "" {
		return Month{}, fmt.Errorf("%w: a month is required, as YYYY-MM", ErrInvalidMonth)
	}
	t, err := time.Parse("2006-01", s)
	if len(s) != 7 || s[4] != '-' || err != nil {
		return Month{}, fmt.Errorf("%w: %q is not a month written YYYY-MM (months 01 to 12)", ErrInvalidMonth, s)
	}
	if t.Year() < 1900 {
		return Month{}, fmt.Errorf("%w: %q is before 1900", ErrInvalidMonth, s)
	}
	return Month{Year: t.Year(), Month: t.Month()}, nil
}

// Check refuses a Month that ParseMonth would not have produced (a
// literal or a zero Month built in Go).
func (m Month) Check() error {
	if m.Year < 1900 || m.Year > 9999 || m.Month < 1 || m.Month > 12 {
		return fmt.Errorf("%w: %04d-%02d", ErrInvalidMonth, m.Year, int(m.Month))
	}
	return nil
}

// MonthOf returns the month of a date.
func MonthOf(t time.Time) Month { return Month{Year: t.Year(), Month: t.Month()} }

// String formats m as YYYY-MM.
func (m Month) String() string { return fmt.Sprintf("%04d-%02d", m.Year, int(m.Month)) }

// First is the month's first day at midnight UTC.
func (m Month) First() time.Time { return time.Date(m.Year, m.Month, 1, 0, 0, 0, 0, time.UTC) }

// Next is the month after m.
func (m Month) Next() Month { return MonthOf(m.First().AddDate(0, 1, 0)) }

// Prev is the month before m.
func (m Month) Prev() Month { return MonthOf(m.First().AddDate(0, -1, 0)) }

// Before reports whether m is earlier than o.
func (m Month) Before(o Month) bool { return m.First().Before(o.First()) }

// End is the first instant after the month in loc.
func (m Month) End(loc *time.Location) time.Time {
	n := m.Next()
	return time.Date(n.Year, n.Month, 1, 0, 0, 0, 0, loc)
}

// IsZero reports whether m is the zero Month, which the month rules read
// as "none" (no month closed yet, no activity yet).
func (m Month) IsZero() bool { return m == Month{} }
