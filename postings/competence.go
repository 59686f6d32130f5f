package postings

import (
	"errors"
	"fmt"
	"time"
	_ "time/tzdata" // competence must work on machines without a zoneinfo database
)

// DefaultTimeZone is where competence dates are read when none is configured.
const DefaultTimeZone = "America/Sao_Paulo"

// Calendar turns instants into competence dates in the business time zone:
// a PIX paid at 2026-08-31 22:30 in São Paulo is August, though UTC says
// September.
type Calendar struct {
	loc *time.Location
}

// NewCalendar returns the calendar of the IANA time zone tz.
func NewCalendar(tz string) (Calendar, error) {
	loc, err := time.LoadLocation(tz)
	if err != nil {
		return Calendar{}, fmt.Errorf("time zone %q: %w", tz, err)
	}
	return Calendar{loc: loc}, nil
}

// Location is the calendar's time zone.
func (c Calendar) Location() *time.Location {
	if c.loc == nil {
		return time.UTC
	}
	return c.loc
}

// Date is the competence date of t: its civil date in the calendar's zone,
// returned as midnight UTC so it compares and formats as a plain date.
func (c Calendar) Date(t time.Time) time.Time {
	y, m, d := t.In(c.Location()).Date()
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
}

// Month is the competence month of t.
func (c Calendar) Month(t time.Time) Month {
	y, m, _ := t.In(c.Location()).Date()
	return Month{Year: y, Month: m}
}

// Month is a competence month, written YYYY-MM.
type Month struct {
	Year  int
	Month time.Month
}

// ErrInvalidMonth is returned for a month that is not YYYY-MM.
var ErrInvalidMonth = errors.New("invalid month: want YYYY-MM")

// ParseMonth parses "2026-08".
func ParseMonth(s string) (Month, error) {
	if len(s) != 7 || s[4] != '-' {
		return Month{}, fmt.Errorf("%w: %q", ErrInvalidMonth, s)
	}
	t, err := time.Parse("2006-01", s)
	if err != nil || t.Year() < 1900 {
		return Month{}, fmt.Errorf("%w: %q", ErrInvalidMonth, s)
	}
	return Month{Year: t.Year(), Month: t.Month()}, nil
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
