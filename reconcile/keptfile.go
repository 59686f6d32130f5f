package reconcile

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
)

// fileChunk is how much of an uploaded statement file one row of
// reconciliation_files holds.
const fileChunk = 1 << 20

// keepFile stores the statement file of run as it is read, in chunks, in
// one transaction, before any of its lines is loaded: from then on the
// run can be resumed by any replica (keptFile) like a bcb-pix run from its
// pages. A file cut short (the uploader gone, a size limit) keeps nothing
// and returns the reader's error as it is.
func (r *Reconciler) keepFile(ctx context.Context, run int64, file io.Reader) error {
	tx, err := begin(ctx, r.db)
	if err != nil {
		return fmt.Errorf("keep statement file: %w", err)
	}
	defer tx.Rollback()
	buf := make([]byte, fileChunk)
	for chunk := 0; ; chunk++ {
		n, err := io.ReadFull(file, buf)
		if n > 0 {
			if _, err := tx.ExecContext(ctx, `INSERT INTO reconciliation_files (run_id, chunk, data) VALUES ($1, $2, $3)`,
				run, chunk, buf[:n]); err != nil {
				return fmt.Errorf("keep statement file: chunk %d: %w", chunk, err)
			}
		}
		if errors.Is(err, io.EOF) && chunk == 0 {
			return fmt.Errorf("%w: the statement file is empty", ErrInput)
		}
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			break
		}
		if err != nil {
			return err
		}
		if chunk%16 == 15 {
			// A slow upload outlasting the lease must not be taken over.
			if err := r.renew(ctx, run); err != nil {
				return err
			}
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("keep statement file: commit: %w", err)
	}
	return nil
}

// keptFile reads back the statement file kept for run, a chunk at a
// time; nil when none was kept (a run begun before files were kept).
func (r *Reconciler) keptFile(ctx context.Context, run int64) (io.Reader, error) {
	var kept bool
	if err := r.get(ctx, &kept, `SELECT EXISTS (SELECT 1 FROM reconciliation_files WHERE run_id = $1)`, run); err != nil {
		return nil, fmt.Errorf("read kept statement file: %w", err)
	}
	if !kept {
		return nil, nil
	}
	return &chunkReader{ctx: ctx, r: r, run: run}, nil
}

// chunkReader reads a kept file's chunks in order.
type chunkReader struct {
	ctx   context.Context
	r     *Reconciler
	run   int64
	next  int
	chunk []byte
}

func (c *chunkReader) Read(p []byte) (int, error) {
	if len(c.chunk) == 0 {
		var data []byte
		err := c.r.get(c.ctx, &data, `SELECT data FROM reconciliation_files WHERE run_id = $1 AND chunk = $2`, c.run, c.next)
		if errors.Is(err, sql.ErrNoRows) {
			return 0, io.EOF
		}
		if err != nil {
			return 0, fmt.Errorf("read kept statement file: chunk %d: %w", c.next, err)
		}
		c.chunk, c.next = data, c.next+1
	}
	n := copy(p, c.chunk)
	c.chunk = c.chunk[n:]
	return n, nil
}
