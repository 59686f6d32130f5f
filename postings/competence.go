package postings

import "github.com/razao/razao/periods"

// The calendar and competence months live in periods, the one home of the
// month rules. These names keep the callers that still say postings.Month
// compiling while they move over.
type (
	Month    = periods.Month
	Calendar = periods.Calendar
)

const (
	DefaultTimeZone = periods.DefaultTimeZone
	DefaultGoLive   = periods.DefaultGoLive
	MaxAhead        = periods.MaxAhead
)

var (
	ErrOutsideWindow = periods.ErrOutsideWindow
	ErrInvalidMonth  = periods.ErrInvalidMonth
	NewCalendar      = periods.NewCalendar
	ParseGoLive      = periods.ParseGoLive
	ParseMonth       = periods.ParseMonth
	MonthOf          = periods.MonthOf
)
