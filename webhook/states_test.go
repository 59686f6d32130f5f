package webhook_test

import (
	"regexp"
	"slices"
	"testing"

	"github.com/razao/razao/charges"
	"github.com/razao/razao/divergences"
	"github.com/razao/razao/events"
	"github.com/razao/razao/internal/pgtest"
	"github.com/razao/razao/postings"
	"github.com/razao/razao/webhook"
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
		{"inbox", "ck_inbox_status", words(webhook.Statuses)},
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

// The workers' claim follows ix_inbox_due's order exactly: on a backlog
// of 50,000 due deliveries its plan reads the partial index in order and
// stops at the batch (a Limit over LockRows over an Index Scan), with no
// Sort and no scan of the backlog.
func TestClaimIsIndexOrderedOnABacklog(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	db.MustExec(`INSERT INTO inbox (delivery_key, endpoint, scheme, merchant, event_type, event_id, kind, event, body, status, next_attempt_at)
		SELECT 'k' || g, 'std', 'standard', 'loja-1', 'charge.paid', 'e' || g, 'paid', '{}', '\x00', 'pending', now() - g * interval '1 millisecond'
		FROM generate_series(1, 50000) g`)
	db.MustExec(`INSERT INTO inbox (delivery_key, endpoint, scheme, merchant, event_type, event_id, kind, event, body, status)
		SELECT 'd' || g, 'std', 'standard', 'loja-1', 'charge.paid', 'd' || g, 'paid', '{}', '\x00', 'processed'
		FROM generate_series(1, 50000) g`)
	db.MustExec(`ANALYZE inbox`)
	tx := db.MustBegin()
	defer tx.Rollback()
	tx.MustExec(`PREPARE claim (int) AS ` + webhook.ClaimDueSQL)
	var plan []string
	if err := tx.Select(&plan, `EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) EXECUTE claim(64)`); err != nil {
		t.Fatal(err)
	}
	t.Logf("claim of 64 on a backlog of 50,000:\n%s", joinLines(plan))
	want := []*regexp.Regexp{
		regexp.MustCompile(`^Limit \(actual rows=64 `),
		regexp.MustCompile(`^\s+->  LockRows \(actual rows=64 `),
		regexp.MustCompile(`^\s+->  Index Scan using ix_inbox_due on inbox \(actual rows=64 `),
	}
	if len(plan) < len(want) {
		t.Fatalf("plan too short")
	}
	for i, re := range want {
		if !re.MatchString(plan[i]) {
			t.Errorf("plan line %d: %q, want %s", i, plan[i], re)
		}
	}
	for _, line := range plan {
		if regexp.MustCompile(`Sort|Seq Scan|Bitmap`).MatchString(line) {
			t.Errorf("the claim sorts or scans: %q", line)
		}
	}
}

func joinLines(lines []string) string {
	out := ""
	for _, l := range lines {
		out += l + "\n"
	}
	return out
}
