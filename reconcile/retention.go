package reconcile

import (
	"context"
	"fmt"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/razao/razao/internal/jsonrows"
)

// Reconciliation's side of retention: package archive decides which
// runs' statement pages, kept files and lines go (finished runs, no open
// divergence, months closed), archives them, and then deletes them here.
// The runs themselves stay, with their figures and file_sha256.

// ArchiveStatements calls emit with each statement page and each chunk
// of a kept statement file of the runs runIDs as one JSON object (a
// "table" field says which), by run, pages first.
func ArchiveStatements(ctx context.Context, q sqlx.QueryerContext, runIDs []int64, emit func([]byte) error) error {
	const query = `
	SELECT t FROM (
		SELECT p.run_id, 0 AS o, p.pass, p.page, json_build_object('table', 'reconciliation_pages', 'run_id', p.run_id, 'pass', p.pass,
			'page', p.page, 'total', p.total, 'items', p.items, 'page_count', p.page_count, 'fetched_at', p.fetched_at,
			'page_size', p.page_size, 'bytes', p.bytes, 'sha256', encode(p.sha256, 'hex'))::text AS t
		FROM reconciliation_pages p WHERE p.run_id = ANY($1)
		UNION ALL
		SELECT f.run_id, 1, f.chunk, 0, json_build_object('table', 'reconciliation_files', 'run_id', f.run_id, 'chunk', f.chunk,
			'data', translate(encode(f.data, 'base64'), E'\n', ''))::text
		FROM reconciliation_files f WHERE f.run_id = ANY($1)
	) x ORDER BY run_id, o, pass, page`
	if err := jsonrows.Emit(ctx, q, query, emit, pq.Array(runIDs)); err != nil {
		return fmt.Errorf("reconcile: read statements to archive: %w", err)
	}
	return nil
}

// DeleteStatements deletes the statement pages and kept files of the
// runs runIDs, once archived, in the caller's transaction, and returns
// how many rows it deleted.
func DeleteStatements(ctx context.Context, tx sqlx.QueryerContext, runIDs []int64) (int64, error) {
	const query = `
	WITH pages AS (DELETE FROM reconciliation_pages WHERE run_id = ANY($1) RETURNING 1),
	files AS (DELETE FROM reconciliation_files WHERE run_id = ANY($1) RETURNING 1)
	SELECT (SELECT count(*) FROM pages) + (SELECT count(*) FROM files)`
	var n int64
	if err := sqlx.GetContext(ctx, tx, &n, query, pq.Array(runIDs)); err != nil {
		return 0, fmt.Errorf("reconcile: delete archived statements: %w", err)
	}
	return n, nil
}

// ArchiveLines calls emit with each reconciliation line of the runs
// runIDs as one JSON object, by run and line.
func ArchiveLines(ctx context.Context, q sqlx.QueryerContext, runIDs []int64, emit func([]byte) error) error {
	const query = `SELECT row_to_json(l)::text FROM reconciliation_lines l WHERE l.run_id = ANY($1) ORDER BY l.run_id, l.line`
	if err := jsonrows.Emit(ctx, q, query, emit, pq.Array(runIDs)); err != nil {
		return fmt.Errorf("reconcile: read lines to archive: %w", err)
	}
	return nil
}

// DeleteLines deletes the reconciliation lines of the runs runIDs, once
// archived, in the caller's transaction, and returns how many it deleted.
func DeleteLines(ctx context.Context, tx sqlx.ExecerContext, runIDs []int64) (int64, error) {
	res, err := tx.ExecContext(ctx, `DELETE FROM reconciliation_lines WHERE run_id = ANY($1)`, pq.Array(runIDs))
	if err != nil {
		return 0, fmt.Errorf("reconcile: delete archived lines: %w", err)
	}
	return res.RowsAffected()
}
