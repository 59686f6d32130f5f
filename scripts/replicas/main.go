// Command replicas is the long form of the multi-replica storm: it builds
// razao, starts a throwaway PostgreSQL cluster of its own and several
// `razao serve` replicas on loopback, drives a storm of signed deliveries
// at them for -duration while it kills replicas with SIGKILL and stops
// PostgreSQL every so often, then checks that every delivery that got a
// 2xx was applied exactly once, that nothing forged was, that nothing was
// answered 2xx while the database was down, that `razao verify` is clean,
// and that SIGTERM finishes in-flight requests. It prints a table and one
// JSON line (prefixed STORM_RESULT) and exits 1 on any problem.
//
//	go run ./scripts/replicas -duration 2m
//	go run ./scripts/replicas -duration 10m -charges 20000 -concurrency 64 -race
//
// It never touches the shared PostgreSQL server nor any address beyond
// loopback: everything it talks to, it started. Work files (cluster data,
// config, replica logs) go in a temp dir, kept when a problem is found.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"sort"
	"syscall"
	"time"

	"github.com/razao/razao/internal/pgtest"
	"github.com/razao/razao/internal/storm"
)

// Hard caps: this is a test rig on a developer machine, not a load tool.
const (
	maxDuration    = 30 * time.Minute
	maxCharges     = 50000
	maxConcurrency = 256
	maxReplicas    = 8
)

func main() {
	os.Exit(run())
}

func run() int {
	fs := flag.NewFlagSet("replicas", flag.ContinueOnError)
	duration := fs.Duration("duration", 2*time.Minute, "how long the storm fires new charges (cap 30m)")
	charges := fs.Int("charges", 0, "charges fired over the storm (default 8 per second of -duration; cap 50000)")
	concurrency := fs.Int("concurrency", 16, "charges in flight at once, each 1-8 concurrent sends (cap 256)")
	replicas := fs.Int("replicas", 3, "razao serve processes on the one database (2-8)")
	killEvery := fs.Duration("kill-every", 30*time.Second, "kill -9 a replica (in turn) this often, restarting it after -kill-down; 0 disables")
	killDown := fs.Duration("kill-down", time.Second, "how long a killed replica stays down")
	outageEvery := fs.Duration("outage-every", 45*time.Second, "stop PostgreSQL this often; 0 disables")
	outageFor := fs.Duration("outage", 3*time.Second, "how long PostgreSQL stays down, at least")
	outageCharges := fs.Int("outage-charges", 10, "charges fired the moment PostgreSQL is down, per outage")
	killCharges := fs.Int("kill-charges", 5, "charges held in flight on a replica (stored, waiting on a row lock) when it is killed, per kill")
	forged := fs.Int("forged", 5, "forged confirmations and refunds (wrong key)")
	maxAttempts := fs.Int("max-attempts", 60, "PSP tries per send before it gives up (back-off 50ms doubling to 1s)")
	seed := fs.Uint64("seed", 0, "plan seed (0: random)")
	drain := fs.Duration("drain-timeout", 3*time.Minute, "how long to wait for the inbox to drain after the storm")
	race := fs.Bool("race", false, "build razao with -race (reports land in the replica logs and fail the run)")
	bin := fs.String("bin", "", "run this razao binary instead of building ./cmd/razao")
	keep := fs.Bool("keep", false, "keep the work dir (cluster data, config, replica logs) even when all is well")
	jsonOut := fs.String("json", "", "also write the result JSON to this file")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: go run ./scripts/replicas [flags]\n\nStorms several razao replicas on a throwaway PostgreSQL with crashes and outages, then checks the books.")
		fs.PrintDefaults()
	}
	if err := fs.Parse(os.Args[1:]); err != nil {
		if err == flag.ErrHelp {
			return 0
		}
		return 2
	}
	if *charges == 0 {
		*charges = int(duration.Seconds() * 8)
	}
	switch {
	case *duration <= 0 || *duration > maxDuration:
		return usage("-duration must be in (0, %v]", maxDuration)
	case *charges < 1 || *charges > maxCharges:
		return usage("-charges must be in [1, %d]", maxCharges)
	case *concurrency < 1 || *concurrency > maxConcurrency:
		return usage("-concurrency must be in [1, %d]", maxConcurrency)
	case *replicas < 2 || *replicas > maxReplicas:
		return usage("-replicas must be in [2, %d]", maxReplicas)
	case *outageFor < 0 || *outageFor > time.Minute || *killDown < 0 || *killDown > time.Minute:
		return usage("-outage and -kill-down must be in [0, 1m]")
	case *outageCharges < 0 || *outageCharges > 1000 || *killCharges < 0 || *killCharges > 100 || *forged < 0 || *forged > 100:
		return usage("-outage-charges must be in [0, 1000], -kill-charges and -forged in [0, 100]")
	case *maxAttempts < 1 || *maxAttempts > 1000:
		return usage("-max-attempts must be in [1, 1000]")
	case *drain <= 0 || *drain > maxDuration:
		return usage("-drain-timeout must be in (0, %v]", maxDuration)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// Everything, including the final drain and shutdown, is bounded.
	ctx, cancel := context.WithTimeout(ctx, *duration+*drain+5*time.Minute)
	defer cancel()
	logf := func(format string, args ...any) {
		fmt.Fprintf(os.Stderr, "%s "+format+"\n", append([]any{time.Now().Format("15:04:05.000")}, args...)...)
	}
	begin := time.Now()

	env, err := storm.Setup(ctx, storm.EnvOptions{Root: pgtest.ProjectRoot(), Replicas: *replicas, RaceBinary: *race, Bin: *bin, KeepOnFailure: true, Logf: logf})
	if err != nil {
		fmt.Fprintln(os.Stderr, "replicas: setup:", err)
		return 1
	}
	defer env.Close()

	faults := schedule(*duration, *killEvery, *killDown, *outageEvery, *outageFor, *replicas)
	for _, f := range faults {
		logf("planned: %s at +%v for %v (replica %d)", f.Kind, f.At, f.Down, f.Replica)
	}
	res, err := storm.Run(ctx, env, storm.Config{
		Charges: *charges, Duration: *duration, Concurrency: *concurrency, OutageCharges: *outageCharges, KillCharges: *killCharges,
		Forged: *forged, MaxAttempts: *maxAttempts, Faults: faults, Seed: *seed, Logf: logf,
	})
	if err != nil {
		env.KeepDir = true
		fmt.Fprintln(os.Stderr, "replicas: storm:", err)
		return 1
	}
	rep, err := storm.Check(ctx, env, res, storm.CheckOptions{DrainTimeout: *drain})
	if err != nil {
		env.KeepDir = true
		fmt.Fprintln(os.Stderr, "replicas: check:", err)
		return 1
	}
	if err := storm.GracefulShutdown(ctx, env, rep); err != nil {
		env.KeepDir = true
		fmt.Fprintln(os.Stderr, "replicas: shutdown check:", err)
		return 1
	}
	rep.Figures.TotalS = time.Since(begin).Seconds()

	fmt.Print(rep.Table())
	for _, p := range rep.Problems {
		fmt.Println("PROBLEM:", p)
	}
	line := rep.JSON()
	fmt.Println("STORM_RESULT", line)
	if *jsonOut != "" {
		var pretty map[string]any
		json.Unmarshal([]byte(line), &pretty)
		b, _ := json.MarshalIndent(pretty, "", "  ")
		if err := os.WriteFile(*jsonOut, append(b, '\n'), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "replicas:", err)
		}
	}
	if len(rep.Problems) > 0 || *keep {
		env.KeepDir = true
	}
	if len(rep.Problems) > 0 {
		return 1
	}
	return 0
}

