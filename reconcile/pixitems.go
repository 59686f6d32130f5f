package reconcile

import (
	"time"

	"github.com/razao/razao/webhook/scheme"
)

// unbookableLine is l, read from an event the webhook's parser reads but
// razao cannot book (scheme.KindUnbookable): an invalid line that keeps
// the event's key, so that its divergence is one per fact across runs
// and is the webhook delivery's when that came first, with what the PSP
// said (ids, amount) and the reason the delivery path gives it.
func unbookableLine(l Line, ev scheme.Event) Line {
	l.Kind, l.At = KindInvalid, time.Time{}
	if ev.Problem != nil {
		l.Detail, l.Reason = truncate(ev.Problem.Detail, 500), ev.Problem.Reason
	}
	if l.Reason == string(scheme.ProblemMalformed) {
		l.Reason = "" // invalid_line: the statement's word for a line that does not read
	}
	return l
}

// inWindow keeps the lines of one statement item unless the item, its
// credit line (the first, dated by the Pix's horario), is dated at or
// after end: GET /pix lists horario in [inicio, fim], fim inclusive, and
// razao's windows are [from, to), so an item at exactly fim is the next
// window's, read there once, and neither twice nor never.
func inWindow(lines []Line, end time.Time) []Line {
	if len(lines) > 0 && lines[0].Kind == KindPaid && !lines[0].At.Before(end) {
		return nil
	}
	return lines
}
