package console

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/razao/razao/internal/pgtest"
)

// The store keeps a session under its cookie's digest, live until it
// expires, and forgets it when swept after expiry or removed.
func TestSessionStoreKeepsASessionUntilItExpiresOrIsRemoved(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	store := sessionStore{db: db}
	now := afterSeptember
	kept, swept, removed := newSecret(), newSecret(), newSecret()
	for i, p := range []string{kept, swept, removed} {
		expires := now.Add(SessionTTL)
		if p == swept {
			expires = now.Add(time.Minute)
		}
		if err := store.create(ctx, p, int64(i+1), now, expires); err != nil {
			t.Fatal(err)
		}
	}
	if id, err := store.liveToken(ctx, kept, now); err != nil || id != 1 {
		t.Fatalf("live session: token %d, %v; want 1", id, err)
	}
	if _, err := store.liveToken(ctx, swept, now.Add(time.Minute)); !errors.Is(err, errSessionNotStored) {
		t.Errorf("session at its expiry: %v, want errSessionNotStored", err)
	}
	if _, err := store.liveToken(ctx, newSecret(), now); !errors.Is(err, errSessionNotStored) {
		t.Errorf("cookie never stored: %v, want errSessionNotStored", err)
	}
	if err := store.remove(ctx, removed); err != nil {
		t.Fatal(err)
	}
	if err := store.sweepExpired(ctx, now.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	var left []int64
	if err := db.SelectContext(ctx, &left, `SELECT token_id FROM console_sessions ORDER BY token_id`); err != nil {
		t.Fatal(err)
	}
	if len(left) != 1 || left[0] != 1 {
		t.Errorf("sessions left %v, want the live one (token 1) only", left)
	}
	if id, err := store.liveToken(ctx, kept, now.Add(time.Minute)); err != nil || id != 1 {
		t.Errorf("live session after the sweep: token %d, %v; want 1", id, err)
	}
}
