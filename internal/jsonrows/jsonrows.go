// Package jsonrows streams a query's rows, each one JSON text, to a
// callback: how the packages that own a table hand its rows to the
// archive (package archive) without holding a batch in memory.
package jsonrows

import (
	"context"

	"github.com/jmoiron/sqlx"
)

// Emit runs query, whose one column is a row as JSON text, and calls
// emit with each value, in the query's order. An error of emit stops it.
func Emit(ctx context.Context, q sqlx.QueryerContext, query string, emit func([]byte) error, args ...any) error {
	rows, err := q.QueryxContext(ctx, query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var b []byte
		if err := rows.Scan(&b); err != nil {
			return err
		}
		if err := emit(b); err != nil {
			return err
		}
	}
	return rows.Err()
}
