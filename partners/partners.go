// Package partners holds what razao owes its partners and pays them: the
// commission-payable account of each partner, read from the ledger, and
// payouts booked against it.
package partners

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/big"
	"slices"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/razao/razao/accounts"
	"github.com/razao/razao/internal/cursor"
	"github.com/razao/razao/internal/kind"
	"github.com/razao/razao/internal/snapshot"
	"github.com/razao/razao/money"
	"github.com/razao/razao/monthsums"
	"github.com/razao/razao/periods"
	"github.com/razao/razao/postings"
	"github.com/razao/razao/reports"
)

// Errors returned by this package; callers test them with errors.Is. A
// payout's other refusals come from postings (ErrIdempotencyConflict,
// ErrClosedMonth...).
var (
	// ErrInvalid is returned for a malformed partner id, amount or key.
	ErrInvalid = kind.New(kind.Invalid, "invalid-payout", "Invalid payout", "invalid payout request")
	// ErrNotFound is returned for a partner that has no payable account:
	// razao has never owed it anything.
	ErrNotFound = kind.New(kind.NotFound, "not-found", "Not found", "partner not found")
	// ErrOverOwed is returned for a payout above what is owed to the
	// partner, unless the request allows it.
	ErrOverOwed = kind.New(kind.Refused, "over-owed", "Payout above what is owed", "payout exceeds what is owed")
	// ErrBusy is returned when a partner's accounts kept changing while
	// they were summed: the request may be tried again.
	ErrBusy = kind.New(kind.Unavailable, "unavailable", "Service unavailable", "partner accounts changing; try again")
)

// Summary is a partner's commission-payable account, from the ledger, in
// centavos. Owed = Commissions − Reversed − Paid + Adjustments; it is
// negative when the partner has been paid more than it earned.
type Summary struct {
	Partner  string `db:"-" json:"partner"`
	Account  string `db:"-" json:"account"`
	Currency string `db:"-" json:"currency"`
	// Owed is the account's balance as a liability: what razao owes.
	Owed int64 `db:"owed" json:"owed"`
	// Commissions are the credits of commission sets.
	Commissions int64 `db:"commissions" json:"commissions"`
	// Reversed are the debits of commission_reversal sets (refunds taking
	// commission back).
	Reversed int64 `db:"reversed" json:"reversed"`
	// Paid are the debits of payout sets.
	Paid int64 `db:"paid" json:"paid"`
	// Adjustments is the net credit of adjustment sets on the account,
	// usually 0.
	Adjustments int64 `db:"adjustments" json:"adjustments"`
}

// Get returns partner's summary, or ErrNotFound if it has no account.
func Get(ctx context.Context, q sqlx.QueryerContext, partner string) (Summary, error) {
	code, err := payable(partner)
	if err != nil {
		return Summary{}, err
	}
	a, err := accounts.Get(ctx, q, code)
	if errors.Is(err, accounts.ErrUnknownAccount) {
		return Summary{}, fmt.Errorf("%w: %s", ErrNotFound, partner)
	}
	if err != nil {
		return Summary{}, err
	}
	return summarize(ctx, q, a, monthsums.Cached.AccountFlows)
}

// flowsReader reads accounts' flows: monthsums.Cached's (through the
// month sums, for what is shown) or monthsums.Postings' (for what a
// payout decides).
type flowsReader func(context.Context, sqlx.QueryerContext, []int64) (map[int64]map[string]monthsums.KindFlow, error)

// summarize reads the partner's account (and its descendants', as for
// every parent balance) with flows, the code every report reads postings
// with.
func summarize(ctx context.Context, q sqlx.QueryerContext, a accounts.Account, flows flowsReader) (Summary, error) {
	all, err := summarizeMany(ctx, q, []accounts.Account{a}, flows)
	if err != nil {
		return Summary{}, err
	}
	return all[0], nil
}

