package archive

import (
	"testing"
	"time"

	"github.com/jmoiron/sqlx"
)

// count runs a count query.
func count(t *testing.T, db *sqlx.DB, query string, args ...any) int64 {
	t.Helper()
	var n int64
	if err := db.Get(&n, query, args...); err != nil {
		t.Fatal(err)
	}
	return n
}

// Outbox events older than the age go once every webhook endpoint has
// delivered them; one behind an endpoint's cursor, or asked for by a
// replay, stays however old. Months do not hold events back.
func TestOutboxEventsGoOnceDeliveredToEveryEndpoint(t *testing.T) {
	t.Parallel()
	a, db := setup(t)
	var ids []int64
	if err := db.Select(&ids, `INSERT INTO outbox (topic, payload, created_at)
		SELECT 'charge.paid', jsonb_build_object('n', g), '2027-01-10'::timestamptz + g * interval '1 hour' FROM generate_series(1, 4) g
		RETURNING id`); err != nil {
		t.Fatal(err)
	}
	// An endpoint whose cursor has passed the second event only, and a
	// replay of the first asked of it.
	var ep int64
	db.Get(&ep, `INSERT INTO webhook_endpoints (url, topics, secret, after_xid, after_id)
		SELECT 'https://app.example/hook', '{}', '\x00', xid, id FROM outbox WHERE id = $1 RETURNING id`, ids[1])
	db.MustExec(`INSERT INTO webhook_replays (endpoint_id, event_id, event_xid) SELECT $1, id, xid FROM outbox WHERE id = $2`, ep, ids[0])
	s := run(t, a)
	if len(s.Files) != 1 || s.Files[0].Kind != Outbox || s.Files[0].Rows != 1 || s.Files[0].Month != "2027-01" {
		t.Fatalf("files %+v, want one outbox file of 2027-01 with the second event", s.Files)
	}
	verified(t, a, s)
	if n := count(t, db, `SELECT count(*) FROM outbox WHERE id = $1`, ids[1]); n != 0 {
		t.Fatal("the delivered event is still in the outbox")
	}
	if n := count(t, db, `SELECT count(*) FROM outbox WHERE id = ANY(ARRAY[$1, $2, $3]::bigint[])`, ids[0], ids[2], ids[3]); n != 3 {
		t.Fatalf("%d of the replayed and undelivered events left, want 3", n)
	}
}

// run inserts a reconciliation run finished at finished with its pages,
// file chunks and lines, and returns its id.
func reconRun(t *testing.T, db *sqlx.DB, status, from, finished string) int64 {
	t.Helper()
	var id int64
	if err := db.Get(&id, `INSERT INTO reconciliation_runs (endpoint, source, window_from, window_to, final, claimed_by, lease_until,
		status, lines, started_at, finished_at)
		VALUES ('hodle', 'csv', $1::timestamptz, $1::timestamptz + interval '1 day', true, 'test', now(), $2, 2, $3, $3) RETURNING id`,
		from, status, finished); err != nil {
		t.Fatal(err)
	}
	db.MustExec(`INSERT INTO reconciliation_pages (run_id, pass, page, total, items, page_count, page_size, bytes, sha256)
		VALUES ($1, 1, 1, 2, 2, 1, 100, 300, sha256('p'))`, id)
	db.MustExec(`INSERT INTO reconciliation_files (run_id, chunk, data) VALUES ($1, 0, 'id,amount'), ($1, 1, 'x,1')`, id)
	db.MustExec(`INSERT INTO reconciliation_lines (run_id, line, kind, event_id, amount, outcome) VALUES ($1, 1, 'paid', 'e1', 100, 'matched'),
		($1, 2, 'paid', 'e2', 200, 'matched')`, id)
	return id
}

