package inbox_test

import (
	"regexp"
	"slices"
	"testing"

	"github.com/razao/razao/charges"
	"github.com/razao/razao/divergences"
	"github.com/razao/razao/events"
	"github.com/razao/razao/inbox"
	"github.com/razao/razao/internal/pgtest"
	"github.com/razao/razao/postings"
)

// The typed states of Go and the CHECK constraints of the schema list the
// same words: a status, state, reason, topic or kind added on one side
// only fails here, not in production on the first row that carries it.
func TestTypedStatesMatchTheSchema(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	for _, c := range []struct {
		table, constraint string
		words             []string
	}{
		{"inbox", "ck_inbox_status", words(inbox.Statuses)},
		{"charges", "ck_charges_state", words(charges.States)},
		{"divergences", "ck_divergences_reason", words(divergences.Reasons)},
		{"divergences", "ck_divergences_status", words(divergences.Statuses)},
		{"divergences", "ck_divergences_source", words(divergences.Sources)},
		{"outbox", "ck_outbox_topic", words(events.Topics)},
		// postings has no list of its own yet (its layout is being
		// redone): every kind it declares, here.
		{"posting_sets", "ck_posting_sets_kind", words([]postings.Kind{postings.KindSale, postings.KindCommission,
			postings.KindRefund, postings.KindCommissionReversal, postings.KindPayout, postings.KindAdjustment})},
	} {
		var def string
		if err := db.Get(&def, `SELECT pg_get_constraintdef(oid) FROM pg_constraint
			WHERE conname = $1 AND conrelid = $2::regclass`, c.constraint, c.table); err != nil {
			t.Fatalf("%s on %s: %v", c.constraint, c.table, err)
		}
		var schema []string
		for _, m := range quotedRE.FindAllStringSubmatch(def, -1) {
			schema = append(schema, m[1])
		}
		slices.Sort(schema)
		if !slices.Equal(schema, c.words) {
			t.Errorf("%s allows %v; Go lists %v", c.constraint, schema, c.words)
		}
	}
}

var quotedRE = regexp.MustCompile(`'([^']*)'::text`)

func words[S ~string](list []S) []string {
	out := make([]string, len(list))
	for i, s := range list {
		out[i] = string(s)
	}
	slices.Sort(out)
	return slices.Compact(out)
}