// summarizeMany reads the summaries of the partners of accts (their
// payable accounts) at once: one reading of the month sums for all of
// them and their descendants.
func summarizeMany(ctx context.Context, q sqlx.QueryerContext, accts []accounts.Account, read flowsReader) ([]Summary, error) {
	codes := make([]string, len(accts))
	for i, a := range accts {
		codes[i] = a.Code
	}
	tree, flows, err := treeFlows(ctx, q, codes, read)
	if err != nil {
		return nil, fmt.Errorf("summary of %d partner(s): %w", len(accts), err)
	}
	// Each figure is summed in 128 bits and checked once whole.
	type figures struct{ owed, commissions, reversed, paid, adjustments big.Int }
	byRoot := make(map[string]*figures, len(accts))
	for _, c := range codes {
		byRoot[c] = &figures{}
	}
	for _, t := range tree {
		f := byRoot[t.Root]
		for kind, fl := range flows[t.ID] {
			// The account's net credit by this kind of set.
			credit := new(big.Int).Sub(big.NewInt(fl.Credits), big.NewInt(fl.Debits))
			f.owed.Add(&f.owed, credit)
			switch postings.Kind(kind) {
			case postings.KindCommission:
				f.commissions.Add(&f.commissions, credit)
			case postings.KindCommissionReversal:
				f.reversed.Sub(&f.reversed, credit)
			case postings.KindPayout:
				f.paid.Sub(&f.paid, credit)
			default:
				f.adjustments.Add(&f.adjustments, credit)
			}
		}
	}
	out := make([]Summary, len(accts))
	for i, a := range accts {
		f := byRoot[a.Code]
		s := Summary{Partner: strings.TrimPrefix(a.Code, accounts.CommissionPayable+":"), Account: a.Code, Currency: a.Currency}
		for _, v := range []struct {
			to   *int64
			from *big.Int
			name string
		}{{&s.Owed, &f.owed, "owed"}, {&s.Commissions, &f.commissions, "commissions"}, {&s.Reversed, &f.reversed, "reversed"},
			{&s.Paid, &f.paid, "paid"}, {&s.Adjustments, &f.adjustments, "adjustments"}} {
			if !v.from.IsInt64() {
				return nil, fmt.Errorf("summary of partner %s: %w: %s of %s", s.Partner, postings.ErrSumOverflow, v.name, a.Code)
			}
			*v.to = v.from.Int64()
		}
		out[i] = s
	}
	return out, nil
}

// treeAccount is an account of a partner's tree: its payable account
// (root) or one under it.
type treeAccount struct {
	ID   int64  `db:"id"`
	Code string `db:"code"`
	Root string `db:"root"`
}

// afterTree, when set (by tests), runs between reading the partners'
// accounts and reading their sums.
var afterTree func()

// treeFlows reads the accounts under codes and their sums. They are two
// statements, and at READ COMMITTED (a payout's transaction) an account
// and its postings committed between them would be summed by the second
// and missing from the first: the tree is read again after the sums,
// and the reading repeated until the two agree. Accounts are never
// deleted, so a tree unchanged across the sums holds every account whose
// postings they saw.
func treeFlows(ctx context.Context, q sqlx.QueryerContext, codes []string, read flowsReader) ([]treeAccount, map[int64]map[string]monthsums.KindFlow, error) {
	tree, err := accountTree(ctx, q, codes)
	if err != nil {
		return nil, nil, err
	}
	for attempt := 0; ; attempt++ {
		if afterTree != nil {
			afterTree()
		}
		ids := make([]int64, len(tree))
		for i, t := range tree {
			ids[i] = t.ID
		}
		flows, err := read(ctx, q, ids)
		if err != nil {
			return nil, nil, err
		}
		again, err := accountTree(ctx, q, codes)
		if err != nil {
			return nil, nil, err
		}
		if slices.Equal(tree, again) {
			return tree, flows, nil
		}
		if attempt == 4 {
			return nil, nil, fmt.Errorf("%w: its accounts kept changing while they were summed", ErrBusy)
		}
		tree = again
	}
}

