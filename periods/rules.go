package periods

import (
	"fmt"
	"time"
)

// The month rules. Each is a pure function of values, so each is tested
// without a database (rules_test.go) and read in one place: the ledger's
// transactions read the last closed month once, under the close lock
// (LockForPosting, closeMonth), and ask these. The database keeps only
// the barrier, whoever connects (sql/functions/ledger_check_new_sets.sql:
// no set at or before the last closed month;
// ledger_close_waits_for_postings.sql: a close only of the month after
// the last closed one).

// Closed reports whether month m is closed when last is the last closed
// month (the zero Month when none is). A close closes every month up to
// it (sql/0035), so a month before the last closed one is closed though no
// close named it.
func Closed(m, last Month) bool { return !last.IsZero() && !last.Before(m) }

// Competence is the date a set of competence date d is booked on, when
// last is the last closed month: d itself while its month is open; for a
// late event, one of a closed month, the first day of the first open
// month, which is the month after the last closed one (months close in
// order). The event keeps its own time; only its competence moves.
func Competence(d time.Time, last Month) time.Time {
	if Closed(MonthOf(d), last) {
		return last.Next().First()
	}
	return d
}

// CheckCloseTime refuses to close month m at now before it has ended in
// cal's time zone (ErrMonthNotOver), or when it is before the go-live
// month (ErrInvalidMonth): no event is dated there, and a close there would
// close nothing anyone could check.
func CheckCloseTime(cal Calendar, m Month, now time.Time) error {
	if now.Before(m.End(cal.Location())) {
		return ErrMonthNotOver
	}
	if m.Before(cal.GoLiveMonth()) {
		return fmt.Errorf("%w: before the go-live month %s", ErrInvalidMonth, cal.GoLiveMonth())
	}
	return nil
}

// CheckCloseOrder refuses to close month m out of order. last is the last
// closed month and first the first month with posting sets (each the zero
// Month when there is none): months close once (ErrAlreadyClosed), in
// order, from the first with activity (ErrEarlierMonthOpen, naming the
// month to close first), so that no month is ever left open behind a
// closed one.
func CheckCloseOrder(m, last, first Month) error {
	switch {
	case Closed(m, last):
		return ErrAlreadyClosed
	case !last.IsZero() && last.Next() != m:
		return fmt.Errorf("%w: %s", ErrEarlierMonthOpen, last.Next())
	case last.IsZero() && !first.IsZero() && first.Before(m):
		return fmt.Errorf("%w: %s", ErrEarlierMonthOpen, first)
	}
	return nil
}
