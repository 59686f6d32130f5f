package postings

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/razao/razao/accounts"
	"github.com/razao/razao/internal/cursor"
	"github.com/razao/razao/internal/kind"
	"github.com/razao/razao/internal/snapshot"
	"github.com/razao/razao/money"
)

// ErrInvalidFilter is a filter of Find that is malformed or out of bounds;
// its text names the parameter.
var ErrInvalidFilter = kind.New(kind.Invalid, "invalid-parameter", "Invalid parameter", "invalid filter")

// Filter selects posting sets across months for Find. Every field is
// optional (its zero value does not filter); the sets returned match all
// the fields that are set.
type Filter struct {
	// Charge: the sets of this charge.
	Charge string
	// Partner: the sets of this partner (commissions, reversals, payouts).
	Partner string
	// Kind: the sets of this kind.
	Kind Kind
	// Account: the sets with a leg on this account of the chart or on any
	// account below it (assets matches assets:cash; a parent's balance is
	// the sum of its children, so its sets are theirs). A code not in the
	// chart is refused.
	Account string
	// CompetenceFrom and CompetenceTo bound the competence date, both
	// included; dates at 00:00 UTC.
	CompetenceFrom, CompetenceTo time.Time
	// EffectiveFrom and EffectiveTo bound the event time (event_at), both
	// included.
	EffectiveFrom, EffectiveTo time.Time
	// AmountMin and AmountMax bound the set's amount in centavos, both
	// included; 0 does not bound.
	AmountMin, AmountMax int64
}

