package postings

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/razao/razao/accounts"
)

// Ledger writes posting sets. It is safe for concurrent use, and several
// processes may write to one database at once: every rule that matters is
// decided inside the caller's transaction or by the database.
type Ledger struct {
	db  *sqlx.DB
	cal Calendar

	// Accounts never change once committed (a trigger refuses it), so a
	// code→account cache filled from committed rows only is always right.
	mu    sync.RWMutex
	known map[string]accounts.Account
}

// New returns a Ledger over db that dates sets with cal.
func New(db *sqlx.DB, cal Calendar) *Ledger {
	return &Ledger{db: db, cal: cal, known: map[string]accounts.Account{}}
}

// Calendar is the ledger's business calendar.
func (l *Ledger) Calendar() Calendar { return l.cal }

// Post writes s in a transaction of its own. See PostTx.
func (l *Ledger) Post(ctx context.Context, s Set) (Posted, error) {
	tx, err := l.db.BeginTxx(ctx, nil)
	if err != nil {
		return Posted{}, fmt.Errorf("post %s: begin: %w", s.IdempotencyKey, err)
	}
	defer tx.Rollback()
	p, err := l.PostTx(ctx, tx, s)
	if err != nil {
		return Posted{}, err
	}
	if err := tx.Commit(); err != nil {
		return Posted{}, fmt.Errorf("post %s: commit: %w", s.IdempotencyKey, MapError(err))
	}
	return p, nil
}

// PostTx writes s inside tx unless a set with its idempotency key exists:
// then it returns that set's id with Replayed set if the content is the
// same, and ErrIdempotencyConflict if not. The caller owns tx: the
// balance check runs when it commits, and a refusal there comes back from
// Commit; pass that error through MapError.
func (l *Ledger) PostTx(ctx context.Context, tx *sqlx.Tx, s Set) (Posted, error) {
	if err := s.Validate(); err != nil {
		return Posted{}, err
	}
	legs, err := l.resolveLegs(ctx, tx, &s)
	if err != nil {
		return Posted{}, err
	}
	if !s.Competence.IsZero() {
		if err := l.checkOpen(ctx, tx, MonthOf(s.Competence)); err != nil {
			return Posted{}, err
		}
	}
	hash := s.contentHash()
	p, inserted, err := insertSet(ctx, tx, &s, l.competence(s), hash, legs)
	if err != nil {
		return Posted{}, fmt.Errorf("post %s %s: %w", s.Kind, s.IdempotencyKey, MapError(err))
	}
	if inserted {
		return p, nil
	}
	return replay(ctx, tx, &s, hash)
}

func (l *Ledger) competence(s Set) time.Time {
	if !s.Competence.IsZero() {
		return s.Competence
	}
	return l.cal.Date(s.EventAt)
}

type resolvedLegs struct {
	accountIDs []int64
	currencies []string
	amounts    []int64
}

// resolveLegs maps each leg to its account, checking it exists and holds
// the leg's currency. Partner payable accounts are created on first use.
func (l *Ledger) resolveLegs(ctx context.Context, tx *sqlx.Tx, s *Set) (resolvedLegs, error) {
	var r resolvedLegs
	for i, leg := range s.Legs {
		a, err := l.account(ctx, tx, leg.Account)
		if err != nil {
			return resolvedLegs{}, fmt.Errorf("post %s: leg %d: %w", s.IdempotencyKey, i, err)
		}
		cur := leg.currency(s.Currency)
		if a.Currency != cur {
			return resolvedLegs{}, fmt.Errorf("%w: leg %d is %s, account %s is %s", ErrCurrencyMismatch, i, cur, a.Code, a.Currency)
		}
		r.accountIDs = append(r.accountIDs, a.ID)
		r.currencies = append(r.currencies, cur)
		r.amounts = append(r.amounts, leg.Amount)
	}
	return r, nil
}

func (l *Ledger) account(ctx context.Context, tx *sqlx.Tx, code string) (accounts.Account, error) {
	l.mu.RLock()
	a, ok := l.known[code]
	l.mu.RUnlock()
	if ok {
		return a, nil
	}
	var row struct {
		accounts.Account
		Mine bool `db:"mine"`
	}
	// Read through tx (a second connection per posting could exhaust the
	// pool), but cache only rows this transaction did not create: it may
	// still roll back.
	err := tx.GetContext(ctx, &row, `SELECT id, code, type, normal_side, currency, parent_id,
		created_at = now() AS mine FROM accounts WHERE code = $1`, code)
	switch {
	case err == nil:
		if !row.Mine {
			l.mu.Lock()
			l.known[code] = row.Account
			l.mu.Unlock()
		}
		return row.Account, nil
	case !errors.Is(err, sql.ErrNoRows):
		return accounts.Account{}, fmt.Errorf("load account %s: %w", code, err)
	case !strings.HasPrefix(code, accounts.CommissionPayable+":"):
		return accounts.Account{}, fmt.Errorf("%w: %s", accounts.ErrUnknownAccount, code)
	}
	return accounts.Ensure(ctx, tx, code)
}

func (l *Ledger) checkOpen(ctx context.Context, q sqlx.QueryerContext, m Month) error {
	var closed bool
	if err := sqlx.GetContext(ctx, q, &closed, `SELECT EXISTS (SELECT 1 FROM closed_periods WHERE month = $1)`, m.First()); err != nil {
		return fmt.Errorf("check month %s: %w", m, err)
	}
	if closed {
		return fmt.Errorf("%w: %s", ErrClosedMonth, m)
	}
	return nil
}

