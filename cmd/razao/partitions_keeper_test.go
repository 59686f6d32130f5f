package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/razao/razao/internal/pgtest"
	"github.com/razao/razao/periods"
)

// razao serve makes the months ahead partitioned as it starts, closes or
// not (its partition keeper, periods.Keeper): through PartitionsAhead
// months after the current one. It says so in its log and counts the run
// on /metrics.
func TestServeMakesTheMonthsAheadPartitionedAtStart(t *testing.T) {
	t.Parallel()
	db, dbURL := pgtest.NewWithURL(t)
	path := writeConfig(t, "listen: 127.0.0.1:0\nadmin_listen: 127.0.0.1:0\n")
	stdout, stderr := newLogWatch(), newLogWatch()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() { done <- run(ctx, []string{"serve", "-config", path, "-database-url", dbURL}, stdout, stderr) }()
	defer func() {
		cancel()
		if code := <-done; code != 0 {
			t.Errorf("serve exited %d:\n%s", code, stderr)
		}
	}()
	_, line := stderr.waitFor(t, 0, `"msg":"razao listening"`)
	admin := regexp.MustCompile(`"admin_url":"(http://[^"]+)"`).FindStringSubmatch(line)
	if admin == nil {
		t.Fatalf("no admin URL in %s", line)
	}
	stderr.waitFor(t, 0, `"msg":"periods: partitions made for the months ahead"`)
	m := periods.MonthOf(time.Now())
	for range periods.PartitionsAhead {
		m = m.Next()
	}
	for _, table := range []string{"posting_sets", "postings"} {
		name := fmt.Sprintf("%s_%04d_%02d", table, m.Year, int(m.Month))
		var ok bool
		if err := db.Get(&ok, `SELECT to_regclass($1) IS NOT NULL`, name); err != nil || !ok {
			t.Errorf("no %s after serve's start (%v)", name, err)
		}
	}
	resp, err := http.Get(admin[1] + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if want := `razao_partition_keeper_runs_total{outcome="made"} 1`; !strings.Contains(string(body), want) {
		t.Errorf("/metrics has no %s", want)
	}
}
