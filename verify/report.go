package verify

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// Check is one invariant re-checked over the whole ledger.
type Check struct {
	Name     string
	Breaches int64
	// Examples names the first breaching rows (up to maxExamples), one
	// readable line each, so a human can start looking.
	Examples []string
}

// maxExamples bounds the breaches a check lists; Breaches counts them all.
const maxExamples = 50

// OK reports whether the check found no breach.
func (c Check) OK() bool { return c.Breaches == 0 }

// Report is the outcome of Run: every check, in the order they ran.
type Report struct {
	// Mode is ModeFull or ModeIncremental. An incremental run checked set
	// by set only the months from From on, continuing the clean run Since;
	// a full run, every set.
	Mode  string
	From  string
	Since int64
	// Sets and Postings are the sets and postings checked one by one (all
	// of them in a full run); NewSets, those of the sets the last clean
	// run did not see.
	Sets     int64
	Postings int64
	NewSets  int64
	// MonthsSealed counts the closed months compared with their seals;
	// NewSeals, the months this run sealed (it was clean and saw them
	// closed with no seal yet).
	MonthsSealed int
	NewSeals     int
	// FullOnly names the checks an incremental run leaves to a full run.
	FullOnly []string
	// Run is the run's id in verify_runs; 0 when it was not recorded (a
	// read-only database, or a run stopped by row-level security).
	Run    int64
	Checks []Check
}

// OK reports whether every check passed.
func (r Report) OK() bool {
	for _, c := range r.Checks {
		if !c.OK() {
			return false
		}
	}
	return true
}

// WriteTo prints the report for a human: a line per check, then each
// breach of a failed check on a line of its own.
func (r Report) WriteTo(w io.Writer) (int64, error) {
	var b strings.Builder
	if r.Mode == ModeIncremental {
		fmt.Fprintf(&b, "razao verify (incremental, after run %d): %d posting sets, %d postings of %s on checked one by one (%d sets new)\n",
			r.Since, r.Sets, r.Postings, r.From, r.NewSets)
	} else {
		fmt.Fprintf(&b, "razao verify (full): %d posting sets, %d postings\n", r.Sets, r.Postings)
	}
	fmt.Fprintf(&b, "  %d closed month(s) held to their seals, %d sealed now\n", r.MonthsSealed, r.NewSeals)
	for _, c := range r.Checks {
		if c.OK() {
			fmt.Fprintf(&b, "  ok    %s\n", c.Name)
			continue
		}
		fmt.Fprintf(&b, "  FAIL  %s: %d breach(es)\n", c.Name, c.Breaches)
		for _, e := range c.Examples {
			fmt.Fprintf(&b, "        %s\n", e)
		}
		if more := c.Breaches - int64(len(c.Examples)); more > 0 {
			fmt.Fprintf(&b, "        ... and %d more\n", more)
		}
	}
	for _, name := range r.FullOnly {
		fmt.Fprintf(&b, "  --    %s (left to a full run)\n", name)
	}
	if r.Run == 0 {
		b.WriteString("run not recorded (a read-only database, or verify stopped before reading the ledger)\n")
	}
	if r.OK() {
		b.WriteString("ledger is clean\n")
	} else {
		b.WriteString("LEDGER BREACHED\n")
	}
	n, err := io.WriteString(w, b.String())
	return int64(n), err
}

// MarshalJSON writes the check for machines, with its verdict:
// {"name": ..., "ok": ..., "breaches": ..., "examples": [...]}.
func (c Check) MarshalJSON() ([]byte, error) {
	examples := c.Examples
	if examples == nil {
		examples = []string{}
	}
	return json.Marshal(struct {
		Name     string   `json:"name"`
		OK       bool     `json:"ok"`
		Breaches int64    `json:"breaches"`
		Examples []string `json:"examples"`
	}{c.Name, c.OK(), c.Breaches, examples})
}

// MarshalJSON writes the report for machines (razao verify -json):
// {"ok": ..., "mode": ..., "sets": ..., "postings": ..., "checks": [...],
// and what the run covered}.
func (r Report) MarshalJSON() ([]byte, error) {
	checks := r.Checks
	if checks == nil {
		checks = []Check{}
	}
	fullOnly := r.FullOnly
	if fullOnly == nil {
		fullOnly = []string{}
	}
	return json.Marshal(struct {
		OK           bool     `json:"ok"`
		Mode         string   `json:"mode"`
		From         string   `json:"from,omitempty"`
		Since        int64    `json:"since_run,omitempty"`
		Run          int64    `json:"run"`
		Sets         int64    `json:"sets"`
		Postings     int64    `json:"postings"`
		NewSets      int64    `json:"new_sets"`
		MonthsSealed int      `json:"months_sealed_checked"`
		NewSeals     int      `json:"months_sealed_now"`
		FullOnly     []string `json:"left_to_full_run"`
		Checks       []Check  `json:"checks"`
	}{r.OK(), r.Mode, r.From, r.Since, r.Run, r.Sets, r.Postings, r.NewSets, r.MonthsSealed, r.NewSeals, fullOnly, checks})
}