// chargeIDRE is the charges package's id rule (charges.idRE,
// charges.MaxIDLength: charges imports this package, so it cannot be
// called): an id a set can carry.
var chargeIDRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.:-]{0,99}$`)

// Validate refuses a filter Find could not have been asked by a client
// that read the API: each refusal names the parameter.
func (f Filter) Validate() error {
	bad := func(param, format string, args ...any) error {
		return fmt.Errorf("%w: %s: "+format, append([]any{ErrInvalidFilter, param}, args...)...)
	}
	if f.Charge != "" && !chargeIDRE.MatchString(f.Charge) {
		return bad("charge", "%.40q is not a charge id (1 to 100 letters, digits, '_', '.', ':' or '-')", f.Charge)
	}
	if _, err := accounts.PartnerPayable(f.Partner); f.Partner != "" && err != nil {
		return bad("partner", "%.40q is not a partner id", f.Partner)
	}
	switch f.Kind {
	case "", KindSale, KindCommission, KindRefund, KindCommissionReversal, KindPayout, KindAdjustment:
	default:
		return bad("kind", "%.40q is not a kind of set (sale, commission, refund, commission_reversal, payout, adjustment)", string(f.Kind))
	}
	if f.Account != "" && accounts.ValidateCode(f.Account) != nil {
		return bad("account", "%.40q is not an account code", f.Account)
	}
	for _, d := range []struct {
		param string
		t     time.Time
	}{{"competence_from", f.CompetenceFrom}, {"competence_to", f.CompetenceTo},
		{"effective_from", f.EffectiveFrom}, {"effective_to", f.EffectiveTo}} {
		if !d.t.IsZero() && (d.t.UTC().Year() < 1900 || d.t.UTC().Year() > 9999) {
			return bad(d.param, "year %d is outside 1900 to 9999", d.t.UTC().Year())
		}
	}
	for _, d := range []struct {
		param string
		t     time.Time
	}{{"competence_from", f.CompetenceFrom}, {"competence_to", f.CompetenceTo}} {
		if !d.t.IsZero() && !d.t.Equal(d.t.UTC().Truncate(24*time.Hour)) {
			return bad(d.param, "a competence is a date, not a time")
		}
	}
	switch {
	case !f.CompetenceFrom.IsZero() && !f.CompetenceTo.IsZero() && f.CompetenceFrom.After(f.CompetenceTo):
		return bad("competence_from", "%s is after competence_to %s", f.CompetenceFrom.UTC().Format(time.DateOnly), f.CompetenceTo.UTC().Format(time.DateOnly))
	case !f.EffectiveFrom.IsZero() && !f.EffectiveTo.IsZero() && f.EffectiveFrom.After(f.EffectiveTo):
		return bad("effective_from", "%s is after effective_to %s", f.EffectiveFrom.UTC().Format(time.RFC3339Nano), f.EffectiveTo.UTC().Format(time.RFC3339Nano))
	}
	for _, a := range []struct {
		param string
		v     int64
	}{{"amount_min", f.AmountMin}, {"amount_max", f.AmountMax}} {
		if a.v < 0 || a.v > money.Ceiling {
			return bad(a.param, "%d is not a whole number of centavos from 1 to %d", a.v, money.Ceiling)
		}
	}
	if f.AmountMin > 0 && f.AmountMax > 0 && f.AmountMin > f.AmountMax {
		return bad("amount_min", "%d is above amount_max %d", f.AmountMin, f.AmountMax)
	}
	return nil
}

// Scope is the cursor scope of Find's pages under f: a cursor is a
// position in id order bound to the filter that issued it, so that one
// reused under another filter is refused rather than skipping that
// filter's newest sets.
func (f Filter) Scope() string {
	canon := strings.Join([]string{f.Charge, f.Partner, string(f.Kind), f.Account,
		dateText(f.CompetenceFrom), dateText(f.CompetenceTo), timeText(f.EffectiveFrom), timeText(f.EffectiveTo),
		strconv.FormatInt(f.AmountMin, 10), strconv.FormatInt(f.AmountMax, 10)}, "\x00")
	sum := sha256.Sum256([]byte(canon))
	return "posting-sets:" + hex.EncodeToString(sum[:8])
}

func dateText(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.DateOnly)
}

func timeText(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}

// FoundLeg is one posting of a found set: signed centavos, debit positive
// (the journal's posting).
type FoundLeg struct {
	ID       int64  `json:"id"`
	Account  string `json:"account"`
	Currency string `json:"currency"`
	Amount   int64  `json:"amount"`
}

// FoundSet is a posting set with its legs, as the journal (one month's)
// and Find (across months) show it.
type FoundSet struct {
	ID             int64  `json:"id"`
	Kind           string `json:"kind"`
	IdempotencyKey string `json:"idempotency_key"`
	// Amount is the business amount of the event (the sale's total, the
	// refund's amount...).
	Amount   int64  `json:"amount"`
	Currency string `json:"currency"`
	// Competence is the date the set is booked on, YYYY-MM-DD.
	Competence string `json:"competence"`
	// EventAt is when the event happened (UTC); it differs from
	// Competence's month for a late event booked after its month closed.
	EventAt     time.Time  `json:"event_at"`
	ChargeID    string     `json:"charge_id,omitempty"`
	RefundID    string     `json:"refund_id,omitempty"`
	Partner     string     `json:"partner,omitempty"`
	InboxID     int64      `json:"inbox_id,omitempty"`
	Description string     `json:"description"`
	CreatedAt   time.Time  `json:"created_at"`
	Postings    []FoundLeg `json:"postings"`
}

// WithLegs returns sets as shown, in their order, with the legs of all of
// them read in one statement (legsIn: from their months' partitions of
// postings only), never one read per set.
func WithLegs(ctx context.Context, q sqlx.QueryerContext, sets []StoredSet) ([]FoundSet, error) {
	out := make([]FoundSet, 0, len(sets))
	if len(sets) == 0 {
		return out, nil
	}
	ids := make([]int64, len(sets))
	index := make(map[int64]int, len(sets))
	var months []string
	for i, s := range sets {
		ids[i] = s.ID
		index[s.ID] = i
		if m := s.Competence.UTC().Format("2006-01") + "-01"; !slices.Contains(months, m) {
			months = append(months, m)
		}
		out = append(out, FoundSet{
			ID: s.ID, Kind: s.Kind, IdempotencyKey: s.IdempotencyKey, Amount: s.Amount, Currency: s.Currency,
			Competence: s.Competence.UTC().Format(time.DateOnly), EventAt: s.EventAt.UTC(),
			ChargeID: s.ChargeID.String, RefundID: s.RefundID.String, Partner: s.Partner.String,
			InboxID: s.InboxID.Int64, Description: s.Description, CreatedAt: s.CreatedAt.UTC(),
			Postings: []FoundLeg{},
		})
	}
	legs, err := legsIn(ctx, q, ids, months)
	if err != nil {
		return nil, fmt.Errorf("legs: %w", err)
	}
	for _, l := range legs {
		s := &out[index[l.SetID]]
		s.Postings = append(s.Postings, FoundLeg{ID: l.ID, Account: l.Account, Currency: l.Currency, Amount: l.Amount})
	}
	return out, nil
}

// FoundPage is one page of Find.
type FoundPage struct {
	Sets []FoundSet `json:"sets"`
	// NextCursor fetches the next page; empty on the last one.
	NextCursor string `json:"next_cursor,omitempty"`
}

// Find returns the posting sets matching f across months, newest (highest
// id) first, limit a page (cursor.Limit), each with its legs; pageCursor
// is "" for the first page, then the previous page's NextCursor under the
// same filter. Everything is read in one snapshot: the page's sets in one
// statement (after, for a date range, the ledger's first and last date,
// or for a subtree of many accounts, a probe of its floor), then the
// legs of the whole page in one more, never one read per set.
//
// Newest first, so that paging is stable while sets are booked: each page
// holds ids below the previous page's, so no set is shown twice, and no
// set committed before the first page was read is skipped; a set booked
// after it has a higher id and shows when the client starts again.
//
// Every filter reads an index (sql/0045): the charge, partner, kind and
// amount through the statement's own choice of ix_posting_sets_charge,
// ix_posting_sets_partner_id, ix_posting_sets_kind_id or
// ix_posting_sets_amount_id; an account as the newest sets of each
// account of its subtree (ix_postings_account_set), merged; a competence
// or effective range as the newest sets of each whole month and each day
// at its edges (ix_posting_sets_competence_month, ix_posting_sets_competence_id,
// ix_posting_sets_event_month, ix_posting_sets_event_day), merged. With a
// charge or a partner, the statement tests that charge's or partner's
// sets against the other filters; else the account leads, else the
// competence range, else the effective range, and the other filters test
// the rows it reads (a combination can thus read more than a page's
// worth; each filter alone reads about a page).
func Find(ctx context.Context, q sqlx.QueryerContext, f Filter, pageCursor string, limit int) (FoundPage, error) {
	if err := f.Validate(); err != nil {
		return FoundPage{}, err
	}
	before, err := cursor.Decode(pageCursor, f.Scope())
	if err != nil {
		return FoundPage{}, err
	}
	if pageCursor == "" {
		before = math.MaxInt64
	} else if before < 1 {
		// Find issues a set's id, never 0.
		return FoundPage{}, fmt.Errorf("%w: bad position", cursor.ErrInvalid)
	}
	limit = cursor.Limit(limit)
	var page FoundPage
	err = snapshot.Read(ctx, q, func(q sqlx.QueryerContext) error {
		var err error
		page, err = find(ctx, q, f, before, limit)
		return err
	}, `SET LOCAL jit = off`)
	if err != nil {
		return FoundPage{}, fmt.Errorf("find posting sets: %w", err)
	}
	return page, nil
}

func find(ctx context.Context, q sqlx.QueryerContext, f Filter, before int64, limit int) (FoundPage, error) {
	subtree, err := subtreeOf(ctx, q, f.Account)
	if err != nil {
		return FoundPage{}, err
	}
	stmt, args, err := findStatement(ctx, q, f, subtree, before, limit+1)
	if err != nil {
		return FoundPage{}, err
	}
	page := FoundPage{Sets: []FoundSet{}}
	if stmt == "" {
		return page, nil
	}
	var sets []StoredSet
	if err := sqlx.SelectContext(ctx, q, &sets, stmt, args...); err != nil {
		return FoundPage{}, err
	}
	if len(sets) > limit {
		sets = sets[:limit]
		page.NextCursor = cursor.Encode(f.Scope(), sets[limit-1].ID)
	}
	if page.Sets, err = WithLegs(ctx, q, sets); err != nil {
		return FoundPage{}, err
	}
	return page, nil
}

// subtreeOf returns the ids of the account code and of every account
// below it; nil for "" (no account filter). A code not in the chart is
// refused naming the parameter: a typo would otherwise look like an
// account without sets.
func subtreeOf(ctx context.Context, q sqlx.QueryerContext, code string) ([]int64, error) {
	if code == "" {
		return nil, nil
	}
	codes, err := accounts.Codes(ctx, q)
	if err != nil {
		return nil, err
	}
	var ids []int64
	for id, c := range codes {
		if c == code || strings.HasPrefix(c, code+":") {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		return nil, fmt.Errorf("%w: account: %.40q is not in the chart", ErrInvalidFilter, code)
	}
	slices.Sort(ids)
	return ids, nil
}

// eventDaySQL and eventMonthSQL are the expressions of
// ix_posting_sets_event_day and ix_posting_sets_event_month (sql/0045),
// written as the indexes are so that the planner matches them.
const (
	eventDaySQL   = `((s.event_at AT TIME ZONE 'UTC'::text))::date`
	eventMonthSQL = `date_trunc('month'::text, (s.event_at AT TIME ZONE 'UTC'::text))`
)

// findStatement builds Find's statement over posting_sets s from fixed
// fragments, every value a parameter: the sets matching f with an id
// below before, newest first, at most n. "" when no set can match (a
// range outside the ledger's). The driver reads the newest matching ids
// (from an index alone where the filter's columns are in it), then the
// statement reads those n sets.
func findStatement(ctx context.Context, q sqlx.QueryerContext, f Filter, subtree []int64, before int64, n int) (string, []any, error) {
	var args []any
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	// The set's own conditions, beside the id bound and the account; the
	// date ranges apart, as a range's buckets imply it.
	var conds, competence, effective []string
	if f.Charge != "" {
		conds = append(conds, "s.charge_id = "+arg(f.Charge))
	}
	if f.Partner != "" {
		conds = append(conds, "s.partner = "+arg(f.Partner))
	}
	if f.Kind != "" {
		conds = append(conds, "s.kind = "+arg(string(f.Kind)))
	}
	switch {
	case f.AmountMin > 0 && f.AmountMin == f.AmountMax:
		// One amount: its sets are in id order in (amount, id).
		conds = append(conds, "s.amount = "+arg(f.AmountMin))
	default:
		if f.AmountMin > 0 {
			conds = append(conds, "s.amount >= "+arg(f.AmountMin))
		}
		if f.AmountMax > 0 {
			conds = append(conds, "s.amount <= "+arg(f.AmountMax))
		}
	}
	if !f.CompetenceFrom.IsZero() {
		competence = append(competence, "s.competence >= "+arg(f.CompetenceFrom.UTC().Format(time.DateOnly))+"::date")
	}
	if !f.CompetenceTo.IsZero() {
		competence = append(competence, "s.competence <= "+arg(f.CompetenceTo.UTC().Format(time.DateOnly))+"::date")
	}
	if !f.EffectiveFrom.IsZero() {
		effective = append(effective, "s.event_at >= "+arg(f.EffectiveFrom))
	}
	if !f.EffectiveTo.IsZero() {
		effective = append(effective, "s.event_at <= "+arg(f.EffectiveTo))
	}
	beforeArg, nArg := arg(before), arg(n)
	var accountArg string
	if subtree != nil {
		accountArg = arg(pq.Array(subtree))
	}
	and := func(parts ...[]string) string {
		return strings.Join(slices.Concat(parts...), " AND ")
	}
	below := []string{"s.id < " + beforeArg}
	var hasAccount []string
	if subtree != nil {
		hasAccount = []string{"EXISTS (SELECT 1 FROM postings p WHERE p.posting_set_id = s.id AND p.account_id = ANY(" + accountArg + "))"}
	}
	// The driver's sets, each read from its month's partition: the key
	// (posting_set_keys, one row a set) gives the set's competence,
	// posting_sets' partition key, so each set is one probe of one
	// partition's primary key, where its id alone probes every month's.
	ids := func(driver string) string {
		return `SELECT ` + storedSetColumns + ` FROM posting_sets s WHERE (s.id, s.competence) IN (
			SELECT k.id, k.competence FROM posting_set_keys k WHERE k.id IN (` + driver + `)) ORDER BY s.id DESC`
	}
	switch {
	case f.Charge != "" || f.Partner != "" || subtree == nil && len(competence) == 0 && len(effective) == 0:
		// A charge's or a partner's sets are few enough to filter; kind
		// and amount alone are left to the planner (their index or the
		// newest sets, whichever finds n first).
		return ids(`SELECT s.id FROM posting_sets s WHERE ` + and(below, hasAccount, conds, competence, effective) + `
			ORDER BY s.id DESC LIMIT ` + nArg), args, nil
	case subtree != nil:
		// The newest n sets of each account of the subtree, merged: the
		// newest n of all are among them. Above floor only: see
		// subtreeFloor.
		join, where := "", ""
		if rest := and(conds, competence, effective); rest != "" {
			join, where = " JOIN posting_sets s ON s.id = p.posting_set_id", " AND "+rest
		}
		lateral := func(limitArg, floorArg string) string {
			return `SELECT DISTINCT p.posting_set_id FROM postings p` + join + `
				WHERE p.account_id = a.id AND p.posting_set_id < ` + beforeArg + ` AND p.posting_set_id >= ` + floorArg + where + `
				ORDER BY p.posting_set_id DESC LIMIT ` + limitArg
		}
		probe := func(m int) (map[int64][]int64, error) {
			next := len(args)
			// least(m, n) is m (m < n), and gives n a use: a parameter a
			// statement does not use has no type, and is refused.
			stmt := `SELECT a.id AS account, x.posting_set_id FROM unnest(` + accountArg + `::bigint[]) a (id)
				CROSS JOIN LATERAL (` + lateral("least($"+strconv.Itoa(next+1)+"::bigint, "+nArg+"::bigint)", "$"+strconv.Itoa(next+2)) + `) x`
			var rows []struct {
				Account int64 `db:"account"`
				SetID   int64 `db:"posting_set_id"`
			}
			if err := sqlx.SelectContext(ctx, q, &rows, stmt, append(slices.Clone(args), m, int64(0))...); err != nil {
				return nil, err
			}
			out := map[int64][]int64{}
			for _, r := range rows {
				out[r.Account] = append(out[r.Account], r.SetID)
			}
			return out, nil
		}
		floor, err := subtreeFloor(len(subtree), n, probe)
		if err != nil {
			return "", nil, err
		}
		floorArg := arg(floor)
		return ids(`SELECT DISTINCT x.posting_set_id FROM unnest(` + accountArg + `::bigint[]) a (id)
			CROSS JOIN LATERAL (` + lateral(nArg, floorArg) + `) x ORDER BY 1 DESC LIMIT ` + nArg), args, nil
	}
	// A date range: the newest n sets of each whole month in it and of
	// each day left at its edges, merged. A bucket inside the range needs
	// no test of the range (and reads its index alone); the first and
	// last day of an effective range, cut at a time of day, do: from the
	// day's index, or, for a window of a few hours, from the event time's
	// own (ix_posting_sets_event_id), whichever the planner finds cheaper.
	var months, days, edges []time.Time
	var monthCond, dayCond, edgeCond string
	var rest []string // the conditions every bucket tests
	if len(competence) > 0 {
		var lo, hi *time.Time
		if err := q.QueryRowxContext(ctx, `SELECT min(competence)::timestamp, max(competence)::timestamp FROM posting_sets`).Scan(&lo, &hi); err != nil {
			return "", nil, err
		}
		if lo == nil {
			return "", nil, nil
		}
		months, days = buckets(clamp(f.CompetenceFrom, f.CompetenceTo, *lo, *hi))
		// A month's bucket also as a range of competence, posting_sets'
		// partition key (sql/0056): each bucket reads its month's
		// partition only (pruned as the bucket is read), where
		// competence_month alone probes every month's index.
		monthCond = "s.competence_month = b.at AND s.competence >= b.at AND s.competence < (b.at + interval '1 month')::date"
		dayCond = "s.competence = b.at"
		rest = slices.Concat(conds, effective)
	} else {
		var lo, hi *time.Time
		if err := q.QueryRowxContext(ctx, `SELECT min(event_at), max(event_at) FROM posting_sets`).Scan(&lo, &hi); err != nil {
			return "", nil, err
		}
		if lo == nil {
			return "", nil, nil
		}
		from, to, ok := clamp(day(f.EffectiveFrom), day(f.EffectiveTo), day(*lo), day(*hi))
		if !ok {
			return "", nil, nil
		}
		// The edge days are tested against the range; the days between
		// lie inside it.
		edges = append(edges, from)
		if to.After(from) {
			edges = append(edges, to)
		}
		months, days = buckets(from.AddDate(0, 0, 1), to.AddDate(0, 0, -1), to.Sub(from) >= 48*time.Hour)
		monthCond, dayCond, edgeCond = eventMonthSQL+" = b.at::timestamp", eventDaySQL+" = b.at", eventDaySQL+" = b.at"
		rest = conds
	}
	if len(months)+len(days)+len(edges) == 0 {
		return "", nil, nil
	}
	lateral := func(buckets []time.Time, cond string, tests ...[]string) string {
		return `SELECT x.id FROM unnest(` + arg(pq.StringArray(dates(buckets))) + `::date[]) b (at)
		CROSS JOIN LATERAL (SELECT s.id FROM posting_sets s WHERE ` + and([]string{cond}, below, hasAccount, slices.Concat(tests...)) + `
			ORDER BY s.id DESC LIMIT ` + nArg + `) x`
	}
	// A day's test of the competence range is on its index's own column
	// (and gives the range's parameters a use when there is no such day).
	parts := []string{lateral(months, monthCond, rest), lateral(days, dayCond, rest, competence)}
	if len(edges) > 0 {
		parts = append(parts, lateral(edges, edgeCond, rest, effective))
	}
	return ids(strings.Join(parts, "\n\t\tUNION ALL\n\t\t") + `
		ORDER BY 1 DESC LIMIT ` + nArg), args, nil
}

// day is t's date in UTC at 00:00 UTC, zero for zero.
func day(t time.Time) time.Time {
	if t.IsZero() {
		return t
	}
	return t.UTC().Truncate(24 * time.Hour)
}

// subtreeFloor is a set id at or below the n-th newest set of a subtree
// of k accounts, so that reading each account's sets from the newest down
// to it finds the n newest of all (0: read each account's n newest). For
// a subtree of many accounts (every partner's payable), n per account is
// thousands of rows for a page of a hundred: probe reads each account's
// m newest instead, with m about 2n/k. When the probe finds n sets, the
// n-th newest of them is the floor: the n newest of all are at or above
// it (it is the n-th of a subset). When it finds fewer while some
// account had m, m grows fourfold; when no account had m, the probe
// read every set there is, and 0 reads them again.
func subtreeFloor(k, n int, probe func(m int) (map[int64][]int64, error)) (int64, error) {
	for m := 2*n/k + 1; m < n; m *= 4 {
		byAccount, err := probe(m)
		if err != nil {
			return 0, err
		}
		seen := map[int64]bool{}
		var ids []int64
		saturated := false
		for _, sets := range byAccount {
			saturated = saturated || len(sets) >= m
			for _, id := range sets {
				if !seen[id] {
					seen[id] = true
					ids = append(ids, id)
				}
			}
		}
		if len(ids) >= n {
			slices.Sort(ids)
			return ids[len(ids)-n], nil
		}
		if !saturated {
			return 0, nil
		}
	}
	return 0, nil
}

// clamp bounds the range [from, to] (zero: open) to the ledger's [lo, hi]
// and reports whether anything is left.
func clamp(from, to, lo, hi time.Time) (time.Time, time.Time, bool) {
	if from.IsZero() || from.Before(lo) {
		from = lo
	}
	if to.IsZero() || to.After(hi) {
		to = hi
	}
	return from.UTC(), to.UTC(), !from.After(to)
}

// buckets splits the days from to to (00:00 UTC, both included) into the
// whole months they cover and the days left at the edges, so that a range
// of years is a few dozen index probes, not hundreds.
func buckets(from, to time.Time, ok bool) (months, days []time.Time) {
	if !ok {
		return nil, nil
	}
	for d := from; !d.After(to); {
		next := d.AddDate(0, 1, 0)
		if d.Day() == 1 && !next.AddDate(0, 0, -1).After(to) {
			months = append(months, d)
			d = next
			continue
		}
		days = append(days, d)
		d = d.AddDate(0, 0, 1)
	}
	return months, days
}

func dates(ts []time.Time) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.Format(time.DateOnly)
	}
	return out
}
