package periods_test

import (
	"errors"
	"testing"
	"time"

	"github.com/razao/razao/periods"
)

func month(t *testing.T, s string) periods.Month {
	t.Helper()
	if s == "" {
		return periods.Month{}
	}
	m, err := periods.ParseMonth(s)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func date(t *testing.T, s string) time.Time {
	t.Helper()
	d, err := time.Parse(time.DateOnly, s)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// A close closes every month up to it; with none closed, none is.
func TestClosedIsEveryMonthUpToTheLastClosed(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		month, last string
		want        bool
	}{
		{"2026-08", "", false},
		{"2026-08", "2026-08", true},
		{"2026-07", "2026-08", true},
		{"2020-11", "2026-08", true},
		{"2026-09", "2026-08", false},
		{"2027-01", "2026-12", false},
	} {
		if got := periods.Closed(month(t, tt.month), month(t, tt.last)); got != tt.want {
			t.Errorf("Closed(%s, last closed %q) = %v, want %v", tt.month, tt.last, got, tt.want)
		}
	}
}

// A late event, for a closed month, is booked on the first day of the
// first open month; any other keeps its date.
func TestCompetenceMovesALateEventToTheFirstOpenMonth(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		date, last, want string
	}{
		{"2026-08-20", "", "2026-08-20"},
		{"2026-08-20", "2026-07", "2026-08-20"},
		{"2026-08-20", "2026-08", "2026-09-01"},
		{"2026-08-20", "2026-09", "2026-10-01"},
		{"2026-08-01", "2026-08", "2026-09-01"},
		{"2026-12-31", "2026-12", "2027-01-01"},
		{"2026-09-01", "2026-08", "2026-09-01"},
	} {
		got := periods.Competence(date(t, tt.date), month(t, tt.last))
		if got.Format(time.DateOnly) != tt.want {
			t.Errorf("Competence(%s, last closed %q) = %s, want %s", tt.date, tt.last, got.Format(time.DateOnly), tt.want)
		}
	}
}

// A month closes once it has ended in the ledger's zone, never before
// go-live.
func TestCheckCloseTime(t *testing.T) {
	t.Parallel()
	cal, err := periods.NewCalendar(periods.DefaultTimeZone)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		month string
		now   time.Time
		want  error
	}{
		// August ends at midnight in São Paulo, 03:00 UTC.
		{"2026-08", time.Date(2026, 9, 1, 2, 59, 0, 0, time.UTC), periods.ErrMonthNotOver},
		{"2026-08", time.Date(2026, 9, 1, 3, 0, 0, 0, time.UTC), nil},
		{"2026-12", time.Date(2026, 12, 31, 23, 0, 0, 0, time.UTC), periods.ErrMonthNotOver},
		{"2020-10", time.Date(2026, 9, 1, 3, 0, 0, 0, time.UTC), periods.ErrInvalidMonth},
		{"2020-11", time.Date(2026, 9, 1, 3, 0, 0, 0, time.UTC), nil},
	} {
		err := periods.CheckCloseTime(cal, month(t, tt.month), tt.now)
		if (tt.want == nil) != (err == nil) || (tt.want != nil && !errors.Is(err, tt.want)) {
			t.Errorf("CheckCloseTime(%s at %s) = %v, want %v", tt.month, tt.now.Format(time.RFC3339), err, tt.want)
		}
	}
}

// Months close once, in order, from the first with activity.
func TestCheckCloseOrder(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		month, last, first string
		want               error
		says               string
	}{
		{"2026-08", "", "", nil, ""},
		{"2026-08", "", "2026-08", nil, ""},
		{"2026-08", "", "2026-09", nil, ""},
		{"2026-09", "", "2026-08", periods.ErrEarlierMonthOpen, "an earlier month is still open: 2026-08"},
		{"2026-09", "2026-08", "2026-08", nil, ""},
		{"2026-10", "2026-08", "2026-08", periods.ErrEarlierMonthOpen, "an earlier month is still open: 2026-09"},
		{"2026-08", "2026-08", "2026-08", periods.ErrAlreadyClosed, "month is already closed"},
		{"2026-07", "2026-08", "2026-08", periods.ErrAlreadyClosed, "month is already closed"},
		{"2027-01", "2026-12", "2026-03", nil, ""},
	} {
		err := periods.CheckCloseOrder(month(t, tt.month), month(t, tt.last), month(t, tt.first))
		if tt.want == nil {
			if err != nil {
				t.Errorf("CheckCloseOrder(%s, last %q, first %q) = %v, want nil", tt.month, tt.last, tt.first, err)
			}
			continue
		}
		if !errors.Is(err, tt.want) || err.Error() != tt.says {
			t.Errorf("CheckCloseOrder(%s, last %q, first %q) = %v, want %q", tt.month, tt.last, tt.first, err, tt.says)
		}
	}
}
