// Command load drives a running razao with signed webhook deliveries, on
// loopback only, and reports throughput, latency percentiles, status counts
// and whether the ledger shows exactly the effects that were sent.
//
//	go run ./scripts/load -url http://127.0.0.1:8080 -scenario all -n 2000 -c 8
//
// Scenarios: distinct (N payments of N charges), flood (the same beside an
// unauthenticated flood of 256 KB bodies), sse (the same beside 1,000 open
// event streams), fanout (the same beside the bytes of sse's streams
// written to 1,000 loopback connections by this tool itself: what the
// machine loses to that fan-out, whoever serves it), duplicate-storm (one delivery fired N times at once:
// exactly one may be accepted), mixed (payments and partial refunds
// interleaved), all (those six), and bcb-memory (one bcb-pix callback of
// 2,000 items: answer time and razao's peak memory). Every loop is bounded
// by -n and by -duration, which caps the whole run (setup, load and
// verification). See README.md beside this file.
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"
)

// Hard limits: no flag goes past them.
const (
	maxRequests    = 100_000
	maxConcurrency = 1_000
	maxStorm       = 5_000
	maxDuration    = 10 * time.Minute
)

// Exit statuses.
const (
	exitOK        = 0
	exitViolation = 1 // a scenario found a wrong status, a wrong effect, or did not finish
	exitUsage     = 2
)

