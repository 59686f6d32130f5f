package adjustments

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/razao/razao/events"
	"github.com/razao/razao/periods"
	"github.com/razao/razao/postings"
)

// Approve approves proposal id by who at now and books its set, in one
// transaction, under the proposal's row lock: of two approvals at once,
// one books and the other finds it decided (ErrDecided). The proposer
// never approves its own (ErrOwnProposal), whatever its token; a
// proposal whose time ran out is marked expired (with its event) and
// refused (ErrExpired). An adjustment whose month closed meanwhile is
// refused (postings.ErrClosedMonth) and stays proposed; a reversal is
// booked in the first open month whenever it is approved.
func (c Corrections) Approve(ctx context.Context, id int64, who Actor, now time.Time) (Adjustment, error) {
	if err := who.check(); err != nil {
		return Adjustment{}, err
	}
	return c.decision(ctx, id, now, func(tx *sqlx.Tx, r row) (row, error) {
		if r.FourEyes && r.ProposedBy == who.Name {
			return row{}, fmt.Errorf("%w: %s proposed adjustment %d; another admin token, of another name, approves it", ErrOwnProposal, who.Name, id)
		}
		return c.book(ctx, tx, r, who, now)
	})
}

// Reject rejects proposal id by who at now, with an optional note (the
// rules of a reason). Any admin may reject, its proposer too (a
// withdrawal).
func (c Corrections) Reject(ctx context.Context, id int64, who Actor, note string, now time.Time) (Adjustment, error) {
	if err := who.check(); err != nil {
		return Adjustment{}, err
	}
	note, err := checkText("note", note, false)
	if err != nil {
		return Adjustment{}, err
	}
	return c.decision(ctx, id, now, func(tx *sqlx.Tx, r row) (row, error) {
		return decide(ctx, tx, id, StatusRejected, who, now, note, 0, time.Time{})
	})
}

// decision runs decide on proposal id, locked, still proposed and not
// expired, appends the event of its new state and commits.
func (c Corrections) decision(ctx context.Context, id int64, now time.Time, decide func(*sqlx.Tx, row) (row, error)) (Adjustment, error) {
	tx, err := c.DB.BeginTxx(ctx, periods.WriteTx())
	if err != nil {
		return Adjustment{}, fmt.Errorf("decide adjustment %d: begin: %w", id, err)
	}
	defer tx.Rollback()
	r, err := lock(ctx, tx, id)
	if err != nil {
		return Adjustment{}, err
	}
	if r.Status != StatusProposed {
		detail := string(r.Status)
		if r.PostingSetID.Valid {
			detail += " as posting set " + strconv.FormatInt(r.PostingSetID.Int64, 10)
		}
		if r.DecidedBy.Valid {
			detail += " by " + r.DecidedBy.String
		}
		return Adjustment{}, fmt.Errorf("%w: adjustment %d was %s", ErrDecided, id, detail)
	}
	if !now.Before(r.ExpiresAt) {
		if err := expire(ctx, tx, []int64{id}, now); err != nil {
			return Adjustment{}, err
		}
		if err := tx.Commit(); err != nil {
			return Adjustment{}, fmt.Errorf("expire adjustment %d: commit: %w", id, err)
		}
		return Adjustment{}, fmt.Errorf("%w: adjustment %d expired at %s unapproved", ErrExpired, id, r.ExpiresAt.UTC().Format(time.RFC3339))
	}
	decided, err := decide(tx, r)
	if err != nil {
		return Adjustment{}, err
	}
	if err := events.AppendAll(ctx, tx, event(decided)); err != nil {
		return Adjustment{}, err
	}
	if err := tx.Commit(); err != nil {
		return Adjustment{}, fmt.Errorf("decide adjustment %d: commit: %w", id, postings.MapError(err))
	}
	return decided.adjustment(), nil
}

// book books r's set inside tx, approved by who at now, and marks r
// booked. The caller appends the event.
func (c Corrections) book(ctx context.Context, tx *sqlx.Tx, r row, who Actor, now time.Time) (row, error) {
	key := "adjustment:" + strconv.FormatInt(r.ID, 10)
	var (
		posted postings.Posted
		err    error
	)
	switch r.Kind {
	case KindReversal:
		posted, err = c.Ledger.ReverseTx(ctx, tx, postings.Reversal{Of: r.Reverses.Int64, IdempotencyKey: key,
			Description: r.Reason, EventAt: now})
	default:
		var legs []Leg
		if err := json.Unmarshal(r.Legs, &legs); err != nil {
			return row{}, fmt.Errorf("adjustment %d: legs: %w", r.ID, err)
		}
		s := postings.Set{Kind: postings.KindAdjustment, IdempotencyKey: key, Amount: r.Amount, Currency: r.Currency,
			EventAt: now, Competence: r.Competence.Time.UTC(), ChargeID: r.ChargeID.String, Partner: r.Partner.String,
			Description: r.Reason}
		for _, l := range legs {
			s.Legs = append(s.Legs, postings.Leg{Account: l.Account, Amount: l.Amount})
		}
		posted, err = c.Ledger.PostTx(ctx, tx, s)
	}
	if err != nil {
		return row{}, fmt.Errorf("book adjustment %d: %w", r.ID, err)
	}
	return decide(ctx, tx, r.ID, StatusBooked, who, now, "", posted.ID, posted.Competence)
}

// expire marks proposals ids expired at now, with their events.
func expire(ctx context.Context, tx *sqlx.Tx, ids []int64, now time.Time) error {
	for _, id := range ids {
		r, err := decide(ctx, tx, id, StatusExpired, Actor{}, now, "", 0, time.Time{})
		if err != nil {
			return err
		}
		if err := events.AppendAll(ctx, tx, event(r)); err != nil {
			return err
		}
	}
	return nil
}

// expireBatch bounds the proposals one ExpireDue transaction expires.
const expireBatch = 500

// ExpireDue marks expired, with their events, the proposals whose time
// ran out at now, and returns how many. A proposal a decision holds is
// skipped (that decision expires it, or books it in time).
func ExpireDue(ctx context.Context, db *sqlx.DB, now time.Time) (int, error) {
	total := 0
	for {
		tx, err := db.BeginTxx(ctx, periods.WriteTx())
		if err != nil {
			return total, fmt.Errorf("expire adjustments: begin: %w", err)
		}
		rs, err := expireDue(ctx, tx, now, expireBatch)
		if err == nil {
			drafts := make([]events.Draft, len(rs))
			for i, r := range rs {
				drafts[i] = event(r)
			}
			err = events.AppendAll(ctx, tx, drafts...)
		}
		if err == nil {
			err = tx.Commit()
		}
		tx.Rollback()
		if err != nil {
			return total, err
		}
		total += len(rs)
		if len(rs) < expireBatch {
			return total, nil
		}
	}
}

// Run expires due proposals every interval until ctx ends. Any replica
// may run it: proposals are claimed with SKIP LOCKED.
func Run(ctx context.Context, db *sqlx.DB, log *slog.Logger, interval time.Duration, now func() time.Time) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if n, err := ExpireDue(ctx, db, now()); err != nil && ctx.Err() == nil {
			log.Error("expire adjustments", "error", err)
		} else if n > 0 {
			log.Info("adjustments expired", "count", n)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func isNoRows(err error) bool { return errors.Is(err, sql.ErrNoRows) }
