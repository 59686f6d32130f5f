package divergences_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/razao/razao/accounts"
	"github.com/razao/razao/charges"
	"github.com/razao/razao/divergences"
	"github.com/razao/razao/internal/ledgertest"
	"github.com/razao/razao/postings"
)

// moneyDivergence records a divergence of reason set aside from a
// delivery of kind (paid, refunded) that stated amount at at, as the
// delivery path records a second payment or an unknown charge: no side
// of its own, the figures in the delivery's stored event.
func moneyDivergence(t *testing.T, db *sqlx.DB, reason divergences.Reason, kind, chargeID string, amount int64, at time.Time) int64 {
	t.Helper()
	var inbox int64
	event := fmt.Sprintf(`{"Kind":%q,"Amount":%d,"HasAmount":true,"OccurredAt":%q}`, kind, amount, at.UTC().Format(time.RFC3339))
	err := db.Get(&inbox, `INSERT INTO inbox (delivery_key, endpoint, scheme, merchant, event_type, event_id, kind, event, body, status)
		VALUES ('psp|t|' || $1, 'psp', 'generic', 'shop', 't', $1, $2, $3, '\x7b7d', 'divergent') RETURNING id`,
		fmt.Sprintf("%s-%d", reason, time.Now().UnixNano()), kind, event)
	if err != nil {
		t.Fatal(err)
	}
	var id int64
	if err := db.Get(&id, `INSERT INTO divergences (inbox_id, charge_id, reason, detail) VALUES ($1, $2, $3, 'test') RETURNING id`,
		inbox, chargeID, reason); err != nil {
		t.Fatal(err)
	}
	return id
}

var august = ledgertest.SaoPaulo(2026, 8, 20, 12, 0)

func ptr(v int64) *int64 { return &v }

