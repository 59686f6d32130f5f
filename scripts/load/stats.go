package main

import (
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"
)

// latency is a summary of request durations, in milliseconds.
type latency struct {
	P50  float64 `json:"p50"`
	P90  float64 `json:"p90"`
	P99  float64 `json:"p99"`
	Max  float64 `json:"max"`
	Mean float64 `json:"mean"`
}

// summarize returns nearest-rank percentiles of ds.
func summarize(ds []time.Duration) latency {
	if len(ds) == 0 {
		return latency{}
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	var sum time.Duration
	for _, d := range s {
		sum += d
	}
	ms := func(d time.Duration) float64 { return math.Round(float64(d)/1e4) / 100 }
	return latency{P50: ms(rank(s, 50)), P90: ms(rank(s, 90)), P99: ms(rank(s, 99)), Max: ms(s[len(s)-1]),
		Mean: ms(sum / time.Duration(len(s)))}
}

// rank is the nearest-rank p-th percentile of sorted s.
func rank(s []time.Duration, p float64) time.Duration {
	i := int(math.Ceil(p/100*float64(len(s)))) - 1
	if i < 0 {
		i = 0
	}
	return s[i]
}

// verification is what the GET checks found.
type verification struct {
	Ran     bool    `json:"ran"`
	Charges int     `json:"charges"`
	OK      int     `json:"ok"`
	Bad     int     `json:"bad"`
	Skipped int     `json:"skipped,omitempty"` // charges with a request that got no definite answer
	ReadS   float64 `json:"read_s"`            // seconds to read every charge once
	Settled float64 `json:"settle_s"`          // when some needed reading again: seconds until the last one matched
	// GetLatency is GET /v1/charges/{id} itself, first read of each charge.
	GetLatency latency  `json:"get_ms"`
	Examples   []string `json:"examples,omitempty"`
	// FirstRead names charges that did not match on the first read but
	// did later: effects that landed after razao had answered.
	FirstRead []string `json:"first_read_mismatch,omitempty"`
}

// result is one scenario's report; it is printed as a table and as one
// JSON line.
type result struct {
	Scenario    string             `json:"scenario"`
	Scheme      string             `json:"scheme"`
	RunID       string             `json:"run_id"`
	Concurrency int                `json:"concurrency"`
	Planned     int                `json:"planned"`
	Sent        int                `json:"sent"`
	SetupS      float64            `json:"setup_s"`
	WallS       float64            `json:"wall_s"`
	ReqPerS     float64            `json:"requests_per_s"`
	Accepted    int                `json:"accepted"`
	AccPerS     float64            `json:"accepted_per_s"`
	Applied     int                `json:"applied,omitempty"`
	AppliedS    float64            `json:"applied_s,omitempty"`
	AppPerS     float64            `json:"applied_per_s,omitempty"`
	Codes       map[string]int     `json:"codes"`
	Statuses    map[string]int     `json:"statuses"`
	Errors      int                `json:"errors"`
	ErrorSample []string           `json:"error_samples,omitempty"`
	Latency     latency            `json:"latency_ms"`
	ByKind      map[string]latency `json:"latency_by_kind_ms,omitempty"`
	ApplyLag    latency            `json:"apply_lag_ms"`
	Extra       map[string]any     `json:"extra,omitempty"`
	Verify      verification       `json:"verify"`
	CPU         map[string]float64 `json:"cpu_cores,omitempty"`
	// CPUPerDelivery is the CPU time spent per delivery applied, in µs:
	// the same work measured in what it costs rather than how fast it
	// went, which moves far less with the machine's speed.
	CPUPerDelivery map[string]float64        `json:"cpu_us_per_delivery,omitempty"`
	DB             map[string]map[string]int `json:"db,omitempty"`
	Warnings       []string                  `json:"warnings,omitempty"`
	Violations     []string                  `json:"violations"`
	Incomplete     bool                      `json:"incomplete"`
	Pass           bool                      `json:"pass"`

	durs     []time.Duration
	kinds    []string
	getC     int
	started  time.Time // when the first request was sent
	cpuStart cpuSample // the CPU counters then
}

func newResult(l *loader, scenario string, planned, concurrency int) *result {
	return &result{Scenario: scenario, Scheme: l.scheme.name(), RunID: l.runID, Concurrency: concurrency,
		Planned: planned, Codes: map[string]int{}, Statuses: map[string]int{}, Extra: map[string]any{},
		Violations: []string{}, durs: make([]time.Duration, planned), kinds: make([]string, planned)}
}

// record keeps the answer to request i (of the given kind).
func (r *result) record(i int, kind string, rp reply) {
	r.durs[i] = rp.dur
	r.kinds[i] = kind
}

// tally counts answers after the timed phase (single goroutine).
func (r *result) tally(replies []reply, sent []bool) {
	for i, rp := range replies {
		if !sent[i] {
			continue
		}
		r.Sent++
		if rp.err != nil {
			r.Errors++
			if len(r.ErrorSample) < 5 {
				r.ErrorSample = append(r.ErrorSample, rp.err.Error())
			}
			continue
		}
		r.Codes[strconv.Itoa(rp.code)]++
		st := rp.status
		if st == "" {
			st = "(none)"
		}
		r.Statuses[st]++
		if rp.code == 200 && rp.status == "accepted" {
			r.Accepted++
		}
		if rp.code >= 500 && len(r.ErrorSample) < 5 {
			r.ErrorSample = append(r.ErrorSample, fmt.Sprintf("%d %s", rp.code, strings.TrimSpace(string(rp.body))))
		}
	}
	var ds []time.Duration
	byKind := map[string][]time.Duration{}
	for i := range replies {
		if sent[i] && replies[i].err == nil {
			ds = append(ds, r.durs[i])
			byKind[r.kinds[i]] = append(byKind[r.kinds[i]], r.durs[i])
		}
	}
	r.Latency = summarize(ds)
	if len(byKind) > 1 {
		r.ByKind = map[string]latency{}
		for k, v := range byKind {
			r.ByKind[k] = summarize(v)
		}
	}
	if r.WallS > 0 {
		r.ReqPerS = round1(float64(r.Sent) / r.WallS)
		r.AccPerS = round1(float64(r.Accepted) / r.WallS)
		r.WallS = math.Round(r.WallS*1000) / 1000
	}
}

func (r *result) violate(format string, args ...any) {
	r.Violations = append(r.Violations, fmt.Sprintf(format, args...))
}

func (r *result) warn(format string, args ...any) {
	r.Warnings = append(r.Warnings, fmt.Sprintf(format, args...))
}

// finish decides Pass: no violation and the scenario ran to its end.
func (r *result) finish() {
	if r.Incomplete {
		r.violate("incomplete: the -duration cap or an interrupt stopped the scenario (%d of %d sent)", r.Sent, r.Planned)
	}
	fiveXX := 0
	for code, n := range r.Codes {
		if strings.HasPrefix(code, "5") {
			fiveXX += n
		}
	}
	if fiveXX > 0 {
		r.violate("%d answers were 5xx", fiveXX)
	}
	if r.Errors > 0 {
		r.violate("%d requests got no answer (transport errors)", r.Errors)
	}
	r.Pass = len(r.Violations) == 0
}

func round1(f float64) float64 { return math.Round(f*10) / 10 }

func round2(f float64) float64 { return math.Round(f*100) / 100 }

// writeTable prints the result for a human.
func (r *result) writeTable(w io.Writer) {
	verdict := "PASS"
	if !r.Pass {
		verdict = "FAIL"
	}
	fmt.Fprintf(w, "\n== %s (%s, c=%d) %s\n", r.Scenario, r.Scheme, r.Concurrency, verdict)
	row := func(k, v string) { fmt.Fprintf(w, "  %-22s %s\n", k, v) }
	row("requests", fmt.Sprintf("%d sent of %d planned in %.2f s (setup %.2f s, not timed)", r.Sent, r.Planned, r.WallS, r.SetupS))
	row("throughput", fmt.Sprintf("%.1f req/s, %.1f accepted/s", r.ReqPerS, r.AccPerS))
	if r.Applied > 0 {
		row("applied", fmt.Sprintf("%d deliveries, the last %.2f s after the first request: %.1f confirmed/s", r.Applied, r.AppliedS, r.AppPerS))
		row("  stored to applied ms", fmt.Sprintf("p50 %.2f  p90 %.2f  p99 %.2f  max %.2f  mean %.2f",
			r.ApplyLag.P50, r.ApplyLag.P90, r.ApplyLag.P99, r.ApplyLag.Max, r.ApplyLag.Mean))
	}
	row("latency ms", fmt.Sprintf("p50 %.2f  p90 %.2f  p99 %.2f  max %.2f  mean %.2f",
		r.Latency.P50, r.Latency.P90, r.Latency.P99, r.Latency.Max, r.Latency.Mean))
	for _, k := range sortedKeys(r.ByKind) {
		v := r.ByKind[k]
		row("  "+k, fmt.Sprintf("p50 %.2f  p90 %.2f  p99 %.2f  max %.2f", v.P50, v.P90, v.P99, v.Max))
	}
	row("HTTP codes", mapString(r.Codes))
	row("statuses", mapString(r.Statuses))
	row("errors", strconv.Itoa(r.Errors))
	for _, e := range r.ErrorSample {
		row("", "e.g. "+e)
	}
	for _, k := range sortedKeys(r.Extra) {
		row(k, fmt.Sprint(r.Extra[k]))
	}
	if r.Verify.Ran {
		row("verify (GET)", fmt.Sprintf("%d charges: %d ok, %d bad, %d skipped; read in %.2f s, re-reads settled after %.2f s",
			r.Verify.Charges, r.Verify.OK, r.Verify.Bad, r.Verify.Skipped, r.Verify.ReadS, r.Verify.Settled))
		g := r.Verify.GetLatency
		row("  GET charge ms", fmt.Sprintf("p50 %.2f  p90 %.2f  p99 %.2f  max %.2f (c=%d)", g.P50, g.P90, g.P99, g.Max, r.getC))
		for _, e := range r.Verify.Examples {
			row("", "e.g. "+e)
		}
		for _, e := range r.Verify.FirstRead {
			row("", "first read: "+e)
		}
	}
	if len(r.CPU) > 0 {
		var parts []string
		for _, k := range sortedKeys(r.CPU) {
			parts = append(parts, fmt.Sprintf("%s %.2f", k, r.CPU[k]))
		}
		row("CPU cores used", strings.Join(parts, ", ")+fmt.Sprintf(" (of %d)", runtime.NumCPU()))
	}
	if len(r.CPUPerDelivery) > 0 {
		var parts []string
		for _, k := range sortedKeys(r.CPUPerDelivery) {
			parts = append(parts, fmt.Sprintf("%s %.0f", k, r.CPUPerDelivery[k]))
		}
		row("CPU µs per delivery", strings.Join(parts, ", "))
	}
	for _, k := range sortedKeys(r.DB) {
		row("db "+k, mapString(r.DB[k]))
	}
	for _, s := range r.Warnings {
		row("warning", s)
	}
	for _, s := range r.Violations {
		row("VIOLATION", s)
	}
}

func mapString(m map[string]int) string {
	if len(m) == 0 {
		return "-"
	}
	var parts []string
	for _, k := range sortedKeys(m) {
		parts = append(parts, fmt.Sprintf("%s=%d", k, m[k]))
	}
	return strings.Join(parts, " ")
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// postgresSince is the CPU seconds of the postgres processes alive at b
// since a (all of it for those started since). Backends that exited in
// between are missed, so this is a lower bound.
func postgresSince(a, b cpuSample) float64 {
	var pg float64
	for pid, cpu := range b.postgres {
		pg += cpu - a.postgres[pid]
	}
	return pg
}

// perDelivery is the CPU time between two samples per delivery, in µs,
// for the machine, razao and PostgreSQL (as cores counts them).
func perDelivery(a, b cpuSample, serverPID, deliveries int) map[string]float64 {
	if deliveries <= 0 || b.busy == 0 {
		return nil
	}
	us := func(x, y float64) float64 { return math.Round((y - x) / float64(deliveries) * 1e6) }
	m := map[string]float64{"machine": us(a.busy, b.busy), "postgres": us(0, postgresSince(a, b))}
	if serverPID > 0 {
		m["razao"] = us(a.server, b.server)
	}
	return m
}

// cpuSample is CPU time read from /proc (Linux only; zero elsewhere).
type cpuSample struct {
	at       time.Time
	busy     float64 // machine, seconds of CPU
	self     float64
	server   float64
	postgres map[string]float64 // per pid: a backend that exits takes its CPU time with it
}

// clockTicks is USER_HZ, 100 on every Linux this runs on.
const clockTicks = 100.0

func sampleCPU(serverPID int) cpuSample {
	s := cpuSample{at: time.Now(), postgres: map[string]float64{}}
	if b, err := os.ReadFile("/proc/stat"); err == nil {
		line, _, _ := strings.Cut(string(b), "\n")
		f := strings.Fields(line)
		var total, idle float64
		for i, v := range f[1:] {
			n, _ := strconv.ParseFloat(v, 64)
			if i < 8 { // user nice system idle iowait irq softirq steal
				total += n
			}
			if i == 3 || i == 4 {
				idle += n
			}
		}
		s.busy = (total - idle) / clockTicks
	}
	s.self = procCPU("/proc/self/stat")
	if serverPID > 0 {
		s.server = procCPU(fmt.Sprintf("/proc/%d/stat", serverPID))
	}
	paths, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, p := range paths {
		if name, cpu := procNameCPU(p); name == "postgres" {
			s.postgres[p] = cpu
		}
	}
	return s
}

func procCPU(path string) float64 {
	_, cpu := procNameCPU(path)
	return cpu
}

// procNameCPU reads a process's command name and utime+stime.
func procNameCPU(path string) (string, float64) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", 0
	}
	s := string(b)
	open, close := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || close < open {
		return "", 0
	}
	f := strings.Fields(s[close+1:])
	if len(f) < 13 {
		return "", 0
	}
	ut, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	return s[open+1 : close], (ut + st) / clockTicks
}

// cores turns two samples into average cores used over the interval.
func cores(a, b cpuSample, serverPID int) map[string]float64 {
	wall := b.at.Sub(a.at).Seconds()
	if wall <= 0 || b.busy == 0 {
		return nil
	}
	c := func(x, y float64) float64 { return math.Round((y-x)/wall*100) / 100 }
	m := map[string]float64{"machine": c(a.busy, b.busy), "load-tool": c(a.self, b.self), "postgres": c(0, postgresSince(a, b))}
	if serverPID > 0 {
		m["razao"] = c(a.server, b.server)
	}
	return m
}
