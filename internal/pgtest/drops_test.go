package pgtest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
)

// The sweep drops the test databases of runs whose process has ended (their
// lock is free), and leaves those of a live run and the ones
// RAZAO_KEEP_TEST_DB kept.
func TestSweepDropsOnlyTheDatabasesOfEndedRuns(t *testing.T) {
	base := ServerURL(t)
	New(t) // starts this process's run
	r, err := theRun(base)
	if err != nil {
		t.Fatal(err)
	}
	admin := sqlx.MustOpen("postgres", base)
	t.Cleanup(func() { admin.Close() }) // after the drops below
	ctx := context.Background()
	// A live run: another session holds its lock.
	live, err := admin.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	const liveID, endedID = 0x7ffffff1, 0x7ffffff2
	if _, err := live.ExecContext(ctx, `SELECT pg_advisory_lock($1, $2)`, runLockClass, liveID); err != nil {
		t.Fatal(err)
	}
	names := map[string]string{
		"ended": fmt.Sprintf("razao_test_%08x_%s", endedID, randomSuffix()),
		"kept":  fmt.Sprintf("razao_test_%08x_%s", endedID, randomSuffix()),
		"live":  fmt.Sprintf("razao_test_%08x_%s", liveID, randomSuffix()),
	}
	for _, name := range names {
		admin.MustExec(`CREATE DATABASE ` + pq.QuoteIdentifier(name))
		t.Cleanup(func() { admin.Exec(`DROP DATABASE IF EXISTS ` + pq.QuoteIdentifier(name)) })
	}
	if err := r.keep(names["kept"]); err != nil {
		t.Fatal(err)
	}

	r.sweep()

	exists := func(name string) bool {
		var yes bool
		if err := admin.Get(&yes, `SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)`, name); err != nil {
			t.Fatal(err)
		}
		return yes
	}
	for _, what := range []string{"live", "kept"} {
		if !exists(names[what]) {
			t.Errorf("the sweep dropped the %s run's database %s", what, names[what])
		}
	}
	// Another test binary sweeping at that moment may hold the ended
	// run's lock for an instant, and drop its database itself, later.
	for deadline := time.Now().Add(time.Minute); exists(names["ended"]); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the ended run's database %s is still there a minute after the sweep", names["ended"])
		}
	}
}