// TestDivergenceOffersTheBookingsOfItsReason: each reason that stands for
// money offers the bookings that make the ledger agree with the PSP, with
// the amounts of its two sides; the others offer none.
func TestDivergenceOffersTheBookingsOfItsReason(t *testing.T) {
	t.Parallel()
	l, db := ledgertest.New(t)
	ctx := context.Background()
	// A sale of 100.00 booked, then stated again as 105.00 and as 95.00.
	sale, err := postings.Sale("booked", "BRL", 10000, 0, august)
	ledgertest.Post(t, l, sale, err)
	more := moneyDivergence(t, db, divergences.ReasonAmountMismatch, "paid", "booked", 10500, august)
	less := moneyDivergence(t, db, divergences.ReasonAmountMismatch, "paid", "booked", 9500, august)
	// A refund of 20.00 booked that the PSP never settled.
	var unsettled int64
	db.Get(&unsettled, `INSERT INTO divergences (charge_id, reason, detail, ledger_amount) VALUES ('rf', 'refund_not_settled', '', 2000) RETURNING id`)
	second := moneyDivergence(t, db, divergences.ReasonSecondPayment, "paid", "c1", 4990, august)
	unknown := moneyDivergence(t, db, divergences.ReasonUnknownCharge, "paid", "nosuch", 1000, august)
	refundOut := moneyDivergence(t, db, divergences.ReasonRefundOfOtherPayment, "refunded", "c1", 4990, august)
	disputed := moneyDivergence(t, db, divergences.ReasonDisputed, "paid", "c1", 4990, august)
	// A payment of 100.00 stated as 99.00, nothing booked; a fee of 0.99
	// where 0.80 was booked; a refund of 30.00 booked as 20.00.
	var short, fee, refund int64
	db.Get(&short, `INSERT INTO divergences (charge_id, reason, detail, statement_psp_id, statement_charge_ref, statement_refund_id,
		statement_amount, ledger_amount, inbox_id) SELECT 'short', 'amount_mismatch', '', 'e', 'short', '', 9900, 10000, NULL RETURNING id`)
	db.Get(&fee, `INSERT INTO divergences (charge_id, reason, detail, statement_psp_id, statement_charge_ref, statement_refund_id,
		statement_amount, statement_fee, ledger_amount, ledger_fee) VALUES ('ab', 'fee_mismatch', '', 'e', 'ab', '', 10000, 99, 10000, 80) RETURNING id`)
	db.Get(&refund, `INSERT INTO divergences (charge_id, reason, detail, statement_psp_id, statement_charge_ref, statement_refund_id,
		statement_amount, ledger_amount) VALUES ('rf', 'refund_amount_changed', '', 'e', 'rf', 'r1', 3000, 2000) RETURNING id`)
	// Each states its kind (money in or out) through the delivery it
	// came from, whose event states no figure: the divergence's sides do.
	for id, kind := range map[int64]string{short: "paid", fee: "paid", refund: "refunded"} {
		db.MustExec(`WITH i AS (INSERT INTO inbox (delivery_key, endpoint, scheme, merchant, event_type, event_id, kind, event, body, status)
			VALUES ('psp|t|' || $1, 'psp', 'generic', 'shop', 't', $1, $2, '{}', '\x7b7d', 'divergent') RETURNING id)
			UPDATE divergences SET inbox_id = (SELECT id FROM i) WHERE id = $3`, fmt.Sprint("side-", id), kind, id)
	}

	type want struct {
		resolution divergences.Booking
		amount     int64
		debit      string
	}
	cases := []struct {
		name string
		id   int64
		want []want
	}{
		{"second payment", second, []want{{divergences.BookCustomerCredit, 4990, accounts.Cash}}},
		{"unknown charge", unknown, []want{{divergences.BookCustomerCredit, 1000, accounts.Cash}, {divergences.BookRevenue, 1000, accounts.Cash}}},
		{"refund of another payment", refundOut, []want{{divergences.BookCreditRefund, 4990, accounts.CustomerCredits},
			{divergences.BookLoss, 4990, accounts.ReconciliationLosses}}},
		{"amount mismatch, nothing booked", short, []want{{divergences.BookCustomerCredit, 9900, accounts.Cash}, {divergences.BookRevenue, 9900, accounts.Cash}}},
		{"fee mismatch", fee, []want{{divergences.BookFeeDifference, 19, accounts.PSPFees}}},
		{"refund amount changed", refund, []want{{divergences.BookRefundDifference, 1000, accounts.Revenue}}},
		{"a sale booked, more paid", more, []want{{divergences.BookRevenue, 500, accounts.Cash}, {divergences.BookCustomerCredit, 500, accounts.Cash}}},
		{"a sale booked, less paid", less, []want{{divergences.BookRevenue, 500, accounts.Revenue}}},
		{"a refund that moved nothing", unsettled, []want{{divergences.BookRefundDifference, 2000, accounts.Cash}}},
		{"dispute", disputed, nil},
	}
	for _, c := range cases {
		d, err := divergences.Describe(ctx, db, c.id)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		var got []want
		for _, o := range d.Offers {
			if len(o.Legs) != 2 || o.Legs[0].Amount != o.Amount || o.Legs[1].Amount != -o.Amount {
				t.Errorf("%s: %s legs %+v do not move %d", c.name, o.Resolution, o.Legs, o.Amount)
			}
			got = append(got, want{o.Resolution, o.Amount, o.Legs[0].Account})
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%s offers %+v, want %+v", c.name, got, c.want)
		}
	}
	// A page's offers, read at once, are each divergence's own.
	ids := []int64{}
	for _, c := range cases {
		ids = append(ids, c.id)
	}
	all, err := divergences.OffersOf(ctx, db, ids)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		d, _ := divergences.Describe(ctx, db, c.id)
		if !reflect.DeepEqual(all[c.id], d.Offers) && (len(all[c.id]) > 0 || len(d.Offers) > 0) {
			t.Errorf("%s: offers read with the page %+v, alone %+v", c.name, all[c.id], d.Offers)
		}
	}
}

