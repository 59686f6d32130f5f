// Package charges holds the charges the selling app registers before a PIX
// is paid, and the state changes a PSP's events make to them. Every change
// is applied inside the caller's transaction with the charge row locked, so
// concurrent deliveries for one charge are decided one after the other,
// each seeing what the previous one committed.
package charges

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/razao/razao/accounts"
	"github.com/razao/razao/internal/kind"
	"github.com/razao/razao/internal/snapshot"
	"github.com/razao/razao/money"
	"github.com/razao/razao/postings"
)

// Errors a caller can test with errors.Is.
var (
	ErrInvalid  = kind.New(kind.Invalid, "invalid-charge", "Invalid charge", "invalid charge")
	ErrConflict = kind.New(kind.Conflict, "charge-conflict", "Charge id already registered with other content", "charge id already registered with different content")
	ErrNotFound = kind.New(kind.NotFound, "not-found", "Not found", "charge not found")
)

// State is where a charge stands. The list is the database's
// ck_charges_state constraint, word for word (a test compares them).
type State string

// States of a charge.
const (
	StatePending           State = "pending"
	StatePaid              State = "paid"
	StatePartiallyRefunded State = "partially_refunded"
	StateRefunded          State = "refunded"
	StateFailed            State = "failed"
)

// States lists every charge state.
var States = []State{StatePending, StatePaid, StatePartiallyRefunded, StateRefunded, StateFailed}

// NewCharge is what the selling app registers.
type NewCharge struct {
	ID     string `json:"id"`
	PSPRef string `json:"psp_ref,omitempty"`
	// Merchant is whose charge this is: only that merchant's webhook
	// endpoints may act on it. See ResolveMerchant.
	Merchant     string          `json:"merchant,omitempty"`
	Amount       int64           `json:"amount"`
	Currency     string          `json:"currency,omitempty"`
	Partner      string          `json:"partner,omitempty"`
	CommissionBP int64           `json:"commission_bp,omitempty"`
	Access       string          `json:"access,omitempty"`
	Metadata     json.RawMessage `json:"metadata,omitempty"`
}

// Charge is a registered charge and its state.
type Charge struct {
	ID     string  `db:"id" json:"id"`
	PSPRef *string `db:"psp_ref" json:"psp_ref,omitempty"`
	// Merchant is nil for a charge registered before charges carried
	// their merchant (migration 0014): any endpoint may act on it.
	Merchant       *string         `db:"merchant" json:"merchant,omitempty"`
	Amount         int64           `db:"amount" json:"amount"`
	Currency       string          `db:"currency" json:"currency"`
	Partner        *string         `db:"partner" json:"partner,omitempty"`
	CommissionBP   int64           `db:"commission_bp" json:"commission_bp"`
	Access         string          `db:"access" json:"access"`
	Metadata       json.RawMessage `db:"metadata" json:"metadata"`
	State          State           `db:"state" json:"state"`
	PaidAmount     *int64          `db:"paid_amount" json:"paid_amount,omitempty"`
	Fee            *int64          `db:"fee" json:"fee,omitempty"`
	Commission     int64           `db:"commission" json:"commission"`
	PaidAt         *time.Time      `db:"paid_at" json:"paid_at,omitempty"`
	PaidRef        *string         `db:"paid_ref" json:"paid_ref,omitempty"`
	RefundedAmount int64           `db:"refunded_amount" json:"refunded_amount"`
	FailedAt       *time.Time      `db:"failed_at" json:"failed_at,omitempty"`
	RequestHash    string          `db:"request_hash" json:"-"`
	CreatedAt      time.Time       `db:"created_at" json:"created_at"`
	UpdatedAt      time.Time       `db:"updated_at" json:"updated_at"`
}

// MaxIDLength is the longest charge id (and PSP reference): posting-set
// keys derive from it, and intake checks the keys against it.
const MaxIDLength = 100

var idRE = regexp.MustCompile(fmt.Sprintf(`^[A-Za-z0-9][A-Za-z0-9_.:-]{0,%d}$`, MaxIDLength-1))

// ResolveMerchant checks the registration's merchant against the
// merchants the webhook endpoints are configured with: with exactly one
// configured it is the default; with several the registration must name
// one; a merchant no endpoint belongs to is ErrInvalid (no delivery could
// ever act on the charge).
func (n *NewCharge) ResolveMerchant(configured []string) error {
	known := map[string]bool{}
	for _, m := range configured {
		known[m] = true
	}
	switch {
	case n.Merchant == "" && len(known) == 1:
		n.Merchant = configured[0]
	case n.Merchant == "" && len(known) > 1:
		return fmt.Errorf("%w: merchant is required: several merchants are configured", ErrInvalid)
	case n.Merchant != "" && !known[n.Merchant]:
		return fmt.Errorf("%w: merchant %.100q is not configured on any webhook endpoint", ErrInvalid, n.Merchant)
	}
	return nil
}

