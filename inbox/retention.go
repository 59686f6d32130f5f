package inbox

import (
	"context"
	"fmt"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/razao/razao/internal/jsonrows"
)

// The inbox's side of retention (package archive, which decides which
// deliveries' bodies go, and when): reading the bodies and audit headers
// to archive, and purging them once archived. Every row stays, with its
// key, event and status: a redelivery is still a duplicate.

// archiveBodiesSQL reads the rows $1 as JSON, in id order, each with its
// body (base64) and audit headers. A shared body (inbox_bodies, a
// delivery of several events) is written once, with the first of its
// rows read here; its other rows name it by body_id.
const archiveBodiesSQL = `
	SELECT json_build_object('id', i.id, 'delivery_key', i.delivery_key, 'endpoint', i.endpoint, 'scheme', i.scheme,
		'event_type', i.event_type, 'event_id', i.event_id, 'status', i.status,
		'received_at', i.received_at, 'processed_at', i.processed_at, 'body_id', i.body_id,
		'headers', CASE WHEN i.body_id IS NULL THEN i.headers WHEN first THEN b.headers END,
		'body', CASE WHEN i.body_id IS NULL THEN translate(encode(i.body, 'base64'), E'\n', '')
			WHEN first THEN translate(encode(b.body, 'base64'), E'\n', '') END)::text
	FROM (SELECT i.*, row_number() OVER (PARTITION BY i.body_id ORDER BY i.id) = 1 AS first
		FROM inbox i WHERE i.id = ANY($1)) i
	LEFT JOIN inbox_bodies b ON b.id = i.body_id
	ORDER BY i.id`

// stripBodiesSQL drops the bodies and headers of the rows $1, naming the
// archive $2 that holds them, and deletes the shared bodies none of
// whose rows keeps them any more.
const stripBodiesSQL = `
	WITH stripped AS (
		UPDATE inbox i SET body = NULL, body_id = NULL, headers = '{}', body_archive = $2
		FROM (SELECT id, body_id FROM inbox WHERE id = ANY($1)) o
		WHERE i.id = o.id
		RETURNING o.body_id
	), shared AS (
		DELETE FROM inbox_bodies b WHERE b.id IN (SELECT body_id FROM stripped)
			AND NOT EXISTS (SELECT 1 FROM inbox i WHERE i.body_id = b.id AND NOT i.id = ANY($1))
	)
	SELECT count(*) FROM stripped`

// ArchiveBodies calls emit with each row among ids as one JSON object
// (archiveBodiesSQL), in id order, streaming: a batch of large bodies is
// never held at once.
func ArchiveBodies(ctx context.Context, q sqlx.QueryerContext, ids []int64, emit func([]byte) error) error {
	if err := jsonrows.Emit(ctx, q, archiveBodiesSQL, emit, pq.Array(ids)); err != nil {
		return fmt.Errorf("inbox: read bodies to archive: %w", err)
	}
	return nil
}

// StripBodies purges the bodies and audit headers of the rows ids, once
// the archive archiveID holds them, and returns how many rows it
// stripped. It joins the caller's transaction, which is to commit the
// archive's record beside it.
func StripBodies(ctx context.Context, tx sqlx.QueryerContext, ids []int64, archiveID int64) (int64, error) {
	var n int64
	if err := sqlx.GetContext(ctx, tx, &n, stripBodiesSQL, pq.Array(ids), archiveID); err != nil {
		return 0, fmt.Errorf("inbox: strip archived bodies: %w", err)
	}
	return n, nil
}
