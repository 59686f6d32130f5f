package postings

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/razao/razao/internal/kind"
	"github.com/razao/razao/periods"
)

// Reversals. A reversal is the mirror of a set, every leg negated, booked
// as an 'adjustment' set whose reverses column names the original
// (sql/0048): an ordinary balanced set for every guard of the ledger.

// Errors of reversals; callers test them with errors.Is.
var (
	// ErrSetNotFound: no posting set has the id.
	ErrSetNotFound = kind.New(kind.NotFound, "not-found", "Not found", "posting set not found")
	// ErrNotReversible: the set is of a kind that is not reversed (a
	// sale, a refund, a commission and its reversal follow a charge's
	// state: a refund or an adjustment corrects them), or is itself a
	// reversal.
	ErrNotReversible = kind.New(kind.Conflict, "not-reversible", "Posting set cannot be reversed", "posting set cannot be reversed")
	// ErrAlreadyReversed: the set has its reversal already.
	ErrAlreadyReversed = kind.New(kind.Conflict, "already-reversed", "Posting set already reversed", "posting set already reversed")
)

// ReversibleKinds are the kinds of set a reversal may mirror: corrections
// and payouts, which no charge's state follows. A sale, a refund, a
// commission or a commission reversal is tied to its charge (its state,
// its refunds' sum, the commission owed on it): mirroring one would leave
// the charge saying paid or refunded while the ledger says otherwise.
var ReversibleKinds = []Kind{KindAdjustment, KindPayout}

// Original is a set as a reversal reads it: its header, the set it
// reverses itself (a reversal), the reversal it has, and its legs.
type Original struct {
	StoredSet
	Reverses   sql.NullInt64
	ReversedBy sql.NullInt64
	Legs       []StoredLeg
}

// Mirror is the legs of o's reversal: each of o's legs negated.
func (o Original) Mirror() []Leg {
	out := make([]Leg, len(o.Legs))
	for i, l := range o.Legs {
		out[i] = Leg{Account: l.Account, Amount: -l.Amount, Currency: l.Currency}
	}
	return out
}

// CheckReversible refuses a set that is not reversed: of a kind outside
// ReversibleKinds (ErrNotReversible, saying what corrects it instead), a
// reversal itself (ErrNotReversible), or reversed already
// (ErrAlreadyReversed).
func (o Original) CheckReversible() error {
	switch {
	case o.Reverses.Valid:
		return fmt.Errorf("%w: set %d is the reversal of set %d; reversing a reversal is refused (propose an adjustment instead)",
			ErrNotReversible, o.ID, o.Reverses.Int64)
	case !slices.Contains(ReversibleKinds, Kind(o.Kind)):
		return fmt.Errorf("%w: set %d is a %s, tied to charge %s's state: correct it with a refund or an adjustment; only adjustment and payout sets are reversed",
			ErrNotReversible, o.ID, o.Kind, o.ChargeID.String)
	case o.ReversedBy.Valid:
		return fmt.Errorf("%w: set %d was reversed by set %d", ErrAlreadyReversed, o.ID, o.ReversedBy.Int64)
	}
	return nil
}

// LoadOriginal reads set id with its legs and its reversal, if it has one.
func LoadOriginal(ctx context.Context, q sqlx.QueryerContext, id int64) (Original, error) {
	var row struct {
		StoredSet
		Reverses   sql.NullInt64 `db:"reverses"`
		ReversedBy sql.NullInt64 `db:"reversed_by"`
	}
	err := sqlx.GetContext(ctx, q, &row, `SELECT `+storedSetColumns+`, reverses,
		(SELECT r.id FROM posting_set_keys r WHERE r.reverses = s.id) AS reversed_by
		FROM posting_sets s WHERE id = $1`, id)
	if errors.Is(err, sql.ErrNoRows) {
		return Original{}, fmt.Errorf("%w: %d", ErrSetNotFound, id)
	}
	if err != nil {
		return Original{}, fmt.Errorf("read posting set %d: %w", id, err)
	}
	legs, err := LegsOf(ctx, q, []int64{id})
	if err != nil {
		return Original{}, fmt.Errorf("read posting set %d's legs: %w", id, err)
	}
	return Original{StoredSet: row.StoredSet, Reverses: row.Reverses, ReversedBy: row.ReversedBy, Legs: legs}, nil
}

// Reversal is a reversal to book.
type Reversal struct {
	// Of is the id of the set reversed.
	Of int64
	// IdempotencyKey is the new set's key.
	IdempotencyKey string
	// Description is the new set's description (the reason).
	Description string
	// EventAt is when the reversal is made (its approval).
	EventAt time.Time
}