// TestMoneyDivergenceIsResolvedByBookingOnly: a note alone is refused for
// a divergence that stands for money; a booking resolves it with its set
// in the same transaction, linked both ways, dated when the money moved;
// a refund of that money later draws from the credit, never beyond it.
func TestMoneyDivergenceIsResolvedByBookingOnly(t *testing.T) {
	t.Parallel()
	l, db := ledgertest.New(t)
	ctx := context.Background()
	now := time.Now()
	if _, _, err := charges.Register(ctx, db, charges.NewCharge{ID: "c1", Amount: 4990, Merchant: "shop", Access: "course:c1"}); err != nil {
		t.Fatal(err)
	}
	second := moneyDivergence(t, db, divergences.ReasonSecondPayment, "paid", "c1", 4990, august)

	_, err := divergences.Resolve(ctx, db, second, "customer paid twice", now)
	if !errors.Is(err, divergences.ErrBookingRequired) || !strings.Contains(err.Error(), "customer_credit of 4990") {
		t.Fatalf("a note alone for a second payment: %v", err)
	}
	d, err := divergences.Book(ctx, db, l, second, divergences.Request{Resolution: divergences.BookCustomerCredit}, now)
	if err != nil {
		t.Fatal(err)
	}
	if d.Status != divergences.StatusResolved || d.Resolution != divergences.BookCustomerCredit || d.ResolutionSetID == nil ||
		!strings.Contains(d.ResolutionNote, "customer_credit") {
		t.Fatalf("resolved %+v", d)
	}
	var set struct {
		Kind       string    `db:"kind"`
		Key        string    `db:"idempotency_key"`
		Amount     int64     `db:"amount"`
		Charge     string    `db:"charge_id"`
		Competence time.Time `db:"competence"`
	}
	if err := db.Get(&set, `SELECT kind, idempotency_key, amount, charge_id, competence FROM posting_sets WHERE id = $1`, *d.ResolutionSetID); err != nil {
		t.Fatal(err)
	}
	if set.Kind != "adjustment" || set.Key != divergences.SetKey(second) || set.Amount != 4990 || set.Charge != "c1" ||
		set.Competence.Format(time.DateOnly) != "2026-08-20" {
		t.Errorf("set %+v", set)
	}
	if b := ledgertest.Balance(t, db, accounts.CustomerCredits, ""); b != -4990 {
		t.Errorf("customer credits %d, want -4990 (a credit)", b)
	}
	if b := ledgertest.Balance(t, db, accounts.Cash, ""); b != 4990 {
		t.Errorf("cash %d, want 4990", b)
	}

	// The PSP gives 30.00 back, then 19.90, then 0.01 more than is left.
	refund := func(amount int64) int64 {
		return moneyDivergence(t, db, divergences.ReasonRefundOfOtherPayment, "refunded", "c1", amount, august.AddDate(0, 1, 0))
	}
	first, rest, beyond := refund(3000), refund(1990), refund(1)
	credit := func(id int64) divergences.Request {
		return divergences.Request{Resolution: divergences.BookCreditRefund, CreditDivergenceID: &id, Note: "estorno do pagamento em dobro"}
	}
	if _, err := divergences.Book(ctx, db, l, first, credit(first), now); !errors.Is(err, divergences.ErrCreditExceeded) {
		t.Errorf("drawing from a divergence that is no credit: %v", err)
	}
	for _, id := range []int64{first, rest} {
		if _, err := divergences.Book(ctx, db, l, id, credit(second), now); err != nil {
			t.Fatal(err)
		}
	}
	_, err = divergences.Book(ctx, db, l, beyond, credit(second), now)
	if !errors.Is(err, divergences.ErrCreditExceeded) || !strings.Contains(err.Error(), "credit_divergence_id") {
		t.Errorf("a refund beyond the credit: %v", err)
	}
	if b := ledgertest.Balance(t, db, accounts.CustomerCredits, ""); b != 0 {
		t.Errorf("customer credits %d after refunding them, want 0", b)
	}
	if b := ledgertest.MonthChange(t, db, accounts.Cash, "2026-09-01"); b != -4990 {
		t.Errorf("cash in September %d, want -4990: a refund is booked when it moved", b)
	}
	// The loss is still offered for the last one; it books.
	if _, err := divergences.Book(ctx, db, l, beyond, divergences.Request{Resolution: divergences.BookLoss}, now); err != nil {
		t.Fatal(err)
	}
}

