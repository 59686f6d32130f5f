package events

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"
)

// Listening is closed once Run's LISTEN has taken effect, so a test that
// pins down the notification path does not commit before anyone listens.
func (h *Hub) Listening() <-chan struct{} { return h.listening }

// Append is AppendAll of one event, for the tests.
func Append(ctx context.Context, tx sqlx.ExecerContext, topic Topic, chargeID string, payload any) error {
	return AppendAll(ctx, tx, Draft{Topic: topic, ChargeID: chargeID, Payload: payload})
}

// ReadsInFlight is how many reads hold one of the hub's reader slots: a
// read counted by Reads whose query may not have run yet.
func (h *Hub) ReadsInFlight() int {
	h.slotsOnce.Do(func() { h.slots = make(chan struct{}, positive(h.MaxReaders, DefaultMaxReaders)) })
	return len(h.slots)
}

// Settle waits until every transaction of the server older than the
// newest outbox row has ended. A read's horizon is the server's: a
// transaction of another database that ends between the read's snapshot
// and its look at pg_locks counts as this database's (it errs safe) and
// holds back every event after it, for that read. Other tests create and
// drop databases all the time, so a test that needs one read to return
// every committed event settles first; after that no transaction older
// than those events can be in any read's snapshot.
func Settle(t testing.TB, db *sqlx.DB) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		var settled bool
		err := db.Get(&settled, `SELECT coalesce((SELECT max(xid) FROM outbox) < pg_snapshot_xmin(pg_current_snapshot()), true)`)
		if err != nil {
			t.Fatalf("settle: %v", err)
		}
		if settled {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("settle: after 2 minutes, transactions older than the newest event still run: %s", olderTransactions(db))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// olderTransactions names the transactions Settle waits for.
func olderTransactions(db *sqlx.DB) string {
	var running []string
	err := db.Select(&running, `
SELECT format('pid %s on %s for %s: %s', pid, coalesce(datname, '-'), now() - xact_start, left(query, 80))
FROM pg_stat_activity
WHERE backend_xid IS NOT NULL AND age(backend_xid) >= age(xid((SELECT max(xid) FROM outbox)))`)
	if err != nil {
		return err.Error()
	}
	return strings.Join(running, "; ")
}
