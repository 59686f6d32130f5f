package inbox

import (
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/razao/razao/charges"
	"github.com/razao/razao/money"
	"github.com/razao/razao/periods"
	"github.com/razao/razao/postings"
	"github.com/razao/razao/webhook/scheme"
)

// judgedEachScheme is the scheme whose deliveries carry many events each
// judged on its own (a bcb-pix callback: each Pix and each devolução).
const judgedEachScheme = "bcb-pix"

// Check is what the inbox takes of a delivery through ep received at now,
// before it is stored: a delivery it could not store, or whose events
// would fail every time they are applied (checkEvents), or that is dated
// outside the ledger's window (checkTimes) or states an amount over its
// limit (checkAmounts), is refused with scheme.ErrMalformed, to be kept
// by StoreMalformed (400) instead of failing to store (503) or being
// answered 200 and then failing attempt after attempt. Of a bcb-pix
// callback, whose events are judged one by one, an event dated outside the
// window or over the limit becomes unbookable instead (judgeEach) and the
// rest is booked. It returns the events to store.
func (in *Inbox) Check(ep *Endpoint, evs []scheme.Event, now time.Time) ([]scheme.Event, error) {
	ledger := in.proc.applier.Ledger
	err := checkEvents(ep, evs)
	if err == nil && ep.Scheme.Name() == judgedEachScheme {
		evs = judgeEach(evs, ledger.Calendar(), ledger.Limit(), now)
	}
	if err == nil {
		err = checkTimes(evs, ledger.Calendar(), now)
	}
	if err == nil {
		err = checkAmounts(evs, ledger.Limit())
	}
	return evs, err
}

// maxIDLength bounds the ids a delivery is keyed and looked up by: longer
// ones would not fit a btree index entry, and no PSP sends them.
const maxIDLength = 256

// checkEvents refuses a delivery the inbox could not store, or whose
// events would fail every time they are applied, so that it is kept as
// malformed (400) instead of failing to store (503) or being answered 200
// and then failing attempt after attempt: too many events for the
// endpoint, an id too long for the index or with text PostgreSQL refuses,
// or a refund id too long for the posting-set keys derived from it.
func checkEvents(ep *Endpoint, evs []scheme.Event) error {
	if len(evs) > ep.MaxItems {
		return fmt.Errorf("%w: the delivery carries %d events (for bcb-pix: each Pix and each devolução), more than this endpoint's max_items of %d; send them in smaller callbacks",
			scheme.ErrMalformed, len(evs), ep.MaxItems)
	}
	for _, ev := range evs {
		for _, f := range []struct{ name, v string }{{"event id", ev.EventID}, {"event type", ev.Type},
			{"charge id", ev.ChargeID}, {"PSP reference", ev.PSPRef}, {"refund id", ev.RefundID}} {
			if err := checkText(f.v); err != nil {
				return fmt.Errorf("%w: %s %w", scheme.ErrMalformed, f.name, err)
			}
		}
		for name, v := range ev.Extra {
			if strings.IndexByte(v, 0) >= 0 || !utf8.ValidString(v) {
				return fmt.Errorf("%w: %s holds a NUL or invalid UTF-8", scheme.ErrMalformed, name)
			}
		}
		if err := checkSetKeys(ev); err != nil {
			return err
		}
	}
	return nil
}

// checkText refuses an id the inbox cannot store: longer than
// maxIDLength, or with a NUL or invalid UTF-8, which PostgreSQL's text
// (and jsonb) refuse.
func checkText(v string) error {
	switch {
	case len(v) > maxIDLength:
		return fmt.Errorf("longer than %d bytes", maxIDLength)
	case strings.IndexByte(v, 0) >= 0:
		return errors.New("holds a NUL character")
	case !utf8.ValidString(v):
		return errors.New("is not valid UTF-8")
	}
	return nil
}

// longestChargeID stands for whichever charge an event's ids find: the
// posting-set keys of a refund derive from its charge's id, which can be
// as long as charges.MaxIDLength.
var longestChargeID = strings.Repeat("x", charges.MaxIDLength)

// checkSetKeys refuses a refund whose posting sets' idempotency keys,
// which name its PSP refund id in full so that the journal reads plainly,
// would be longer than postings.MaxKeyLength for some charge.
func checkSetKeys(ev scheme.Event) error {
	if ev.RefundID == "" {
		return nil
	}
	for _, k := range postings.RefundKeys(longestChargeID, ev.RefundID) {
		if len(k) > postings.MaxKeyLength {
			return fmt.Errorf("%w: refund id of %d bytes: the posting-set keys derived from it would exceed %d bytes (refund ids of up to %d bytes fit)",
				scheme.ErrMalformed, len(ev.RefundID), postings.MaxKeyLength, len(ev.RefundID)-(len(k)-postings.MaxKeyLength))
		}
	}
	return nil
}

// checkTimes refuses events dated outside the ledger's window (before its
// go-live date, past our clock plus periods.MaxAhead — the scheme's 300 s
// tolerance plus 5 minutes — or at a UTC offset no zone has), so the
// delivery is kept as malformed (400) at intake, for every scheme alike,
// instead of being booked in a month nobody can close or failing in the
// database ten times. The ledger refuses the same times again when it
// books; the window is its calendar's.
func checkTimes(evs []scheme.Event, cal periods.Calendar, now time.Time) error {
	for _, ev := range evs {
		if ev.OccurredAt.IsZero() {
			continue // the scheme carries no time: the delivery's receipt dates it
		}
		if err := cal.CheckEventTime(ev.OccurredAt, now); err != nil {
			return fmt.Errorf("%w: %s: %w", scheme.ErrMalformed, ev.Type, err)
		}
	}
	return nil
}

// checkAmounts refuses events stating an amount or fee above the ledger's
// limit: authentic but malformed (400, kept, a divergence), never a
// delivery that fails on every retry or, worse, a sum no report can add.
func checkAmounts(evs []scheme.Event, limit money.Limit) error {
	for _, ev := range evs {
		if ev.HasAmount {
			if err := limit.Check("amount", ev.Amount); err != nil {
				return fmt.Errorf("%w: %w", scheme.ErrMalformed, err)
			}
		}
		if ev.HasFee {
			if err := limit.Check("fee", ev.Fee); err != nil {
				return fmt.Errorf("%w: %w", scheme.ErrMalformed, err)
			}
		}
	}
	return nil
}
