package reconcile

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/razao/razao/reconcile/bcbpix"
	"github.com/razao/razao/webhook/scheme"
)

// maxPasses bounds how often a window's pages are read again, in one
// attempt of a run, because the statement moved while they were read
// (an item added between two fetches shifts every later page by one).
const maxPasses = 3

// maxPages bounds the pages of one window: 10 million items.
const maxPages = 10_000

// maxRunBytes bounds what a run may receive over all its pages, its
// passes included: as much as the largest statement file may hold
// (maxMaxFileBytes). A page is kept as its figures and digest, about a
// hundred bytes, and its items as lines: bounding what a run receives
// bounds them.
const maxRunBytes = 4 << 30

// position is where a run's paging stands, from the pages it kept.
type position struct {
	pass, page int
	done       bool
}

// nextPageSQL is the run's last kept page, and whether a page of its
// pass stated another total or page count: the least and the greatest
// total of the pass, and the least and the greatest page count of its
// pages of the last's total, each one probe of
// ix_reconciliation_pages_totals. Comparing the last with every page of
// the pass read the pass again for each page fetched.
const nextPageSQL = `
	SELECT p.pass, p.page, p.page_count,
		(SELECT min(o.total) FROM reconciliation_pages o WHERE o.run_id = p.run_id AND o.pass = p.pass) <> p.total
		OR (SELECT max(o.total) FROM reconciliation_pages o WHERE o.run_id = p.run_id AND o.pass = p.pass) <> p.total
		OR (SELECT min(o.page_count) FROM reconciliation_pages o
			WHERE o.run_id = p.run_id AND o.pass = p.pass AND o.total = p.total) <> p.page_count
		OR (SELECT max(o.page_count) FROM reconciliation_pages o
			WHERE o.run_id = p.run_id AND o.pass = p.pass AND o.total = p.total) <> p.page_count AS moved
	FROM reconciliation_pages p WHERE p.run_id = $1 ORDER BY p.pass DESC, p.page DESC LIMIT 1`

// passWholeSQL says whether a pass whose pages all stated one total and
// one page count adds up: a page for each page stated (one for an empty
// statement), all of one size, their items as many as the total. Read
// once, at the end of the pass.
const passWholeSQL = `
	SELECT count(*) = greatest(max(page_count), 1) AND sum(items) = max(total) AND min(page_size) = max(page_size)
	FROM reconciliation_pages WHERE run_id = $1 AND pass = $2`

// nextPage reads the run's last kept page to find the next one to
// fetch: the page after the last kept, or, when a pass is complete,
// done if the pass reads as the whole statement, else page 0 of another
// pass, of at most passes. A statement that moved during every pass is
// an error: read so, it may be cut.
func (r *Reconciler) nextPage(ctx context.Context, run int64, passes int) (position, error) {
	var last struct {
		Pass      int  `db:"pass"`
		Page      int  `db:"page"`
		PageCount int  `db:"page_count"`
		Moved     bool `db:"moved"`
	}
	err := r.get(ctx, &last, nextPageSQL, run)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return position{}, nil
	case err != nil:
		return position{}, fmt.Errorf("run %d: kept pages: %w", run, err)
	case last.Page+1 < last.PageCount:
		return position{pass: last.Pass, page: last.Page + 1}, nil
	}
	whole := false
	if !last.Moved {
		if err := r.get(ctx, &whole, passWholeSQL, run, last.Pass); err != nil {
			return position{}, fmt.Errorf("run %d: kept pages: %w", run, err)
		}
	}
	switch {
	case whole:
		return position{done: true}, nil
	case last.Pass+1 < passes:
		return position{pass: last.Pass + 1}, nil
	}
	return position{}, fmt.Errorf("run %d: the statement moved during each of %d passes (its pages stated other totals "+
		"or page counts, or did not add up to their total): %w", run, last.Pass+1, bcbpix.ErrPaging)
}

