package events_test

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"testing"

	"github.com/jmoiron/sqlx"

	"github.com/razao/razao/events"
	"github.com/razao/razao/internal/pgtest"
)

// A logical restore (pg_dump into a new cluster) keeps the outbox's
// transaction ids but not the counter they come from: an event appended
// after it sorts behind the restored ones, where no stream's cursor goes
// back. CheckXids refuses such a database and names the pg_resetwal
// epoch that moves the counter past the dump's; once moved, events
// appended later read after the restored ones, in order.
func TestALogicalRestoreIsRefusedUntilTheCounterIsMovedPast(t *testing.T) {
	ctx := context.Background()
	src, srcURL := pgtest.NewWithURL(t)
	// The shared server has assigned far more transaction ids than a new
	// cluster: burn some to make sure, as a busy production server has.
	for range 50 {
		src.MustExec(`SELECT pg_current_xact_id()`)
	}
	appendCommitted(t, src, "restored-1")
	appendCommitted(t, src, "restored-2")

	cluster := pgtest.NewCluster(t)
	cluster.RestoreDump(t, srcURL)
	dir, port, dstURL := cluster.Dir, cluster.Port, cluster.URL
	dst := open(t, dstURL)
	err := events.CheckXids(ctx, dst)
	if !errors.Is(err, events.ErrXidsAhead) {
		t.Fatalf("after a logical restore: %v, want ErrXidsAhead", err)
	}
	epoch := regexp.MustCompile(`pg_resetwal --epoch=(\d+)`).FindStringSubmatch(err.Error())
	if epoch == nil {
		t.Fatalf("the refusal names no pg_resetwal epoch: %v", err)
	}
	dst.Close()

	// What the refusal says to do, done: the server stopped, its epoch
	// moved, started again.
	if err := pgtest.StopCluster(dir, port); err != nil {
		t.Fatal(err)
	}
	resetwal, err := pgtest.ServerTool("pg_resetwal")
	if err != nil {
		t.Fatal(err)
	}
	if err := pgtest.AsOwner(dir, resetwal, "--epoch="+epoch[1], "-D", dir); err != nil {
		t.Fatal(err)
	}
	if _, err := pgtest.StartCluster(dir, port); err != nil {
		t.Fatal(err)
	}
	dst = open(t, dstURL)
	if err := events.CheckXids(ctx, dst); err != nil {
		t.Fatalf("after pg_resetwal: %v", err)
	}
	first := waitSince(t, dst, "", 2)
	appendCommitted(t, dst, "after-1")
	rest := waitSince(t, dst, first[len(first)-1].Cursor, 1)
	if got := append(names(t, first), names(t, rest)...); fmt.Sprint(got) != "[restored-1 restored-2 after-1]" {
		t.Fatalf("events after the restore read as %v", got)
	}
}

func open(t *testing.T, url string) *sqlx.DB {
	t.Helper()
	db, err := sqlx.Open("postgres", url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}
