package periods

import (
	"fmt"
	"time"
	_ "time/tzdata" // competence must work on machines without a zoneinfo database

	"github.com/razao/razao/internal/kind"
)

// DefaultTimeZone is where competence dates are read when none is configured.
const DefaultTimeZone = "America/Sao_Paulo"

// DefaultGoLive is the first date the ledger accepts when none is
// configured: Pix began in November 2020, so no PIX event is older.
const DefaultGoLive = "2020-11-01"

// MaxAhead is how far past our clock an event time may lie: the schemes'
// timestamp tolerance (300 s, webhook/scheme) plus 5 minutes for the PSP's
// clock and ours to disagree. Anything later has not happened yet.
const MaxAhead = 10 * time.Minute

// maxZoneOffset bounds a time's UTC offset: no time zone on Earth is
// further than 14 hours from UTC, and PostgreSQL refuses offsets past
// 15:59, so a time like 2026-09-22T10:00-20:00 is refused before it
// reaches the database.
const maxZoneOffset = 14 * time.Hour

// ErrOutsideWindow is returned for an event time or competence date
// before the go-live date, past our clock plus MaxAhead, or not
// representable (an impossible UTC offset).
var ErrOutsideWindow = kind.New(kind.Invalid, "outside-window", "Time outside the ledger's window", "time outside the ledger's window")

// Calendar turns instants into competence dates in the business time zone:
// a PIX paid at 2026-08-31 22:30 in São Paulo is August, though UTC says
// September. It also holds the window of event times the ledger accepts:
// from the go-live date to a few minutes past the clock, so that no input
// can date a set in a month nobody will ever close (0001-01, 9999-12).
type Calendar struct {
	loc    *time.Location
	goLive time.Time // a date at 00:00 UTC; zero means DefaultGoLive
}

// NewCalendar returns the calendar of the IANA time zone tz.
func NewCalendar(tz string) (Calendar, error) {
	loc, err := time.LoadLocation(tz)
	if err != nil {
		return Calendar{}, fmt.Errorf("time zone %q: %w", tz, err)
	}
	return Calendar{loc: loc}, nil
}

// ParseGoLive parses a go-live date, YYYY-MM-DD; "" is DefaultGoLive. A
// date after now is refused: every event would be outside the window.
func ParseGoLive(s string, now time.Time) (time.Time, error) {
	if s == "" {
		s = DefaultGoLive
	}
	d, err := time.Parse(time.DateOnly, s)
	if err != nil || d.Year() < 1900 {
		return time.Time{}, fmt.Errorf("go-live date %q: want YYYY-MM-DD from 1900 on", s)
	}
	if d.After(now) {
		return time.Time{}, fmt.Errorf("go-live date %s is in the future: every event would be refused", s)
	}
	return d, nil
}

// WithGoLive returns the calendar with go-live date d (its civil date is
// kept; a zero d means DefaultGoLive).
func (c Calendar) WithGoLive(d time.Time) Calendar {
	if !d.IsZero() {
		y, m, day := d.Date()
		d = time.Date(y, m, day, 0, 0, 0, 0, time.UTC)
	}
	c.goLive = d
	return c
}

// defaultGoLive is DefaultGoLive as a date (a test holds the two equal).
var defaultGoLive = time.Date(2020, time.November, 1, 0, 0, 0, 0, time.UTC)

// GoLive is the first competence date the ledger accepts, at 00:00 UTC.
func (c Calendar) GoLive() time.Time {
	if c.goLive.IsZero() {
		return defaultGoLive
	}
	return c.goLive
}

// GoLiveMonth is the month of the go-live date: no earlier month is listed
// or closed.
func (c Calendar) GoLiveMonth() Month { return MonthOf(c.GoLive()) }

// CheckEventTime refuses an event time before the go-live date (midnight
// in the calendar's zone), after now plus MaxAhead, or with a UTC offset
// no zone has. Errors wrap ErrOutsideWindow.
func (c Calendar) CheckEventTime(t, now time.Time) error {
	if _, off := t.Zone(); time.Duration(off)*time.Second > maxZoneOffset || time.Duration(-off)*time.Second > maxZoneOffset {
		return fmt.Errorf("%w: event time %s: UTC offset beyond ±14:00", ErrOutsideWindow, t.Format(time.RFC3339))
	}
	g := c.GoLive()
	from := time.Date(g.Year(), g.Month(), g.Day(), 0, 0, 0, 0, c.Location())
	to := now.Add(MaxAhead)
	if t.Before(from) || t.After(to) {
		return fmt.Errorf("%w: event time %s is not between the go-live date %s and %s",
			ErrOutsideWindow, t.Format(time.RFC3339), g.Format(time.DateOnly), to.UTC().Format(time.RFC3339))
	}
	return nil
}

// CheckCompetence refuses a competence date before the go-live date or
// after the date of now plus MaxAhead. Errors wrap ErrOutsideWindow.
func (c Calendar) CheckCompetence(d, now time.Time) error {
	y, m, day := d.Date()
	d = time.Date(y, m, day, 0, 0, 0, 0, time.UTC)
	last := c.Date(now.Add(MaxAhead))
	if d.Before(c.GoLive()) || d.After(last) {
		return fmt.Errorf("%w: competence %s is not between the go-live date %s and %s",
			ErrOutsideWindow, d.Format(time.DateOnly), c.GoLive().Format(time.DateOnly), last.Format(time.DateOnly))
	}
	return nil
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
