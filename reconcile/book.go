package reconcile

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/lib/pq"

	"github.com/razao/razao/charges"
	"github.com/razao/razao/money"
	"github.com/razao/razao/webhook/scheme"
)

// toBook is a line the ledger lacks, as stored into the inbox.
type toBook struct {
	Line      int64     `db:"line"`
	Kind      Kind      `db:"kind"`
	EventType string    `db:"event_type"`
	EventID   string    `db:"event_id"`
	PSPID     string    `db:"psp_id"`
	ChargeRef string    `db:"charge_ref"`
	RefundID  string    `db:"refund_id"`
	Amount    int64     `db:"amount"`
	Fee       *int64    `db:"fee"`
	At        time.Time `db:"at"`
	// Parts are the line's Parts; ReturnID and Nature its rtrId and
	// natureza.
	Parts    pq.Int64Array `db:"parts"`
	ReturnID string        `db:"return_id"`
	Nature   string        `db:"refund_nature"`
}

// event is the line as the endpoint's webhook would have reported it: the
// same key, the same PSP id (so the payment's paid_ref is the webhook's),
// a fee only where the scheme states one (else a later webhook, without
// it, would read as another figure for the same payment).
func (b toBook) event(schemeName string) scheme.Event {
	ev := scheme.Event{Kind: scheme.KindPaid, Type: b.EventType, EventID: b.EventID, ChargeID: b.ChargeRef,
		PSPRef: b.PSPID, Amount: b.Amount, HasAmount: true, OccurredAt: b.At}
	if b.Kind == KindRefunded {
		ev.Kind, ev.RefundID, ev.ReturnID, ev.Nature = scheme.KindRefunded, b.RefundID, b.ReturnID, b.Nature
	}
	if p := b.Parts; len(p) == 7 {
		ev.Components = &scheme.Components{Parts: money.Parts{Original: p[0], Withdrawal: p[1], Change: p[2],
			Interest: p[3], Fine: p[4], Rebate: p[5], Discount: p[6]}}
	}
	if !charges.NamesPayments(schemeName) {
		// The scheme names no payment (Standard Webhooks): the payment
		// is its event id, as the webhook's.
		ev.PSPRef = ""
	}
	if b.Fee != nil && schemeName == "abacatepay" {
		ev.Fee, ev.HasFee = *b.Fee, true
	}
	return ev
}

// bookChunk is how many lines go into the inbox as one delivery.
const bookChunk = 500

// book stores every line decided "book" and not yet stored into the
// inbox, as deliveries of the endpoint, a chunk at a time, and notes on
// each line the inbox row that holds it. A line the ledger would refuse
// at intake (a time outside its window, an amount over its limit) becomes
// a divergence instead. It returns how many lines it stored.
func (r *Reconciler) book(ctx context.Context, run Run, ep *endpoint) (int, error) {
	stored := 0
	// Each chunk reads on from the last line of the one before, by the
	// run's key: reading from the start each time would rescan every line
	// already passed, for each chunk, quadratic in the run's length.
	// A line is read once: stored, refused, or found stored already.
	// The refused are written together once every chunk is read: a run
	// that dies before reads them again, still to book.
	var after int64
	refused := map[int64]string{}
	for {
		if err := r.renew(ctx, run.ID); err != nil {
			return stored, err
		}
		var lines []toBook
		err := r.sel(ctx, &lines, `SELECT line, kind, event_type, event_id, psp_id, charge_ref, refund_id,
				amount, fee, at, parts, coalesce(return_id, '') AS return_id, coalesce(refund_nature, '') AS refund_nature FROM reconciliation_lines
			WHERE run_id = $1 AND line > $3 AND outcome = 'booked' AND inbox_id IS NULL ORDER BY run_id, line LIMIT $2`,
			run.ID, min(bookChunk, ep.hook.MaxItems), after)
		if err != nil {
			return stored, fmt.Errorf("book run %d: %w", run.ID, err)
		}
		if len(lines) == 0 {
			return stored, r.refuse(ctx, run.ID, refused)
		}
		after = lines[len(lines)-1].Line
		evs, nums := r.events(lines, ep, refused)
		if len(evs) > 0 {
			body, _ := json.Marshal(map[string]any{"reconciliation_run": run.ID, "lines": nums})
			if _, err := r.inbox.StoreVerified(ctx, ep.hook, evs, body); err != nil {
				return stored, fmt.Errorf("book run %d: %w", run.ID, err)
			}
			stored += len(evs)
		}
		if err := r.noteInbox(ctx, run.ID, ep.hook.Name, nums); err != nil {
			return stored, err
		}
	}
}

// events builds the inbox events of lines and their line numbers, apart
// the ones the ledger would refuse, noted in refused with why.
func (r *Reconciler) events(lines []toBook, ep *endpoint, refused map[int64]string) ([]scheme.Event, []int64) {
	now := r.now()
	var evs []scheme.Event
	var nums []int64
	for _, l := range lines {
		if err := r.ledger.Calendar().CheckEventTime(l.At, now); err != nil {
			refused[l.Line] = err.Error()
			continue
		}
		if err := r.ledger.Limit().Check("amount", l.Amount); err != nil {
			refused[l.Line] = err.Error()
			continue
		}
		ev := l.event(ep.hook.Scheme.Name())
		// One line the inbox would refuse (an id too long for its set
		// keys, say) must not refuse the whole chunk, on every run.
		if err := r.inbox.CheckVerified(ep.hook, ev); err != nil {
			refused[l.Line] = err.Error()
			continue
		}
		evs, nums = append(evs, ev), append(nums, l.Line)
	}
	return evs, nums
}

// refuse makes the run's lines the ledger would refuse invalid lines
// saying why, in one statement, however many there are.
func (r *Reconciler) refuse(ctx context.Context, run int64, refused map[int64]string) error {
	if len(refused) == 0 {
		return nil
	}
	lines, whys := make([]int64, 0, len(refused)), make([]string, 0, len(refused))
	for line, why := range refused {
		lines, whys = append(lines, line), append(whys, why)
	}
	if _, err := r.exec(ctx, `UPDATE reconciliation_lines l SET outcome = 'divergence', reason = 'invalid_line',
			detail = left(f.why, 500)
		FROM unnest($2::bigint[], $3::text[]) AS f (line, why)
		WHERE l.run_id = $1 AND l.line = f.line`, run, pq.Array(lines), pq.Array(whys)); err != nil {
		return fmt.Errorf("book run %d: refuse %d lines: %w", run, len(lines), err)
	}
	return nil
}

// noteInbox sets on each stored line the inbox row of its key: the one
// just stored, or the one that was there (a webhook that came meanwhile,
// or this run's own before it died).
func (r *Reconciler) noteInbox(ctx context.Context, run int64, endpoint string, lines []int64) error {
	// By each line's key, and each inbox row's: a chunk's lines among a
	// million, looked up one by one, not a scan of the run.
	res, err := r.exec(ctx, `UPDATE reconciliation_lines l SET inbox_id = i.id
		FROM unnest($3::bigint[]) AS n (line), inbox i
		WHERE l.run_id = $1 AND l.line = n.line AND i.endpoint = $2
		  AND i.event_type = l.event_type AND i.event_id = l.event_id`, run, endpoint, pq.Array(lines))
	if err != nil {
		return fmt.Errorf("book run %d: note inbox rows: %w", run, err)
	}
	// A line left without its row would be stored again and again.
	if n, _ := res.RowsAffected(); n != int64(len(lines)) {
		return fmt.Errorf("book run %d: %d of %d lines stored have no inbox row", run, int64(len(lines))-n, len(lines))
	}
	return nil
}
