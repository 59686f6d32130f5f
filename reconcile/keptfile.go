package reconcile

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"

	"github.com/jackc/pgx/v5"
)

// fileChunk is how much of an uploaded statement file one row of
// reconciliation_files holds.
const fileChunk = 1 << 20

// keepFile stores the statement file of run as it is read, in chunks, in
// one transaction, before any of its lines is loaded: from then on the
// run can be resumed by any replica (keptFile) like a bcb-pix run from its
// pages. It uses a connection of its own, as the load does: an upload
// trickling in over its read timeout holds none of the pool's, which the
// webhooks share. A file cut short (the uploader gone, a size limit)
// keeps nothing and returns the reader's error as it is: only io.EOF from
// the reader ends a file. check, when set, is given the first chunk
// before anything is kept: a file its header already refuses is not
// stored whole first (up to the endpoint's size limit) to be refused.
func (r *Reconciler) keepFile(ctx context.Context, run int64, file io.Reader, check func(first []byte) error) error {
	tx, done, err := r.ownTx(ctx, "keep statement file")
	if err != nil {
		return err
	}
	defer done()
	buf := make([]byte, fileChunk)
	for chunk := 0; ; chunk++ {
		n, err := fill(file, buf)
		if chunk == 0 && n > 0 && check != nil {
			if err := check(buf[:n]); err != nil {
				return err
			}
		}
		if n > 0 {
			if _, err := tx.Exec(ctx, `INSERT INTO reconciliation_files (run_id, chunk, data) VALUES ($1, $2, $3)`,
				run, chunk, buf[:n]); err != nil {
				return fmt.Errorf("keep statement file: chunk %d: %w", chunk, err)
			}
		}
		if errors.Is(err, io.EOF) {
			if chunk == 0 && n == 0 {
				return fmt.Errorf("%w: the statement file is empty", ErrInput)
			}
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
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("keep statement file: commit: %w", err)
	}
	return nil
}

// fill reads into buf until it is full or the reader returns an error,
// which it returns as the reader gave it (unlike io.ReadFull, which would
// turn a body cut short, io.ErrUnexpectedEOF, into the end of a chunk).
func fill(r io.Reader, buf []byte) (int, error) {
	n := 0
	for n < len(buf) {
		m, err := r.Read(buf[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// keptFile reads back the statement file kept for run, a chunk at a
// time; nil when none was kept (a run begun before files were kept).
func (r *Reconciler) keptFile(ctx context.Context, run int64) (io.Reader, error) {
	c := &chunkReader{ctx: ctx, r: r, run: run}
	if err := c.fetch(); errors.Is(err, io.EOF) {
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	return c, nil
}

// chunkReader reads a kept file's chunks in order.
type chunkReader struct {
	ctx   context.Context
	r     *Reconciler
	run   int64
	next  int
	chunk []byte
}

// fetch reads the next chunk; io.EOF after the last.
func (c *chunkReader) fetch() error {
	var data []byte
	err := c.r.get(c.ctx, &data, `SELECT data FROM reconciliation_files WHERE run_id = $1 AND chunk = $2`, c.run, c.next)
	if errors.Is(err, sql.ErrNoRows) {
		return io.EOF
	}
	if err != nil {
		return fmt.Errorf("read kept statement file: chunk %d: %w", c.next, err)
	}
	c.chunk, c.next = data, c.next+1
	return nil
}

func (c *chunkReader) Read(p []byte) (int, error) {
	if len(c.chunk) == 0 {
		if err := c.fetch(); err != nil {
			return 0, err
		}
	}
	n := copy(p, c.chunk)
	c.chunk = c.chunk[n:]
	return n, nil
}

// ownTx begins a transaction, its search path pinned, on a connection of
// its own (not the pool's: see copyConfig and keepFile); done rolls back
// what was not committed and closes the connection. what names the step
// in errors.
func (r *Reconciler) ownTx(ctx context.Context, what string) (tx pgx.Tx, done func(), err error) {
	if r.copyCfg == nil {
		return nil, nil, fmt.Errorf("%w: %s: no database url to load statement files with", ErrConfig, what)
	}
	conn, err := pgx.ConnectConfig(ctx, r.copyCfg)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: connect: %w", what, err)
	}
	bg := context.WithoutCancel(ctx)
	if tx, err = conn.Begin(ctx); err != nil {
		conn.Close(bg)
		return nil, nil, fmt.Errorf("%s: begin: %w", what, err)
	}
	done = func() {
		tx.Rollback(bg)
		conn.Close(bg)
	}
	if _, err := tx.Exec(ctx, pinSearchPathSQL); err != nil {
		done()
		return nil, nil, fmt.Errorf("%s: pin search_path: %w", what, err)
	}
	return tx, done, nil
}
