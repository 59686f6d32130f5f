package main

import (
	"context"
	"database/sql/driver"
	"errors"
	"io"
	"slices"
	"strings"
	"sync"
	"time"
)

// isClaim says whether query is the workers' claim of due deliveries
// (webhook's claimDueSQL): the statement this tool times. Matched on its
// parts, so a reformatting does not lose it; a claim no longer matched
// shows as "no claims timed" in the report, never as a fast claim.
func isClaim(query string) bool {
	return strings.Contains(query, "FROM inbox") && strings.Contains(query, "next_attempt_at <= now()") &&
		strings.Contains(query, "ORDER BY next_attempt_at") && strings.Contains(query, "SKIP LOCKED")
}

// claims records how long each claim of the workers took, from sending it
// to its last row read, and how many rows it returned.
type claims struct {
	mu    sync.Mutex
	query string // the claim's text, as the workers prepared it
	times []time.Duration
	rows  []int
}

func (c *claims) prepared(query string) {
	c.mu.Lock()
	c.query = query
	c.mu.Unlock()
}

func (c *claims) text() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.query
}

func (c *claims) add(d time.Duration, rows int) {
	c.mu.Lock()
	c.times = append(c.times, d)
	c.rows = append(c.rows, rows)
	c.mu.Unlock()
}

// take returns the claims recorded since the last take.
func (c *claims) take() ([]time.Duration, []int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t, r := c.times, c.rows
	c.times, c.rows = nil, nil
	return t, r
}

// timingConnector hands out the driver's connections, wrapped so that the
// statements they prepare for the claim are timed. Everything else passes
// through untouched: the webhook package runs unchanged on it.
type timingConnector struct {
	driver.Connector
	rec *claims
}

func (c timingConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &timingConn{Conn: conn, rec: c.rec}, nil
}

// timingConn forwards the optional interfaces lib/pq's connection has
// (database/sql looks for them on the wrapper).
type timingConn struct {
	driver.Conn
	rec *claims
}

func (c *timingConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	var st driver.Stmt
	var err error
	if p, ok := c.Conn.(driver.ConnPrepareContext); ok {
		st, err = p.PrepareContext(ctx, query)
	} else {
		st, err = c.Conn.Prepare(query)
	}
	if err != nil || !isClaim(query) {
		return st, err
	}
	c.rec.prepared(query)
	return &timingStmt{Stmt: st, rec: c.rec}, nil
}

func (c *timingConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	if b, ok := c.Conn.(driver.ConnBeginTx); ok {
		return b.BeginTx(ctx, opts)
	}
	return nil, errors.New("driver cannot begin with options")
}

func (c *timingConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	if q, ok := c.Conn.(driver.QueryerContext); ok {
		return q.QueryContext(ctx, query, args)
	}
	return nil, driver.ErrSkip
}

func (c *timingConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	if e, ok := c.Conn.(driver.ExecerContext); ok {
		return e.ExecContext(ctx, query, args)
	}
	return nil, driver.ErrSkip
}

func (c *timingConn) Ping(ctx context.Context) error {
	if p, ok := c.Conn.(driver.Pinger); ok {
		return p.Ping(ctx)
	}
	return nil
}

func (c *timingConn) CheckNamedValue(nv *driver.NamedValue) error {
	if v, ok := c.Conn.(driver.NamedValueChecker); ok {
		return v.CheckNamedValue(nv)
	}
	return driver.ErrSkip
}

func (c *timingConn) ResetSession(ctx context.Context) error {
	if r, ok := c.Conn.(driver.SessionResetter); ok {
		return r.ResetSession(ctx)
	}
	return nil
}

func (c *timingConn) IsValid() bool {
	if v, ok := c.Conn.(driver.Validator); ok {
		return v.IsValid()
	}
	return true
}

// timingStmt is the prepared claim: each query is timed until its rows
// are read to the end (the claim's rows stream; its work ends with them).
type timingStmt struct {
	driver.Stmt
	rec *claims
}

func (s *timingStmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	start := time.Now()
	var rows driver.Rows
	var err error
	if q, ok := s.Stmt.(driver.StmtQueryContext); ok {
		rows, err = q.QueryContext(ctx, args)
	} else {
		vals := make([]driver.Value, len(args))
		for i, a := range args {
			vals[i] = a.Value
		}
		rows, err = s.Stmt.Query(vals) //nolint:staticcheck // the driver has no context variant
	}
	if err != nil {
		return nil, err
	}
	return &timingRows{Rows: rows, start: start, rec: s.rec}, nil
}

type timingRows struct {
	driver.Rows
	start time.Time
	n     int
	done  bool
	rec   *claims
}

func (r *timingRows) Next(dest []driver.Value) error {
	err := r.Rows.Next(dest)
	if err == nil {
		r.n++
		return nil
	}
	if errors.Is(err, io.EOF) && !r.done {
		r.done = true
		r.rec.add(time.Since(r.start), r.n)
	}
	return err
}

// percentiles returns the p-th percentiles of ds (p in [0, 1]).
func percentiles(ds []time.Duration, ps ...float64) []time.Duration {
	out := make([]time.Duration, len(ps))
	if len(ds) == 0 {
		return out
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	for i, p := range ps {
		k := int(p * float64(len(s)-1))
		out[i] = s[k]
	}
	return out
}
