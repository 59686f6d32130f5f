package events_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/lib/pq"

	"github.com/razao/razao/events"
	"github.com/razao/razao/internal/pgtest"
)

func TestAppendInRolledBackTransactionIsNeverReturned(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	ghost := begin(t, db)
	appendIn(t, ghost, "ghost")
	if err := ghost.Rollback(); err != nil {
		t.Fatal(err)
	}
	appendCommitted(t, db, "real")

	// "real" was appended after "ghost", so once it is safe to publish a
	// surviving "ghost" would have to come first.
	got := names(t, waitSince(t, db, "", 1))
	if !equal(got, []string{"real"}) {
		t.Fatalf("events %v, want [real]", got)
	}
}

func TestSinceReturnsEventOnlyAfterItsTransactionCommits(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	tx := begin(t, db)
	appendIn(t, tx, "a")
	if got := since(t, db, ""); len(got) != 0 {
		t.Fatalf("before commit: %v, want none", names(t, got))
	}
	commit(t, tx)
	if got := names(t, waitSince(t, db, "", 1)); !equal(got, []string{"a"}) {
		t.Fatalf("after commit: %v, want [a]", got)
	}
}

// The hazard the xid column exists for: B gets a later id than A, commits
// first, and a reader paging by id alone would move past A's id for good.
func TestSinceHoldsYoungerCommitUntilOlderTransactionEnds(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	a := begin(t, db)
	appendIn(t, a, "A")
	b := begin(t, db)
	appendIn(t, b, "B")
	commit(t, b)

	if got := since(t, db, ""); len(got) != 0 {
		t.Fatalf("with A open: %v, want none", names(t, got))
	}
	commit(t, a)
	if got := names(t, waitSince(t, db, "", 2)); !equal(got, []string{"A", "B"}) {
		t.Fatalf("after A commits: %v, want [A B]", got)
	}
}

func TestSinceReturnsOlderCommitWhileYoungerIsOpen(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	a := begin(t, db)
	appendIn(t, a, "A")
	b := begin(t, db)
	appendIn(t, b, "B")
	commit(t, a)

	first := waitSince(t, db, "", 1)
	if got := names(t, first); !equal(got, []string{"A"}) {
		t.Fatalf("with B open: %v, want [A]", got)
	}
	commit(t, b)
	if got := names(t, waitSince(t, db, first[0].Cursor, 1)); !equal(got, []string{"B"}) {
		t.Fatalf("after B commits: %v, want [B]", got)
	}
}

// A transaction's xid is taken at its first write, which need not be its
// outbox insert: B's event gets the later id but the earlier xid, and must
// still be neither skipped nor published after a cursor that passed it.
func TestSinceOrdersByTransactionNotByID(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	b := begin(t, db)
	if _, err := b.Exec(`SELECT pg_current_xact_id()`); err != nil {
		t.Fatal(err)
	}
	appendCommitted(t, db, "A")
	if got := since(t, db, ""); len(got) != 0 {
		t.Fatalf("with older B open: %v, want none", names(t, got))
	}
	appendIn(t, b, "B")
	commit(t, b)

	got := waitSince(t, db, "", 2)
	if !equal(names(t, got), []string{"B", "A"}) {
		t.Fatalf("events %v, want [B A]", names(t, got))
	}
	if got[0].ID < got[1].ID {
		t.Fatalf("ids %d, %d: the test needs B's id above A's", got[0].ID, got[1].ID)
	}
	if rest := since(t, db, got[1].Cursor); len(rest) != 0 {
		t.Fatalf("after A's cursor: %v, want none", names(t, rest))
	}
}

