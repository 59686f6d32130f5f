package webhook

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// A flood of refused deliveries logs burst lines per endpoint and
// interval, and the next line says how many it left out.
func TestRefusalsAreLoggedAtMostOncePerInterval(t *testing.T) {
	var out strings.Builder
	l := newRefusalLog(slog.New(slog.NewJSONHandler(&out, nil)))
	l.interval, l.burst = time.Hour, 1
	for i := 0; i < 100; i++ {
		l.refused(context.Background(), "hodle", errors.New("bad signature"))
	}
	l.refused(context.Background(), "std", errors.New("bad signature"))
	if n := strings.Count(out.String(), "\n"); n != 2 {
		t.Fatalf("%d log lines for 100 refusals on one endpoint and 1 on another, want 2:\n%s", n, out.String())
	}
	l.windows["hodle"].start = time.Time{} // the interval has passed
	out.Reset()
	l.refused(context.Background(), "hodle", errors.New("bad signature"))
	if !strings.Contains(out.String(), `"refusals_not_logged":99`) {
		t.Fatalf("the next line does not count the 99 left out: %s", out.String())
	}
}