// loadPages fetches the window's pages the run has not kept, each kept
// with its lines in one transaction, then marks the run loaded. Nothing
// is matched nor booked before the run is loaded: a page that fails its
// checks, here or in the client, fails the run with nothing of the
// statement booked (the lines of the pages kept before it wait,
// undecided, for the next attempt of a scheduled run).
func (r *Reconciler) loadPages(ctx context.Context, run *Run, ep *endpoint) error {
	bound := int64(maxRunBytes)
	if r.maxRunBytes > 0 {
		bound = r.maxRunBytes
	}
	var received int64
	if err := r.get(ctx, &received, `SELECT coalesce(sum(bytes), 0) FROM reconciliation_pages WHERE run_id = $1`, run.ID); err != nil {
		return fmt.Errorf("run %d: kept pages: %w", run.ID, err)
	}
	passes := maxPasses * max(run.Attempts, 1)
	for {
		pos, err := r.nextPage(ctx, run.ID, passes)
		if err != nil {
			return err
		}
		if pos.done {
			break
		}
		if pos.page >= maxPages {
			return fmt.Errorf("run %d: the statement has more than %d pages", run.ID, maxPages)
		}
		pg, err := ep.api.Page(ctx, run.query(), pos.page)
		if err != nil {
			return err
		}
		if pg.Count > maxPages {
			return fmt.Errorf("run %d: the statement has %d pages, more than %d", run.ID, pg.Count, maxPages)
		}
		if received += int64(len(pg.Body)); received > bound {
			return fmt.Errorf("run %d: the statement's pages come to more than %d bytes", run.ID, bound)
		}
		if err := r.keepPage(ctx, run, ep, pos.pass, pg); err != nil {
			return err
		}
		if r.Progress != nil {
			r.Progress("pages", int64(run.Pages))
		}
		if r.stopAfterPage != nil && r.stopAfterPage(run.Pages) {
			return errStopped
		}
	}
	if _, err := r.exec(ctx, `UPDATE reconciliation_runs SET loaded = true WHERE id = $1`, run.ID); err != nil {
		return fmt.Errorf("run %d: %w", run.ID, err)
	}
	run.Loaded = true
	return nil
}

// keepPage stores one page, as its figures and the length and SHA-256
// of its body (what proves what was received; its items live on as its
// lines), and copies its lines, and renews the run's lease, in one
// transaction.
func (r *Reconciler) keepPage(ctx context.Context, run *Run, ep *endpoint, pass int, pg bcbpix.Page) error {
	tx, err := begin(ctx, r.db)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	var lines int64
	if err := tx.GetContext(ctx, &lines, `UPDATE reconciliation_runs SET pages = pages + 1,
			lease_until = now() + $2 * interval '1 second' WHERE id = $1 RETURNING lines`, run.ID, r.lease.Seconds()); err != nil {
		return fmt.Errorf("run %d: keep page %d: %w", run.ID, pg.Number, err)
	}
	sum := sha256.Sum256(pg.Body)
	if _, err := tx.ExecContext(ctx, `INSERT INTO reconciliation_pages (run_id, pass, page, total, items, page_count, page_size, bytes, sha256)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`, run.ID, pass, pg.Number, pg.Total, len(pg.Items), pg.Count, pg.PageSize,
		len(pg.Body), sum[:]); err != nil {
		return fmt.Errorf("run %d: keep page %d: %w", run.ID, pg.Number, err)
	}
	cp, err := newCopier(ctx, tx, run.ID, lines+1)
	if err != nil {
		return err
	}
	for _, item := range pg.Items {
		for _, l := range run.linesOf(ep.hook.Scheme, item) {
			if err := cp.add(ctx, r.checkLine(l)); err != nil {
				cp.stmt.Close()
				return err
			}
		}
	}
	if err := cp.close(ctx); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `UPDATE reconciliation_runs SET lines = lines + $2 WHERE id = $1`, run.ID, cp.n); err != nil {
		return fmt.Errorf("run %d: keep page %d: %w", run.ID, pg.Number, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("run %d: keep page %d: commit: %w", run.ID, pg.Number, err)
	}
	run.Pages++
	run.Lines = lines + cp.n
	return nil
}

// pixLines reads one Pix of the statement with the endpoint's own
// webhook parser, so that its lines carry exactly the webhook's keys and
// figures: the credit keyed by endToEndId, each devolução by endToEndId,
// id and status. An item the parser refuses is one invalid line.
func pixLines(sc scheme.Scheme, item json.RawMessage) []Line {
	body, _ := json.Marshal(map[string][]json.RawMessage{"pix": {item}})
	evs, err := sc.Parse(body)
	if err != nil {
		return []Line{invalid(err.Error())}
	}
	lines := make([]Line, 0, len(evs))
	for _, ev := range evs {
		l := Line{EventType: ev.Type, EventID: ev.EventID, PSPID: ev.PSPRef, ChargeRef: ev.ChargeID,
			RefundID: ev.RefundID, Amount: ev.Amount, At: ev.OccurredAt, Parts: ev.Parts(),
			ReturnID: ev.ReturnID, Nature: ev.Nature}
		switch ev.Kind {
		case scheme.KindPaid:
			l.Kind = KindPaid
		case scheme.KindRefunded:
			l.Kind = KindRefunded
		case scheme.KindUnbookable:
			l = unbookableLine(l, ev)
		default:
			l.Kind = KindRefundOpen
		}
		lines = append(lines, l)
	}
	return lines
}
