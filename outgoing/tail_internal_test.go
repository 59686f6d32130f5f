package outgoing

import (
	"context"
	"testing"

	"github.com/jmoiron/sqlx"
	dto "github.com/prometheus/client_model/go"

	"github.com/razao/razao/events"
	"github.com/razao/razao/internal/pgtest"
)

// commit appends n events in one transaction.
func commit(t *testing.T, db *sqlx.DB, n int) {
	t.Helper()
	tx := db.MustBeginTx(context.Background(), nil)
	defer tx.Rollback()
	ds := make([]events.Draft, n)
	for i := range ds {
		ds[i] = events.Draft{Topic: events.TopicChargePaid, ChargeID: "c", Payload: map[string]int{"n": i}}
	}
	if err := events.AppendAll(context.Background(), tx, ds...); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
}

func reads(t *tail, by string) int {
	var m dto.Metric
	t.reads.WithLabelValues(by).Write(&m)
	return int(m.GetCounter().GetValue())
}

// The tail gives each cursor in it what follows from memory, the same as
// a read of the outbox would; only the end (or a cursor past it) reads,
// once for every holder there; a cursor behind it reads alone.
func TestTailServesWhatFollowsFromMemory(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	commit(t, db, 30)
	all, err := events.Since(ctx, db, "", 0)
	if err != nil || len(all) != 30 {
		t.Fatalf("outbox: %d events, %v", len(all), err)
	}
	tl := newTail(db)
	next := func(cursor string) []events.Event {
		t.Helper()
		b, _, err := tl.next(ctx, 1, cursor)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	same := func(what string, got, want []events.Event) {
		t.Helper()
		if len(got) != len(want) {
			t.Fatalf("%s: %d events, want %d", what, len(got), len(want))
		}
		for i := range got {
			if got[i].Cursor != want[i].Cursor {
				t.Fatalf("%s: event %d is %s, want %s", what, i, got[i].Cursor, want[i].Cursor)
			}
		}
	}
	same("from the start", next(""), all)
	same("from the tenth", next(all[9].Cursor), all[10:])
	same("from the last", next(all[29].Cursor), nil)
	if r := reads(tl, "shared"); r != 2 {
		t.Errorf("%d shared reads for a first read and one at the end, want 2", r)
	}
	commit(t, db, 5)
	more := next(all[29].Cursor)
	if len(more) != 5 {
		t.Fatalf("after 5 more: %d events", len(more))
	}
	same("from the tenth again", next(all[9].Cursor), append(append([]events.Event(nil), all[10:]...), more...))
	if r := reads(tl, "shared"); r != 3 {
		t.Errorf("%d shared reads, want 3", r)
	}
	if r := reads(tl, "alone"); r != 0 {
		t.Errorf("%d reads alone, want 0", r)
	}

	// Past maxTail the older half goes: a cursor there reads alone, and
	// gets the same events.
	commit(t, db, maxTail)
	for cur := more[4].Cursor; ; {
		b := next(cur)
		if len(b) == 0 {
			break
		}
		cur = b[len(b)-1].Cursor
	}
	if _, in := tl.pos[all[0].Cursor]; in {
		t.Fatal("the run was not trimmed")
	}
	want, err := events.Since(ctx, db, all[0].Cursor, batchSize)
	if err != nil {
		t.Fatal(err)
	}
	same("behind the run", next(all[0].Cursor), want)
	if r := reads(tl, "alone"); r != 1 {
		t.Errorf("%d reads alone, want 1", r)
	}
}

// A cursor past the run's end (an endpoint created after the events the
// run holds) starts a new run there rather than reading alone forever.
func TestTailRestartsPastItsEnd(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	commit(t, db, 3)
	tl := newTail(db)
	if b, _, err := tl.next(ctx, 1, ""); err != nil || len(b) != 3 {
		t.Fatalf("first read: %d events, %v", len(b), err)
	}
	commit(t, db, 4)
	now, err := events.Now(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	commit(t, db, 2)
	b, _, err := tl.next(ctx, 1, now)
	if err != nil || len(b) != 2 {
		t.Fatalf("from now: %d events, %v", len(b), err)
	}
	if tl.start != now || len(tl.evs) != 2 {
		t.Errorf("the run starts at %s with %d events, want %s and 2", tl.start, len(tl.evs), now)
	}
	if r := reads(tl, "alone"); r != 0 {
		t.Errorf("%d reads alone, want 0", r)
	}
}

// The replays waiting are read after the events: an endpoint with one is
// told so with the batch it takes, another is not.
func TestTailSaysWhichEndpointsHaveReplays(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	svc := Service{DB: db, Config: Config{AllowPrivateTargets: true, AllowHTTPTargets: true}}
	a, err := svc.Create(ctx, NewEndpoint{URL: "http://127.0.0.1:9/a"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := svc.Create(ctx, NewEndpoint{URL: "http://127.0.0.1:9/b"})
	if err != nil {
		t.Fatal(err)
	}
	commit(t, db, 2)
	all, err := events.Since(ctx, db, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	db.MustExec(`INSERT INTO webhook_replays (endpoint_id, event_id, event_xid) SELECT $1, id, xid FROM outbox WHERE id = $2`, a.ID, all[0].ID)
	tl := newTail(db)
	if _, replay, err := tl.next(ctx, a.ID, ""); err != nil || !replay {
		t.Errorf("endpoint with a replay: replay %v, %v", replay, err)
	}
	if _, replay, err := tl.next(ctx, b.ID, ""); err != nil || replay {
		t.Errorf("endpoint without: replay %v, %v", replay, err)
	}
}
