package reconcile

import (
	"context"
	"fmt"

	"github.com/jmoiron/sqlx"

	"github.com/razao/razao/internal/cursor"
)

// LineFilter narrows a run's lines; an empty field is any value.
type LineFilter struct {
	// Outcome is matched, booked or divergence.
	Outcome string
	// Kind is paid, refunded, refund_open or invalid.
	Kind string
	// Side is statement (a line of the statement) or ledger (a fact of
	// the ledger the statement lacks).
	Side string
}

// FilteredLines is LinesPage over the lines of run that f keeps: a page
// of them after line, in order, and the after of the next page (0 when
// there is none). The run's lines are read by their key in line order,
// the filter applied to each.
func FilteredLines(ctx context.Context, db sqlx.QueryerContext, run int64, f LineFilter, after int64, limit int) ([]LineResult, int64, error) {
	limit = cursor.Limit(limit)
	out := []LineResult{}
	err := sqlx.SelectContext(ctx, db, &out, `SELECT `+lineResultColumns+` FROM reconciliation_lines
		WHERE run_id = $1 AND line > $2
		  AND ($4 = '' OR coalesce(outcome, '') = $4) AND ($5 = '' OR kind = $5) AND ($6 = '' OR side = $6)
		ORDER BY line LIMIT $3`, run, after, limit+1, f.Outcome, f.Kind, f.Side)
	if err != nil {
		return nil, 0, fmt.Errorf("lines of reconciliation run %d: %w", run, err)
	}
	if len(out) > limit {
		out = out[:limit]
		return out, out[limit-1].Line, nil
	}
	return out, 0, nil
}