// ReverseTx books r inside tx: the mirror of set r.Of, linked to it
// (reverses), in the first open month: the original's own date while its
// month is open, else the first day of the month after the last closed
// one (periods.Competence, read under the close lock, as a late event's),
// so a reversal is never dated before what it reverses. It refuses what
// CheckReversible refuses, and a second reversal of one set
// (ErrAlreadyReversed, uq_posting_sets_reverses). A retry under the same
// key of the same reversal is Replayed. The caller owns tx (READ
// COMMITTED, periods.WriteTx); pass Commit's error through MapError.
func (l *Ledger) ReverseTx(ctx context.Context, tx *sqlx.Tx, r Reversal) (Posted, error) {
	if prior, ok, err := SetByKey(ctx, tx, r.IdempotencyKey); err != nil {
		return Posted{}, fmt.Errorf("reverse set %d: %w", r.Of, err)
	} else if ok {
		return l.replayReversal(ctx, tx, r, prior)
	}
	o, err := LoadOriginal(ctx, tx, r.Of)
	if err != nil {
		return Posted{}, err
	}
	if err := o.CheckReversible(); err != nil {
		return Posted{}, err
	}
	s := Set{Kind: KindAdjustment, IdempotencyKey: r.IdempotencyKey, Amount: o.Amount, Currency: o.Currency, EventAt: r.EventAt,
		ChargeID: o.ChargeID.String, Partner: o.Partner.String, Description: r.Description, Legs: o.Mirror()}
	if err := s.Validate(); err != nil {
		return Posted{}, fmt.Errorf("reverse set %d: %w", r.Of, err)
	}
	if err := l.CheckWindow(s); err != nil {
		return Posted{}, err
	}
	last, err := periods.LockForPosting(ctx, tx)
	if err != nil {
		return Posted{}, fmt.Errorf("reverse set %d: %w", r.Of, err)
	}
	competence := periods.Competence(o.Competence.UTC(), last)
	var row struct {
		ID         int64     `db:"id"`
		Competence time.Time `db:"competence"`
		Legs       int       `db:"legs"`
	}
	// The set and its legs in one statement, as every set is written
	// (ledger_refuse_sealed_set): the legs are the original's, negated, read
	// by the statement itself. Nothing is written when the original has
	// its reversal already (uq_posting_sets_reverses) or the key is taken:
	// both are posting_set_keys' (sql/0056), written first.
	err = tx.GetContext(ctx, &row, `
		WITH k AS (
			INSERT INTO posting_set_keys (idempotency_key, kind, competence, amount, charge_id, reverses)
			VALUES ($1, 'adjustment', $4, $2, NULLIF($6, ''), $10)
			ON CONFLICT DO NOTHING
			RETURNING id
		), s AS (
			INSERT INTO posting_sets (id, kind, idempotency_key, amount, currency, competence, event_at, charge_id, partner,
				description, content_hash, reverses)
			SELECT k.id, 'adjustment', $1, $2, $3, $4, $5, NULLIF($6, ''), NULLIF($7, ''), $8, $9, $10 FROM k
			RETURNING id, competence, competence_month
		), p AS (
			INSERT INTO postings (posting_set_id, account_id, currency, amount, competence_month)
			SELECT s.id, o.account_id, o.currency, -o.amount, s.competence_month
			FROM s CROSS JOIN LATERAL (SELECT * FROM postings WHERE posting_set_id = $10 ORDER BY id) o
			ORDER BY o.id
			RETURNING posting_set_id
		)
		SELECT s.id, s.competence, (SELECT count(*) FROM p) AS legs FROM s`,
		s.IdempotencyKey, s.Amount, s.Currency, competence.Format(time.DateOnly), s.EventAt, s.ChargeID, s.Partner,
		s.Description, s.contentHash(), r.Of)
	if errors.Is(err, sql.ErrNoRows) {
		if prior, ok, err := SetByKey(ctx, tx, r.IdempotencyKey); err != nil {
			return Posted{}, fmt.Errorf("reverse set %d: %w", r.Of, err)
		} else if ok {
			return l.replayReversal(ctx, tx, r, prior)
		}
		return Posted{}, fmt.Errorf("%w: set %d, by a reversal written meanwhile", ErrAlreadyReversed, r.Of)
	}
	if err != nil {
		return Posted{}, fmt.Errorf("reverse set %d: %w", r.Of, MapError(err))
	}
	if row.Legs != len(s.Legs) {
		return Posted{}, fmt.Errorf("reverse set %d: wrote %d of %d postings", r.Of, row.Legs, len(s.Legs))
	}
	return Posted{ID: row.ID, Competence: row.Competence.UTC()}, nil
}

// replayReversal answers a reversal whose key holds a set already: the
// same reversal (Replayed), or ErrIdempotencyConflict.
func (l *Ledger) replayReversal(ctx context.Context, tx *sqlx.Tx, r Reversal, prior StoredSet) (Posted, error) {
	var reverses sql.NullInt64
	if err := tx.GetContext(ctx, &reverses, `SELECT reverses FROM posting_sets WHERE id = $1`, prior.ID); err != nil {
		return Posted{}, fmt.Errorf("reverse set %d: %w", r.Of, err)
	}
	if !reverses.Valid || reverses.Int64 != r.Of {
		return Posted{}, fmt.Errorf("%w: key %q holds set %d, which does not reverse set %d", ErrIdempotencyConflict, r.IdempotencyKey, prior.ID, r.Of)
	}
	return Posted{ID: prior.ID, Competence: prior.Competence.UTC(), Replayed: true}, nil
}
