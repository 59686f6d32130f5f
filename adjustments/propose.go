package adjustments

import (
	"context"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/razao/razao/events"
	"github.com/razao/razao/periods"
	"github.com/razao/razao/postings"
)

// Corrections proposes, decides and books corrections over one database
// and ledger, with one approval policy.
type Corrections struct {
	DB     *sqlx.DB
	Ledger *postings.Ledger
	Config Config
}

// Propose proposes the adjustment r by who at now, and returns it: 201's
// proposal, booked at once when approval is off. The same key with the
// same request returns the proposal made first, whatever became of it
// (Replayed); with another request it is postings.ErrIdempotencyConflict.
// A closed competence month is postings.ErrClosedMonth: the adjustment is
// not moved to another month. Nothing is written on a refusal.
func (c Corrections) Propose(ctx context.Context, r Request, who Actor, now time.Time) (Adjustment, error) {
	if err := who.check(); err != nil {
		return Adjustment{}, err
	}
	tx, err := c.DB.BeginTxx(ctx, periods.WriteTx())
	if err != nil {
		return Adjustment{}, fmt.Errorf("propose adjustment: begin: %w", err)
	}
	defer tx.Rollback()
	ok, err := check(ctx, tx, r, c.Ledger.Limit(), c.Ledger.Calendar(), now)
	if err != nil {
		return Adjustment{}, err
	}
	// The request as it was asked (competence "" stays "": a retry the
	// next day is the same request), its reason as stored.
	hash := requestHash(struct {
		Legs         []Leg  `json:"legs"`
		Reason       string `json:"reason"`
		Competence   string `json:"competence"`
		ChargeID     string `json:"charge_id"`
		Partner      string `json:"partner"`
		DivergenceID int64  `json:"divergence_id"`
	}{r.Legs, ok.Reason, r.Competence, r.ChargeID, r.Partner, r.DivergenceID})
	if prior, found, err := replayByKey(ctx, tx, r.IdempotencyKey, hash); err != nil || found {
		return prior, err
	}
	last, err := periods.LastClosed(ctx, tx)
	if err != nil {
		return Adjustment{}, err
	}
	if m := periods.MonthOf(ok.competence); periods.Closed(m, last) {
		return Adjustment{}, fmt.Errorf("%w: competence: %s is closed; an adjustment is booked in its own month, never moved (date it in an open month)",
			postings.ErrClosedMonth, m)
	}
	p := proposal{kind: KindAdjustment, key: r.IdempotencyKey, hash: hash, reason: ok.Reason, legs: r.Legs,
		amount: ok.amount, currency: ok.currency, competence: ok.competence, chargeID: r.ChargeID, partner: r.Partner,
		divergenceID: r.DivergenceID, fourEyes: !c.Config.ApprovalOff, by: who, at: now, expires: now.Add(c.Config.ttl())}
	stored, inserted, err := insert(ctx, tx, p)
	if err != nil {
		return Adjustment{}, err
	}
	if !inserted {
		// Another request under the key committed meanwhile.
		if prior, found, err := replayByKey(ctx, tx, r.IdempotencyKey, hash); err != nil || found {
			return prior, err
		}
		return Adjustment{}, fmt.Errorf("propose adjustment %q: key taken and not found", r.IdempotencyKey)
	}
	return c.proposed(ctx, tx, stored, who, now)
}

// proposed appends the proposal's event and, with approval off, books it
// at once, by its proposer; then commits.
func (c Corrections) proposed(ctx context.Context, tx *sqlx.Tx, stored row, who Actor, now time.Time) (Adjustment, error) {
	if err := events.AppendAll(ctx, tx, event(stored)); err != nil {
		return Adjustment{}, err
	}
	if !stored.FourEyes {
		var err error
		if stored, err = c.book(ctx, tx, stored, who, now); err != nil {
			return Adjustment{}, err
		}
		if err := events.AppendAll(ctx, tx, event(stored)); err != nil {
			return Adjustment{}, err
		}
	}
	if err := tx.Commit(); err != nil {
		return Adjustment{}, fmt.Errorf("propose %s: commit: %w", stored.Kind, postings.MapError(err))
	}
	return stored.adjustment(), nil
}

// replayByKey returns the adjustment proposed under key when its request
// was the same (Replayed), postings.ErrIdempotencyConflict when it was
// another, and found false when the key is free.
func replayByKey(ctx context.Context, tx *sqlx.Tx, key, hash string) (Adjustment, bool, error) {
	r, err := byKey(ctx, tx, key)
	if isNoRows(err) {
		return Adjustment{}, false, nil
	}
	if err != nil {
		return Adjustment{}, false, err
	}
	if r.RequestHash != hash {
		return Adjustment{}, true, fmt.Errorf("%w: Idempotency-Key %q was used for adjustment %d, with another request",
			postings.ErrIdempotencyConflict, key, r.ID)
	}
	a := r.adjustment()
	a.Replayed = true
	return a, true, nil
}

// ProposeReversal proposes the reversal of posting set setID, for reason,
// by who at now (booked at once when approval is off). Only adjustment
// and payout sets are reversed (postings.ReversibleKinds), never a
// reversal, and each at most once: a set with a reversal proposed is
// ErrReversalPending, unless the request is the same (same proposer,
// same reason: Replayed); one reversed already,
// postings.ErrAlreadyReversed.
func (c Corrections) ProposeReversal(ctx context.Context, setID int64, reason string, who Actor, now time.Time) (Adjustment, error) {
	if err := who.check(); err != nil {
		return Adjustment{}, err
	}
	reason, err := checkReason(reason)
	if err != nil {
		return Adjustment{}, err
	}
	tx, err := c.DB.BeginTxx(ctx, periods.WriteTx())
	if err != nil {
		return Adjustment{}, fmt.Errorf("propose reversal: begin: %w", err)
	}
	defer tx.Rollback()
	o, err := postings.LoadOriginal(ctx, tx, setID)
	if err != nil {
		return Adjustment{}, err
	}
	if err := o.CheckReversible(); err != nil {
		return Adjustment{}, err
	}
	hash := requestHash(struct {
		Reverses int64  `json:"reverses"`
		Reason   string `json:"reason"`
		By       string `json:"by"`
	}{setID, reason, who.Name})
	mirror := o.Mirror()
	legs := make([]Leg, len(mirror))
	for i, l := range mirror {
		legs[i] = Leg{Account: l.Account, Amount: l.Amount}
	}
	p := proposal{kind: KindReversal, hash: hash, reason: reason, legs: legs, amount: o.Amount, currency: o.Currency,
		chargeID: o.ChargeID.String, partner: o.Partner.String, reverses: setID, fourEyes: !c.Config.ApprovalOff,
		by: who, at: now, expires: now.Add(c.Config.ttl())}
	stored, inserted, err := insert(ctx, tx, p)
	if err != nil {
		return Adjustment{}, err
	}
	if !inserted {
		prior, found, err := reversalOf(ctx, tx, setID)
		if err != nil {
			return Adjustment{}, err
		}
		if !found {
			return Adjustment{}, fmt.Errorf("propose reversal of set %d: taken and not found", setID)
		}
		if prior.RequestHash == hash {
			a := prior.adjustment()
			a.Replayed = true
			return a, nil
		}
		return Adjustment{}, fmt.Errorf("%w: set %d has reversal %d, %s", ErrReversalPending, setID, prior.ID, prior.Status)
	}
	return c.proposed(ctx, tx, stored, who, now)
}
