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
	Sets     int64
	Postings int64
	Checks   []Check
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
	fmt.Fprintf(&b, "razao verify: %d posting sets, %d postings\n", r.Sets, r.Postings)
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
// {"ok": ..., "sets": ..., "postings": ..., "checks": [...]}.
func (r Report) MarshalJSON() ([]byte, error) {
	checks := r.Checks
	if checks == nil {
		checks = []Check{}
	}
	return json.Marshal(struct {
		OK       bool    `json:"ok"`
		Sets     int64   `json:"sets"`
		Postings int64   `json:"postings"`
		Checks   []Check `json:"checks"`
	}{r.OK(), r.Sets, r.Postings, checks})
}