// accountTree reads the accounts of codes and of their descendants, in
// one order.
func accountTree(ctx context.Context, q sqlx.QueryerContext, codes []string) ([]treeAccount, error) {
	var tree []treeAccount
	err := sqlx.SelectContext(ctx, q, &tree, `SELECT a.id, a.code, r.code AS root
		FROM unnest($1::text[]) r (code) JOIN accounts a ON a.code = r.code OR starts_with(a.code, r.code || ':')
		ORDER BY r.code, a.id`, pq.StringArray(codes))
	if err != nil {
		return nil, fmt.Errorf("accounts: %w", err)
	}
	return tree, nil
}

// Page returns the summaries of up to limit partners (cursor.Limit; the
// direct sub-accounts of the commission-payable account, by code) after
// the partner id after ("" from the first), and whether more follow: one
// reading of the ledger for the page, the figures Get gives each.
func Page(ctx context.Context, q sqlx.QueryerContext, after string, limit int) ([]Summary, bool, error) {
	if _, err := accounts.PartnerPayable(after); after != "" && err != nil {
		return nil, false, fmt.Errorf("%w: page after %.64q: not a partner id", reports.ErrInvalidCursor, after)
	}
	limit = cursor.Limit(limit)
	prefix := accounts.CommissionPayable + ":"
	var accts []accounts.Account
	err := sqlx.SelectContext(ctx, q, &accts, `SELECT id, code, type, normal_side, currency, parent_id FROM accounts
		WHERE starts_with(code, $1) AND strpos(substr(code, length($1) + 1), ':') = 0 AND code > ($1 || $2)
		ORDER BY code LIMIT $3`, prefix, after, limit+1)
	if err != nil {
		return nil, false, fmt.Errorf("list partners: %w", err)
	}
	more := len(accts) > limit
	if more {
		accts = accts[:limit]
	}
	if len(accts) == 0 {
		return nil, false, nil
	}
	out, err := summarizeMany(ctx, q, accts, monthsums.Cached.AccountFlows)
	return out, more, err
}

// Listed is a partner as a page of partners shows it: its summary and its
// last payout, if it had one.
type Listed struct {
	Summary
	LastPayout *LastPayout `json:"last_payout,omitempty"`
}

// LastPayout is a partner's newest payout.
type LastPayout struct {
	PostingSetID int64     `json:"posting_set_id"`
	Amount       int64     `json:"amount"`
	Currency     string    `json:"currency"`
	Competence   string    `json:"competence"`
	EffectiveAt  time.Time `json:"effective_at"`
}

// List is Page with each partner's last payout (postings.LastPayouts: one
// more read for the whole page), all read in one snapshot, so that a
// payout committed meanwhile is in both a partner's paid and its last
// payout or in neither.
func List(ctx context.Context, q sqlx.QueryerContext, after string, limit int) ([]Listed, bool, error) {
	var (
		out  []Listed
		more bool
	)
	err := snapshot.Read(ctx, q, func(q sqlx.QueryerContext) error {
		page, m, err := Page(ctx, q, after, limit)
		if err != nil || len(page) == 0 {
			more = m
			return err
		}
		ids := make([]string, len(page))
		for i, s := range page {
			ids[i] = s.Partner
		}
		last, err := postings.LastPayouts(ctx, q, ids)
		if err != nil {
			return err
		}
		out, more = make([]Listed, len(page)), m
		for i, s := range page {
			out[i].Summary = s
			if p, ok := last[s.Partner]; ok {
				out[i].LastPayout = &LastPayout{PostingSetID: p.ID, Amount: p.Amount, Currency: p.Currency,
					Competence: p.Competence.UTC().Format(time.DateOnly), EffectiveAt: p.EventAt.UTC()}
			}
		}
		return nil
	}, `SET LOCAL jit = off`)
	if err != nil {
		return nil, false, err
	}
	return out, more, nil
}

