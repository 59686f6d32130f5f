// Package sqlstmt holds statements prepared once and reused on every pooled
// connection. A hot statement sent unprepared is planned on every call,
// and on razao's delivery path planning is a large share of PostgreSQL's
// time (docs/performance.md, "Prepared statements").
package sqlstmt

import (
	"context"
	"fmt"
	"sync"

	"github.com/jmoiron/sqlx"
)

// Stmt is a statement prepared on first use. database/sql then prepares it
// once per connection, the first time a transaction on that connection
// uses it, and keeps it for the connection's life.
type Stmt struct {
	db    *sqlx.DB
	query string
	mu    sync.Mutex
	stmt  *sqlx.Stmt
}

// New returns query, to be prepared on db when first used.
func New(db *sqlx.DB, query string) *Stmt { return &Stmt{db: db, query: query} }

// In returns the statement bound to tx.
func (s *Stmt) In(ctx context.Context, tx *sqlx.Tx) (*sqlx.Stmt, error) {
	stmt, err := s.Prepared(ctx)
	if err != nil {
		return nil, err
	}
	return tx.StmtxContext(ctx, stmt), nil
}

// Prepared returns the statement on its own, for use outside a
// transaction, preparing it unless it is already. A failure (the database
// down at start-up) is not kept: the next call tries again.
func (s *Stmt) Prepared(ctx context.Context) (*sqlx.Stmt, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stmt != nil {
		return s.stmt, nil
	}
	stmt, err := s.db.PreparexContext(ctx, s.query)
	if err != nil {
		return nil, fmt.Errorf("prepare statement: %w", err)
	}
	s.stmt = stmt
	return stmt, nil
}
