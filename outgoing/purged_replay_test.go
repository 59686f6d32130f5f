package outgoing_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/razao/razao/archive"
	"github.com/razao/razao/events"
	"github.com/razao/razao/internal/problem"
	"github.com/razao/razao/outgoing"
)

// A replay of a time range that reaches back to events retention
// archived and purged is refused (409 replay-range-archived), naming
// until when events may be in the archive only, and queues nothing; a
// range after that queues as before. On the old code the range queued
// what was left and the app never learned of the hole.
func TestReplayOfAPurgedRangeIsRefused(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ep := b.create(t, "http://127.0.0.1:1/hook")
	b.appendEvents(t, events.TopicChargePaid)
	b.appendEvents(t, events.TopicAccessGranted)
	b.appendEvents(t, events.TopicChargeRefunded)
	// A month apart, in cursor order; the endpoint has delivered them all.
	day := time.Date(2026, 1, 10, 12, 0, 0, 0, time.UTC)
	b.db.MustExec(`UPDATE outbox o SET created_at = $1::timestamptz + (SELECT count(*) FROM outbox y WHERE y.id < o.id) * interval '30 days'`, day)
	b.db.MustExec(`UPDATE webhook_endpoints SET after_xid = o.xid, after_id = o.id
		FROM (SELECT xid, id FROM outbox ORDER BY xid DESC, id DESC LIMIT 1) o WHERE webhook_endpoints.id = $1`, ep.ID)
	// Retention, 90 days after the second event: the first goes.
	second := day.Add(30 * 24 * time.Hour)
	a := &archive.Archiver{DB: b.db, Config: archive.Config{Dir: t.TempDir(), Location: time.UTC},
		Now: func() time.Time { return second.Add(90 * 24 * time.Hour) }, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	if s, err := a.Run(context.Background(), time.Hour); err != nil || len(s.Files) != 1 || s.Files[0].Rows != 1 {
		t.Fatalf("archive: %+v, %v; want one file of one event", s.Files, err)
	}

	for _, r := range [][2]time.Time{
		{day.Add(-time.Hour), day.Add(100 * 24 * time.Hour)}, // over it
		{day, day.Add(time.Hour)},                            // the purged event's instant
		{day.Add(-48 * time.Hour), day.Add(-24 * time.Hour)}, // before it: nothing there, but the archive may hold it
	} {
		since, until := r[0], r[1]
		n, err := b.svc.Replay(context.Background(), ep.ID, outgoing.Replay{Since: &since, Until: &until})
		if !errors.Is(err, outgoing.ErrRangeArchived) || problem.StatusOf(err) != http.StatusConflict ||
			!strings.Contains(err.Error(), day.Format(time.RFC3339)) || !strings.Contains(err.Error(), "razao archive list") {
			t.Errorf("replay of [%s, %s): %d, %v; want 409 replay-range-archived naming %s", since, until, n, err, day.Format(time.RFC3339))
		}
	}
	var queued int
	b.db.Get(&queued, `SELECT count(*) FROM webhook_replays`)
	if queued != 0 {
		t.Fatalf("%d replays queued by refused requests", queued)
	}
	since, until := day.Add(time.Microsecond), day.Add(100*24*time.Hour)
	if n, err := b.svc.Replay(context.Background(), ep.ID, outgoing.Replay{Since: &since, Until: &until}); err != nil || n != 2 {
		t.Errorf("replay after the purged events: %d, %v; want the 2 left", n, err)
	}
}
