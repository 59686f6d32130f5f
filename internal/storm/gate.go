package storm

import (
	"context"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
)

// Gate holds the row locks of some charges from a connection of its own,
// so deliveries for them are stored and then wait, in flight, on the lock:
// concurrency forced rather than hoped for.
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

// Waiting counts the backends blocked, directly or behind another waiter,
// by the gate.
func (g *Gate) Waiting(ctx context.Context, db *sqlx.DB) (int, error) {
	var n int
	err := db.GetContext(ctx, &n, `
		WITH RECURSIVE blocked (pid) AS (
			SELECT pid FROM pg_stat_activity WHERE $1 = ANY (pg_blocking_pids(pid))
			UNION
			SELECT a.pid FROM pg_stat_activity a JOIN blocked b ON b.pid = ANY (pg_blocking_pids(a.pid))
		)
		SELECT count(*) FROM blocked`, g.pid)
	return n, err
}

// Held counts the deliveries for the gate's charges that are stored and
// still pending: their requests cannot have been answered "processed",
// because processing needs the locks the gate holds.
func (g *Gate) Held(ctx context.Context, db *sqlx.DB) (int, error) {
	var n int
	err := db.GetContext(ctx, &n, `SELECT count(*) FROM inbox WHERE charge_ref = ANY($1) AND status = 'pending'`, pq.Array(g.ids))
	return n, err
}

// WaitFor waits until at least n deliveries for the gate's charges are
// stored and pending while at least waiters processing transactions wait
// on the gate, or until giveUp reports true, or for at most d. Deliveries
// whose charge is held wait one transaction each, a few at a time per
// replica: the others queue behind them.
func (g *Gate) WaitFor(ctx context.Context, db *sqlx.DB, n, waiters int, d time.Duration, giveUp func() bool) (int, error) {
	deadline := time.Now().Add(d)
	for {
		held, err := g.Held(ctx, db)
		waiting := 0
		if err == nil {
			waiting, err = g.Waiting(ctx, db)
		}
		if err == nil && held >= n && waiting >= max(waiters, 1) {
			return held, nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil || (giveUp != nil && giveUp()) {
			return held, fmt.Errorf("%d of %d requests stored and held, %d transactions waiting on the gate (err %v)", held, n, waiting, err)
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
