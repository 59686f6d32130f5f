package main

import (
	"strconv"
	"strings"
	"testing"

	"github.com/jmoiron/sqlx"

	"github.com/razao/razao/internal/pgtest"
)

// givenUp stores a delivery that gave up after its attempts, as the
// workers leave it: divergent in the inbox, with an open processing_failed
// divergence. It returns the delivery's id.
func givenUp(t *testing.T, db *sqlx.DB, eventID string) int64 {
	t.Helper()
	var id int64
	if err := db.Get(&id, `INSERT INTO inbox (delivery_key, endpoint, scheme, merchant, event_type, event_id, kind, event, body, status, attempts, processed_at)
		VALUES ('hodle|PAYMENT_RECEIVED|' || $1, 'hodle', 'hodle', 'loja-1', 'PAYMENT_RECEIVED', $1, 'paid', '{}', '\x00', 'divergent', 10, now())
		RETURNING id`, eventID); err != nil {
		t.Fatal(err)
	}
	db.MustExec(`INSERT INTO divergences (inbox_id, reason, detail) VALUES ($1, 'processing_failed', 'gave up after 10 attempts: outage')`, id)
	return id
}

// razao inbox retry resolves the delivery's divergence, so it takes the
// note finance's resolution takes, refused the same way: without one (or
// with one that is blank, too long or not text) nothing changes. Without
// this, a retry would requeue without any note, resolving the divergence
// behind finance's back.
func TestInboxRetryRefusesAMissingOrInvalidNoteLikeResolve(t *testing.T) {
	t.Parallel()
	db, url := pgtest.NewWithURL(t)
	id := givenUp(t, db, "evt-1")
	idText := strconv.FormatInt(id, 10)
	for name, args := range map[string][]string{
		"no note":        {"inbox", "retry", "-database-url", url, idText},
		"blank note":     {"inbox", "retry", "-database-url", url, "-note", "  \t ", idText},
		"overlong note":  {"inbox", "retry", "-database-url", url, "-note", strings.Repeat("é", 2001), idText},
		"not UTF-8 text": {"inbox", "retry", "-database-url", url, "-note", "\xff", idText},
	} {
		code, out := runCmd(t, args...)
		if code == 0 || !strings.Contains(out, "invalid resolution note") {
			t.Errorf("%s: exit %d\n%s", name, code, out)
		}
	}
	var status, divStatus string
	var attempts int
	if err := db.QueryRow(`SELECT i.status, i.attempts, d.status FROM inbox i JOIN divergences d ON d.inbox_id = i.id WHERE i.id = $1`, id).
		Scan(&status, &attempts, &divStatus); err != nil {
		t.Fatal(err)
	}
	if status != "divergent" || attempts != 10 || divStatus != "open" {
		t.Fatalf("a refused retry changed the delivery: %s, %d attempts, divergence %s", status, attempts, divStatus)
	}

	code, out := runCmd(t, "inbox", "retry", "-database-url", url, "-note", "  PSP fora do ar das 10h às 11h; reprocessar  ", idText)
	if code != 0 || !strings.Contains(out, "is due again") {
		t.Fatalf("retry with a note: exit %d\n%s", code, out)
	}
	var note string
	if err := db.QueryRow(`SELECT i.status, i.attempts, d.status, d.resolution_note FROM inbox i JOIN divergences d ON d.inbox_id = i.id WHERE i.id = $1`, id).
		Scan(&status, &attempts, &divStatus, &note); err != nil {
		t.Fatal(err)
	}
	if status != "pending" || attempts != 0 || divStatus != "resolved" || note != "PSP fora do ar das 10h às 11h; reprocessar" {
		t.Fatalf("retried: %s, %d attempts, divergence %s with note %q", status, attempts, divStatus, note)
	}
	// Once requeued its divergence is resolved: a second retry is refused
	// as a second resolution is.
	if code, out := runCmd(t, "inbox", "retry", "-database-url", url, "-note", "again", idText); code == 0 || !strings.Contains(out, "already resolved") {
		t.Fatalf("second retry: exit %d\n%s", code, out)
	}
}
