package reconcile

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/razao/razao/money"
	"github.com/razao/razao/reports"
)

var linesHeader = []string{"line", "side", "kind", "outcome", "reason", "psp_id", "charge_ref", "refund_id",
	"amount", "fee", "at", "charge_id", "ledger_amount", "ledger_fee", "inbox_id", "detail"}

// WriteLinesCSV streams every line of a run, in order, as CSV in dialect
// d (amounts in reais), and returns how many it wrote. Text cells that a
// spreadsheet would read as a formula are prefixed with an apostrophe.
func WriteLinesCSV(ctx context.Context, db sqlx.QueryerContext, w io.Writer, run int64, d reports.Dialect) (int64, error) {
	rows, err := db.QueryxContext(ctx, `SELECT `+lineResultColumns+` FROM reconciliation_lines WHERE run_id = $1 ORDER BY line`, run)
	if err != nil {
		return 0, fmt.Errorf("lines csv of run %d: %w", run, err)
	}
	defer rows.Close()
	cw := newLineWriter(w, d)
	cw.row(linesHeader...)
	var n int64
	for rows.Next() {
		var l LineResult
		if err := rows.StructScan(&l); err != nil {
			return n, fmt.Errorf("lines csv of run %d: %w", run, err)
		}
		cw.row(strconv.FormatInt(l.Line, 10), l.Side, l.Kind, l.Outcome, deref(l.Reason), l.PSPID, l.ChargeRef, l.RefundID,
			cw.reais(&l.Amount), cw.reais(l.Fee), timeCell(l.At), deref(l.ChargeID), cw.reais(l.LedgerAmount),
			cw.reais(l.LedgerFee), intCell(l.InboxID), l.Detail)
		n++
	}
	if err := rows.Err(); err != nil {
		return n, fmt.Errorf("lines csv of run %d: %w", run, err)
	}
	return n, cw.flush()
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func intCell(v *int64) string {
	if v == nil {
		return ""
	}
	return strconv.FormatInt(*v, 10)
}

func timeCell(t *time.Time) string {
	if t == nil {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}

// lineWriter writes CSV rows in one of the two dialects the exports use.
type lineWriter struct {
	bw      *bufio.Writer
	sep     string
	decimal rune
	err     error
}

func newLineWriter(w io.Writer, d reports.Dialect) *lineWriter {
	lw := &lineWriter{bw: bufio.NewWriterSize(w, 64<<10), sep: ",", decimal: '.'}
	if d == reports.Brazil {
		lw.sep, lw.decimal = ";", ','
		lw.bw.WriteString("\xEF\xBB\xBF")
	}
	return lw
}

func (lw *lineWriter) reais(v *int64) string {
	if v == nil {
		return ""
	}
	return money.FormatReais(*v, lw.decimal)
}

// row writes cells, each quoted when it holds either dialect's separator,
// a tab, a quote, CR or LF: quoted, it is one cell whatever a reader
// splits on, so the formula guard on its start is enough.
func (lw *lineWriter) row(cells ...string) {
	var b strings.Builder
	for i, c := range cells {
		if i > 0 {
			b.WriteString(lw.sep)
		}
		if lw.isNumber(c) {
			b.WriteString(c) // an amount, written as the dialect writes numbers
			continue
		}
		if c != "" && strings.ContainsRune("=+-@\t\r", rune(c[0])) {
			c = "'" + c
		}
		if strings.ContainsAny(c, ",;\t\"\r\n") {
			c = `"` + strings.ReplaceAll(c, `"`, `""`) + `"`
		}
		b.WriteString(c)
	}
	b.WriteString("\r\n")
	if lw.err == nil {
		_, lw.err = lw.bw.WriteString(b.String())
	}
}

// isNumber reports whether c is a number in the dialect's own form
// (digits and its decimal separator): left bare, a spreadsheet reads it as
// one.
func (lw *lineWriter) isNumber(c string) bool {
	if c == "" || strings.Trim(c, "0123456789"+string(lw.decimal)) != "" || strings.Count(c, string(lw.decimal)) > 1 {
		return false
	}
	return c[0] != byte(lw.decimal) && c[len(c)-1] != byte(lw.decimal)
}

func (lw *lineWriter) flush() error {
	if lw.err != nil {
		return lw.err
	}
	return lw.bw.Flush()
}
