package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/razao/razao/auth"
	"github.com/razao/razao/internal/pgtest"
)

// localCluster is a throwaway PostgreSQL of scripts/localpg.sh with fsync
// on, as a production server runs (pgtest.StartCluster's clusters write
// no full pages, which an online base backup refuses).
type localCluster struct {
	dir  string
	port int
	url  string
}

func (c *localCluster) localpg(t *testing.T, verb string) string {
	t.Helper()
	cmd := exec.Command("bash", filepath.Join(pgtest.ProjectRoot(), "scripts", "localpg.sh"), verb)
	cmd.Env = append(os.Environ(), "RAZAO_PGDATA="+c.dir, fmt.Sprintf("RAZAO_PGPORT=%d", c.port), "RAZAO_PGDB=razao", "RAZAO_PG_FAST=0")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("localpg.sh %s: %v\n%s", verb, err, stderr.String())
	}
	return strings.TrimSpace(string(out))
}

func (c *localCluster) start(t *testing.T) *sqlx.DB {
	t.Helper()
	c.url = c.localpg(t, "start")
	db, err := sqlx.Open("postgres", c.url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// The backup procedure of docs/operations.md ("Backup and restore"), run: a cluster
// archiving its WAL takes deliveries; a base backup is taken while they
// flow; more are answered; then, past a target time, more again. The base
// backup restored into a new cluster and recovered to the target time
// holds every delivery answered 2xx before it, none answered after the
// WAL it stopped at, and razao verify finds its ledger clean.
func TestPointInTimeRestoreKeepsEveryAnsweredDelivery(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	root, err := os.MkdirTemp("", "razao-pitr-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	os.Chmod(root, 0o755)
	archive := filepath.Join(root, "archive")
	os.Mkdir(archive, 0o777)
	os.Chmod(archive, 0o777) // the cluster's owner writes it
	ports := [2]int{}
	for i := range ports {
		if ports[i], err = pgtest.FreePort(); err != nil {
			t.Fatal(err)
		}
	}
	primary := &localCluster{dir: filepath.Join(root, "primary"), port: ports[0]}
	db := primary.start(t)
	t.Cleanup(func() { primary.localpg(t, "stop") })
	// Archiving, as docs/operations.md says: archive_mode needs a restart.
	for _, set := range []string{
		"ALTER SYSTEM SET archive_mode = 'on'",
		fmt.Sprintf("ALTER SYSTEM SET archive_command = 'test ! -f %[1]s/%%f && cp %%p %[1]s/%%f'", archive),
	} {
		db.MustExec(set)
	}
	db.Close()
	primary.localpg(t, "stop")
	db = primary.start(t)

	base, _, _, stop := startServer(t, func(cfg *serveConfig) { cfg.db.url = primary.url })
	token, _, err := auth.Create(ctx, db, "pitr", []auth.Scope{auth.Admin})
	if err != nil {
		t.Fatal(err)
	}
	pay := func(from, to int) {
		t.Helper()
		for i := from; i < to; i++ {
			id := fmt.Sprintf("pitr-%03d", i)
			if code, m := apiCall(t, token, "POST", base+"/v1/charges", fmt.Sprintf(`{"id":%q,"amount":%d}`, id, 1000+i)); code != 201 {
				t.Fatalf("register %s: %d %v", id, code, m)
			}
			at := time.Now().Format(time.RFC3339)
			body := fmt.Sprintf(`{"type":"charge.paid","timestamp":%q,"data":{"charge_id":%q,"amount":%d,"occurred_at":%q}}`, at, id, 1000+i, at)
			resp := signedStandard(t, base, "msg-"+id, []byte(body))
			resp.Body.Close()
			if resp.StatusCode != 200 {
				t.Fatalf("delivery %s: %d", id, resp.StatusCode)
			}
		}
	}
	pay(0, 15)
	backup := filepath.Join(root, "backup")
	os.Mkdir(backup, 0o700)
	var st syscall.Stat_t
	syscall.Stat(primary.dir, &st)
	os.Chown(backup, int(st.Uid), int(st.Gid))
	if err := pgtest.AsOwner(primary.dir, "pg_basebackup", "-h", "127.0.0.1", "-p", fmt.Sprint(primary.port), "-U", "postgres",
		"-D", backup, "-X", "none", "--checkpoint=fast", "--no-sync"); err != nil {
		t.Fatal(err)
	}
	pay(15, 30)
	// The target: after the 30th answer, before the 31st request.
	time.Sleep(20 * time.Millisecond)
	target := time.Now()
	time.Sleep(20 * time.Millisecond)
	pay(30, 40)
	stop()
	// The last segment is archived once it is switched out.
	var segment string
	if err := db.Get(&segment, `SELECT pg_walfile_name(pg_switch_wal())`); err != nil {
		t.Fatal(err)
	}
	for range 600 {
		var last string
		db.Get(&last, `SELECT coalesce(last_archived_wal, '') FROM pg_stat_archiver`)
		if last >= segment {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	db.Close()
	primary.localpg(t, "stop")

	// The restore: the base backup in a new data directory, told where
	// the archive is and when to stop.
	restored := &localCluster{dir: backup, port: ports[1]}
	conf := fmt.Sprintf("restore_command = 'cp %s/%%f %%p'\nrecovery_target_time = '%s'\nrecovery_target_action = 'promote'\narchive_mode = 'off'\n",
		archive, target.UTC().Format("2006-01-02 15:04:05.000000+00"))
	f, err := os.OpenFile(filepath.Join(backup, "postgresql.auto.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(conf)
	f.Close()
	os.WriteFile(filepath.Join(backup, "recovery.signal"), nil, 0o600)
	os.Chown(filepath.Join(backup, "recovery.signal"), int(st.Uid), int(st.Gid))
	after := restored.start(t)
	t.Cleanup(func() { restored.localpg(t, "stop") })
	for range 600 {
		var recovering bool
		if after.Get(&recovering, `SELECT pg_is_in_recovery()`) == nil && !recovering {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}

	var got []string
	if err := after.Select(&got, `SELECT event_id FROM inbox ORDER BY event_id`); err != nil {
		t.Fatal(err)
	}
	var want []string
	for i := range 30 {
		want = append(want, fmt.Sprintf("msg-pitr-%03d", i))
	}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("restored to %s, the inbox holds %v; want the 30 deliveries answered before it and none after", target.Format(time.RFC3339Nano), got)
	}
	if code, out := runCmd(t, "verify", "-database-url", restored.url); code != 0 {
		t.Fatalf("razao verify after the restore: exit %d\n%s", code, out)
	}
}