// Statement pages, kept files and lines of a finished run of a closed
// month go, each kind to its own file; the run stays. A run still
// running, a failed one, one with an open divergence, and one of an open
// month keep theirs.
func TestStatementsAndLinesGoWithTheirRunFinished(t *testing.T) {
	t.Parallel()
	a, db := setup(t)
	a.Config.Ages = map[Kind]time.Duration{Statements: 90 * 24 * time.Hour, ReconciliationLines: 90 * 24 * time.Hour}
	closeThrough(t, db, "2027-02")
	gone := reconRun(t, db, "succeeded", "2027-01-10", "2027-01-11 10:00")
	kept := map[string]int64{
		"running":         reconRun(t, db, "running", "2027-01-12", "2027-01-13 10:00"),
		"failed":          reconRun(t, db, "failed", "2027-01-14", "2027-01-15 10:00"),
		"open divergence": reconRun(t, db, "succeeded", "2027-01-16", "2027-01-17 10:00"),
		"open month":      reconRun(t, db, "succeeded", "2027-03-01 12:00-03", "2027-03-02 14:00-03"),
	}
	db.MustExec(`UPDATE reconciliation_runs SET finished_at = NULL WHERE id = $1`, kept["running"])
	db.MustExec(`INSERT INTO divergences (source, reconciliation_key, endpoint, reason, detail, run_id, run_line)
		VALUES ('reconciliation', 'rk', 'hodle', 'phantom', '', $1, 1)`, kept["open divergence"])
	s := run(t, a)
	kinds := map[Kind]int64{}
	for _, f := range s.Files {
		kinds[f.Kind] += f.Rows
	}
	if len(s.Files) != 2 || kinds[Statements] != 3 || kinds[ReconciliationLines] != 2 {
		t.Fatalf("files %+v, want statements (a page, 2 chunks) and lines (2)", s.Files)
	}
	verified(t, a, s)
	left := func(id int64) int64 {
		return count(t, db, `SELECT (SELECT count(*) FROM reconciliation_pages WHERE run_id = $1) + (SELECT count(*) FROM reconciliation_files WHERE run_id = $1)
			+ (SELECT count(*) FROM reconciliation_lines WHERE run_id = $1)`, id)
	}
	if n := left(gone); n != 0 {
		t.Fatalf("%d rows of the finished run left", n)
	}
	if n := count(t, db, `SELECT count(*) FROM reconciliation_runs WHERE id = $1`, gone); n != 1 {
		t.Fatal("the run itself was deleted")
	}
	for why, id := range kept {
		if n := left(id); n != 5 {
			t.Errorf("%s: %d rows left, want 5", why, n)
		}
	}
}

// The webhook attempts log goes after its age, through an archive: what
// outgoing's own purge did without one.
func TestWebhookAttemptsArchivedAfterTheirAge(t *testing.T) {
	t.Parallel()
	a, db := setup(t)
	var ep int64
	db.Get(&ep, `INSERT INTO webhook_endpoints (url, topics, secret, after_xid, after_id) VALUES ('https://app.example/hook', '{}', '\x00', '0', 0) RETURNING id`)
	db.MustExec(`INSERT INTO webhook_attempts (endpoint_id, event_id, topic, attempt, replay, status, latency_ms, at)
		VALUES ($1, 1, 'charge.paid', 1, false, 200, 5, $2::timestamptz - interval '31 days'),
		       ($1, 2, 'charge.paid', 1, false, 200, 5, $2::timestamptz - interval '29 days')`, ep, now)
	s := run(t, a)
	if len(s.Files) != 1 || s.Files[0].Kind != WebhookAttempts || s.Files[0].Rows != 1 {
		t.Fatalf("files %+v, want one attempts file with one row", s.Files)
	}
	verified(t, a, s)
	var left []int64
	db.Select(&left, `SELECT event_id FROM webhook_attempts`)
	if len(left) != 1 || left[0] != 2 {
		t.Fatalf("attempts left for events %v, want [2]", left)
	}
}

// An age of 0 keeps a kind forever, whatever its rows' age.
func TestAgeZeroKeepsAKindForever(t *testing.T) {
	t.Parallel()
	a, db := setup(t)
	a.Config.Ages = map[Kind]time.Duration{WebhookAttempts: 0}
	var ep int64
	db.Get(&ep, `INSERT INTO webhook_endpoints (url, topics, secret, after_xid, after_id) VALUES ('https://app.example/hook', '{}', '\x00', '0', 0) RETURNING id`)
	db.MustExec(`INSERT INTO webhook_attempts (endpoint_id, event_id, topic, attempt, replay, status, latency_ms, at)
		VALUES ($1, 1, 'charge.paid', 1, false, 200, 5, '2001-01-01')`, ep)
	if s := run(t, a); len(s.Files) != 0 {
		t.Fatalf("files %+v with age 0", s.Files)
	}
}

// A batch is at most batch_rows rows: a month of more is several files,
// each whole, each recorded.
func TestBatchesSplitAMonthIntoSeveralFiles(t *testing.T) {
	t.Parallel()
	a, db := setup(t)
	a.Config.BatchRows = 2
	closeThrough(t, db, "2027-01")
	for _, id := range []string{"b1", "b2", "b3", "b4", "b5"} {
		inboxRow(t, db, id, "processed", at("2027-01-10"))
	}
	s := run(t, a)
	if len(s.Files) != 3 || verified(t, a, s) != 5 {
		t.Fatalf("files %+v, want 3 holding 5 rows", s.Files)
	}
	recs, err := List(t.Context(), db)
	if err != nil || len(recs) != 3 {
		t.Fatalf("records %+v %v", recs, err)
	}
}