// PayoutRequest asks to pay Amount centavos to Partner.
type PayoutRequest struct {
	Partner string
	// IdempotencyKey is the caller's key for this payout (the HTTP
	// Idempotency-Key header): 1 to 200 printable ASCII characters, unique
	// per partner. The same key with the same amount is the same payout.
	IdempotencyKey string
	Amount         int64
	// AllowOverOwed books the payout even above what is owed (an advance),
	// including to a partner with no account yet.
	AllowOverOwed bool
	// At is when the payout was made (the API's effective_at, else the
	// server's clock, read once). Its date in the ledger's time zone is the
	// payout's competence; when that month is closed, the ledger books it
	// in the first open month and keeps At as the set's event time.
	At time.Time
	// AtStated says At is the caller's (effective_at), not the clock's: a
	// retry under the same key must then state the same time, as it must
	// the same amount.
	AtStated bool
	// Now, when set, is the clock At may not be after: a payout is booked
	// once it has been made, never ahead of it.
	Now time.Time
}

// Result is the outcome of a payout.
type Result struct {
	Partner    string `json:"partner"`
	PostingSet int64  `json:"posting_set_id"`
	Amount     int64  `json:"amount"`
	Currency   string `json:"currency"`
	Competence string `json:"competence"` // YYYY-MM-DD
	// EffectiveAt is when the payout was made: its event time, kept even
	// when a closed month moved its competence to the first open one.
	EffectiveAt    time.Time `json:"effective_at"`
	OwedBefore     int64     `json:"owed_before"`
	OwedAfter      int64     `json:"owed_after"`
	OverOwed       bool      `json:"over_owed"`
	Replayed       bool      `json:"replayed"`
	IdempotencyKey string    `json:"idempotency_key"`
}

// maxKey bounds the caller's idempotency key.
const maxKey = 200

// Validate checks a request without touching the database.
func (r PayoutRequest) Validate() error {
	if _, err := payable(r.Partner); err != nil {
		return err
	}
	if r.Amount <= 0 {
		return fmt.Errorf("%w: amount %d must be positive", ErrInvalid, r.Amount)
	}
	if n := len(r.IdempotencyKey); n == 0 || n > maxKey {
		return fmt.Errorf("%w: idempotency key must have 1 to %d characters, has %d", ErrInvalid, maxKey, n)
	}
	for i := 0; i < len(r.IdempotencyKey); i++ {
		if c := r.IdempotencyKey[i]; c < 0x21 || c > 0x7e {
			return fmt.Errorf("%w: idempotency key must be printable ASCII without spaces", ErrInvalid)
		}
	}
	if r.At.IsZero() {
		return fmt.Errorf("%w: payout time missing", ErrInvalid)
	}
	if !r.Now.IsZero() && r.At.After(r.Now) {
		return fmt.Errorf("%w: effective_at %s is in the future (now %s)", ErrInvalid,
			r.At.UTC().Format(time.RFC3339), r.Now.UTC().Format(time.RFC3339))
	}
	return nil
}

func payable(partner string) (string, error) {
	code, err := accounts.PartnerPayable(partner)
	if err != nil {
		return "", fmt.Errorf("%w: partner: %w", ErrInvalid, err)
	}
	return code, nil
}

// Payout books req in a transaction of its own. See PayoutTx.
func Payout(ctx context.Context, db *sqlx.DB, l *postings.Ledger, req PayoutRequest) (Result, error) {
	if err := req.Validate(); err != nil {
		return Result{}, err
	}
	tx, err := db.BeginTxx(ctx, periods.WriteTx())
	if err != nil {
		return Result{}, fmt.Errorf("payout to %s: begin: %w", req.Partner, err)
	}
	defer tx.Rollback()
	res, err := PayoutTx(ctx, tx, l, req)
	if err != nil {
		return Result{}, err
	}
	if err := tx.Commit(); err != nil {
		return Result{}, fmt.Errorf("payout to %s: commit: %w", req.Partner, postings.MapError(err))
	}
	return res, nil
}

