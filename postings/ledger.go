package postings

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/razao/razao/accounts"
	"github.com/razao/razao/internal/pgarray"
	"github.com/razao/razao/internal/sqlstmt"
	"github.com/razao/razao/money"
	"github.com/razao/razao/periods"
)

// Ledger writes posting sets. It is safe for concurrent use, and several
// processes may write to one database at once: every rule that matters is
// decided inside the caller's transaction or by the database.
type Ledger struct {
	db  *sqlx.DB
	cal periods.Calendar
	now func() time.Time // the clock event times are checked against

	// Accounts never change once committed (a trigger refuses it), so a
	// code→account cache filled from committed rows only is always right.
	mu    sync.RWMutex
	known map[string]accounts.Account

	// insert is insertSetsSQL prepared once: the statement is large, and
	// planning it on every posting would be a good part of its cost
	// (docs/performance.md, "Prepared statements").
	insert *sqlstmt.Stmt

	// limit bounds every amount posted (see WithLimit).
	limit money.Limit
}

// New returns a Ledger over db that dates sets with cal.
func New(db *sqlx.DB, cal periods.Calendar) *Ledger {
	return &Ledger{db: db, cal: cal, now: time.Now, known: map[string]accounts.Account{}, insert: sqlstmt.New(db, insertSetsSQL)}
}

// WithClock makes l check event times against now instead of time.Now,
// and returns l. Call it before l is used.
func (l *Ledger) WithClock(now func() time.Time) *Ledger {
	l.now = now
	return l
}

// Calendar is the ledger's business calendar.
func (l *Ledger) Calendar() periods.Calendar { return l.cal }

// Post writes s in a transaction of its own. See PostTx.
func (l *Ledger) Post(ctx context.Context, s Set) (Posted, error) {
	tx, err := l.db.BeginTxx(ctx, periods.WriteTx())
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
	ps, err := l.PostAllTx(ctx, tx, s)
	if err != nil {
		return Posted{}, err
	}
	return ps[0], nil
}

// PostAllTx is PostTx for several sets of one business event (a sale and
// its commission, a refund and its reversal), written in one statement:
// one round trip instead of one per set. Each set is "if absent" on its
// own, exactly as PostTx.
func (l *Ledger) PostAllTx(ctx context.Context, tx *sqlx.Tx, sets ...Set) ([]Posted, error) {
	return l.postAll(ctx, tx, nil, sets)
}

// PostAllLockedTx is PostAllTx in a transaction that holds the close lock
// already, last being the last closed month it read under it
// (periods.LockForPosting, or its function called in a statement of the
// caller's): the delivery path reads it with its claim, which saves it a
// round trip.
func (l *Ledger) PostAllLockedTx(ctx context.Context, tx *sqlx.Tx, last periods.Month, sets ...Set) ([]Posted, error) {
	return l.postAll(ctx, tx, &last, sets)
}

