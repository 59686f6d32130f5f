// Package snapshot runs a read of several statements in one database
// snapshot, so that what they return agrees: a reader that runs them one
// by one on a pool can see a write between two of them (a charge still
// pending beside its sale's posting set).
package snapshot

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/jmoiron/sqlx"
)

// beginner is what *sqlx.DB offers and *sqlx.Tx does not.
type beginner interface {
	BeginTxx(ctx context.Context, opts *sql.TxOptions) (*sqlx.Tx, error)
}

var readOnly = sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true}

// Read runs fn in a read-only REPEATABLE READ transaction of its own when
// q can begin one (a pool), after the setup statements (SET LOCAL ...),
// else directly on q (the caller's transaction, whose snapshot and
// settings are the caller's to choose).
func Read(ctx context.Context, q sqlx.QueryerContext, fn func(q sqlx.QueryerContext) error, setup ...string) error {
	b, ok := q.(beginner)
	if !ok {
		return fn(q)
	}
	tx, err := b.BeginTxx(ctx, &readOnly)
	if err != nil {
		return fmt.Errorf("begin read: %w", err)
	}
	defer tx.Rollback()
	for _, s := range setup {
		if _, err := tx.ExecContext(ctx, s); err != nil {
			return fmt.Errorf("begin read: %w", err)
		}
	}
	if err := fn(tx); err != nil {
		return err
	}
	return tx.Commit()
}