// insertSet writes the set and its postings in one statement, booking a
// late event on the first day of the first open month (months close in
// order, so that is the month after the last closed one).
const insertSetSQL = `
WITH last_closed AS (
	SELECT max(month) AS month FROM closed_periods
), booked AS (
	SELECT CASE
		WHEN $12::boolean AND lc.month IS NOT NULL AND $6::date < (lc.month + interval '1 month')::date
		THEN (lc.month + interval '1 month')::date
		ELSE $6::date END AS competence
	FROM last_closed lc
), s AS (
	INSERT INTO posting_sets (kind, idempotency_key, amount, currency, competence, event_at,
		charge_id, refund_id, partner, inbox_id, description, content_hash)
	SELECT $1, $2, $3, $4, b.competence, $5, $7, $8, $9, $10, $11, $13 FROM booked b
	-- No conflict target: a concurrent writer of the same business event
	-- may win on uq_sale_per_charge rather than on the key.
	ON CONFLICT DO NOTHING
	RETURNING id, competence, competence_month
), p AS (
	INSERT INTO postings (posting_set_id, account_id, currency, amount, competence_month)
	SELECT s.id, l.account_id, l.currency, l.amount, s.competence_month
	FROM s, unnest($14::bigint[], $15::text[], $16::bigint[]) AS l (account_id, currency, amount)
	RETURNING 1
)
SELECT s.id, s.competence, (SELECT count(*) FROM p) AS legs FROM s`

func insertSet(ctx context.Context, tx *sqlx.Tx, s *Set, competence time.Time, hash string, legs resolvedLegs) (Posted, bool, error) {
	var row struct {
		ID         int64     `db:"id"`
		Competence time.Time `db:"competence"`
		Legs       int       `db:"legs"`
	}
	err := tx.GetContext(ctx, &row, insertSetSQL,
		s.Kind, s.IdempotencyKey, s.Amount, s.Currency, s.EventAt, competence.Format(time.DateOnly),
		nullString(s.ChargeID), nullString(s.RefundID), nullString(s.Partner), nullInt(s.InboxID), s.Description,
		s.Competence.IsZero(), hash,
		pq.Array(legs.accountIDs), pq.Array(legs.currencies), pq.Array(legs.amounts))
	if errors.Is(err, sql.ErrNoRows) {
		return Posted{}, false, nil
	}
	if err != nil {
		return Posted{}, false, err
	}
	if row.Legs != len(s.Legs) {
		return Posted{}, false, fmt.Errorf("wrote %d of %d postings", row.Legs, len(s.Legs))
	}
	return Posted{ID: row.ID, Competence: row.Competence.UTC()}, true, nil
}

func replay(ctx context.Context, tx *sqlx.Tx, s *Set, hash string) (Posted, error) {
	var row struct {
		ID         int64     `db:"id"`
		Competence time.Time `db:"competence"`
		Hash       string    `db:"content_hash"`
	}
	err := tx.GetContext(ctx, &row, `SELECT id, competence, content_hash FROM posting_sets WHERE idempotency_key = $1`, s.IdempotencyKey)
	if errors.Is(err, sql.ErrNoRows) {
		// The insert yielded to another unique index: the same business
		// event was posted under another key.
		return Posted{}, fmt.Errorf("%w: %s %s of charge %s", ErrAlreadyPosted, s.Kind, s.IdempotencyKey, s.ChargeID)
	}
	if err != nil {
		return Posted{}, fmt.Errorf("post %s: read existing set: %w", s.IdempotencyKey, err)
	}
	if row.Hash != hash {
		return Posted{}, fmt.Errorf("%w: %s (existing set %d)", ErrIdempotencyConflict, s.IdempotencyKey, row.ID)
	}
	return Posted{ID: row.ID, Competence: row.Competence.UTC(), Replayed: true}, nil
}

func nullString(s string) sql.NullString { return sql.NullString{String: s, Valid: s != ""} }
func nullInt(i int64) sql.NullInt64      { return sql.NullInt64{Int64: i, Valid: i != 0} }

// constraintErrors maps the database's named constraints and triggers to
// this package's errors.
var constraintErrors = map[string]error{
	"uq_sale_per_charge":              ErrAlreadyPosted,
	"uq_commission_per_charge":        ErrAlreadyPosted,
	"uq_refund_per_psp_refund":        ErrAlreadyPosted,
	"uq_reversal_per_psp_refund":      ErrAlreadyPosted,
	"uq_posting_sets_idempotency_key": ErrIdempotencyConflict,
	"trg_posting_sets_balanced":       ErrUnbalanced,
	"trg_refunds_within_sale":         ErrRefundExceedsSale,
	"trg_posting_sets_open_month":     ErrClosedMonth,
	"trg_postings_sealed_set":         ErrSealed,
	"fk_postings_account_currency":    ErrCurrencyMismatch,
	"ck_postings_amount_nonzero":      ErrZeroAmount,
}

// MapError translates a database refusal into this package's error by the
// name of the constraint or trigger that refused, keeping the driver error
// in the chain. Other errors are returned unchanged.
func MapError(err error) error {
	var pqErr *pq.Error
	if !errors.As(err, &pqErr) {
		return err
	}
	if target, ok := constraintErrors[pqErr.Constraint]; ok {
		return fmt.Errorf("%w: %w", target, err)
	}
	if strings.HasPrefix(pqErr.Constraint, "ck_posting_sets_") {
		return fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return err
}