// Validate checks a registration and fills defaults.
func (n *NewCharge) Validate() error {
	if n.Currency == "" {
		n.Currency = accounts.DefaultCurrency
	}
	if len(n.Metadata) == 0 || string(n.Metadata) == "null" {
		n.Metadata = json.RawMessage(`{}`)
	}
	var meta map[string]any
	switch {
	case !idRE.MatchString(n.ID):
		return fmt.Errorf("%w: id must be 1-100 of A-Z a-z 0-9 _ . : - starting with a letter or digit", ErrInvalid)
	case len(n.Merchant) > 200:
		return fmt.Errorf("%w: merchant is longer than 200 bytes", ErrInvalid)
	case n.PSPRef != "" && !idRE.MatchString(n.PSPRef):
		return fmt.Errorf("%w: psp_ref must be 1-100 of A-Z a-z 0-9 _ . : -", ErrInvalid)
	case n.Amount <= 0:
		return fmt.Errorf("%w: amount must be a positive integer of centavos", ErrInvalid)
	case n.Currency != accounts.DefaultCurrency:
		return fmt.Errorf("%w: currency %q: only BRL is supported", ErrInvalid, n.Currency)
	case n.CommissionBP < 0 || n.CommissionBP > 10000:
		return fmt.Errorf("%w: commission_bp must be 0..10000", ErrInvalid)
	case n.CommissionBP > 0 && n.Partner == "":
		return fmt.Errorf("%w: a commission needs a partner", ErrInvalid)
	case len(n.Access) > 200:
		return fmt.Errorf("%w: access is longer than 200 bytes", ErrInvalid)
	case len(n.Metadata) > 4096 || json.Unmarshal(n.Metadata, &meta) != nil:
		return fmt.Errorf("%w: metadata must be a JSON object of at most 4 KiB", ErrInvalid)
	}
	if n.Partner != "" {
		if _, err := accounts.PartnerPayable(n.Partner); err != nil {
			return fmt.Errorf("%w: partner must be a lowercase code segment: %w", ErrInvalid, err)
		}
	}
	return nil
}

