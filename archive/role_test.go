package archive

import (
	"testing"
	"time"

	"github.com/razao/razao/internal/pgtest"
)

// razao serve runs the archive as the service role of docs/razao-role.sql:
// its grants let it archive and purge every kind, and nothing more.
func TestServiceRoleArchivesAndPurgesEveryKind(t *testing.T) {
	t.Parallel()
	owner, url := pgtest.NewWithURL(t)
	r := pgtest.NewRoles(t, owner, url)
	svc := r.Connect(r.Service())
	closeThrough(t, owner, "2027-02")
	var shared int64
	owner.Get(&shared, `INSERT INTO inbox_bodies (body) VALUES ('shared') RETURNING id`)
	id := inboxRow(t, owner, "r1", "processed", at("2027-01-10"))
	owner.MustExec(`UPDATE inbox SET body = NULL, body_id = $1 WHERE id = $2`, shared, id)
	inboxRow(t, owner, "r2", "processed", at("2027-01-10"))
	owner.MustExec(`INSERT INTO outbox (topic, payload, created_at) VALUES ('charge.paid', '{}', '2027-01-10')`)
	reconRun(t, owner, "succeeded", "2027-01-10", "2027-01-11 10:00")
	var ep int64
	owner.Get(&ep, `INSERT INTO webhook_endpoints (url, topics, secret, after_xid, after_id) VALUES ('https://app.example/h', '{}', '\x00', pg_current_xact_id(), 1 << 62) RETURNING id`)
	owner.MustExec(`INSERT INTO webhook_attempts (endpoint_id, event_id, topic, attempt, replay, status, latency_ms, at)
		VALUES ($1, 1, 'charge.paid', 1, false, 200, 5, '2027-01-10')`, ep)
	a := newArchiver(t, svc)
	a.Config.Ages = map[Kind]time.Duration{Statements: 90 * 24 * time.Hour, ReconciliationLines: 90 * 24 * time.Hour}
	s := run(t, a)
	got := map[Kind]bool{}
	for _, f := range s.Files {
		got[f.Kind] = true
	}
	for _, k := range Kinds {
		if !got[k] {
			t.Errorf("%s: nothing archived as the service role (files %+v)", k, s.Files)
		}
	}
	if n := count(t, owner, `SELECT count(*) FROM inbox_bodies`); n != 0 {
		t.Errorf("%d shared bodies left", n)
	}
	// The outbox's purge moved its watermark (sql/0058), which the
	// service role may not write itself.
	if n := count(t, owner, `SELECT count(*) FROM outbox_purged_through WHERE id > 0 AND created_through = '2027-01-10'`); n != 1 {
		t.Error("the purge of the outbox as the service role did not move its watermark")
	}
}
