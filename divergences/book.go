package divergences

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/razao/razao/accounts"
	"github.com/razao/razao/internal/kind"
	"github.com/razao/razao/periods"
	"github.com/razao/razao/postings"
)

// Errors of resolving by booking, told apart with errors.Is. Each names
// the request's field at fault in its text.
var (
	// ErrInvalidResolution: a resolution that is none of Bookings, or a
	// parameter missing, extra or malformed.
	ErrInvalidResolution = kind.New(kind.Invalid, "invalid-parameter", "Invalid parameter", "invalid resolution")
	// ErrNotOffered: a booking this divergence does not offer (another
	// reason's, or one its figures do not call for).
	ErrNotOffered = kind.New(kind.Refused, "resolution-not-offered", "Resolution not offered", "resolution not offered by this divergence")
	// ErrBookingRequired: a note alone for a divergence that stands for
	// money; its detail lists the bookings it offers.
	ErrBookingRequired = kind.New(kind.Conflict, "booking-required", "Divergence must be resolved by booking",
		"divergence stands for money: resolve it by booking one of its offers")
	// ErrCreditExceeded: a credit_refund above what is left of the credit
	// it draws from, or drawing from what is no customer credit.
	ErrCreditExceeded = kind.New(kind.Refused, "credit-exceeded", "Customer credit exceeded", "not enough customer credit")
)

// Detail is one divergence with the bookings it offers (GET
// /v1/divergences/{id}); an open divergence with none is closed by a
// note.
type Detail struct {
	Divergence
	Offers []Offer `json:"offers"`
}

// Describe returns the divergence with id and the bookings it offers
// while open (none once resolved), or ErrNotFound.
func Describe(ctx context.Context, q sqlx.QueryerContext, id int64) (Detail, error) {
	d, err := Get(ctx, q, id)
	if err != nil {
		return Detail{}, err
	}
	out := Detail{Divergence: d, Offers: []Offer{}}
	if d.Status != StatusOpen {
		return out, nil
	}
	var f figures
	if err := sqlx.GetContext(ctx, q, &f, figuresSQL+` WHERE d.id = $1`, id); err != nil {
		return Detail{}, fmt.Errorf("divergence %d's figures: %w", id, err)
	}
	if o := f.offers(); o != nil {
		out.Offers = o
	}
	return out, nil
}

// OffersOf returns the bookings each of the divergences ids allows, by
// id, read in one statement: a page of divergences asks for its offers
// once, not twice a divergence (Describe). A divergence that is not open,
// or offers nothing, has no entry.
func OffersOf(ctx context.Context, q sqlx.QueryerContext, ids []int64) (map[int64][]Offer, error) {
	out := make(map[int64][]Offer, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	var fs []figures
	if err := sqlx.SelectContext(ctx, q, &fs, figuresSQL+` WHERE d.id = ANY($1) AND d.status = 'open'`, pq.Int64Array(ids)); err != nil {
		return nil, fmt.Errorf("offers of %d divergences: %w", len(ids), err)
	}
	for _, f := range fs {
		if o := f.offers(); o != nil {
			out[f.ID] = o
		}
	}
	return out, nil
}

// Request is how finance resolves a divergence by booking.
type Request struct {
	// Resolution is one of the bookings the divergence offers.
	Resolution Booking
	// Note is finance's note; optional (the booking is described when
	// none is given), within MaxNoteLength.
	Note string
	// CreditDivergenceID is the customer_credit a credit_refund draws
	// from; nil for every other booking.
	CreditDivergenceID *int64
	// Competence books the set on that date, refused when its month is
	// closed (postings.ErrClosedMonth); zero dates it by when the money
	// moved, a closed month's in the first open month.
	Competence time.Time
}

// check refuses a request malformed whatever the divergence, naming the
// field, and returns its note as stored ("" when none).
func (r Request) check() (string, error) {
	if !slices.Contains(Bookings, r.Resolution) {
		return "", fmt.Errorf("%w: resolution %.40q is not one of %s", ErrInvalidResolution, r.Resolution, bookingList(Bookings))
	}
	needsCredit := r.Resolution == BookCreditRefund
	switch {
	case needsCredit && r.CreditDivergenceID == nil:
		return "", fmt.Errorf("%w: %s is required by %s", ErrInvalidResolution, ParamCreditDivergence, r.Resolution)
	case needsCredit && *r.CreditDivergenceID <= 0:
		return "", fmt.Errorf("%w: %s must be a divergence id", ErrInvalidResolution, ParamCreditDivergence)
	case !needsCredit && r.CreditDivergenceID != nil:
		return "", fmt.Errorf("%w: %s is not a parameter of %s", ErrInvalidResolution, ParamCreditDivergence, r.Resolution)
	}
	if r.Note == "" {
		return "", nil
	}
	return checkNote(r.Note)
}

// Book resolves the open divergence id by booking r.Resolution, one of
// the bookings it offers (Describe), with ledger, in one transaction:
// the set (an adjustment, keyed by the divergence, so booked once
// whatever happens) and the resolution that names it commit together or
// not at all. The set is dated when the money moved (a closed month's in
// the first open month) unless r.Competence says otherwise. Of two
// concurrent resolutions one books; the other gets ErrAlreadyResolved.
// It fails with ErrNotFound, ErrAlreadyResolved, ErrInvalidResolution,
// ErrInvalidNote, ErrNotOffered, ErrCreditExceeded, or the ledger's
// refusals (postings.ErrClosedMonth, periods.ErrOutsideWindow...).
func Book(ctx context.Context, db *sqlx.DB, ledger *postings.Ledger, id int64, r Request, now time.Time) (Divergence, error) {
	note, err := r.check()
	if err != nil {
		return Divergence{}, err
	}
	tx, err := db.BeginTxx(ctx, periods.WriteTx())
	if err != nil {
		return Divergence{}, fmt.Errorf("book divergence %d: begin: %w", id, err)
	}
	defer tx.Rollback()
	// The divergence's row is locked first: a second resolution waits
	// here and then finds it resolved.
	var f figures
	err = tx.GetContext(ctx, &f, figuresSQL+` WHERE d.id = $1 FOR UPDATE OF d`, id)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return Divergence{}, fmt.Errorf("%w: %d", ErrNotFound, id)
	case err != nil:
		return Divergence{}, fmt.Errorf("book divergence %d: %w", id, err)
	case f.Status != StatusOpen:
		return Divergence{}, fmt.Errorf("%w: %d", ErrAlreadyResolved, id)
	}
	offers := f.offers()
	i := slices.IndexFunc(offers, func(o Offer) bool { return o.Resolution == r.Resolution })
	if i < 0 {
		return Divergence{}, fmt.Errorf("%w: resolution %s; divergence %d (%s) offers %s", ErrNotOffered, r.Resolution, id, f.Reason, offerList(offers))
	}
	o := offers[i]
	if r.CreditDivergenceID != nil {
		if err := drawCredit(ctx, tx, *r.CreditDivergenceID, id, o.Amount); err != nil {
			return Divergence{}, err
		}
	}
	set := postings.Set{Kind: postings.KindAdjustment, IdempotencyKey: SetKey(id), Amount: o.Amount,
		Currency: accounts.DefaultCurrency, EventAt: f.At, Competence: r.Competence, Legs: o.Legs,
		Description: fmt.Sprintf("divergence %d (%s) resolved by %s: %s", id, f.Reason, o.Resolution, o.Description)}
	if f.ChargeRegistered {
		// The set shows with the charge's own (a set naming a charge
		// that is not registered is one razao verify reports).
		set.ChargeID = f.ChargeID
	}
	posted, err := ledger.PostAllTx(ctx, tx, set)
	if err != nil {
		if !r.Competence.IsZero() {
			return Divergence{}, fmt.Errorf("book divergence %d: competence %s: %w", id, r.Competence.Format(time.DateOnly), err)
		}
		return Divergence{}, fmt.Errorf("book divergence %d: %w", id, err)
	}
	if note == "" {
		note = set.Description
	}
	var row row
	err = tx.GetContext(ctx, &row, bookSQL, id, note, now, string(o.Resolution), posted[0].ID, r.CreditDivergenceID)
	if err != nil {
		return Divergence{}, fmt.Errorf("book divergence %d: resolve: %w", id, err)
	}
	if err := tx.Commit(); err != nil {
		return Divergence{}, fmt.Errorf("book divergence %d: commit: %w", id, postings.MapError(err))
	}
	return row.divergence(), nil
}

