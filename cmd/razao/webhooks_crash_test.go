//go:build linux

package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/razao/razao/events"
	"github.com/razao/razao/internal/pgtest"
	"github.com/razao/razao/outgoing"
)

// TestWebhooksCrashChild is `razao serve` in a child process of
// TestWebhooksSurviveKill9, which kills it with SIGKILL; run alone it
// skips.
func TestWebhooksCrashChild(t *testing.T) {
	dbURL := os.Getenv("RAZAO_WEBHOOKS_CRASH_CHILD")
	if dbURL == "" {
		t.Skip("the child process of TestWebhooksSurviveKill9")
	}
	os.Exit(run(context.Background(), []string{"serve", "-database-url", dbURL, "-listen", "127.0.0.1:0", "-admin-listen", "off"},
		os.Stdout, os.Stderr))
}

// razao serve is killed with SIGKILL while it delivers to two endpoints;
// once started again, every event reaches both at least once, and the
// events as each endpoint first received them are in the outbox's order.
func TestWebhooksSurviveKill9(t *testing.T) {
	t.Parallel()
	db, dbURL := pgtest.NewWithURL(t)
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "razao.yaml")
	// A short attempt timeout makes the lease the killed process leaves
	// behind run out in 9 s (3 × (timeout + 1 s)).
	if err := os.WriteFile(cfgPath, []byte("webhooks:\n  allow_private_targets: true\n  allow_http_targets: true\n  timeout: 2s\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	svc := outgoing.Service{DB: db, Config: outgoing.Config{AllowPrivateTargets: true, AllowHTTPTargets: true}}
	var rcvs []*crashReceiver
	for range 2 {
		rcv := &crashReceiver{}
		srv := httptest.NewServer(rcv)
		t.Cleanup(srv.Close)
		ep, err := svc.Create(context.Background(), outgoing.NewEndpoint{URL: srv.URL})
		if err != nil {
			t.Fatal(err)
		}
		if rcv.wh, err = standardwebhooks.NewWebhook(ep.Secret); err != nil {
			t.Fatal(err)
		}
		rcvs = append(rcvs, rcv)
	}
	const total = 400
	for i := 0; i < total; i += 10 {
		tx := db.MustBeginTx(context.Background(), nil)
		var ds []events.Draft
		for j := range 10 {
			ds = append(ds, events.Draft{Topic: events.TopicChargePaid, ChargeID: fmt.Sprintf("c%d", i+j)})
		}
		if err := events.AppendAll(context.Background(), tx, ds...); err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	var want []int64
	if err := db.Select(&want, `SELECT id FROM outbox ORDER BY xid, id`); err != nil || len(want) != total {
		t.Fatalf("outbox: %d events, %v", len(want), err)
	}

	var logs bytes.Buffer
	var logMu sync.Mutex
	start := func() *exec.Cmd {
		cmd := exec.Command(os.Args[0], "-test.run=^TestWebhooksCrashChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), "RAZAO_WEBHOOKS_CRASH_CHILD="+dbURL, "RAZAO_CONFIG="+cfgPath)
		w := &lockedWriter{mu: &logMu, w: &logs}
		cmd.Stdout, cmd.Stderr = w, w
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		return cmd
	}
	waitUntil := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(2 * time.Minute)
		for !cond() {
			if time.Now().After(deadline) {
				logMu.Lock()
				defer logMu.Unlock()
				t.Fatalf("%s: not after 2 minutes; received %d and %d; razao's log:\n%s", what,
					len(rcvs[0].snapshot()), len(rcvs[1].snapshot()), logs.String())
			}
			time.Sleep(10 * time.Millisecond)
		}
	}

	first := start()
	waitUntil("deliveries under way", func() bool { return len(rcvs[0].snapshot()) >= 50 && len(rcvs[1].snapshot()) >= 50 })
	if err := first.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	first.Wait()
	atKill := []int{len(rcvs[0].snapshot()), len(rcvs[1].snapshot())}
	if atKill[0] >= total && atKill[1] >= total {
		t.Fatalf("every event was delivered before the kill (%v): nothing was tested", atKill)
	}

	start()
	waitUntil("every event at every endpoint", func() bool {
		return len(firstSeen(rcvs[0].snapshot())) >= total && len(firstSeen(rcvs[1].snapshot())) >= total
	})
	for i, rcv := range rcvs {
		got := firstSeen(rcv.snapshot())
		for j := range want {
			if got[j] != want[j] {
				t.Fatalf("endpoint %d: event %d first received at position %d, want %d there", i+1, got[j], j, want[j])
			}
		}
		if rcv.forged != 0 {
			t.Errorf("endpoint %d: %d deliveries did not verify", i+1, rcv.forged)
		}
		t.Logf("endpoint %d: %d received at the kill, %d requests in all for %d events (%d sent again after the restart)",
			i+1, atKill[i], len(rcv.snapshot()), total, len(rcv.snapshot())-total)
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