func TestSinceResumesWithExactlyTheLaterEvents(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	appendCommitted(t, db, "1")
	appendCommitted(t, db, "2")
	tx := begin(t, db) // two events of one transaction keep their id order
	appendIn(t, tx, "3")
	appendIn(t, tx, "4")
	commit(t, tx)
	appendCommitted(t, db, "5")
	events.Settle(t, db)
	all := since(t, db, "")

	var paged []string
	for cursor := ""; ; {
		page, err := events.Since(context.Background(), db, cursor, 2)
		if err != nil {
			t.Fatal(err)
		}
		if len(page) == 0 {
			break
		}
		if len(page) > 2 {
			t.Fatalf("page of %d, limit 2", len(page))
		}
		paged = append(paged, names(t, page)...)
		cursor = page[len(page)-1].Cursor
	}
	if want := []string{"1", "2", "3", "4", "5"}; !equal(paged, want) || !equal(names(t, all), want) {
		t.Fatalf("paged %v, all %v, want %v", paged, names(t, all), want)
	}
	if got := names(t, since(t, db, all[2].Cursor)); !equal(got, []string{"4", "5"}) {
		t.Fatalf("after 3: %v, want [4 5]", got)
	}
}

func TestSinceReturnsEventFields(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	tx := begin(t, db)
	ctx := context.Background()
	if err := events.Append(ctx, tx, events.TopicDivergenceOpened, "", nil); err != nil {
		t.Fatal(err)
	}
	if err := events.Append(ctx, tx, events.TopicAccessGranted, "ch_1", json.RawMessage(`{"access": "course-42"}`)); err != nil {
		t.Fatal(err)
	}
	commit(t, tx)
	got := waitSince(t, db, "", 2)

	if e := got[0]; e.Topic != events.TopicDivergenceOpened || e.ChargeID != "" || string(e.Payload) != "{}" {
		t.Errorf("first event %+v, want divergence.opened, no charge, {}", e)
	}
	e := got[1]
	if e.Topic != events.TopicAccessGranted || e.ChargeID != "ch_1" || e.ID <= got[0].ID || e.CreatedAt.IsZero() {
		t.Errorf("second event %+v", e)
	}
	var wire map[string]any
	data, _ := json.Marshal(got[0])
	if err := json.Unmarshal(data, &wire); err != nil {
		t.Fatal(err)
	}
	if v, ok := wire["charge_id"]; !ok || v != nil {
		t.Errorf("wire form %s: want charge_id null", data)
	}
}

func TestCursorsAreParsedStrictly(t *testing.T) {
	t.Parallel()
	for _, c := range []string{
		"x", "1", "1-", "-1", "1-2-3", " 1-2", "1-2 ", "01-2", "1-02", "+1-2", "1-+2",
		"1--2", "0x1-2", "1-9223372036854775808", "18446744073709551616-1", "1_0-2",
	} {
		if err := events.ValidCursor(c); !errors.Is(err, events.ErrBadCursor) {
			t.Errorf("ValidCursor(%q) = %v, want ErrBadCursor", c, err)
		}
	}
	for _, c := range []string{"", "0-0", "755-12", "18446744073709551615-9223372036854775807"} {
		if err := events.ValidCursor(c); err != nil {
			t.Errorf("ValidCursor(%q) = %v, want nil", c, err)
		}
	}
}

func TestSinceRejectsMalformedCursor(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	if _, err := events.Since(context.Background(), db, "12", 10); !errors.Is(err, events.ErrBadCursor) {
		t.Fatalf("err = %v, want ErrBadCursor", err)
	}
}

// A refused Append must not abort the caller's transaction, which may hold
// a posting that is still worth committing.
func TestAppendRefusesBadInputWithoutAbortingTheTransaction(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	tx := begin(t, db)
	ctx := context.Background()
	if err := events.Append(ctx, tx, "charge.exploded", "ch_1", nil); !errors.Is(err, events.ErrUnknownTopic) {
		t.Fatalf("unknown topic: err = %v, want ErrUnknownTopic", err)
	}
	if err := events.Append(ctx, tx, events.TopicChargePaid, "ch_1", make(chan int)); err == nil {
		t.Fatal("unencodable payload: want an error")
	}
	appendIn(t, tx, "ok")
	commit(t, tx)
	if got := names(t, waitSince(t, db, "", 1)); !equal(got, []string{"ok"}) {
		t.Fatalf("events %v, want [ok]", got)
	}
}

