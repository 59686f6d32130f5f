package charges

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/razao/razao/accounts"
	"github.com/razao/razao/internal/cursor"
	"github.com/razao/razao/internal/kind"
	"github.com/razao/razao/money"
)

// ErrInvalidFilter is a filter of the charges' listing that could never
// match as given (a state that does not exist, a range whose end is
// before its start, a reference no PSP could send); its message names the
// query parameter.
var ErrInvalidFilter = kind.New(kind.Invalid, "invalid-parameter", "Invalid parameter", "invalid parameter")

// Filter narrows the charges' listing (Find). Every field set must hold;
// a zero field does not narrow. Time ranges are half-open: From ≤ t < To.
// Amount bounds are inclusive.
type Filter struct {
	State    State
	Merchant string
	Partner  string

	CreatedFrom, CreatedTo *time.Time
	PaidFrom, PaidTo       *time.Time
	AmountMin, AmountMax   *int64

	// The PSP's references. TxID is a Pix txid: our charge id. EndToEndID
	// is a Pix endToEndId, TrackID a Hodle trackId, WebhookID the
	// webhook-id of a Standard Webhooks delivery: each finds the charge
	// it paid (paid_ref, in its scheme's form), the charge the app
	// registered it on (psp_ref, trackId only), and the charges the
	// deliveries of that id name (the inbox's, DeliveryRefs): a second
	// payment, a refund or a failure that paid nothing.
	TxID, EndToEndID, TrackID, WebhookID string
}

// The bounds of a Filter's values.
const (
	// MaxRefLength bounds a PSP reference: longer than any scheme sends.
	MaxRefLength = 200
	// MaxMerchantLength is a charge's merchant's bound (Validate).
	MaxMerchantLength = 200
)

// Filter times must fall within these years: a date-time outside them is
// a mistake (0001-01-01, a year typed wrong), never a charge's time.
const (
	minFilterYear = 1970
	maxFilterYear = 9999
)

// Validate checks every value of f against limit, the largest amount a
// charge may have; the error names the query parameter it is about.
func (f Filter) Validate(limit money.Limit) error {
	bad := func(param, format string, args ...any) error {
		return fmt.Errorf("%w: %s: %s", ErrInvalidFilter, param, fmt.Sprintf(format, args...))
	}
	if f.State != "" && !validState(f.State) {
		return bad("state", "%.40q is not a charge state (pending, paid, partially_refunded, refunded, failed)", f.State)
	}
	if f.Merchant != "" && !printable(f.Merchant, MaxMerchantLength) {
		return bad("merchant", "must be 1-%d printable characters", MaxMerchantLength)
	}
	if f.Partner != "" {
		if _, err := accounts.PartnerPayable(f.Partner); err != nil || len(f.Partner) > MaxMerchantLength {
			return bad("partner", "must be a partner id: lowercase letters, digits and - _ . up to %d", MaxMerchantLength)
		}
	}
	for _, r := range []struct {
		name     string
		from, to *time.Time
	}{{"created", f.CreatedFrom, f.CreatedTo}, {"paid", f.PaidFrom, f.PaidTo}} {
		for _, t := range []struct {
			param string
			at    *time.Time
		}{{r.name + "_from", r.from}, {r.name + "_to", r.to}} {
			if t.at != nil && (t.at.Year() < minFilterYear || t.at.Year() > maxFilterYear) {
				return bad(t.param, "must fall in the years %d to %d", minFilterYear, maxFilterYear)
			}
		}
		if r.from != nil && r.to != nil && r.from.After(*r.to) {
			return bad(r.name+"_from", "is after %s_to", r.name)
		}
	}
	for _, a := range []struct {
		param string
		v     *int64
	}{{"amount_min", f.AmountMin}, {"amount_max", f.AmountMax}} {
		if a.v != nil && (*a.v < 0 || *a.v > limit.Max()) {
			return bad(a.param, "must be a whole number of centavos from 0 to %d", limit.Max())
		}
	}
	if f.AmountMin != nil && f.AmountMax != nil && *f.AmountMin > *f.AmountMax {
		return bad("amount_min", "is above amount_max")
	}
	if f.TxID != "" && !idRE.MatchString(f.TxID) {
		return bad("txid", "must be a charge id: 1-%d of A-Z a-z 0-9 _ . : -", MaxIDLength)
	}
	for _, r := range []struct{ param, v string }{
		{"end_to_end_id", f.EndToEndID}, {"track_id", f.TrackID}, {"webhook_id", f.WebhookID},
	} {
		if r.v != "" && (!printable(r.v, MaxRefLength) || strings.ContainsAny(r.v, "| ")) {
			return bad(r.param, "must be 1-%d printable characters without spaces or '|'", MaxRefLength)
		}
	}
	return nil
}

