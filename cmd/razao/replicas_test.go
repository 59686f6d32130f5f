package main

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/razao/razao/internal/pgtest"
	"github.com/razao/razao/internal/storm"
)

// TestReplicasStormWithCrashOutageAndShutdown is the bounded form of the
// multi-replica storm (the long form is `go run ./scripts/replicas`).
// Three `razao serve` processes share one throwaway PostgreSQL cluster;
// a PSP fires distinct payments, the same delivery at two replicas at the
// same moment, and refunds racing their confirmation, retrying every
// non-2xx. Mid-storm one replica is killed with SIGKILL and restarted,
// and PostgreSQL is stopped for a few seconds and started again. Then:
// every delivery that got a 2xx is applied exactly once, nothing forged
// is, nothing answered 2xx while the database was down, /readyz said so,
// the replicas recovered without a restart, `razao verify` is clean, and
// SIGTERM with requests held in flight finishes them and exits 0.
//
// Every wait is bounded by a deadline; nothing asserts on elapsed time.
func TestReplicasStormWithCrashOutageAndShutdown(t *testing.T) {
	t.Parallel()
	// Bounded before the test binary's -timeout (10 minutes by default),
	// so that the cleanup (replicas killed, cluster stopped) gets to run.
	// A safety net, not a verdict: the run takes about a minute on a quiet
	// machine and much longer on a loaded one (docs/performance.md,
	// "Timeouts in tests").
	deadline := time.Now().Add(5 * time.Minute)
	if d, ok := t.Deadline(); ok {
		deadline = d.Add(-30 * time.Second)
	}
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	begin := time.Now()

	// The replicas are this test binary, which is razao when called by
	// that name (TestMain): razao's code as the tests built it, with
	// -race when they run with it (as CI does), so that a race in razao
	// fails the test through the replica logs; and nothing is compiled
	// again (a `go build -race` here took a slot of the run for its link).
	// RAZAO_KEEP_TEST_DB (as for pgtest) keeps the work dir of a failed
	// run: cluster data, config and replica logs.
	keep := os.Getenv("RAZAO_KEEP_TEST_DB") != ""
	env, err := storm.Setup(ctx, storm.EnvOptions{Root: pgtest.ProjectRoot(), Replicas: 3,
		Bin: selfAsRazao(t), KeepOnFailure: keep, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			env.KeepDir = keep
			for _, r := range env.Replicas {
				t.Logf("replica %d log tail:\n%s", r.Index, r.LogTail(15))
			}
		}
		env.Close()
	})

	// RAZAO_STORM_SEED replays the plan of a run (its log names the seed):
	// the same charges, amounts, twins and refunds. The timing of faults
	// and the shutdown's interleaving are the machine's, not the seed's.
	var seed uint64
	if s := os.Getenv("RAZAO_STORM_SEED"); s != "" {
		if seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatalf("RAZAO_STORM_SEED: %v", err)
		}
	}
	res, err := storm.Run(ctx, env, storm.Config{
		Seed:          seed,
		Charges:       60,
		Duration:      8 * time.Second,
		Concurrency:   8,
		OutageCharges: 6,
		KillCharges:   3,
		Forged:        2,
		Faults: []storm.Fault{
			{Kind: storm.KillReplica, At: 1500 * time.Millisecond, Down: time.Second, Replica: 1},
			{Kind: storm.StopDatabase, At: 4 * time.Second, Down: 3 * time.Second},
		},
		Logf: t.Logf,
	})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := storm.Check(ctx, env, res, storm.CheckOptions{DrainTimeout: 40 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if err := storm.GracefulShutdown(ctx, env, rep); err != nil {
		t.Fatal(err)
	}
	rep.Figures.TotalS = time.Since(begin).Seconds()
	t.Logf("\n%s", rep.Table())
	t.Logf("STORM_RESULT %s", rep.JSON())

	for _, p := range rep.Problems {
		t.Error(p)
	}
	f := rep.Figures
	// The figures the promise is about, named even when a problem above
	// already said so.
	if f.Lost != 0 || f.DoubleApplied != 0 || f.Outage2xx != 0 || f.ForgedApplied != 0 || f.VerifyExit != 0 {
		t.Errorf("lost %d, double-applied %d, 2xx during outage %d, forged applied %d, verify exit %d: all must be 0",
			f.Lost, f.DoubleApplied, f.Outage2xx, f.ForgedApplied, f.VerifyExit)
	}
	// The storm must have exercised what it claims to. An answer lost
	// (stored, then killed before answering) is counted but not required:
	// a request is answered right after its inbox commit, so a kill must
	// fall in that instant; TestPSPHangingUpMidBatchLosesNothing forces it.
	if f.DuplicatesAbsorbed == 0 || f.Outage503 == 0 || f.AppliedOnce == 0 || f.HeldAtKill == 0 || f.ShutdownInFlow == 0 {
		t.Errorf("storm did not exercise its paths: duplicates %d, 503s in outage %d, applied %d, held at kill %d, held across SIGTERM %d",
			f.DuplicatesAbsorbed, f.Outage503, f.AppliedOnce, f.HeldAtKill, f.ShutdownInFlow)
	}
}

// selfAsRazao is a link named razao to this test binary, which then runs
// as razao (TestMain), for tests that start razao in other processes.
func selfAsRazao(t *testing.T) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "razao")
	if err := os.Symlink(self, bin); err != nil {
		t.Fatal(err)
	}
	return bin
}