// SetKey is the idempotency key of the set that resolves divergence id:
// one per divergence, which the ledger's unique key enforces.
func SetKey(id int64) string { return "divergence:" + strconv.FormatInt(id, 10) }

// drawCredit locks the customer_credit divergence credit and refuses to
// draw amount from it for divergence id beyond what is left of it.
func drawCredit(ctx context.Context, tx *sqlx.Tx, credit, id, amount int64) error {
	var c struct {
		Resolution sql.NullString `db:"resolution"`
		Credit     sql.NullInt64  `db:"credit"`
		Drawn      int64          `db:"drawn"`
	}
	var locked int64
	err := tx.GetContext(ctx, &locked, lockCreditSQL, credit)
	if err == nil {
		err = tx.GetContext(ctx, &c, creditSQL, credit)
	}
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return fmt.Errorf("%w: %s %d: no such divergence", ErrInvalidResolution, ParamCreditDivergence, credit)
	case err != nil:
		return fmt.Errorf("book divergence %d: credit %d: %w", id, credit, err)
	case c.Resolution.String != string(BookCustomerCredit) || !c.Credit.Valid:
		return fmt.Errorf("%w: %s %d was not resolved as a customer_credit", ErrCreditExceeded, ParamCreditDivergence, credit)
	case amount > c.Credit.Int64-c.Drawn:
		return fmt.Errorf("%w: %s %d has %d of %d centavos left; the refund is %d", ErrCreditExceeded,
			ParamCreditDivergence, credit, c.Credit.Int64-c.Drawn, c.Credit.Int64, amount)
	}
	return nil
}

// requireNoMoney refuses a note alone for a divergence that offers
// bookings: f's money is closed only by booking it.
func requireNoMoney(f figures) error {
	if offers := f.offers(); len(offers) > 0 {
		return fmt.Errorf("%w: divergence %d (%s) offers %s (GET /v1/divergences/%d)", ErrBookingRequired, f.ID, f.Reason, offerList(offers), f.ID)
	}
	return nil
}

func bookingList(bs []Booking) string {
	s := make([]string, len(bs))
	for i, b := range bs {
		s[i] = string(b)
	}
	return strings.Join(s, ", ")
}

func offerList(os []Offer) string {
	if len(os) == 0 {
		return "no booking (a note closes it)"
	}
	s := make([]string, len(os))
	for i, o := range os {
		s[i] = fmt.Sprintf("%s of %d", o.Resolution, o.Amount)
		if len(o.Parameters) > 0 {
			s[i] += " with " + strings.Join(o.Parameters, ", ")
		}
	}
	return strings.Join(s, "; ")
}