type options struct {
	url       string
	scenario  string
	n, c      int
	duration  time.Duration
	storm     int
	scheme    string
	order     string
	jsonPath  string
	dbURL     string
	serverPID int
	verify    bool
	verifyMax int
	seed      int64
	// flood, sse and bcb-memory
	floodC          int
	streams         int
	fanoutKBPerS    int
	streamsPerToken int
	subscribers     int // webhooks: endpoints subscribed to every event
	rate            int // distinct, webhooks: payments offered a second (0: as fast as -c allows)
	bcbItems        int
	bcbEndpoint     string
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func parseOptions(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("load", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.url, "url", "http://127.0.0.1:8080", "base URL of the running razao (loopback only)")
	fs.StringVar(&o.scenario, "scenario", "all", "distinct | flood | sse | fanout | duplicate-storm | mixed | bcb-memory | all")
	fs.IntVar(&o.n, "n", 2000, fmt.Sprintf("timed requests per scenario (distinct, mixed; max %d)", maxRequests))
	fs.IntVar(&o.c, "c", 8, fmt.Sprintf("concurrency (max %d)", maxConcurrency))
	fs.DurationVar(&o.duration, "duration", 60*time.Second, "hard cap of the whole run, setup and verification included (max 10m)")
	fs.IntVar(&o.storm, "storm", 1000, fmt.Sprintf("copies of the one delivery in duplicate-storm (max %d)", maxStorm))
	fs.StringVar(&o.scheme, "scheme", "standard", "webhook scheme to sign with: standard (/webhooks/psp) | hodle (/webhooks/hodle)")
	fs.StringVar(&o.order, "order", "ordered", "mixed: ordered (each charge's paid is dispatched before its refunds) | shuffled (refunds may precede their payment)")
	fs.StringVar(&o.jsonPath, "json", "", "also append each scenario's JSON line to this file")
	fs.StringVar(&o.dbURL, "database-url", "", "optional loopback PostgreSQL URL of razao's database: adds inbox/outbox/divergence checks")
	fs.IntVar(&o.serverPID, "server-pid", 0, "optional pid of the razao process: reports its CPU use")
	fs.BoolVar(&o.verify, "verify", true, "verify the effects through GET /v1/charges/{id} after each scenario")
	fs.IntVar(&o.verifyMax, "verify-sample", 300, "distinct: read back at most this many charges, evenly spread (0: all); mixed and duplicate-storm read all")
	fs.Int64Var(&o.seed, "seed", 0, "seed of the mixed plan (0: random)")
	fs.IntVar(&o.floodC, "flood-c", 8, "flood: goroutines posting unauthenticated 256 KB bodies (max 64)")
	fs.IntVar(&o.streams, "streams", 1000, "sse: open event streams (max 1000)")
	fs.IntVar(&o.fanoutKBPerS, "fanout-kb-per-s", 0, "fanout: kB a second to each connection (0: what a stream received in the sse scenario of this run; max 100000)")
	fs.IntVar(&o.streamsPerToken, "streams-per-token", 8, "sse: streams per read token (razao's per-token limit)")
	fs.IntVar(&o.subscribers, "subscribers", 10, "webhooks: endpoints subscribed to every event, 1 to 100")
	fs.IntVar(&o.rate, "rate", 0, "the payment scenarios (distinct, flood, sse, mixed, webhooks): deliveries offered a second, on a schedule kept whatever the answers (0: as fast as -c allows; max 100000)")
	fs.IntVar(&o.bcbItems, "bcb-items", 2000, "bcb-memory: Pix items in the one callback (max 5000)")
	fs.StringVar(&o.bcbEndpoint, "bcb-endpoint", "bcbpix", "bcb-memory: name of razao's bcb-pix endpoint")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	switch {
	case o.n < 1 || o.n > maxRequests:
		return o, fmt.Errorf("-n must be 1..%d", maxRequests)
	case o.c < 1 || o.c > maxConcurrency:
		return o, fmt.Errorf("-c must be 1..%d", maxConcurrency)
	case o.verifyMax < 0:
		return o, fmt.Errorf("-verify-sample must be >= 0")
	case o.storm < 2 || o.storm > maxStorm:
		return o, fmt.Errorf("-storm must be 2..%d", maxStorm)
	case o.duration <= 0 || o.duration > maxDuration:
		return o, fmt.Errorf("-duration must be in (0, %s]", maxDuration)
	case o.scheme != "standard" && o.scheme != "hodle":
		return o, fmt.Errorf("-scheme must be standard or hodle")
	case o.order != "ordered" && o.order != "shuffled":
		return o, fmt.Errorf("-order must be ordered or shuffled")
	case o.floodC < 1 || o.floodC > 64:
		return o, fmt.Errorf("-flood-c must be 1..64")
	case o.streams < 1 || o.streams > 1000:
		return o, fmt.Errorf("-streams must be 1..1000")
	case o.fanoutKBPerS < 0 || o.fanoutKBPerS > 100_000:
		return o, fmt.Errorf("-fanout-kb-per-s must be 0..100000")
	case o.rate < 0 || o.rate > 100_000:
		return o, fmt.Errorf("-rate must be 0..100000")
	case o.subscribers < 1 || o.subscribers > 100:
		return o, fmt.Errorf("-subscribers must be 1 to 100")
	case o.streamsPerToken < 1:
		return o, fmt.Errorf("-streams-per-token must be >= 1")
	case o.bcbItems < 1 || o.bcbItems > 5000:
		return o, fmt.Errorf("-bcb-items must be 1..5000")
	}
	if _, err := scenarioList(o.scenario); err != nil {
		return o, err
	}
	return o, nil
}

func scenarioList(s string) ([]string, error) {
	switch s {
	case "distinct", "flood", "sse", "fanout", "duplicate-storm", "mixed", "bcb-memory", "webhooks":
		return []string{s}, nil
	case "all":
		// flood, sse and fanout right after distinct, so that the four
		// are measured on the machine in the same state; fanout after
		// sse, whose bytes it reproduces.
		return []string{"distinct", "flood", "sse", "fanout", "duplicate-storm", "mixed", "webhooks"}, nil
	}
	return nil, fmt.Errorf("-scenario must be distinct, flood, sse, fanout, duplicate-storm, mixed, bcb-memory, webhooks or all, not %q", s)
}

func run(parent context.Context, args []string, stdout, stderr io.Writer) int {
	o, err := parseOptions(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil {
		fmt.Fprintln(stderr, "load:", err)
		return exitUsage
	}
	base, err := loopbackURL(o.url)
	if err != nil {
		fmt.Fprintln(stderr, "load:", err)
		return exitUsage
	}
	sc, err := newScheme(o.scheme, os.Getenv)
	if err != nil {
		fmt.Fprintln(stderr, "load:", err)
		return exitUsage
	}
	ctx, cancel := context.WithTimeout(parent, o.duration)
	defer cancel()

	l := newLoader(base, o, sc, os.Getenv("RAZAO_API_TOKEN"), stdout)
	defer l.close()
	if o.dbURL != "" {
		if err := l.openDB(ctx, o.dbURL); err != nil {
			fmt.Fprintln(stderr, "load:", err)
			return exitUsage
		}
	}
	if err := l.health(ctx); err != nil {
		fmt.Fprintln(stderr, "load:", err)
		return exitViolation
	}
	var jsonFile *os.File
	if o.jsonPath != "" {
		jsonFile, err = os.OpenFile(o.jsonPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			fmt.Fprintln(stderr, "load:", err)
			return exitUsage
		}
		defer jsonFile.Close()
	}
	names, _ := scenarioList(o.scenario)
	fmt.Fprintf(stdout, "razao load: %s, scheme %s, run %s, n=%d c=%d storm=%d, cap %s\n",
		base, o.scheme, l.runID, o.n, o.c, o.storm, o.duration)
	status := exitOK
	for _, name := range names {
		var res *result
		switch name {
		case "distinct":
			res = l.distinct(ctx)
		case "duplicate-storm":
			res = l.duplicateStorm(ctx)
		case "mixed":
			res = l.mixed(ctx)
		case "flood":
			res = l.flood(ctx)
		case "sse":
			res = l.sse(ctx)
		case "fanout":
			res = l.fanout(ctx)
		case "bcb-memory":
			res = l.bcbMemory(ctx)
		case "webhooks":
			res = l.webhooks(ctx)
		}
		res.finish()
		res.writeTable(stdout)
		line, _ := json.Marshal(res)
		fmt.Fprintf(stdout, "%s\n", line)
		if jsonFile != nil {
			fmt.Fprintf(jsonFile, "%s\n", line)
		}
		if !res.Pass {
			status = exitViolation
		}
	}
	if ctx.Err() != nil && parent.Err() == nil {
		fmt.Fprintf(stdout, "load: the -duration cap of %s was reached\n", o.duration)
	}
	return status
}

func newRunID() string {
	b := make([]byte, 4)
	rand.Read(b)
	return "lt" + hex.EncodeToString(b)
}

// short abbreviates a scenario for ids.
func short(scenario string) string {
	switch scenario {
	case "distinct":
		return "d"
	case "duplicate-storm":
		return "s"
	case "mixed":
		return "m"
	case "flood":
		return "f"
	case "sse":
		return "e"
	case "webhooks":
		return "w"
	}
	return strings.ReplaceAll(scenario, "-", "")
}
