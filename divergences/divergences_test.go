package divergences_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/razao/razao/divergences"
	"github.com/razao/razao/internal/cursor"
	"github.com/razao/razao/internal/ledgertest"
)

// addDivergences records n divergences as the webhook front would, with
// reasons cycling through a few.
func addDivergences(t *testing.T, db *sqlx.DB, n int) {
	t.Helper()
	db.MustExec(`INSERT INTO divergences (charge_id, reason, detail)
		SELECT 'c' || g, (ARRAY['unknown_charge', 'amount_mismatch', 'refund_exceeds_paid'])[1 + g % 3], 'detail ' || g
		FROM generate_series(1, $1) g`, n)
}

func ids(ds []divergences.Divergence) []int64 {
	out := []int64{}
	for _, d := range ds {
		out = append(out, d.ID)
	}
	return out
}

func TestDivergencesListAndResolve(t *testing.T) {
	t.Parallel()
	_, db := ledgertest.New(t)
	ctx := context.Background()
	addDivergences(t, db, 5)
	now := time.Date(2026, 9, 2, 14, 0, 0, 0, time.UTC)

	d, err := divergences.Resolve(ctx, db, 2, "  PSP confirmou estorno manual; lançado em setembro  ", now)
	if err != nil {
		t.Fatal(err)
	}
	if d.Status != "resolved" || d.ResolutionNote != "PSP confirmou estorno manual; lançado em setembro" ||
		d.ResolvedAt == nil || !d.ResolvedAt.Equal(now) || d.ChargeID != "c2" || d.Reason != "refund_exceeds_paid" {
		t.Errorf("resolved %+v", d)
	}
	if _, err := divergences.Resolve(ctx, db, 4, "ok", now); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		status divergences.Status
		limit  int
		pages  [][]int64
	}{
		{"open", 2, [][]int64{{1, 3}, {5}}},
		{"resolved", 10, [][]int64{{2, 4}}},
		{"", 2, [][]int64{{1, 2}, {3, 4}, {5}}},
		{"", 5, [][]int64{{1, 2, 3, 4, 5}}},
	}
	for _, tt := range tests {
		cursor := ""
		for i, want := range tt.pages {
			p, err := divergences.List(ctx, db, tt.status, cursor, tt.limit)
			if err != nil {
				t.Fatal(err)
			}
			if got := ids(p.Divergences); !equalIDs(got, want) {
				t.Errorf("status %q page %d: %v, want %v", tt.status, i, got, want)
			}
			if last := i == len(tt.pages)-1; last != (p.NextCursor == "") {
				t.Errorf("status %q page %d: next cursor %q", tt.status, i, p.NextCursor)
			}
			cursor = p.NextCursor
		}
	}

	open, err := divergences.List(ctx, db, "open", "", 2)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := divergences.List(ctx, db, "resolved", open.NextCursor, 2); !errors.Is(err, cursor.ErrInvalid) {
		t.Errorf("open cursor used for resolved: %v", err)
	}
	if _, err := divergences.List(ctx, db, "closed", "", 2); !errors.Is(err, divergences.ErrInvalidStatus) {
		t.Errorf("status closed: %v", err)
	}

	refusals := []struct {
		name string
		id   int64
		note string
		err  error
	}{
		{"already resolved", 2, "again", divergences.ErrAlreadyResolved},
		{"unknown id", 99, "note", divergences.ErrNotFound},
		{"empty note", 1, "   ", divergences.ErrInvalidNote},
		{"overlong note", 1, strings.Repeat("é", divergences.MaxNoteLength+1), divergences.ErrInvalidNote},
		{"invalid UTF-8", 1, "\xff", divergences.ErrInvalidNote},
	}
	for _, tt := range refusals {
		if _, err := divergences.Resolve(ctx, db, tt.id, tt.note, now); !errors.Is(err, tt.err) {
			t.Errorf("%s: %v, want %v", tt.name, err, tt.err)
		}
	}
	if d, err := divergences.Get(ctx, db, 1); err != nil || d.Status != "open" {
		t.Errorf("refused notes touched divergence 1: %+v, %v", d, err)
	}
}

// TestResolveDivergenceOnce: of concurrent resolutions of one divergence,
// exactly one wins and its note is the one kept. The overlap is forced: a
// gate transaction holds the row until every resolution waits on it.
func TestResolveDivergenceOnce(t *testing.T) {
	t.Parallel()
	_, db := ledgertest.New(t)
	ctx := context.Background()
	addDivergences(t, db, 1)
	const n = 8
	gate, err := db.BeginTxx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer gate.Rollback()
	gate.MustExec(`SELECT 1 FROM divergences WHERE id = 1 FOR UPDATE`)
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		winners []string
		others  int
	)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(note string) {
			defer wg.Done()
			_, err := divergences.Resolve(ctx, db, 1, note, time.Now())
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				winners = append(winners, note)
			case errors.Is(err, divergences.ErrAlreadyResolved):
				others++
			default:
				t.Error(err)
			}
		}(string(rune('a' + i)))
	}
	deadline := time.Now().Add(30 * time.Second) // a safety net
	for {
		var waiting int
		if err := db.Get(&waiting, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE 'WITH resolved AS%'`); err != nil {
			t.Fatal(err)
		}
		if waiting == n {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d resolutions waiting on the gate", waiting, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := gate.Rollback(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if len(winners) != 1 || others != n-1 {
		t.Fatalf("winners %v, already resolved %d", winners, others)
	}
	d, err := divergences.Get(ctx, db, 1)
	if err != nil || d.ResolutionNote != winners[0] {
		t.Errorf("kept note %q, winner %q (%v)", d.ResolutionNote, winners[0], err)
	}
}

func equalIDs(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
