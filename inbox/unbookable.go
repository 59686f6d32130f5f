package inbox

import (
	"fmt"
	"time"

	"github.com/razao/razao/money"
	"github.com/razao/razao/postings"
	"github.com/razao/razao/webhook/scheme"
)

// judgeEach makes each event of a delivery whose events are judged one by
// one (a bcb-pix callback: each Pix and each devolução, PSP-SCHEMES.md)
// that is dated outside the ledger's window, or states an amount or fee
// over its limit, unbookable: a malformed divergence of its own, while
// the rest of the callback is booked, where a delivery of one event is
// refused whole (checkTimes, checkAmounts). An amount over the limit is
// kept in the divergence's detail only: no figure beyond the limit is
// stored where sums are taken.
func judgeEach(evs []scheme.Event, cal postings.Calendar, limit money.Limit, now time.Time) []scheme.Event {
	for i, ev := range evs {
		one := []scheme.Event{ev}
		err := checkTimes(one, cal, now)
		if err == nil {
			if err = checkAmounts(one, limit); err != nil {
				ev.Amount, ev.HasAmount, ev.Fee, ev.HasFee = 0, false, 0, false
			}
		}
		if err == nil {
			continue
		}
		ev.Kind, ev.OccurredAt = scheme.KindUnbookable, time.Time{}
		ev.Problem = &scheme.Problem{Reason: scheme.ProblemMalformed, Detail: fmt.Sprintf("%s %s: %v", ev.Type, ev.EventID, err)}
		evs[i] = ev
	}
	return evs
}