// PayoutTx books a payout of req.Amount to req.Partner inside tx: D
// commission-payable:{partner}, C cash. It locks the partner's account row
// first and decides with it locked, so concurrent payouts to one partner
// run one after the other and cannot together exceed what is owed. tx must
// be READ COMMITTED (the default), so that what is owed is read after the
// lock is granted, including payouts committed while waiting for it.
//
// The idempotency key is checked before what is owed: a retry of a payout
// that went through returns it (Replayed) even though nothing is owed any
// more. The same key with another amount is postings.ErrIdempotencyConflict.
// A replay is recognised by its business content (partner, amount,
// currency), not by its time, since a client's retry comes later.
func PayoutTx(ctx context.Context, tx *sqlx.Tx, l *postings.Ledger, req PayoutRequest) (Result, error) {
	if err := req.Validate(); err != nil {
		return Result{}, err
	}
	// The database keeps microseconds, rounding what it is given: the
	// time is taken to the microsecond here, so what is answered, stored
	// and compared with a retry's is one instant.
	req.At = req.At.Round(time.Microsecond)
	// Before anything is read: the refusal names the field and the limit
	// whatever is owed, and a 2^63−1 payout never reaches the ledger.
	if err := l.Limit().Check("amount", req.Amount); err != nil {
		return Result{}, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	code, _ := payable(req.Partner)
	set, err := postings.Payout(req.Partner, req.IdempotencyKey, accounts.DefaultCurrency, req.Amount, req.At)
	if err != nil {
		return Result{}, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	if len(set.IdempotencyKey) > 300 {
		return Result{}, fmt.Errorf("%w: partner id and idempotency key are too long together", ErrInvalid)
	}
	if err := l.CheckWindow(set); err != nil {
		return Result{}, fmt.Errorf("%w: %w", ErrInvalid, err)
	}

	a, err := lockAccount(ctx, tx, code)
	if errors.Is(err, accounts.ErrUnknownAccount) {
		if !req.AllowOverOwed {
			return Result{}, fmt.Errorf("%w: %s: nothing was ever owed to it", ErrNotFound, req.Partner)
		}
		// An advance to a partner that has earned nothing yet: create its
		// account (concurrent creators get the one row), then lock it.
		if _, err := accounts.Ensure(ctx, tx, code); err != nil {
			return Result{}, fmt.Errorf("payout to %s: %w", req.Partner, err)
		}
		a, err = lockAccount(ctx, tx, code)
	}
	if err != nil {
		return Result{}, fmt.Errorf("payout to %s: %w", req.Partner, err)
	}
	// The legs carry no currency of their own: they take the set's, which
	// is the account's.
	set.Currency = a.Currency

	// From the postings, not the month sums: what is owed decides what
	// may be paid, and the month sums are a cache the service role writes.
	before, err := summarize(ctx, tx, a, monthsums.Postings.AccountFlows)
	if err != nil {
		return Result{}, err
	}
	res := Result{Partner: req.Partner, Amount: req.Amount, Currency: a.Currency, IdempotencyKey: req.IdempotencyKey}

	prior, found, err := existing(ctx, tx, set.IdempotencyKey)
	if err != nil {
		return Result{}, err
	}
	if found {
		if prior.Kind != string(postings.KindPayout) || prior.Partner.String != req.Partner ||
			prior.Amount != req.Amount || prior.Currency != a.Currency {
			return Result{}, fmt.Errorf("%w: payout key %q of partner %s was used for %d %s (set %d), now %d %s",
				postings.ErrIdempotencyConflict, req.IdempotencyKey, req.Partner, prior.Amount, prior.Currency, prior.ID, req.Amount, a.Currency)
		}
		if req.AtStated && !prior.EventAt.Equal(req.At) {
			return Result{}, fmt.Errorf("%w: payout key %q of partner %s was made at %s (set %d), now stated %s",
				postings.ErrIdempotencyConflict, req.IdempotencyKey, req.Partner, prior.EventAt.Format(time.RFC3339), prior.ID, req.At.Format(time.RFC3339))
		}
		// Owed before and after are of now, not of when the payout was
		// first booked: the ledger has moved on since.
		res.PostingSet, res.Competence, res.Replayed = prior.ID, prior.Competence.Format(time.DateOnly), true
		res.EffectiveAt = prior.EventAt
		res.OwedBefore, res.OwedAfter = before.Owed, before.Owed
		return res, nil
	}

	after, ok := money.Sub(before.Owed, req.Amount)
	if !ok {
		return Result{}, fmt.Errorf("%w: owed to %s after a payout of %d", postings.ErrSumOverflow, req.Partner, req.Amount)
	}
	if req.Amount > before.Owed {
		if !req.AllowOverOwed {
			return Result{}, fmt.Errorf("%w: payout of %d to %s, %d owed", ErrOverOwed, req.Amount, req.Partner, before.Owed)
		}
		// An advance is bounded too, in total: what the partner would owe
		// back is at most the limit, so advances cannot pile up into a
		// balance no report can sum. (−after overflows only for an
		// advance far above any limit.)
		advance, ok := money.Sub(0, after)
		err := l.Limit().Check("advance over what is owed", advance)
		if !ok || err != nil {
			return Result{}, fmt.Errorf("%w: payout of %d to %s, %d owed: %w", ErrInvalid, req.Amount, req.Partner, before.Owed,
				&money.AboveMaxError{Field: "advance over what is owed", Amount: advance, Max: l.Limit().Max()})
		}
		res.OverOwed = true
	}
	p, err := l.PostTx(ctx, tx, set)
	if err != nil {
		return Result{}, fmt.Errorf("payout to %s: %w", req.Partner, err)
	}
	res.PostingSet, res.Competence, res.Replayed = p.ID, p.Competence.Format(time.DateOnly), p.Replayed
	res.EffectiveAt = req.At
	res.OwedBefore, res.OwedAfter = before.Owed, after
	return res, nil
}

// lockAccount serialises payouts to one partner with a row lock on its
// payable account, then reads the account. The lock is taken by
// ledger_lock_account (sql/0012), which runs as the ledger's owner: the
// service's role (docs/razao-role.sql) has no UPDATE right on accounts,
// and no role but it may call the function, so no one else can hold up
// payouts. It never holds up the commissions and reversals posted for the
// partner: writing a posting locks no account row (sql/0034).
func lockAccount(ctx context.Context, tx *sqlx.Tx, code string) (accounts.Account, error) {
	var a accounts.Account
	if _, err := tx.ExecContext(ctx, `SELECT ledger_lock_account($1)`, code); err != nil {
		return accounts.Account{}, fmt.Errorf("lock payouts of %s: %w", code, err)
	}
	err := tx.GetContext(ctx, &a, `SELECT id, code, type, normal_side, currency, parent_id
		FROM accounts WHERE code = $1`, code)
	if errors.Is(err, sql.ErrNoRows) {
		return accounts.Account{}, fmt.Errorf("%w: %s", accounts.ErrUnknownAccount, code)
	}
	if err != nil {
		return accounts.Account{}, fmt.Errorf("lock account %s: %w", code, err)
	}
	return a, nil
}

func existing(ctx context.Context, tx *sqlx.Tx, key string) (postings.StoredSet, bool, error) {
	s, ok, err := postings.SetByKey(ctx, tx, key)
	if err != nil {
		return postings.StoredSet{}, false, fmt.Errorf("read payout %s: %w", key, err)
	}
	return s, ok, nil
}