// postAll writes sets, dating them by the last closed month: *last when
// the caller read it under the close lock, else read here.
func (l *Ledger) postAll(ctx context.Context, tx *sqlx.Tx, last *periods.Month, sets []Set) ([]Posted, error) {
	now := l.now()
	for i := range sets {
		if err := sets[i].Validate(); err != nil {
			return nil, err
		}
		if err := l.checkWindow(sets[i], now); err != nil {
			return nil, err
		}
		if err := sets[i].checkLimit(l.limit); err != nil {
			return nil, err
		}
	}
	accts, err := l.accountsInOrder(ctx, tx, sets)
	if err != nil {
		return nil, err
	}
	// Read once, under the close lock held from then to the commit: every
	// month this transaction books follows from it, and no close moves it
	// before the sets are in.
	if last == nil {
		read, err := periods.LockForPosting(ctx, tx)
		if err != nil {
			return nil, fmt.Errorf("post %s: %w", keys(sets), err)
		}
		last = &read
	}
	in := make([]pending, len(sets))
	for i := range sets {
		s := &sets[i]
		legs, err := resolveLegs(s, accts)
		if err != nil {
			return nil, err
		}
		competence, err := l.competence(*s, *last)
		if err != nil {
			return nil, err
		}
		in[i] = pending{set: s, competence: competence, hash: s.contentHash(), legs: legs}
	}
	stmt, err := l.insert.In(ctx, tx)
	if err != nil {
		return nil, fmt.Errorf("post %s: %w", keys(sets), err)
	}
	written, err := insertSets(ctx, stmt, in)
	if err != nil {
		return nil, fmt.Errorf("post %s: %w", keys(sets), MapError(err))
	}
	out := make([]Posted, len(in))
	for i, p := range in {
		if w, ok := written[p.set.IdempotencyKey]; ok {
			out[i] = w
			delete(written, p.set.IdempotencyKey) // a repeated key replays
			continue
		}
		if out[i], err = replay(ctx, tx, p.set, p.hash); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// CheckEventTime refuses an event time outside the calendar's window at
// the ledger's clock (ErrOutsideWindow).
func (l *Ledger) CheckEventTime(t time.Time) error { return l.cal.CheckEventTime(t, l.now()) }

// CheckWindow refuses a set whose event time or competence lies outside
// the calendar's window (ErrOutsideWindow), as posting it would: callers
// that decide before posting (payouts) check first.
func (l *Ledger) CheckWindow(s Set) error { return l.checkWindow(s, l.now()) }

// checkWindow refuses a set whose event time or competence lies outside
// the calendar's window: a set dated 0001-01 or 9999-12 would sit in a
// month that can never be closed, and every later month with it.
func (l *Ledger) checkWindow(s Set, now time.Time) error {
	if err := l.cal.CheckEventTime(s.EventAt, now); err != nil {
		return fmt.Errorf("%w: %s %s: %w", ErrInvalid, s.Kind, s.IdempotencyKey, err)
	}
	if !s.Competence.IsZero() {
		if err := l.cal.CheckCompetence(s.Competence, now); err != nil {
			return fmt.Errorf("%w: %s %s: %w", ErrInvalid, s.Kind, s.IdempotencyKey, err)
		}
	}
	return nil
}

func keys(sets []Set) string {
	ks := make([]string, len(sets))
	for i, s := range sets {
		ks[i] = string(s.Kind) + " " + s.IdempotencyKey
	}
	return strings.Join(ks, ", ")
}

// pending is a validated set ready to insert.
type pending struct {
	set        *Set
	competence time.Time
	hash       string
	legs       resolvedLegs
}

// competence is the date s is booked on when last is the last closed
// month: its stated competence, refused when that month is closed
// (ErrClosedMonth); otherwise its event's date in the ledger's zone, moved
// to the first open month when that is closed (periods.Competence).
func (l *Ledger) competence(s Set, last periods.Month) (time.Time, error) {
	if !s.Competence.IsZero() {
		if m := periods.MonthOf(s.Competence); periods.Closed(m, last) {
			return time.Time{}, fmt.Errorf("%w: %s", ErrClosedMonth, m)
		}
		return s.Competence, nil
	}
	return periods.Competence(l.cal.Date(s.EventAt), last), nil
}

type resolvedLegs struct {
	accountIDs []int64
	currencies []string
	amounts    []int64
}

// resolveLegs maps each leg to its account, found by accountsInOrder, and
// checks the account holds the leg's currency.
func resolveLegs(s *Set, accts map[string]accounts.Account) (resolvedLegs, error) {
	var r resolvedLegs
	for i, leg := range s.Legs {
		a := accts[leg.Account]
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

// accountsInOrder looks up every account the sets' legs name, creating
// the ones created on first use (a partner's payable account), in code
// order: two transactions each creating the payable accounts of two new
// partners would otherwise wait on each other's new row, in opposite
// orders, and deadlock.
func (l *Ledger) accountsInOrder(ctx context.Context, tx *sqlx.Tx, sets []Set) (map[string]accounts.Account, error) {
	var codes []string
	for _, s := range sets {
		for _, leg := range s.Legs {
			codes = append(codes, leg.Account)
		}
	}
	slices.Sort(codes)
	accts := make(map[string]accounts.Account, len(codes))
	for _, code := range slices.Compact(codes) {
		a, err := l.account(ctx, tx, code)
		if err != nil {
			return nil, fmt.Errorf("post %s: %w", keys(sets), err)
		}
		accts[code] = a
	}
	return accts, nil
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

// insertSetsSQL writes sets and their postings in one statement, "if
// absent" per set, each on the competence date it is given (the month
// rules are periods'). "If absent" is decided on posting_set_keys, the one
// table of every set's unique business keys (posting_sets is partitioned
// by month, sql/0056): a set is written only when its key row was, with
// the key's id. No conflict target: a concurrent writer of the same
// business event may win on uq_sale_per_charge rather than on the key.
// Postings find their set by idempotency key. The legs written are counted
// per set once, in a join: a subquery per set would scan every posting of
// the statement for each set, sets × postings rows (docs/performance.md,
// "Counting legs per set").
const insertSetsSQL = `
WITH input AS (
	SELECT * FROM unnest($1::int[], $2::text[], $3::text[], $4::bigint[], $5::text[], $6::date[], $7::timestamptz[],
		$8::text[], $9::text[], $10::text[], $11::bigint[], $12::text[], $13::text[], $18::text[], $19::text[])
		AS u (n, kind, key, amount, currency, competence, event_at, charge_id, refund_id, partner, inbox_id, description, hash,
			return_id, refund_nature)
), k AS (
	INSERT INTO posting_set_keys (idempotency_key, kind, competence, amount, charge_id, refund_id)
	SELECT i.key, i.kind, i.competence, i.amount, NULLIF(i.charge_id, ''), NULLIF(i.refund_id, '')
	FROM input i
	ORDER BY i.n
	ON CONFLICT DO NOTHING
	RETURNING id, idempotency_key
), s AS (
	INSERT INTO posting_sets (id, kind, idempotency_key, amount, currency, competence, event_at,
		charge_id, refund_id, partner, inbox_id, description, content_hash, return_id, refund_nature)
	SELECT k.id, i.kind, i.key, i.amount, i.currency, i.competence,
		i.event_at, NULLIF(i.charge_id, ''), NULLIF(i.refund_id, ''), NULLIF(i.partner, ''), NULLIF(i.inbox_id, 0),
		i.description, i.hash, NULLIF(i.return_id, ''), NULLIF(i.refund_nature, '')
	FROM input i JOIN k ON k.idempotency_key = i.key
	ORDER BY i.n
	RETURNING id, idempotency_key, competence, competence_month
), p AS (
	INSERT INTO postings (posting_set_id, account_id, currency, amount, competence_month)
	SELECT s.id, l.account_id, l.currency, l.amount, s.competence_month
	FROM unnest($14::text[], $15::bigint[], $16::text[], $17::bigint[]) WITH ORDINALITY AS l (key, account_id, currency, amount, ord)
	JOIN s ON s.idempotency_key = l.key
	ORDER BY l.ord
	RETURNING posting_set_id
), legs AS (
	SELECT posting_set_id, count(*) AS n FROM p GROUP BY posting_set_id
)
SELECT s.id, s.idempotency_key, s.competence, coalesce(legs.n, 0) AS legs
FROM s LEFT JOIN legs ON legs.posting_set_id = s.id`

// insertSets writes the sets absent so far and returns them by key.
func insertSets(ctx context.Context, stmt *sqlx.Stmt, in []pending) (map[string]Posted, error) {
	var (
		ns                                                         []int64
		kinds, ks, curs, charges, refunds, partners, descs, hashes []string
		returns, natures                                           []string
		amounts, inboxes                                           []int64
		comps                                                      []string
		events                                                     []string
		legKeys, legCurs                                           []string
		legAccounts, legAmounts                                    []int64
	)
	want := map[string]int{}
	for i, p := range in {
		s := p.set
		ns, kinds, ks, amounts, curs = append(ns, int64(i)), append(kinds, string(s.Kind)), append(ks, s.IdempotencyKey), append(amounts, s.Amount), append(curs, s.Currency)
		comps, events = append(comps, p.competence.Format(time.DateOnly)), append(events, s.EventAt.Format(time.RFC3339Nano))
		charges, refunds, partners, inboxes = append(charges, s.ChargeID), append(refunds, s.RefundID), append(partners, s.Partner), append(inboxes, s.InboxID)
		descs, hashes = append(descs, s.Description), append(hashes, p.hash)
		returns, natures = append(returns, s.ReturnID), append(natures, s.Nature)
		for j := range p.legs.accountIDs {
			legKeys, legAccounts = append(legKeys, s.IdempotencyKey), append(legAccounts, p.legs.accountIDs[j])
			legCurs, legAmounts = append(legCurs, p.legs.currencies[j]), append(legAmounts, p.legs.amounts[j])
		}
		want[s.IdempotencyKey] = len(p.legs.accountIDs)
	}
	var rows []struct {
		ID         int64     `db:"id"`
		Key        string    `db:"idempotency_key"`
		Competence time.Time `db:"competence"`
		Legs       int       `db:"legs"`
	}
	err := stmt.SelectContext(ctx, &rows,
		pq.Array(ns), pgarray.Text(kinds), pgarray.Text(ks), pq.Array(amounts), pgarray.Text(curs), pgarray.Text(comps), pgarray.Text(events),
		pgarray.Text(charges), pgarray.Text(refunds), pgarray.Text(partners), pq.Array(inboxes), pgarray.Text(descs), pgarray.Text(hashes),
		pgarray.Text(legKeys), pq.Array(legAccounts), pgarray.Text(legCurs), pq.Array(legAmounts), pgarray.Text(returns), pgarray.Text(natures))
	if err != nil {
		return nil, err
	}
	out := make(map[string]Posted, len(rows))
	for _, r := range rows {
		if r.Legs != want[r.Key] {
			return nil, fmt.Errorf("set %s: wrote %d of %d postings", r.Key, r.Legs, want[r.Key])
		}
		out[r.Key] = Posted{ID: r.ID, Competence: r.Competence.UTC()}
	}
	return out, nil
}

func replay(ctx context.Context, tx *sqlx.Tx, s *Set, hash string) (Posted, error) {
	var row struct {
		ID         int64     `db:"id"`
		Competence time.Time `db:"competence"`
		Hash       string    `db:"content_hash"`
	}
	err := tx.GetContext(ctx, &row, `SELECT id, competence, content_hash FROM posting_sets
		WHERE (id, competence) = (SELECT id, competence FROM posting_set_keys WHERE idempotency_key = $1)`, s.IdempotencyKey)
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
	"ck_postings_amount_ceiling":      ErrInvalid,
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
