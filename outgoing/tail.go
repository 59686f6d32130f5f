package outgoing

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/singleflight"

	"github.com/razao/razao/events"
)

// tail is the end of the outbox as this dispatcher last read it, shared
// by its holders: a run of events in commit order, each known to follow
// the one before it with nothing between (events.Since returns only
// events no later commit can put a row before, so a batch read after the
// run's last cursor extends it truly).
//
// Each read of the outbox computes its horizon from pg_locks and
// pg_stat_activity. Read per endpoint, ten endpoints that keep up would
// make ten reads for what one read finds, two hundred a second at
// minReadGap, and the database time they cost was measured taking a
// third of a core from the webhook intake. With the tail, an endpoint
// whose cursor is in the run takes what follows from memory; the one
// reaching its end reads for all (at most one read every minReadGap);
// only an endpoint behind the run reads for itself.
type tail struct {
	db *sqlx.DB
	// reads counts the outbox reads, by who they were for: "shared" (at
	// the run's end, for every holder there) or "alone" (a holder behind
	// the run).
	reads *prometheus.CounterVec

	mu    sync.Mutex
	start string         // the cursor just before evs[0]
	evs   []events.Event // the run, in commit order
	pos   map[string]int // cursor -> index in evs of the event at it; start -> -1
	// lastEnd is when the last read at the run's end began.
	lastEnd time.Time
	// pending are the endpoints with a replay waiting, as seen after the
	// last read at the end, so after every event of the run was read:
	// a replay asked for before an event committed is seen with it.
	pending map[int64]bool

	group singleflight.Group
}

func newTail(db *sqlx.DB) *tail {
	return &tail{db: db, reads: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "razao_outgoing_outbox_reads_total",
		Help: "Reads of the outbox by the webhook dispatcher: shared (at the end of what it holds in memory, for every endpoint there) or alone (an endpoint behind it).",
	}, []string{"by"})}
}

// maxTail bounds the run; past it the older half is dropped (an
// endpoint that far behind reads for itself, a batch at a time).
const maxTail = 8 * batchSize

// next returns what follows cursor: from the run when cursor is in it,
// else from the outbox. replay says whether the endpoint may have a
// replay waiting that must go before the batch.
func (t *tail) next(ctx context.Context, endpoint int64, cursor string) (batch []events.Event, replay bool, err error) {
	for {
		t.mu.Lock()
		i, in := t.pos[cursor]
		switch {
		case in && i+1 < len(t.evs):
			batch = t.evs[i+1 : min(len(t.evs), i+1+batchSize)]
			replay = t.pending[endpoint]
			t.mu.Unlock()
			return batch, replay, nil
		case !in && len(t.evs) > 0 && !after(cursor, t.evs[len(t.evs)-1].Cursor):
			// Behind the run: read alone.
			t.mu.Unlock()
			t.reads.WithLabelValues("alone").Inc()
			b, err := events.Since(ctx, t.db, cursor, batchSize)
			return b, true, err
		}
		// At the run's end, past it or no run yet: read for every holder here,
		// no sooner than minReadGap after the last such read.
		wait := minReadGap - time.Since(t.lastEnd)
		t.mu.Unlock()
		if wait > 0 {
			select {
			case <-ctx.Done():
				return nil, false, ctx.Err()
			case <-time.After(wait):
			}
			continue // another holder may have read meanwhile
		}
		_, err, _ := t.group.Do(cursor, func() (any, error) { return nil, t.readEnd(ctx, cursor) })
		if err != nil {
			return nil, false, err
		}
		t.mu.Lock()
		i, in = t.pos[cursor]
		if in && i+1 < len(t.evs) {
			t.mu.Unlock()
			continue
		}
		replay = t.pending[endpoint]
		t.mu.Unlock()
		return nil, replay, nil
	}
}

// readEnd reads the outbox after cursor, the run's end (or the first
// cursor asked for), appends what it finds, then reads which endpoints
// have a replay waiting.
func (t *tail) readEnd(ctx context.Context, cursor string) error {
	t.mu.Lock()
	t.lastEnd = time.Now()
	t.mu.Unlock()
	t.reads.WithLabelValues("shared").Inc()
	b, err := events.Since(ctx, t.db, cursor, batchSize)
	if err != nil {
		return err
	}
	var pending []int64
	if err := sqlx.SelectContext(ctx, t.db, &pending, pendingReplaysSQL); err != nil {
		return fmt.Errorf("endpoints with replays: %w", err)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.pending = make(map[int64]bool, len(pending))
	for _, id := range pending {
		t.pending[id] = true
	}
	if len(b) == 0 {
		return nil
	}
	i, in := t.pos[cursor]
	switch {
	case len(t.evs) == 0 || !in:
		// The first run, or one a holder far ahead of it begins anew.
		t.start, t.evs = cursor, nil
		t.pos = map[string]int{cursor: -1}
	case i != len(t.evs)-1:
		return nil // extended meanwhile by another read: its events are the same
	}
	for _, ev := range b {
		t.pos[ev.Cursor] = len(t.evs)
		t.evs = append(t.evs, ev)
	}
	if len(t.evs) > maxTail {
		t.trim()
	}
	return nil
}

// trim drops the older half of the run.
func (t *tail) trim() {
	keep := t.evs[len(t.evs)/2:]
	t.start = t.evs[len(t.evs)/2-1].Cursor
	t.evs = append([]events.Event(nil), keep...)
	t.pos = make(map[string]int, len(t.evs)+1)
	t.pos[t.start] = -1
	for i, ev := range t.evs {
		t.pos[ev.Cursor] = i
	}
}

// after reports whether cursor a is later in commit order than cursor b
// (both as events.Since makes them: "xid-id"); a malformed one is not.
func after(a, b string) bool {
	ax, ai, okA := splitCursor(a)
	bx, bi, okB := splitCursor(b)
	return okA && okB && (ax > bx || ax == bx && ai > bi)
}

func splitCursor(c string) (xid uint64, id int64, ok bool) {
	x, i, found := strings.Cut(c, "-")
	if !found {
		return 0, 0, false
	}
	xid, err1 := strconv.ParseUint(x, 10, 64)
	id, err2 := strconv.ParseInt(i, 10, 64)
	return xid, id, err1 == nil && err2 == nil
}
