package outgoing

import (
	"testing"
	"time"
)

// The default schedule is Standard Webhooks' (ten attempts over about
// three days), and each wait moves by at most a tenth either way, and
// does move.
func TestScheduleAndJitter(t *testing.T) {
	t.Parallel()
	var total time.Duration
	for _, w := range StandardSchedule {
		total += w
	}
	if len(StandardSchedule)+1 != 10 || total < 75*time.Hour || total > 76*time.Hour {
		t.Errorf("%d attempts over %s, want 10 over about 3 days and 3 hours", len(StandardSchedule)+1, total)
	}
	d := &Dispatcher{cfg: Config{}.withDefaults()}
	seen := map[time.Duration]bool{}
	for range 200 {
		got := d.jitter(time.Hour)
		if got < 54*time.Minute || got > 66*time.Minute {
			t.Fatalf("jitter(1h) = %s, want within ±10 %%", got)
		}
		seen[got] = true
	}
	if len(seen) < 100 {
		t.Errorf("%d distinct waits in 200: not jittered", len(seen))
	}
}
