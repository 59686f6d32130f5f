package webhook

import (
	"errors"
	"testing"
)

// A request is let go right after its group commit only when no entry of
// it is to be applied: a new pending entry, or a duplicate of one, in any
// position, keeps it until the batch's processing has run.
func TestWhichRequestsWaitForProcessing(t *testing.T) {
	pending, ignored := entry{status: "pending"}, entry{status: "ignored"}
	for _, tc := range []struct {
		name    string
		entries []entry
		stored  []Stored
		err     error
		waits   bool
	}{
		{"new", []entry{pending}, []Stored{{ID: 1}}, nil, true},
		{"duplicate", []entry{pending}, []Stored{{Duplicate: true}}, nil, true},
		{"ignored", []entry{ignored}, []Stored{{ID: 1}}, nil, false},
		{"ignored first, new second", []entry{ignored, pending}, []Stored{{ID: 1}, {ID: 2}}, nil, true},
		{"duplicate first, new second", []entry{pending, pending}, []Stored{{Duplicate: true}, {ID: 2}}, nil, true},
		{"failed insert", []entry{pending}, nil, errors.New("insert failed"), false},
	} {
		r := &putRequest{entries: tc.entries, stored: tc.stored, err: tc.err}
		if got := r.waitsForProcessing(); got != tc.waits {
			t.Errorf("%s: waits = %v, want %v", tc.name, got, tc.waits)
		}
	}
}