// A transaction left open in another database of the same server (a bulk
// load, a long report) must not hold this database's events back.
func TestLongTransactionInAnotherDatabaseDoesNotHoldEvents(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	other := pgtest.New(t)
	long := other.MustBegin()
	defer long.Rollback()
	long.MustExec(`SELECT pg_current_xact_id()`) // takes an xid, as a writer does
	appendCommitted(t, db, "now")
	// waitSince, not since: a transaction that ends while a read classifies
	// it holds events back until the next read; this one stays open.
	if got := names(t, waitSince(t, db, "", 1)); len(got) != 1 || got[0] != "now" {
		t.Fatalf("events %v, want [now] without waiting for the other database", got)
	}
}

// Any role that may connect can take an xid and sit idle. Only a
// transaction that could write an outbox row may hold events back: one of
// a role without that right, directly or through a role it is a member of,
// must not; the service role's, one of a member of it (even NOINHERIT,
// which reaches the right by SET ROLE) and one of a role granted INSERT
// directly still must. The reader is the service role itself, created as
// docs/razao-role.sql does, so this also shows that pg_locks and
// pg_stat_activity tell it whose transaction it is.
func TestOnlyTransactionsThatCanWriteTheOutboxHoldEvents(t *testing.T) {
	t.Parallel()
	owner, ownerURL := pgtest.NewWithURL(t)
	r := pgtest.NewRoles(t, owner, ownerURL)
	service := r.Service()
	svc := r.Connect(service)
	for _, tc := range []struct {
		name  string
		role  string
		holds bool
	}{
		{"unrelated role", r.Create("unrelated", ""), false},
		{"role with SELECT on outbox only", r.Create("reader", "", `GRANT SELECT ON outbox TO %s`), false},
		{"service role", service, true},
		{"NOINHERIT member of the service role", r.Create("member", "NOINHERIT", `GRANT `+pq.QuoteIdentifier(service)+` TO %s`), true},
		{"role granted INSERT on outbox", r.Create("writer", "", `GRANT INSERT ON outbox TO %s`), true},
		{"role granted INSERT on one column of outbox", r.Create("colwriter", "", `GRANT INSERT (payload) ON outbox TO %s`), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// After every row there is, held back or not: a read of the
			// stream here may still miss the earlier subtests' events (a
			// transaction just ended, or an autovacuum worker's, holds them
			// back until the next read), which would then count as this
			// subtest's.
			var cursor string
			if err := svc.Get(&cursor, `SELECT coalesce((SELECT xid::text || '-' || id FROM outbox ORDER BY xid DESC, id DESC LIMIT 1), '')`); err != nil {
				t.Fatal(err)
			}
			idle := begin(t, r.Connect(tc.role))
			if _, err := idle.Exec(`SELECT pg_current_xact_id()`); err != nil {
				t.Fatal(err)
			}
			appendCommitted(t, svc, tc.role)
			if !tc.holds {
				// What the horizon needs of another role's session, the
				// service role sees: its database, its user and its xid lock.
				var pid int
				if err := idle.Get(&pid, `SELECT pg_backend_pid()`); err != nil {
					t.Fatal(err)
				}
				var seen bool
				if err := svc.Get(&seen, `SELECT EXISTS (SELECT 1 FROM pg_stat_activity a JOIN pg_locks l ON l.pid = a.pid
					WHERE a.pid = $1 AND a.datname = current_database() AND a.usesysid = $2::regrole
					  AND l.locktype = 'transactionid' AND l.granted)`, pid, tc.role); err != nil || !seen {
					t.Fatalf("the service role does not see the other session's database, user and xid lock: %v %v", seen, err)
				}
				if got := names(t, waitSince(t, svc, cursor, 1)); !equal(got, []string{tc.role}) {
					t.Fatalf("events %v, want [%s]", got, tc.role)
				}
				if _, err := idle.Exec(`SELECT 1`); err != nil {
					t.Fatalf("the idle transaction ended: %v", err)
				}
				return
			}
			if got := since(t, svc, cursor); len(got) != 0 {
				t.Fatalf("with the %s's transaction open: %v, want none", tc.name, names(t, got))
			}
			if err := idle.Rollback(); err != nil {
				t.Fatal(err)
			}
			if got := names(t, waitSince(t, svc, cursor, 1)); !equal(got, []string{tc.role}) {
				t.Fatalf("after it ended: %v, want [%s]", got, tc.role)
			}
		})
	}
}