func (n *NewCharge) hash() string {
	var meta any
	json.Unmarshal(n.Metadata, &meta)
	b, _ := json.Marshal(struct {
		NewCharge
		Metadata any `json:"metadata"`
	}{*n, meta}) // re-marshalled metadata: key order and spaces do not matter
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// Register records a charge, idempotently on its id: the same content
// again returns the existing charge with created false; other content under
// the same id is ErrConflict. Its amount is bounded by
// money.DefaultMaxAmount; RegisterWithin takes the configured limit.
func Register(ctx context.Context, db sqlx.ExtContext, n NewCharge) (c Charge, created bool, err error) {
	return RegisterWithin(ctx, db, n, 0)
}

// RegisterWithin is Register with an amount above limit refused
// (ErrInvalid wrapping a *money.AboveMaxError): a charge the ledger could
// never book is refused when it is registered, not when it is paid.
func RegisterWithin(ctx context.Context, db sqlx.ExtContext, n NewCharge, limit money.Limit) (c Charge, created bool, err error) {
	if err := n.Validate(); err != nil {
		return Charge{}, false, err
	}
	if err := limit.Check("amount", n.Amount); err != nil {
		return Charge{}, false, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	hash := n.hash()
	err = sqlx.GetContext(ctx, db, &c, registerSQL,
		n.ID, n.PSPRef, n.Amount, n.Currency, n.Partner, n.CommissionBP, n.Access, string(n.Metadata), hash, n.Merchant)
	if err == nil {
		return c, true, nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return Charge{}, false, fmt.Errorf("register charge %s: %w", n.ID, err)
	}
	c, err = Get(ctx, db, n.ID)
	if errors.Is(err, ErrNotFound) {
		// The conflict was on psp_ref, held by another charge.
		return Charge{}, false, fmt.Errorf("%w: psp_ref %s belongs to another charge", ErrConflict, n.PSPRef)
	}
	if err != nil {
		return Charge{}, false, err
	}
	if c.RequestHash != hash && !sameLegacy(c, n) {
		return Charge{}, false, fmt.Errorf("%w: %s", ErrConflict, n.ID)
	}
	return c, false, nil
}

// sameLegacy reports whether n registers again a charge registered before
// charges carried their merchant: its hash was of the same content without
// the merchant the registration now resolves to.
func sameLegacy(c Charge, n NewCharge) bool {
	if c.Merchant != nil {
		return false
	}
	n.Merchant = ""
	return c.RequestHash == n.hash()
}

// Get returns the charge with id.
func Get(ctx context.Context, q sqlx.QueryerContext, id string) (Charge, error) {
	var c Charge
	err := sqlx.GetContext(ctx, q, &c, getChargeSQL, id)
	if errors.Is(err, sql.ErrNoRows) {
		return Charge{}, fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	if err != nil {
		return Charge{}, fmt.Errorf("get charge %s: %w", id, err)
	}
	return c, nil
}

// Detail is a charge with its refunds, ledger entries and access grant.
type Detail struct {
	Charge
	Refunds     []Refund     `json:"refunds"`
	PostingSets []PostingSet `json:"posting_sets"`
	Access      *Grant       `json:"access_grant,omitempty"`
}

// Refund is one refund booked against a charge.
type Refund struct {
	RefundID   string    `db:"refund_id" json:"refund_id"`
	Amount     int64     `db:"amount" json:"amount"`
	Competence string    `db:"competence" json:"competence"` // YYYY-MM-DD
	EventAt    time.Time `db:"event_at" json:"event_at"`
}

// PostingSet is a ledger entry of a charge, with its postings.
type PostingSet struct {
	ID         int64     `db:"id" json:"id"`
	Kind       string    `db:"kind" json:"kind"`
	Amount     int64     `db:"amount" json:"amount"`
	Competence string    `db:"competence" json:"competence"` // YYYY-MM-DD
	EventAt    time.Time `db:"event_at" json:"event_at"`
	Postings   []Posting `db:"-" json:"postings"`
}

// Posting is one leg of a posting set.
type Posting struct {
	SetID   int64  `db:"posting_set_id" json:"-"`
	Account string `db:"code" json:"account"`
	Amount  int64  `db:"amount" json:"amount"`
}

// Grant is the access given for a paid charge.
type Grant struct {
	Access    string    `db:"access" json:"access"`
	GrantedAt time.Time `db:"granted_at" json:"granted_at"`
}

// GetDetail returns a charge with its refunds, posting sets and grant, all
// read in one snapshot (given a pool, a read-only transaction of its own):
// read one statement after another on a pool, a charge could show as
// pending beside the grant its payment had just written.
func GetDetail(ctx context.Context, q sqlx.QueryerContext, id string) (Detail, error) {
	var d Detail
	err := snapshot.Read(ctx, q, func(q sqlx.QueryerContext) error {
		var err error
		d, err = getDetail(ctx, q, id)
		return err
	})
	return d, err
}

// getDetail reads GetDetail's statements on q.
func getDetail(ctx context.Context, q sqlx.QueryerContext, id string) (Detail, error) {
	c, err := Get(ctx, q, id)
	if err != nil {
		return Detail{}, err
	}
	d := Detail{Charge: c, Refunds: []Refund{}, PostingSets: []PostingSet{}}
	refunds, err := postings.ChargeRefunds(ctx, q, id)
	if err != nil {
		return Detail{}, fmt.Errorf("refunds of %s: %w", id, err)
	}
	for _, r := range refunds {
		d.Refunds = append(d.Refunds, Refund(r))
	}
	sets, err := postings.ChargeSets(ctx, q, id)
	if err != nil {
		return Detail{}, fmt.Errorf("posting sets of %s: %w", id, err)
	}
	for _, s := range sets {
		d.PostingSets = append(d.PostingSets, PostingSet{ID: s.ID, Kind: s.Kind, Amount: s.Amount, Competence: s.Competence, EventAt: s.EventAt})
	}
	legs, err := postings.ChargeLegs(ctx, q, id)
	if err != nil {
		return Detail{}, fmt.Errorf("postings of %s: %w", id, err)
	}
	for i := range d.PostingSets {
		for _, l := range legs {
			if l.SetID == d.PostingSets[i].ID {
				d.PostingSets[i].Postings = append(d.PostingSets[i].Postings, Posting(l))
			}
		}
	}
	var g Grant
	err = sqlx.GetContext(ctx, q, &g, getGrantSQL, id)
	switch {
	case err == nil:
		d.Access = &g
	case !errors.Is(err, sql.ErrNoRows):
		return Detail{}, fmt.Errorf("grant of %s: %w", id, err)
	}
	return d, nil
}
