package events_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/razao/razao"
	"github.com/razao/razao/archive"
	"github.com/razao/razao/events"
	"github.com/razao/razao/internal/pgtest"
)

// purged is what a test needs of events that retention archived and
// purged through the real archive path.
type purged struct {
	// dir is the archive directory.
	dir string
}

// appendAll commits one event per marker, each in its own transaction,
// settles, and returns their cursors by marker.
func appendAll(t *testing.T, db *sqlx.DB, markers ...string) map[string]string {
	t.Helper()
	for _, m := range markers {
		appendCommitted(t, db, m)
	}
	events.Settle(t, db)
	evs := since(t, db, "")
	cursors := make(map[string]string, len(evs))
	for _, ev := range evs {
		cursors[payloadName(t, ev.Payload)] = ev.Cursor
	}
	for _, m := range markers {
		if cursors[m] == "" {
			t.Fatalf("event %s not read back (read %v)", m, names(t, evs))
		}
	}
	return cursors
}

// archiveThrough runs retention, as razao serve does, 100 days from now
// (every event is past the outbox's 90 days) with a webhook endpoint
// whose cursor is keep: every event up to it is archived and purged, the
// ones after it stay.
func archiveThrough(t *testing.T, db *sqlx.DB, keep string) purged {
	t.Helper()
	xid, id, _ := strings.Cut(keep, "-")
	db.MustExec(`INSERT INTO webhook_endpoints (url, topics, secret, after_xid, after_id)
		VALUES ('https://app.example/hook', '{}', '\x00', $1::xid8, $2::bigint)`, xid, id)
	dir := t.TempDir()
	a := &archive.Archiver{DB: db, Config: archive.Config{Dir: dir, Location: time.UTC},
		Now: func() time.Time { return time.Now().Add(100 * 24 * time.Hour) }, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	s, err := a.Run(context.Background(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	var rows int64
	for _, f := range s.Files {
		if f.Kind == archive.Outbox {
			rows += f.Rows
		}
	}
	if rows == 0 {
		t.Fatalf("retention archived no event (files %+v)", s.Files)
	}
	return purged{dir: dir}
}

// watermark reads the purge watermark as a cursor.
func watermark(t *testing.T, db *sqlx.DB) string {
	t.Helper()
	var w string
	if err := db.Get(&w, `SELECT xid::text || '-' || id FROM outbox_purged_through`); err != nil {
		t.Fatal(err)
	}
	return w
}

// A cursor behind events that retention archived and purged is refused,
// by Since and by the stream (410, as Last-Event-ID and as ?after=), with
// the oldest cursor the stream is complete from; a cursor at or after the
// last event purged, or none, streams as before. On the old code the
// stream resumed after the gap and the client never knew.
func TestCursorBehindPurgedEventsIsGone(t *testing.T) {
	t.Parallel()
	h := startHub(t, time.Hour, nil)
	c := appendAll(t, h.db, "a", "b", "c")
	p := archiveThrough(t, h.db, c["b"])
	if w := watermark(t, h.db); w != c["b"] {
		t.Fatalf("watermark %s, want the last event purged, b at %s", w, c["b"])
	}

	_, err := events.Since(context.Background(), h.db, c["a"], 0)
	var exp *events.ExpiredError
	if !errors.As(err, &exp) || !errors.Is(err, events.ErrCursorExpired) || exp.Oldest != c["b"] {
		t.Fatalf("since a (b after it purged): %v, want an ExpiredError with oldest %s", err, c["b"])
	}
	if got := names(t, since(t, h.db, c["b"])); !equal(got, []string{"c"}) {
		t.Errorf("since b: %v, want [c]", got)
	}
	if got := names(t, since(t, h.db, "")); !equal(got, []string{"c"}) {
		t.Errorf("since the beginning: %v, want what the outbox holds, [c]", got)
	}

	for name, req := range map[string][2]string{
		"Last-Event-ID": {"", c["a"]},
		"after":         {"?after=" + c["a"], ""},
		"0-0":           {"?after=0-0", ""},
	} {
		resp := get(t, h, req[0], req[1])
		if resp.StatusCode != http.StatusGone || resp.Header.Get("Content-Type") != "application/problem+json" {
			// Not the body: a stream's never ends.
			t.Errorf("%s behind the purge: %d %s, want 410 problem+json", name, resp.StatusCode, resp.Header.Get("Content-Type"))
			continue
		}
		body, _ := io.ReadAll(resp.Body)
		var pr struct {
			Type, Detail string
			Status       int
		}
		if err := json.Unmarshal(body, &pr); err != nil {
			t.Fatal(err)
		}
		if pr.Type != "https://razao.dev/problems/cursor-expired" || pr.Status != 410 || !strings.Contains(pr.Detail, c["b"]) ||
			!strings.Contains(pr.Detail, "razao archive list") || strings.Contains(pr.Detail, p.dir) {
			t.Errorf("%s: problem %+v, want cursor-expired naming %s and razao archive list, not the directory", name, pr, c["b"])
		}
	}

	if f := openStream(t, h, "", c["b"]).next(t); f.ID != c["c"] {
		t.Errorf("resumed at the watermark: %+v, want c", f)
	}
	if f := openStream(t, h, "", "").next(t); f.ID != c["c"] {
		t.Errorf("without a cursor: %+v, want c", f)
	}
}

// A stream open while retention purges events it has not read yet ends
// rather than skip them, and its reconnection is refused 410.
func TestStreamPassedByAPurgeEnds(t *testing.T) {
	t.Parallel()
	// No poll: the stream reads when it opens and when the test wakes it.
	h := startHub(t, time.Hour, nil)
	c := appendAll(t, h.db, "a")
	s := openStream(t, h, "", "")
	if f := s.next(t); f.ID != c["a"] {
		t.Fatalf("first frame %+v, want a", f)
	}
	c = appendAll(t, h.db, "b", "c")
	archiveThrough(t, h.db, c["b"])
	// Wake it as a commit's notification would.
	h.db.MustExec(`SELECT pg_notify($1, '')`, events.Channel)
	s.ended(t)
	if resp := get(t, h, "", c["a"]); resp.StatusCode != http.StatusGone {
		t.Errorf("reconnection at a: %d, want 410", resp.StatusCode)
	}
}

// The watermark is the highest cursor ever purged: a later purge of an
// event behind it (kept for a replay, then let go) leaves it where it is.
func TestPurgeWatermarkNeverMovesBack(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	c := appendAll(t, db, "a", "b", "c")
	var ep int64
	xid, bid, _ := strings.Cut(c["b"], "-")
	if err := db.Get(&ep, `INSERT INTO webhook_endpoints (url, topics, secret, after_xid, after_id)
		VALUES ('https://app.example/hook', '{}', '\x00', $1::xid8, $2::bigint) RETURNING id`, xid, bid); err != nil {
		t.Fatal(err)
	}
	_, aid, _ := strings.Cut(c["a"], "-")
	db.MustExec(`INSERT INTO webhook_replays (endpoint_id, event_id, event_xid) SELECT $1, id, xid FROM outbox WHERE id = $2`, ep, aid)
	a := &archive.Archiver{DB: db, Config: archive.Config{Dir: t.TempDir(), Location: time.UTC},
		Now: func() time.Time { return time.Now().Add(100 * 24 * time.Hour) }, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	if _, err := a.Run(context.Background(), time.Hour); err != nil {
		t.Fatal(err)
	}
	if w := watermark(t, db); w != c["b"] {
		t.Fatalf("after b's purge: watermark %s, want %s", w, c["b"])
	}
	if _, err := events.Since(context.Background(), db, c["a"], 0); !errors.Is(err, events.ErrCursorExpired) {
		t.Errorf("since a, a kept and b purged: %v, want expired", err)
	}
	// Without a cursor, from the watermark: a, kept behind it, would be
	// followed by the hole where b was (and a stream that shared that
	// read from a would pass over it).
	if got := names(t, since(t, db, "")); !equal(got, []string{"c"}) {
		t.Errorf("since the beginning, a kept and b purged: %v, want [c]", got)
	}
	db.MustExec(`DELETE FROM webhook_replays`)
	if _, err := a.Run(context.Background(), time.Hour); err != nil {
		t.Fatal(err)
	}
	if n := count(t, db, `SELECT count(*) FROM outbox WHERE id = $1`, aid); n != 0 {
		t.Fatal("a not purged once its replay was done")
	}
	if w := watermark(t, db); w != c["b"] {
		t.Fatalf("after a's purge: watermark %s, want it left at %s", w, c["b"])
	}
}

// Two purges at once (two replicas' retention, or a hand-run one beside
// serve's, were the advisory lock not there): the second waits on the
// watermark's row lock (seen in pg_locks, not by timing) and commits
// after the first. The higher cursor wins in either order.
func TestConcurrentPurgesKeepTheHigherWatermark(t *testing.T) {
	t.Parallel()
	for _, order := range [][2]string{{"high", "low"}, {"low", "high"}} {
		t.Run(order[0]+" first", func(t *testing.T) {
			t.Parallel()
			db := pgtest.New(t)
			c := appendAll(t, db, "low", "high")
			id := func(m string) string { _, id, _ := strings.Cut(c[m], "-"); return id }
			first := begin(t, db)
			first.MustExec(`DELETE FROM outbox WHERE id = $1`, id(order[0]))
			var firstPID int
			if err := first.Get(&firstPID, `SELECT pg_backend_pid()`); err != nil {
				t.Fatal(err)
			}
			second := begin(t, db)
			var secondPID int
			if err := second.Get(&secondPID, `SELECT pg_backend_pid()`); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() {
				_, err := second.Exec(`DELETE FROM outbox WHERE id = $1`, id(order[1]))
				if err == nil {
					err = second.Commit()
				}
				done <- err
			}()
			waitBlocked(t, db, secondPID, firstPID)
			commit(t, first)
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			if w := watermark(t, db); w != c["high"] {
				t.Fatalf("watermark %s, want the higher cursor %s", w, c["high"])
			}
		})
	}
}

// waitBlocked waits until backend pid waits on a lock held by blocker.
func waitBlocked(t *testing.T, db *sqlx.DB, pid, blocker int) {
	t.Helper()
	deadline := time.Now().Add(waitFor)
	for {
		var blocked bool
		if err := db.Get(&blocked, `SELECT $2::int = ANY(pg_blocking_pids($1))`, pid, blocker); err != nil {
			t.Fatal(err)
		}
		if blocked {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("backend %d not blocked by %d within %v", pid, blocker, waitFor)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func count(t *testing.T, db *sqlx.DB, query string, args ...any) int64 {
	t.Helper()
	var n int64
	if err := db.Get(&n, query, args...); err != nil {
		t.Fatal(err)
	}
	return n
}

// The service role of docs/razao-role.sql reads the watermark and moves
// it only by deleting events: it may not write the row, nor hang the
// function on a temporary table of its own (with a transition table
// named like the trigger's) to move it; a temporary table named like the
// watermark's answers for nothing.
func TestServiceRoleMovesThePurgeWatermarkOnlyByPurging(t *testing.T) {
	t.Parallel()
	owner, url := pgtest.NewWithURL(t)
	r := pgtest.NewRoles(t, owner, url)
	svc := r.Connect(r.Service())
	svc.SetMaxOpenConns(1) // one session: its temporary tables are the ones it sees
	c := appendAll(t, owner, "a", "b")
	for _, stmt := range []string{
		`UPDATE outbox_purged_through SET xid = '1', id = 1`,
		`DELETE FROM outbox_purged_through`,
		`INSERT INTO outbox_purged_through (one, xid, id) VALUES (false, '1', 1)`,
		`CREATE TEMP TABLE evil (xid xid8, id bigint, created_at timestamptz);
		 CREATE TRIGGER evil_purge AFTER DELETE ON evil REFERENCING OLD TABLE AS purged
		 FOR EACH STATEMENT EXECUTE FUNCTION outbox_record_purge()`,
	} {
		if _, err := svc.Exec(stmt); err == nil || !strings.Contains(err.Error(), "permission denied") {
			t.Errorf("%s as the service role: %v, want permission denied", stmt, err)
		}
	}
	svc.MustExec(`CREATE TEMP TABLE outbox_purged_through (one boolean, xid xid8, id bigint, created_through timestamptz, purged_at timestamptz)`)
	svc.MustExec(`INSERT INTO pg_temp.outbox_purged_through VALUES (true, '0', 0, NULL, NULL)`)
	_, id, _ := strings.Cut(c["a"], "-")
	svc.MustExec(`DELETE FROM outbox WHERE id = $1`, id)
	if w := watermark(t, owner); w != c["a"] {
		t.Errorf("watermark %s after the service role purged a, want %s", w, c["a"])
	}
}

// A TRUNCATE of the outbox (the owner's, by hand) moves the watermark
// past every event it removed, like a purge.
func TestTruncatedOutboxMovesTheWatermark(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	c := appendAll(t, db, "a", "b")
	db.MustExec(`TRUNCATE outbox`)
	if w := watermark(t, db); w != c["b"] {
		t.Fatalf("watermark %s after TRUNCATE, want the last event, b at %s", w, c["b"])
	}
	if _, err := events.Since(context.Background(), db, c["a"], 0); !errors.Is(err, events.ErrCursorExpired) {
		t.Errorf("since a after TRUNCATE: %v, want expired", err)
	}
}

// A database whose retention purged events before sql/0058 cannot say
// which: the migration starts the watermark past all of them (its own
// transaction id), so every older cursor is refused once; events
// appended after it stream as before. One that purged none starts at
// the beginning.
func TestWatermarkOfADatabasePurgedBeforeTheMigration(t *testing.T) {
	t.Parallel()
	ms, err := razao.Migrations()
	if err != nil {
		t.Fatal(err)
	}
	var m0058 string
	for _, m := range ms {
		if m.Version == 58 {
			m0058 = m.SQL
		}
	}
	if m0058 == "" {
		t.Fatal("no migration 0058")
	}
	for _, purgedBefore := range []bool{false, true} {
		db := pgtest.New(t)
		c := appendAll(t, db, "a", "b")
		// The database as 0057 left it, with a purge recorded or not.
		db.MustExec(`DROP TABLE outbox_purged_through; DROP FUNCTION outbox_record_purge() CASCADE`)
		if purgedBefore {
			_, id, _ := strings.Cut(c["a"], "-")
			db.MustExec(`DELETE FROM outbox WHERE id = $1`, id)
			db.MustExec(`INSERT INTO archives (kind, month, file_name, sha256, rows, bytes)
				VALUES ('outbox', '2026-01-01', 'outbox-2026-01-000001.jsonl.gz', repeat('0', 64), 1, 100)`)
		}
		fn, err := os.ReadFile(filepath.Join(pgtest.ProjectRoot(), "sql", "functions", "outbox_record_purge.sql"))
		if err != nil {
			t.Fatal(err)
		}
		tx := db.MustBegin()
		tx.MustExec(string(fn))
		tx.MustExec(m0058)
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		_, err = events.Since(context.Background(), db, c["b"], 0)
		if purgedBefore != errors.Is(err, events.ErrCursorExpired) {
			t.Errorf("purged before the migration %v: since b: %v", purgedBefore, err)
		}
		appendCommitted(t, db, "after")
		events.Settle(t, db)
		if got := names(t, since(t, db, "")); purgedBefore && !equal(got, []string{"after"}) || !purgedBefore && !equal(got, []string{"a", "b", "after"}) {
			t.Errorf("purged before the migration %v: since the beginning %v", purgedBefore, got)
		}
	}
}
