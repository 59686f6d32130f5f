package storm

import (
	"context"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/razao/razao/inbox"
)

// Gate holds the row locks of some charges from a connection of its own,
// so deliveries for them are stored and then held in flight: the workers
// that claim them find their charge held and snooze them, again and again,
// until the gate opens. Concurrency forced rather than hoped for.
type Gate struct {
	conn *sqlx.Conn
	tx   *sqlx.Tx
	pid  int
	ids  []string
}

// CloseGate locks the charges ids and returns the gate holding them. A
// connection that died with a restarted server is retried.
func CloseGate(ctx context.Context, db *sqlx.DB, ids []string) (g *Gate, err error) {
	for try := 0; try < 3; try++ {
		if g, err = closeGate(ctx, db, ids); err == nil {
			return g, nil
		}
	}
	return nil, err
}

func closeGate(ctx context.Context, db *sqlx.DB, ids []string) (*Gate, error) {
	conn, err := db.Connx(ctx)
	if err != nil {
		return nil, err
	}
	tx, err := conn.BeginTxx(ctx, nil)
	if err != nil {
		conn.Close()
		return nil, err
	}
	g := &Gate{conn: conn, tx: tx, ids: ids}
	if err := tx.GetContext(ctx, &g.pid, `SELECT pg_backend_pid()`); err != nil {
		g.Open()
		return nil, err
	}
	if _, err := tx.ExecContext(ctx, `SELECT id FROM charges WHERE id = ANY($1) FOR UPDATE`, pq.Array(ids)); err != nil {
		g.Open()
		return nil, fmt.Errorf("gate: %w", err)
	}
	return g, nil
}

// Held counts the deliveries for the gate's charges that are stored and
// still pending: their requests cannot have been answered "processed",
// because processing needs the locks the gate holds.
func (g *Gate) Held(ctx context.Context, db *sqlx.DB) (int, error) {
	var n int
	err := db.GetContext(ctx, &n, `SELECT count(*) FROM inbox WHERE charge_ref = ANY($1) AND status = 'pending'`, pq.Array(g.ids))
	return n, err
}

// Snoozed counts the deliveries for the gate's charges that a worker has
// claimed and snoozed because the gate held their charge.
func (g *Gate) Snoozed(ctx context.Context, db *sqlx.DB) (int, error) {
	var n int
	err := db.GetContext(ctx, &n, `SELECT count(*) FROM inbox WHERE charge_ref = ANY($1) AND status = 'pending' AND last_error = $2`,
		pq.Array(g.ids), inbox.SnoozedError)
	return n, err
}

// WaitFor waits until at least n deliveries for the gate's charges are
// stored and pending, of which at least snoozed were claimed by a worker
// and snoozed on the gate, or until giveUp reports true, or for at most d.
func (g *Gate) WaitFor(ctx context.Context, db *sqlx.DB, n, snoozed int, d time.Duration, giveUp func() bool) (int, error) {
	deadline := time.Now().Add(d)
	for {
		held, err := g.Held(ctx, db)
		seen := 0
		if err == nil {
			seen, err = g.Snoozed(ctx, db)
		}
		if err == nil && held >= n && seen >= max(snoozed, 1) {
			return held, nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil || (giveUp != nil && giveUp()) {
			return held, fmt.Errorf("%d of %d requests stored and held, %d snoozed on the gate (err %v)", held, n, seen, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Open releases the locks. It is safe to call more than once.
func (g *Gate) Open() {
	if g.tx != nil {
		g.tx.Rollback()
		g.tx = nil
	}
	if g.conn != nil {
		g.conn.Close()
		g.conn = nil
	}
}