func validState(s State) bool {
	for _, st := range States {
		if s == st {
			return true
		}
	}
	return false
}

// printable reports whether s is 1 to max bytes of printable ASCII or
// spaces: no control character, no NUL, nothing a log line could hide.
func printable(s string, max int) bool {
	if len(s) == 0 || len(s) > max {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

// Position is where a page of the listing ends: the last charge's time
// in the listing's order (Filter.ByPaid: its payment's, else its
// registration's) and its id.
type Position struct {
	At time.Time
	ID string
}

// The cursor scopes of the listing's two orders: a cursor of one is
// refused by the other rather than read as a time it does not mean.
const (
	listScope     = "charges"
	listPaidScope = "charges-paid"
)

// ByPaid reports whether the listing f selects is in the order of the
// charges' payments (a paid range is given: paid_at, then id, newest
// first) rather than of their registrations (created_at, then id). A
// range of one time read in the order of another would be found, then
// sorted, whole: a month of payments is a quarter of a million charges.
func (f Filter) ByPaid() bool { return f.PaidFrom != nil || f.PaidTo != nil }

func (f Filter) scope() string {
	if f.ByPaid() {
		return listPaidScope
	}
	return listScope
}

// Cursor is the opaque cursor of the page after p in the listing f
// selects.
func (f Filter) Cursor(p Position) string {
	return cursor.EncodeKey(f.scope(), strconv.FormatInt(p.At.UnixMicro(), 10)+","+p.ID)
}

// ParseCursor reads a cursor f.Cursor made; "" is the first page (nil).
func (f Filter) ParseCursor(c string) (*Position, error) {
	if c == "" {
		return nil, nil
	}
	key, err := cursor.DecodeKey(c, f.scope())
	if err != nil {
		return nil, err
	}
	micros, id, ok := strings.Cut(key, ",")
	us, err := strconv.ParseInt(micros, 10, 64)
	if !ok || err != nil || !idRE.MatchString(id) {
		return nil, fmt.Errorf("%w: bad position", cursor.ErrInvalid)
	}
	return &Position{At: time.UnixMicro(us).UTC(), ID: id}, nil
}

// DeliveryRefs is the inbox's side of a search by a delivery's id: the
// inbox imports this package, so its SQL comes in through this
// interface (inbox.ChargeRefs), and the search is one statement.
type DeliveryRefs interface {
	// ChargeRefsSQL is a subquery yielding the charge references (our
	// charge id, or the PSP reference the app registered) the deliveries
	// of scheme whose id is eventID name; both are SQL expressions
	// (parameters).
	ChargeRefsSQL(scheme, eventID string) string
}

// Schemes whose references the listing searches: names of webhook
// schemes (package scheme, which this package does not import).
const (
	bcbPixScheme = "bcb-pix"
	hodleScheme  = "hodle"
)

// Page is a page of the listing: at most its limit of charges, newest
// first, and the position of the next page, nil on the last.
type Page struct {
	Charges []Charge
	Next    *Position
}

// Find returns the charges f selects, newest first (created_at, then id,
// both descending; paid_at, then id, when f has a paid range: ByPaid),
// limit of them (cursor.Limit) after the position
// after (nil: from the newest). A charge registered while a client pages
// (or paid) either comes before the page it is on (newer) or, committed
// late with an older time, lands among the pages still to come; no
// charge is shown twice or skipped for it. in is the inbox's side of the
// reference filters. f must be valid (Validate).
func Find(ctx context.Context, q sqlx.QueryerContext, in DeliveryRefs, f Filter, after *Position, limit int) (Page, error) {
	limit = cursor.Limit(limit)
	query, args := findSQL(in, f, after, limit+1)
	var rows []Charge
	if err := sqlx.SelectContext(ctx, q, &rows, query, args...); err != nil {
		return Page{}, fmt.Errorf("find charges: %w", err)
	}
	page := Page{Charges: rows}
	if len(rows) > limit {
		page.Charges = rows[:limit]
		last := rows[limit-1]
		page.Next = &Position{At: last.CreatedAt, ID: last.ID}
		if f.ByPaid() {
			page.Next.At = *last.PaidAt // a paid range selects paid charges only
		}
	}
	if page.Charges == nil {
		page.Charges = []Charge{}
	}
	return page, nil
}

// FindSQL is Find's statement for f, with its arguments: exported for
// the plan test, which explains it.
func FindSQL(in DeliveryRefs, f Filter, after *Position, limit int) (string, []any) {
	return findSQL(in, f, after, limit)
}

// findSQL builds Find's statement from fixed fragments, one per filter
// set, each value a parameter: nothing of the request is ever SQL.
func findSQL(in DeliveryRefs, f Filter, after *Position, limit int) (string, []any) {
	var where []string
	var args []any
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	// delivered is the charges the deliveries of scheme with id eventID
	// name, by our id or the PSP reference the app registered.
	delivered := func(scheme, eventID string) string {
		refs := `ARRAY(` + in.ChargeRefsSQL(arg(scheme), arg(eventID)) + `)`
		return `id = ANY(` + refs + `) OR psp_ref = ANY(` + refs + `)`
	}
	if f.State != "" {
		where = append(where, `state = `+arg(string(f.State)))
	}
	if f.Merchant != "" {
		where = append(where, `merchant = `+arg(f.Merchant))
	}
	if f.Partner != "" {
		where = append(where, `partner = `+arg(f.Partner))
	}
	if f.CreatedFrom != nil {
		where = append(where, `created_at >= `+arg(*f.CreatedFrom))
	}
	if f.CreatedTo != nil {
		where = append(where, `created_at < `+arg(*f.CreatedTo))
	}
	if f.PaidFrom != nil {
		where = append(where, `paid_at >= `+arg(*f.PaidFrom))
	}
	if f.PaidTo != nil {
		where = append(where, `paid_at < `+arg(*f.PaidTo))
	}
	if f.AmountMin != nil {
		where = append(where, `amount >= `+arg(*f.AmountMin))
	}
	if f.AmountMax != nil {
		where = append(where, `amount <= `+arg(*f.AmountMax))
	}
	if f.TxID != "" {
		where = append(where, `id = `+arg(f.TxID))
	}
	if f.EndToEndID != "" {
		where = append(where, `(paid_ref = `+arg(SchemePaymentRef(bcbPixScheme, f.EndToEndID))+` OR `+
			delivered(bcbPixScheme, f.EndToEndID)+`)`)
	}
	if f.TrackID != "" {
		where = append(where, `(psp_ref = `+arg(f.TrackID)+` OR paid_ref = `+arg(SchemePaymentRef(hodleScheme, f.TrackID))+` OR `+
			delivered(hodleScheme, f.TrackID)+`)`)
	}
	if f.WebhookID != "" {
		where = append(where, `(paid_ref = `+arg(EventPaymentRef(standardScheme, f.WebhookID))+` OR `+
			delivered(standardScheme, f.WebhookID)+`)`)
	}
	at := `created_at`
	if f.ByPaid() {
		at = `paid_at`
	}
	if after != nil {
		where = append(where, `(`+at+`, id) < (`+arg(after.At)+`, `+arg(after.ID)+`)`)
	}
	q := `SELECT ` + chargeColumns + ` FROM charges`
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, ` AND `)
	}
	q += ` ORDER BY ` + at + ` DESC, id DESC LIMIT ` + arg(limit)
	return q, args
}
