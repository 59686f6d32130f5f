package archive

import (
	"time"
)

// The retention rule, in one place: which rows of each kind may be
// archived and purged. A row may go when it is older than its kind's age
// (Horizon) and none of these still needs it:
//
//   - redelivery deduplication and the ledger's references: an inbox row
//     is never deleted, only its body and headers; its key
//     (endpoint, event_type, event_id), event and status stay;
//   - a delivery not applied: only processed and ignored deliveries lose
//     their bodies (pending, parked and set-aside ones keep them);
//   - an open divergence: a delivery an open divergence names (inbox_id,
//     ledger_inbox_id), and a reconciliation run with an open divergence,
//     keep everything, the evidence finance resolves it with;
//   - an open month: inbox bodies, statements and lines go only when the
//     month they were processed or reconciled in, and every month before
//     (months close as a prefix), is closed; a ledger that never closes a
//     month keeps them forever;
//   - a reconciliation run not finished, or failed (a scheduled run that
//     failed is taken over and retried with its pages and lines);
//   - the webhooks razao sends: an event any endpoint's cursor has not
//     passed, or a replay has asked for, stays, however old (a disabled
//     endpoint resumes where it stopped);
//     and the readers of the outbox learn what went: the delete moves
//     the outbox's purge watermark (sql/0058), and an event stream or a
//     replay that reaches behind it is refused (410, 409), never served
//     with a hole;
//   - razao verify reads only the ledger (posting sets, postings, closed
//     months, snapshots, month sums, the schema): nothing retention
//     touches.
//
// Outbox events and webhook attempts are not bound to closed months: they
// hold no month's figure (the ledger does), only what was told to whom.

// rule is one kind's part of the rule, as SQL over its tables. $1 is the
// horizon: rows at or after it stay.
type rule struct {
	// from is the table the kind's rows are picked from, as alias.
	from string
	// id is the picked key: the inbox row, the event, the run, the
	// attempt.
	id string
	// at is the time that names a row's month (the archive file's).
	at string
	// order is the order rows are picked in, oldest first, along an
	// index.
	order string
	// eligible is the condition a row must meet, with $1 the horizon.
	eligible string
	// weight is the rows one picked key puts in the file, roughly: a
	// run's lines; 1 for the rest.
	weight string
	// closedMonths: the kind goes only once its month is closed.
	closedMonths bool
	// unlocked: the pick takes no row lock. Outbox events never change
	// and only the archive deletes them, one run at a time (LockID); and
	// a row lock needs UPDATE on the table, which the service role has
	// not on the outbox.
	unlocked bool
}

// openDivergence is the condition "an open divergence where cond". Two
// conditions rather than one with OR, so that each reads an index or
// one hash of the open divergences, not every open divergence per row.
func openDivergence(cond string) string {
	return `EXISTS (SELECT 1 FROM divergences d WHERE d.status = 'open' AND (` + cond + `))`
}

// finishedRun: a run that succeeded before the horizon, over a window
// that ended before it, with no open divergence.
const finishedRun = `r.status = 'succeeded' AND r.finished_at < $1 AND r.window_to <= $1
	AND NOT EXISTS (SELECT 1 FROM divergences d WHERE d.status = 'open' AND d.run_id = r.id)`

var rules = map[Kind]rule{
	InboxBodies: {
		from: "inbox i", id: "i.id", at: "i.processed_at", order: "i.processed_at, i.id", weight: "1", closedMonths: true,
		eligible: `i.status IN ('processed', 'ignored') AND i.body_archive IS NULL AND i.processed_at < $1
			AND NOT ` + openDivergence("d.inbox_id = i.id") + ` AND NOT ` + openDivergence("d.ledger_inbox_id = i.id"),
	},
	Outbox: {
		from: "outbox o", id: "o.id", at: "o.created_at", order: "o.id", weight: "1", unlocked: true,
		// The id bound stops the pick's walk along the primary key at the
		// first event young enough to stay: there is no index on
		// created_at (the outbox takes every commit's events), and
		// without it a run finding nothing would read the whole outbox.
		eligible: `o.created_at < $1 AND o.id < (SELECT coalesce(min(y.id), 9223372036854775807) FROM outbox y WHERE y.created_at >= $1)
			AND NOT EXISTS (SELECT 1 FROM webhook_endpoints e WHERE (e.after_xid, e.after_id) < (o.xid, o.id))
			AND NOT EXISTS (SELECT 1 FROM webhook_replays p WHERE p.event_id = o.id)`,
	},
	Statements: {
		from: "reconciliation_runs r", id: "r.id", at: "r.window_from", order: "r.id", weight: "greatest(r.lines, 1)", closedMonths: true,
		eligible: finishedRun + ` AND (EXISTS (SELECT 1 FROM reconciliation_pages p WHERE p.run_id = r.id)
			OR EXISTS (SELECT 1 FROM reconciliation_files f WHERE f.run_id = r.id))`,
	},
	ReconciliationLines: {
		from: "reconciliation_runs r", id: "r.id", at: "r.window_from", order: "r.id", weight: "greatest(r.lines, 1)", closedMonths: true,
		eligible: finishedRun + ` AND EXISTS (SELECT 1 FROM reconciliation_lines l WHERE l.run_id = r.id)`,
	},
	WebhookAttempts: {
		from: "webhook_attempts a", id: "a.id", at: "a.at", order: "a.at, a.id", weight: "1",
		eligible: `a.at < $1`,
	},
}

// Horizon is the instant before which kind k's rows may go: now less the
// kind's age and, for a kind bound to closed months, no later than the
// end of the last closed month (in loc). ok is false when nothing of the
// kind may go: its age is 0 (kept forever), or it is bound to closed
// months and none is closed.
func Horizon(k Kind, age time.Duration, now time.Time, lastClosed *time.Time, loc *time.Location) (horizon time.Time, ok bool) {
	if age <= 0 {
		return time.Time{}, false
	}
	horizon = now.Add(-age)
	if !rules[k].closedMonths {
		return horizon, true
	}
	if lastClosed == nil {
		return time.Time{}, false
	}
	closedUntil := time.Date(lastClosed.Year(), lastClosed.Month()+1, 1, 0, 0, 0, 0, loc)
	if closedUntil.Before(horizon) {
		horizon = closedUntil
	}
	return horizon, true
}