// TestBookRefusesBadRequestsWritingNothing: a resolution of no kind, one
// the divergence does not offer, a parameter missing or extra, a bad
// note, a closed month, an already resolved divergence: each refused,
// naming its field, and nothing written.
func TestBookRefusesBadRequestsWritingNothing(t *testing.T) {
	t.Parallel()
	l, db := ledgertest.New(t)
	ctx := context.Background()
	now := time.Now()
	second := moneyDivergence(t, db, divergences.ReasonSecondPayment, "paid", "c1", 4990, august)
	refund := moneyDivergence(t, db, divergences.ReasonRefundWithoutPayment, "refunded", "c2", 100, august)
	db.MustExec(`INSERT INTO closed_periods (month, closed_by) VALUES ('2026-08-01', 'test')`)
	one := int64(1)
	cases := []struct {
		name  string
		id    int64
		req   divergences.Request
		err   error
		field string
	}{
		{"no such kind", second, divergences.Request{Resolution: "refund_everything"}, divergences.ErrInvalidResolution, "resolution"},
		{"not offered", second, divergences.Request{Resolution: divergences.BookLoss}, divergences.ErrNotOffered, "customer_credit"},
		{"missing parameter", refund, divergences.Request{Resolution: divergences.BookCreditRefund}, divergences.ErrInvalidResolution, "credit_divergence_id"},
		{"extra parameter", second, divergences.Request{Resolution: divergences.BookCustomerCredit, CreditDivergenceID: &one}, divergences.ErrInvalidResolution, "credit_divergence_id"},
		{"NUL in note", second, divergences.Request{Resolution: divergences.BookCustomerCredit, Note: "a\x00b"}, divergences.ErrInvalidNote, "note"},
		{"blank note", second, divergences.Request{Resolution: divergences.BookCustomerCredit, Note: "   "}, divergences.ErrInvalidNote, "note"},
		{"overlong note", second, divergences.Request{Resolution: divergences.BookCustomerCredit, Note: strings.Repeat("x", divergences.MaxNoteLength+1)}, divergences.ErrInvalidNote, "note"},
		{"closed month", second, divergences.Request{Resolution: divergences.BookCustomerCredit, Competence: time.Date(2026, 8, 31, 0, 0, 0, 0, time.UTC)}, postings.ErrClosedMonth, "competence"},
		{"unknown divergence", 999, divergences.Request{Resolution: divergences.BookCustomerCredit}, divergences.ErrNotFound, ""},
	}
	for _, c := range cases {
		_, err := divergences.Book(ctx, db, l, c.id, c.req, now)
		if !errors.Is(err, c.err) || !strings.Contains(err.Error(), c.field) {
			t.Errorf("%s: %v, want %v naming %q", c.name, err, c.err, c.field)
		}
	}
	if n := ledgertest.Count(t, db, `SELECT count(*) FROM posting_sets`); n != 0 {
		t.Fatalf("%d sets written by refused resolutions", n)
	}
	if n := ledgertest.Count(t, db, `SELECT count(*) FROM divergences WHERE status <> 'open'`); n != 0 {
		t.Fatalf("%d divergences resolved by refused resolutions", n)
	}
	// Late money for a closed month is booked in the first open one.
	d, err := divergences.Book(ctx, db, l, second, divergences.Request{Resolution: divergences.BookCustomerCredit}, now)
	if err != nil {
		t.Fatal(err)
	}
	if c := ledgertest.Count(t, db, `SELECT count(*) FROM posting_sets WHERE id = $1 AND competence = '2026-09-01'`, *d.ResolutionSetID); c != 1 {
		t.Error("money of a closed month is not booked on the first day of the first open one")
	}
	if _, err := divergences.Book(ctx, db, l, second, divergences.Request{Resolution: divergences.BookCustomerCredit}, now); !errors.Is(err, divergences.ErrAlreadyResolved) {
		t.Errorf("booking twice: %v", err)
	}
	if _, err := divergences.Resolve(ctx, db, second, "again", now); !errors.Is(err, divergences.ErrAlreadyResolved) {
		t.Errorf("a note after the booking: %v", err)
	}
}

