package reconcile

import (
	"context"
	"fmt"
	"io"

	"github.com/jmoiron/sqlx"

	"github.com/razao/razao/reports"
)

var linesHeader = []string{"line", "side", "kind", "outcome", "reason", "psp_id", "charge_ref", "refund_id",
	"amount", "fee", "at", "charge_id", "ledger_amount", "ledger_fee", "inbox_id", "detail"}

// WriteLinesCSV streams every line of a run, in order, as CSV in dialect
// d (amounts in reais), and returns how many it wrote: written by the
// exports' own writer (reports.CSVWriter), so text cells that a
// spreadsheet would read as a formula are prefixed with an apostrophe.
func WriteLinesCSV(ctx context.Context, db sqlx.QueryerContext, w io.Writer, run int64, d reports.Dialect) (int64, error) {
	// Cancelling makes the driver abandon the rest of the result when the
	// writer fails (a client that went away), instead of draining it.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	rows, err := db.QueryxContext(ctx, `SELECT `+lineResultColumns+` FROM reconciliation_lines WHERE run_id = $1 ORDER BY line`, run)
	if err != nil {
		return 0, fmt.Errorf("lines csv of run %d: %w", run, err)
	}
	defer rows.Close()
	c := reports.NewCSVWriter(w, d)
	c.Header(linesHeader)
	var n int64
	for rows.Next() {
		var l LineResult
		if err := rows.StructScan(&l); err != nil {
			return n, fmt.Errorf("lines csv of run %d: %w", run, err)
		}
		c.Int(l.Line)
		c.Text(l.Side)
		c.Text(l.Kind)
		c.Text(l.Outcome)
		text(c, l.Reason)
		c.Text(l.PSPID)
		c.Text(l.ChargeRef)
		c.Text(l.RefundID)
		c.Reais(l.Amount)
		reais(c, l.Fee)
		if l.At != nil {
			c.Time(l.At.UnixMicro())
		} else {
			c.Text("")
		}
		text(c, l.ChargeID)
		reais(c, l.LedgerAmount)
		reais(c, l.LedgerFee)
		if l.InboxID != nil {
			c.Int(*l.InboxID)
		} else {
			c.Text("")
		}
		c.Text(l.Detail)
		if err := c.EndLine(); err != nil {
			return n, fmt.Errorf("lines csv of run %d: write: %w", run, err)
		}
		n++
	}
	if err := rows.Err(); err != nil {
		return n, fmt.Errorf("lines csv of run %d: %w", run, err)
	}
	if err := c.Flush(); err != nil {
		return n, fmt.Errorf("lines csv of run %d: write: %w", run, err)
	}
	return n, nil
}

// text and reais write a cell that may be NULL: an empty cell.
func text(c *reports.CSVWriter, s *string) {
	if s == nil {
		c.Text("")
		return
	}
	c.Text(*s)
}

func reais(c *reports.CSVWriter, v *int64) {
	if v == nil {
		c.Text("")
		return
	}
	c.Reais(*v)
}
