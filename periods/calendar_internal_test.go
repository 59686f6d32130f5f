package periods

import (
	"testing"
	"time"
)

func TestDefaultGoLiveIsItsDate(t *testing.T) {
	d, err := ParseGoLive("", time.Now())
	if err != nil || !d.Equal(defaultGoLive) {
		t.Fatalf("ParseGoLive(\"\") = %v, %v; want %v", d, err, defaultGoLive)
	}
}

// A go-live in the future would refuse every event: refused at start.
func TestGoLiveInTheFutureIsRefused(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	for _, s := range []string{"9999-12-31", "2026-12-02"} {
		if _, err := ParseGoLive(s, now); err == nil {
			t.Errorf("go-live %s accepted on %s", s, now.Format(time.DateOnly))
		}
	}
	if _, err := ParseGoLive("2026-12-01", now); err != nil {
		t.Errorf("go-live today: %v", err)
	}
}