// TestResolutionLinkIsEnforcedByTheDatabase: a set linked to an open
// divergence, or to two, or a resolution of no kind, is refused by the
// database, whatever the code does.
func TestResolutionLinkIsEnforcedByTheDatabase(t *testing.T) {
	t.Parallel()
	l, db := ledgertest.New(t)
	ctx := context.Background()
	a := moneyDivergence(t, db, divergences.ReasonSecondPayment, "paid", "c1", 100, august)
	b := moneyDivergence(t, db, divergences.ReasonSecondPayment, "paid", "c2", 100, august)
	d, err := divergences.Book(ctx, db, l, a, divergences.Request{Resolution: divergences.BookCustomerCredit}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	for name, q := range map[string]string{
		"the same set for two":   fmt.Sprintf(`UPDATE divergences SET status = 'resolved', resolution = 'customer_credit', resolution_set_id = %d WHERE id = %d`, *d.ResolutionSetID, b),
		"a set on an open one":   fmt.Sprintf(`UPDATE divergences SET resolution = 'customer_credit', resolution_set_id = %d WHERE id = %d`, *d.ResolutionSetID, b),
		"a resolution of none":   fmt.Sprintf(`UPDATE divergences SET status = 'resolved', resolution = 'gift', resolution_set_id = %d WHERE id = %d`, *d.ResolutionSetID, b),
		"a set without its kind": fmt.Sprintf(`UPDATE divergences SET status = 'resolved', resolution_set_id = %d WHERE id = %d`, *d.ResolutionSetID, b),
	} {
		if _, err := db.Exec(q); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// TestBookOnceUnderConcurrency: of concurrent resolutions of one
// divergence by booking, exactly one books; the others find it
// resolved. The overlap is forced: a gate transaction holds the
// divergence's row until every resolution waits on it.
func TestBookOnceUnderConcurrency(t *testing.T) {
	t.Parallel()
	l, db := ledgertest.New(t)
	ctx := context.Background()
	id := moneyDivergence(t, db, divergences.ReasonUnknownCharge, "paid", "nosuch", 2500, august)
	gate, err := db.BeginTxx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer gate.Rollback()
	gate.MustExec(`SELECT 1 FROM divergences WHERE id = $1 FOR UPDATE`, id)
	const n = 6
	var (
		wg             sync.WaitGroup
		mu             sync.Mutex
		booked, others int
	)
	for i := range n {
		wg.Add(1)
		go func(b divergences.Booking) {
			defer wg.Done()
			_, err := divergences.Book(ctx, db, l, id, divergences.Request{Resolution: b}, time.Now())
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				booked++
			case errors.Is(err, divergences.ErrAlreadyResolved):
				others++
			default:
				t.Error(err)
			}
		}([]divergences.Booking{divergences.BookCustomerCredit, divergences.BookRevenue}[i%2])
	}
	ledgertest.WaitForLockWaiters(t, db, n)
	if err := gate.Rollback(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if booked != 1 || others != n-1 {
		t.Fatalf("%d booked, %d found it resolved", booked, others)
	}
	if c := ledgertest.Count(t, db, `SELECT count(*) FROM posting_sets WHERE charge_id IS NULL`); c != 1 {
		t.Errorf("%d sets booked naming no charge, want 1: an unknown charge's names none", c)
	}
	if cash := ledgertest.Balance(t, db, accounts.Cash, ""); cash != 2500 {
		t.Errorf("cash %d, want 2500", cash)
	}
}

// TestBookingsAreTheDatabasesList: Bookings is ck_divergences_resolution.
func TestBookingsAreTheDatabasesList(t *testing.T) {
	t.Parallel()
	_, db := ledgertest.New(t)
	var def string
	if err := db.Get(&def, `SELECT pg_get_constraintdef(oid) FROM pg_constraint WHERE conname = 'ck_divergences_resolution'`); err != nil {
		t.Fatal(err)
	}
	for _, b := range divergences.Bookings {
		if !strings.Contains(def, "'"+string(b)+"'") {
			t.Errorf("%s is not in %s", b, def)
		}
	}
	if got := strings.Count(def, "'::text"); got != len(divergences.Bookings) {
		t.Errorf("the constraint lists %d, Go %d: %s", got, len(divergences.Bookings), def)
	}
}

// TestCreditRefundsNeverOverdrawUnderConcurrency: two refunds of 30.00
// drawn at once from a credit of 50.00: one books, the other is refused
// for what is left once the first committed. The overlap is forced: a
// gate transaction holds the credit's row until both wait on it.
func TestCreditRefundsNeverOverdrawUnderConcurrency(t *testing.T) {
	t.Parallel()
	l, db := ledgertest.New(t)
	ctx := context.Background()
	credit := moneyDivergence(t, db, divergences.ReasonSecondPayment, "paid", "c1", 5000, august)
	if _, err := divergences.Book(ctx, db, l, credit, divergences.Request{Resolution: divergences.BookCustomerCredit}, time.Now()); err != nil {
		t.Fatal(err)
	}
	refunds := []int64{
		moneyDivergence(t, db, divergences.ReasonRefundOfOtherPayment, "refunded", "c1", 3000, august),
		moneyDivergence(t, db, divergences.ReasonRefundOfOtherPayment, "refunded", "c1", 3000, august),
	}
	gate, err := db.BeginTxx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer gate.Rollback()
	gate.MustExec(`SELECT 1 FROM divergences WHERE id = $1 FOR UPDATE`, credit)
	var (
		wg               sync.WaitGroup
		mu               sync.Mutex
		booked, exceeded int
	)
	for _, id := range refunds {
		wg.Add(1)
		go func(id int64) {
			defer wg.Done()
			_, err := divergences.Book(ctx, db, l, id, divergences.Request{Resolution: divergences.BookCreditRefund, CreditDivergenceID: &credit}, time.Now())
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				booked++
			case errors.Is(err, divergences.ErrCreditExceeded):
				exceeded++
			default:
				t.Error(err)
			}
		}(id)
	}
	ledgertest.WaitForLockWaiters(t, db, len(refunds))
	if err := gate.Rollback(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if booked != 1 || exceeded != 1 {
		t.Fatalf("%d booked, %d refused, want one of each", booked, exceeded)
	}
	if c := ledgertest.Balance(t, db, accounts.CustomerCredits, ""); c != -2000 {
		t.Errorf("customer credits %d, want -2000: never below nothing", c)
	}
}

// TestAPaymentsOfferKeepsTheFeeThePSPKept: a second payment of 49.90 on
// which the PSP kept 0.99 brought 48.91 into cash; its customer credit
// is the whole 49.90, and the fee is the merchant's expense. Booking the
// whole amount as cash would leave cash 0.99 above the PSP's balance.
func TestAPaymentsOfferKeepsTheFeeThePSPKept(t *testing.T) {
	t.Parallel()
	l, db := ledgertest.New(t)
	ctx := context.Background()
	id := moneyDivergence(t, db, divergences.ReasonSecondPayment, "paid", "c1", 4990, august)
	db.MustExec(`UPDATE inbox SET event = event || '{"HasFee":true,"Fee":99}' WHERE id = (SELECT inbox_id FROM divergences WHERE id = $1)`, id)
	d, err := divergences.Describe(ctx, db, id)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Offers) != 1 {
		t.Fatalf("offers %+v, want one customer credit", d.Offers)
	}
	want := []postings.Leg{{Account: accounts.Cash, Amount: 4891, Currency: "BRL"}, {Account: accounts.PSPFees, Amount: 99, Currency: "BRL"},
		{Account: accounts.CustomerCredits, Amount: -4990, Currency: "BRL"}}
	if o := d.Offers[0]; o.Amount != 4990 || !slices.Equal(o.Legs, want) {
		t.Fatalf("offer %+v, want %+v", o, want)
	}
	if _, err := divergences.Book(ctx, db, l, id, divergences.Request{Resolution: divergences.BookCustomerCredit}, august.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if n := ledgertest.Count(t, db, `SELECT count(*) FROM postings p JOIN posting_sets s ON s.id = p.posting_set_id
		WHERE s.idempotency_key = $1`, divergences.SetKey(id)); n != 3 {
		t.Fatalf("the booked set has %d postings, want 3", n)
	}
}
