package archive

import (
	"bufio"
	"compress/gzip"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
)

// Applied deliveries of a closed month older than the age lose their
// bodies and headers to one archive file of their month; the rows stay,
// with their keys, events and statuses, and name the archive.
func TestInboxBodiesAreArchivedThenPurgedRowsAndKeysStay(t *testing.T) {
	t.Parallel()
	a, db := setup(t)
	closeThrough(t, db, "2027-03")
	jan := []int64{inboxRow(t, db, "j1", "processed", at("2027-01-10")), inboxRow(t, db, "j2", "ignored", at("2027-01-31"))}
	feb := inboxRow(t, db, "f1", "processed", at("2027-02-03"))
	s := run(t, a)
	if len(s.Files) != 2 || s.Files[0].Month != "2027-01" || s.Files[0].Rows != 2 || s.Files[1].Month != "2027-02" || s.Files[1].Rows != 1 {
		t.Fatalf("files %+v, want 2027-01 with 2 rows and 2027-02 with 1", s.Files)
	}
	if rows := verified(t, a, s); rows != 3 {
		t.Fatalf("%d rows archived, want 3", rows)
	}
	for _, id := range append(jan, feb) {
		if bodyKept(t, db, id) {
			t.Errorf("inbox row %d kept its body", id)
		}
	}
	var left struct {
		Rows    int64 `db:"rows"`
		Keys    int64 `db:"keys"`
		Headers int64 `db:"headers"`
		Named   int64 `db:"named"`
	}
	db.Get(&left, `SELECT count(*) AS rows, count(DISTINCT (endpoint, event_type, event_id)) AS keys,
		count(*) FILTER (WHERE headers <> '{}') AS headers, count(body_archive) AS named FROM inbox WHERE event ? 'Amount'`)
	if left.Rows != 3 || left.Keys != 3 || left.Headers != 0 || left.Named != 3 {
		t.Fatalf("inbox after the purge: %+v, want 3 rows, 3 keys, no headers, 3 naming their archive", left)
	}
	// The archive holds what was purged, exactly.
	rows := readRows(t, filepath.Join(a.Config.Dir, s.Files[0].FileName))
	if rows[0]["event_id"] != "j1" || rows[0]["body"] != "eyJib2R5IjoiajEifQ==" || rows[0]["headers"].(map[string]any)["X-Sig"] != "abc" {
		t.Fatalf("archived row %v", rows[0])
	}
	if again := run(t, a); len(again.Files) != 0 {
		t.Fatalf("a second run archived %+v again", again.Files)
	}
}

// A body shared by the events of one delivery (inbox_bodies) is written
// once per file and deleted once none of its rows keeps it.
func TestSharedBodyArchivedOnceAndDeletedWithItsLastRow(t *testing.T) {
	t.Parallel()
	a, db := setup(t)
	closeThrough(t, db, "2027-03")
	var body int64
	db.Get(&body, `INSERT INTO inbox_bodies (body, headers) VALUES ('shared-callback', '{"X-Sig": "s"}') RETURNING id`)
	ids := []int64{inboxRow(t, db, "s1", "processed", at("2027-01-10")), inboxRow(t, db, "s2", "processed", at("2027-01-10"))}
	db.MustExec(`UPDATE inbox SET body = NULL, body_id = $1, headers = '{}' WHERE id = ANY($2)`, body, pq.Array(ids))
	s := run(t, a)
	rows := readRows(t, filepath.Join(a.Config.Dir, s.Files[0].FileName))
	if len(rows) != 2 || rows[0]["body"] != "c2hhcmVkLWNhbGxiYWNr" || rows[1]["body"] != nil || rows[0]["headers"].(map[string]any)["X-Sig"] != "s" {
		t.Fatalf("archived rows %v, want the shared body once, with the first row", rows)
	}
	var n int
	db.Get(&n, `SELECT count(*) FROM inbox_bodies`)
	if n != 0 {
		t.Fatalf("%d shared bodies left", n)
	}
}

// The rule's exclusions for the inbox, each on its own row beside one
// that goes: a delivery not applied, one an open divergence names (as
// the webhook's or as reconciliation's), one processed in an open month,
// one younger than the age.
func TestInboxBodiesKeptWhileSomethingNeedsThem(t *testing.T) {
	t.Parallel()
	a, db := setup(t)
	closeThrough(t, db, "2027-02")
	gone := inboxRow(t, db, "gone", "processed", at("2027-01-10"))
	kept := map[string]int64{
		"pending":                    inboxRow(t, db, "pending", "pending", nil),
		"parked":                     inboxRow(t, db, "parked", "parked", nil),
		"set aside":                  inboxRow(t, db, "divergent", "divergent", at("2027-01-10")),
		"open divergence (webhook)":  inboxRow(t, db, "open-w", "processed", at("2027-01-10")),
		"open divergence (ledger's)": inboxRow(t, db, "open-l", "processed", at("2027-01-10")),
		"open month":                 inboxRow(t, db, "march", "processed", at("2027-03-02")),
	}
	db.MustExec(`INSERT INTO divergences (inbox_id, charge_id, reason, detail) VALUES ($1, 'c1', 'amount_mismatch', '')`, kept["open divergence (webhook)"])
	db.MustExec(`INSERT INTO divergences (source, reconciliation_key, endpoint, reason, detail, ledger_inbox_id)
		VALUES ('reconciliation', 'rk1', 'hodle', 'fee_mismatch', '', $1)`, kept["open divergence (ledger's)"])
	// Resolved divergences hold nothing back.
	resolved := inboxRow(t, db, "resolved", "processed", at("2027-01-11"))
	db.MustExec(`INSERT INTO divergences (inbox_id, charge_id, reason, detail, status, resolved_at, resolution_note)
		VALUES ($1, 'c2', 'amount_mismatch', '', 'resolved', now(), 'ok')`, resolved)
	run(t, a)
	if bodyKept(t, db, gone) || bodyKept(t, db, resolved) {
		t.Fatal("the applied deliveries of a closed month kept their bodies")
	}
	for why, id := range kept {
		if !bodyKept(t, db, id) {
			t.Errorf("%s: body purged", why)
		}
	}
	// Younger than the age (90 days before June 15 is March 17), though
	// closed: kept.
	closeThrough2(t, db, "2027-04")
	young := inboxRow(t, db, "young", "processed", at("2027-04-01"))
	run(t, a)
	if !bodyKept(t, db, young) {
		t.Error("younger than the age: body purged")
	}
	if bodyKept(t, db, kept["open month"]) {
		t.Error("March, closed since and older than the age: body kept")
	}
}

// closeThrough2 closes the months after the last closed one to last.
func closeThrough2(t *testing.T, db *sqlx.DB, last string) {
	t.Helper()
	db.MustExec(`INSERT INTO closed_periods (month, closed_by)
		SELECT m::date, 'test' FROM generate_series((SELECT max(month) FROM closed_periods) + interval '1 month', ($1 || '-01')::date, interval '1 month') m`, last)
}

// readRows reads an archive file's rows (between its header and trailer).
func readRows(t *testing.T, path string) []map[string]any {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(gz)
	sc.Buffer(nil, 1<<20)
	var rows []map[string]any
	for sc.Scan() {
		var row map[string]any
		if err := json.Unmarshal(sc.Bytes(), &row); err != nil {
			t.Fatal(err)
		}
		rows = append(rows, row)
	}
	return rows[1 : len(rows)-1]
}