func usage(format string, args ...any) int {
	fmt.Fprintf(os.Stderr, "replicas: "+format+"\n", args...)
	return 2
}

// schedule spreads the faults over the storm: kills at killEvery/2,
// then every killEvery, rotating the victim; outages every outageEvery.
// None starts in the last 5 seconds of the storm. They run one after the
// other; Run waits for each one's time.
func schedule(d, killEvery, killDown, outageEvery, outageFor time.Duration, replicas int) []storm.Fault {
	var out []storm.Fault
	last := d - 5*time.Second
	if killEvery > 0 {
		for i, at := 0, killEvery/2; at < last; i, at = i+1, at+killEvery {
			out = append(out, storm.Fault{Kind: storm.KillReplica, At: at, Down: killDown, Replica: i % replicas})
		}
	}
	if outageEvery > 0 {
		for at := outageEvery; at <= last; at += outageEvery {
			out = append(out, storm.Fault{Kind: storm.StopDatabase, At: at, Down: outageFor})
		}
	}
	if len(out) == 0 && d > 2*time.Second && (killEvery > 0 || outageEvery > 0) {
		// A short storm still gets one of each that was asked for.
		if killEvery > 0 {
			out = append(out, storm.Fault{Kind: storm.KillReplica, At: d / 5, Down: killDown, Replica: 1})
		}
		if outageEvery > 0 {
			out = append(out, storm.Fault{Kind: storm.StopDatabase, At: d / 2, Down: outageFor})
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].At < out[j].At })
	return out
}
