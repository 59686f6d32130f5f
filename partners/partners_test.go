package partners_test

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/razao/razao/accounts"
	"github.com/razao/razao/internal/ledgertest"
	"github.com/razao/razao/internal/pgtest"
	"github.com/razao/razao/monthsums"
	"github.com/razao/razao/partners"
	"github.com/razao/razao/periods"
	"github.com/razao/razao/postings"
)

var (
	aug10 = time.Date(2026, 8, 10, 15, 0, 0, 0, time.UTC)
	aug20 = time.Date(2026, 8, 20, 15, 0, 0, 0, time.UTC)
)

type env struct {
	t  *testing.T
	db *sqlx.DB
	l  *postings.Ledger
}

func newEnv(t *testing.T) *env {
	t.Helper()
	db := pgtest.New(t)
	cal, err := periods.NewCalendar(periods.DefaultTimeZone)
	if err != nil {
		t.Fatal(err)
	}
	return &env{t: t, db: db, l: postings.New(db, cal)}
}

func (e *env) post(s postings.Set, err error) {
	e.t.Helper()
	if err != nil {
		e.t.Fatalf("build %s: %v", s.IdempotencyKey, err)
	}
	if _, err := e.l.Post(context.Background(), s); err != nil {
		e.t.Fatalf("post %s: %v", s.IdempotencyKey, err)
	}
}

// sell books a paid charge of amount with the partner's commission at
// rateBP, as confirmation does.
func (e *env) sell(charge, partner string, amount, rateBP int64) {
	e.t.Helper()
	e.post(postings.Sale(charge, "BRL", amount, 0, aug10))
	c, ok, err := postings.CommissionSet(charge, partner, "BRL", amount, rateBP, aug10)
	if !ok {
		e.t.Fatalf("commission on %s rounds to zero", charge)
	}
	e.post(c, err)
}

// refund books a refund and the commission reversal that goes with it.
func (e *env) refund(charge, refundID, partner string, amount, reversal int64) {
	e.t.Helper()
	e.post(postings.Refund(charge, refundID, "BRL", amount, aug20))
	r, ok, err := postings.CommissionReversalSet(charge, refundID, partner, "BRL", reversal, aug20)
	if !ok {
		e.t.Fatal("reversal of zero")
	}
	e.post(r, err)
}

func (e *env) count(query string, args ...any) int64 {
	e.t.Helper()
	var n int64
	if err := e.db.Get(&n, query, args...); err != nil {
		e.t.Fatalf("%s: %v", query, err)
	}
	return n
}

func (e *env) summary(partner string) partners.Summary {
	e.t.Helper()
	s, err := partners.Get(context.Background(), e.db, partner)
	if err != nil {
		e.t.Fatalf("summary of %s: %v", partner, err)
	}
	return s
}

func (e *env) payout(req partners.PayoutRequest) (partners.Result, error) {
	e.t.Helper()
	if req.At.IsZero() {
		req.At = aug20
	}
	return partners.Payout(context.Background(), e.db, e.l, req)
}

func TestSummaryAfterCommissionsReversalAndPayout(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.sell("ch-1", "partner-42", 10000, 1000) // commission 1000
	e.sell("ch-2", "partner-42", 4990, 1250)  // commission 623
	e.sell("ch-3", "partner-7", 5000, 1000)   // another partner's 500
	e.refund("ch-1", "rf-1", "partner-42", 5000, postings.ReversalAmount(1000, 10000, 0, 5000))
	res, err := e.payout(partners.PayoutRequest{Partner: "partner-42", IdempotencyKey: "pay-1", Amount: 600})
	if err != nil {
		t.Fatal(err)
	}
	if res.OwedBefore != 1123 || res.OwedAfter != 523 || res.Amount != 600 || res.Replayed || res.OverOwed ||
		res.Competence != "2026-08-20" || res.Currency != "BRL" || res.PostingSet == 0 {
		t.Fatalf("payout = %+v", res)
	}

	want := partners.Summary{Partner: "partner-42", Account: "liabilities:commission-payable:partner-42", Currency: "BRL",
		Owed: 523, Commissions: 1623, Reversed: 500, Paid: 600}
	if got := e.summary("partner-42"); got != want {
		t.Fatalf("summary = %+v\nwant      %+v", got, want)
	}
	if got := e.summary("partner-7"); got.Owed != 500 || got.Commissions != 500 || got.Paid != 0 || got.Reversed != 0 {
		t.Fatalf("other partner = %+v", got)
	}
	// Cash closes: sales − refunds − payouts.
	cash := ledgertest.Balance(t, e.db, accounts.Cash, "")
	if cash != 10000+4990+5000-5000-600 {
		t.Fatalf("cash = %d", cash)
	}
}

func TestGetUnknownOrInvalidPartner(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	if _, err := partners.Get(context.Background(), e.db, "partner-404"); !errors.Is(err, partners.ErrNotFound) {
		t.Fatalf("unknown partner: %v, want ErrNotFound", err)
	}
	for _, bad := range []string{"", "Partner 42", "a:b", strings.Repeat("p", 200)} {
		if _, err := partners.Get(context.Background(), e.db, bad); !errors.Is(err, partners.ErrInvalid) {
			t.Errorf("partner %q: %v, want ErrInvalid", bad, err)
		}
	}
}

func TestPayoutIsIdempotentOnKey(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.sell("ch-1", "partner-42", 10000, 1000) // owed 1000
	req := partners.PayoutRequest{Partner: "partner-42", IdempotencyKey: "9b1d-pay", Amount: 400}
	first, err := e.payout(req)
	if err != nil {
		t.Fatal(err)
	}
	// The client retries a day later: the same payout, not a new one.
	req.At = aug20.Add(24 * time.Hour)
	again, err := e.payout(req)
	if err != nil {
		t.Fatal(err)
	}
	if !again.Replayed || again.PostingSet != first.PostingSet || again.Competence != "2026-08-20" || again.OwedAfter != 600 {
		t.Fatalf("retry = %+v, want set %d replayed with 600 owed", again, first.PostingSet)
	}
	if n := e.count(`SELECT count(*) FROM posting_sets WHERE kind = 'payout'`); n != 1 {
		t.Fatalf("%d payout sets, want 1", n)
	}

	// Same key, other amount: a conflict, and nothing written.
	req.Amount = 500
	if _, err := e.payout(req); !errors.Is(err, postings.ErrIdempotencyConflict) {
		t.Fatalf("other amount: %v, want ErrIdempotencyConflict", err)
	}
	if n := e.count(`SELECT count(*) FROM postings`); n != 2+2+2 {
		t.Fatalf("%d postings, want 6 (sale, commission, one payout)", n)
	}
	if got := e.summary("partner-42"); got.Paid != 400 || got.Owed != 600 {
		t.Fatalf("summary = %+v", got)
	}

	// Keys are per partner: another partner's payout may reuse it.
	e.sell("ch-2", "partner-7", 10000, 1000)
	other, err := e.payout(partners.PayoutRequest{Partner: "partner-7", IdempotencyKey: "9b1d-pay", Amount: 400})
	if err != nil || other.Replayed || other.PostingSet == first.PostingSet {
		t.Fatalf("other partner, same key: %+v, %v", other, err)
	}
}

// A stated effective_at finer than the database's microseconds: the
// database rounds it, so a retry stating the same instant would be
// compared with a rounded one (422, a conflict, for half of all such
// times). The time is taken to the microsecond at intake, so the answer
// states what is stored and the retry is a replay.
func TestPayoutRetryWithNanosecondsIsAReplay(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.sell("ch-1", "partner-42", 10000, 1000)
	at := time.Date(2026, 8, 20, 14, 0, 16, 234333753, time.UTC)
	req := partners.PayoutRequest{Partner: "partner-42", IdempotencyKey: "ns", Amount: 400, At: at, AtStated: true}
	first, err := e.payout(req)
	if err != nil {
		t.Fatal(err)
	}
	again, err := e.payout(req)
	if err != nil || !again.Replayed || again.PostingSet != first.PostingSet {
		t.Fatalf("retry = %+v, %v; want set %d replayed", again, err, first.PostingSet)
	}
	want := time.Date(2026, 8, 20, 14, 0, 16, 234334000, time.UTC)
	if !first.EffectiveAt.Equal(want) || !again.EffectiveAt.Equal(want) {
		t.Fatalf("effective_at %s then %s, want %s both times", first.EffectiveAt, again.EffectiveAt, want)
	}
}

// A retry of a payout that took everything owed is still a replay, not an
// over-payout: the key is checked before what is owed.
func TestRetryOfFullPayoutIsReplayNotOverPayout(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.sell("ch-1", "partner-42", 10000, 1000)
	req := partners.PayoutRequest{Partner: "partner-42", IdempotencyKey: "all", Amount: 1000}
	first, err := e.payout(req)
	if err != nil || first.OwedAfter != 0 {
		t.Fatalf("first = %+v, %v", first, err)
	}
	again, err := e.payout(req)
	if err != nil || !again.Replayed || again.PostingSet != first.PostingSet || again.OwedBefore != 0 || again.OwedAfter != 0 {
		t.Fatalf("retry = %+v, %v", again, err)
	}
}

func TestOverPayoutIsRefusedAndWritesNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.sell("ch-1", "partner-42", 10000, 1000) // owed 1000
	sets, accts := e.count(`SELECT count(*) FROM posting_sets`), e.count(`SELECT count(*) FROM accounts`)

	_, err := e.payout(partners.PayoutRequest{Partner: "partner-42", IdempotencyKey: "too-much", Amount: 1001})
	if !errors.Is(err, partners.ErrOverOwed) {
		t.Fatalf("payout of 1001 with 1000 owed: %v, want ErrOverOwed", err)
	}
	// Nothing owed to a partner that never earned: not found, and no
	// account is created for it.
	_, err = e.payout(partners.PayoutRequest{Partner: "partner-404", IdempotencyKey: "k", Amount: 1})
	if !errors.Is(err, partners.ErrNotFound) {
		t.Fatalf("payout to unknown partner: %v, want ErrNotFound", err)
	}
	if s, a := e.count(`SELECT count(*) FROM posting_sets`), e.count(`SELECT count(*) FROM accounts`); s != sets || a != accts {
		t.Fatalf("refusals wrote: %d→%d sets, %d→%d accounts", sets, s, accts, a)
	}

	// The refused key is free: exactly what is owed goes through.
	res, err := e.payout(partners.PayoutRequest{Partner: "partner-42", IdempotencyKey: "too-much", Amount: 1000})
	if err != nil || res.OwedAfter != 0 || res.Replayed {
		t.Fatalf("payout of exactly what is owed: %+v, %v", res, err)
	}
	if _, err := e.payout(partners.PayoutRequest{Partner: "partner-42", IdempotencyKey: "one-more", Amount: 1}); !errors.Is(err, partners.ErrOverOwed) {
		t.Fatalf("payout with nothing owed: %v, want ErrOverOwed", err)
	}
}

func TestAllowOverOwedBooksAnAdvance(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.sell("ch-1", "partner-42", 10000, 1000) // owed 1000
	res, err := e.payout(partners.PayoutRequest{Partner: "partner-42", IdempotencyKey: "advance", Amount: 1500, AllowOverOwed: true})
	if err != nil {
		t.Fatal(err)
	}
	if !res.OverOwed || res.OwedBefore != 1000 || res.OwedAfter != -500 {
		t.Fatalf("advance = %+v", res)
	}
	if got := e.summary("partner-42"); got.Owed != -500 || got.Paid != 1500 || got.Commissions != 1000 {
		t.Fatalf("summary = %+v", got)
	}

	// Even to a partner with no account yet: it is created.
	res, err = e.payout(partners.PayoutRequest{Partner: "partner-new", IdempotencyKey: "advance", Amount: 250, AllowOverOwed: true})
	if err != nil || res.OwedBefore != 0 || res.OwedAfter != -250 {
		t.Fatalf("advance to a new partner = %+v, %v", res, err)
	}
	if got := e.summary("partner-new"); got.Owed != -250 || got.Paid != 250 {
		t.Fatalf("new partner summary = %+v", got)
	}
}

func TestPayoutRefusesBadRequests(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.sell("ch-1", "partner-42", 10000, 1000)
	ok := partners.PayoutRequest{Partner: "partner-42", IdempotencyKey: "k-1", Amount: 100, At: aug20}
	tests := []struct {
		name   string
		change func(*partners.PayoutRequest)
	}{
		{"empty partner", func(r *partners.PayoutRequest) { r.Partner = "" }},
		{"partner with a space", func(r *partners.PayoutRequest) { r.Partner = "partner 42" }},
		{"partner in upper case", func(r *partners.PayoutRequest) { r.Partner = "Partner-42" }},
		{"partner with a colon", func(r *partners.PayoutRequest) { r.Partner = "partner:42" }},
		{"zero amount", func(r *partners.PayoutRequest) { r.Amount = 0 }},
		{"negative amount", func(r *partners.PayoutRequest) { r.Amount = -100 }},
		{"empty key", func(r *partners.PayoutRequest) { r.IdempotencyKey = "" }},
		{"key of 201 characters", func(r *partners.PayoutRequest) { r.IdempotencyKey = strings.Repeat("k", 201) }},
		{"key with a space", func(r *partners.PayoutRequest) { r.IdempotencyKey = "k 1" }},
		{"key with a newline", func(r *partners.PayoutRequest) { r.IdempotencyKey = "k\n1" }},
		{"key not ASCII", func(r *partners.PayoutRequest) { r.IdempotencyKey = "chave-ç" }},
		{"no time", func(r *partners.PayoutRequest) { r.At = time.Time{} }},
		{"partner and key too long together", func(r *partners.PayoutRequest) {
			r.Partner, r.IdempotencyKey = strings.Repeat("p", 150), strings.Repeat("k", 200)
		}},
	}
	for _, tc := range tests {
		req := ok
		tc.change(&req)
		if _, err := partners.Payout(context.Background(), e.db, e.l, req); !errors.Is(err, partners.ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", tc.name, err)
		}
	}
	if n := e.count(`SELECT count(*) FROM posting_sets WHERE kind = 'payout'`); n != 0 {
		t.Fatalf("%d payouts written, want 0", n)
	}
	if _, err := partners.Payout(context.Background(), e.db, e.l, ok); err != nil {
		t.Fatalf("the valid request: %v", err)
	}
	max := ok
	max.IdempotencyKey = strings.Repeat("~", 200)
	if _, err := partners.Payout(context.Background(), e.db, e.l, max); err != nil {
		t.Fatalf("key of 200 printable characters: %v", err)
	}
}

// Two payouts that fit alone but not together are forced to overlap: a
// gate holds the partner's account row, both wait on it, and once it is
// released exactly one is booked.
func TestConcurrentPayoutsCannotBothExceedWhatIsOwed(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.sell("ch-1", "partner-42", 10000, 1000) // owed 1000

	gate := e.db.MustBegin()
	defer gate.Rollback()
	gate.MustExec(`SELECT ledger_lock_account('liabilities:commission-payable:partner-42')`)

	amounts := []int64{600, 700}
	results := make([]partners.Result, len(amounts))
	errs := make([]error, len(amounts))
	var wg sync.WaitGroup
	for i, amount := range amounts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], errs[i] = partners.Payout(context.Background(), e.db, e.l, partners.PayoutRequest{
				Partner: "partner-42", IdempotencyKey: "race-" + string(rune('a'+i)), Amount: amount, At: aug20})
		}()
	}
	waitLockWaiters(t, e.db, len(amounts))
	gate.Rollback()
	wg.Wait()

	won := -1
	for i, err := range errs {
		switch {
		case err == nil:
			if won >= 0 {
				t.Fatalf("both payouts booked: %+v and %+v", results[won], results[i])
			}
			won = i
		case !errors.Is(err, partners.ErrOverOwed):
			t.Fatalf("payout of %d: %v, want success or ErrOverOwed", amounts[i], err)
		}
	}
	if won < 0 {
		t.Fatalf("neither payout booked: %v", errs)
	}
	if r := results[won]; r.OwedBefore != 1000 || r.OwedAfter != 1000-amounts[won] {
		t.Fatalf("winner = %+v", r)
	}
	if got := e.summary("partner-42"); got.Paid != amounts[won] || got.Owed != 1000-amounts[won] {
		t.Fatalf("summary = %+v, want %d paid", got, amounts[won])
	}
	if n := e.count(`SELECT count(*) FROM posting_sets WHERE kind = 'payout'`); n != 1 {
		t.Fatalf("%d payout sets, want 1", n)
	}
}

// A payout in flight holds its partner's payout lock, which postings never
// take: a commission for the partner is booked meanwhile.
func TestPayoutLockDoesNotHoldUpCommissions(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.sell("ch-1", "partner-42", 10000, 1000)

	inFlight := e.db.MustBegin()
	defer inFlight.Rollback()
	inFlight.MustExec(`SELECT pg_advisory_xact_lock(hashtextextended('razao-payout:' || 'liabilities:commission-payable:partner-42', 0))`)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second) // a safety net: the post must not wait on the lock
	defer cancel()
	if _, err := e.l.Post(ctx, mustSale(t, "ch-2")); err != nil {
		t.Fatal(err)
	}
	c, _, err := postings.CommissionSet("ch-2", "partner-42", "BRL", 10000, 1000, aug10)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.l.Post(ctx, c); err != nil {
		t.Fatalf("commission while a payout holds the partner's row: %v", err)
	}
}

func mustSale(t *testing.T, charge string) postings.Set {
	t.Helper()
	s, err := postings.Sale(charge, "BRL", 10000, 0, aug10)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// waitLockWaiters blocks until n sessions of this database wait on a lock,
// so the test knows the overlap it wants has happened.
func waitLockWaiters(t *testing.T, db *sqlx.DB, n int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var waiting int
		if err := db.Get(&waiting, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock'`); err != nil {
			t.Fatal(err)
		}
		if waiting >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("only %d of %d sessions waiting on the lock", waiting, n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A page of partners reads them all at once from the month sums, with the
// figures Get gives each: before the sums are stored, from them, and
// with sets booked after them.
func TestPageGivesEachPartnersSummaryFromTheMonthSums(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	e.sell("ch-1", "partner-42", 10000, 1000)
	e.sell("ch-2", "partner-7", 5000, 1000)
	e.sell("ch-3", "partner-9", 3000, 500)
	e.refund("ch-1", "rf-1", "partner-42", 5000, postings.ReversalAmount(1000, 10000, 0, 5000))
	if _, err := e.payout(partners.PayoutRequest{Partner: "partner-7", IdempotencyKey: "pay-1", Amount: 200}); err != nil {
		t.Fatal(err)
	}
	want := []partners.Summary{
		{Partner: "partner-42", Account: "liabilities:commission-payable:partner-42", Currency: "BRL", Owed: 500, Commissions: 1000, Reversed: 500},
		{Partner: "partner-7", Account: "liabilities:commission-payable:partner-7", Currency: "BRL", Owed: 300, Commissions: 500, Paid: 200},
		{Partner: "partner-9", Account: "liabilities:commission-payable:partner-9", Currency: "BRL", Owed: 150, Commissions: 150},
	}
	check := func(what string) {
		t.Helper()
		first, more, err := partners.Page(ctx, e.db, "", 2)
		if err != nil {
			t.Fatal(err)
		}
		rest, last, err := partners.Page(ctx, e.db, first[len(first)-1].Partner, 2)
		if err != nil {
			t.Fatal(err)
		}
		got := append(first, rest...)
		if !more || last || len(got) != len(want) {
			t.Fatalf("%s: pages %+v (more %v) then %+v (more %v)", what, first, more, rest, last)
		}
		for i := range want {
			if got[i] != want[i] || e.summary(want[i].Partner) != want[i] {
				t.Errorf("%s: page has %+v, Get %+v, want %+v", what, got[i], e.summary(want[i].Partner), want[i])
			}
		}
	}
	check("without month sums")
	if _, err := monthsums.Refresh(ctx, e.db); err != nil {
		t.Fatal(err)
	}
	check("from the month sums")
	e.sell("ch-4", "partner-9", 2000, 500)
	want[2].Owed, want[2].Commissions = 250, 250
	check("with a commission after the sums")
}

// A sub-account of the partner and its posting committed between the
// reading of the partner's accounts and of their sums (at READ COMMITTED,
// as a payout reads) are summed: the accounts are read again after the
// sums and the reading repeated. (Not parallel: the hook is global.)
func TestSummaryCountsAnAccountCreatedWhileSumming(t *testing.T) {
	e := newEnv(t)
	e.sell("ch-1", "partner-42", 10000, 1000) // commission 1000
	var once sync.Once
	partners.SetAfterTree(func() {
		once.Do(func() {
			e.post(postings.Set{Kind: postings.KindAdjustment, IdempotencyKey: "adj-bonus", Amount: 300, Currency: "BRL", EventAt: aug10,
				Legs: []postings.Leg{{Account: "expenses:commission", Amount: 300}, {Account: "liabilities:commission-payable:partner-42:bonus", Amount: -300}}}, nil)
		})
	})
	defer partners.SetAfterTree(nil)
	tx, err := e.db.BeginTxx(context.Background(), &sql.TxOptions{Isolation: sql.LevelReadCommitted})
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	got, err := partners.Get(context.Background(), tx, "partner-42")
	if err != nil {
		t.Fatal(err)
	}
	if got.Owed != 1300 || got.Commissions != 1000 || got.Adjustments != 300 {
		t.Fatalf("summary = %+v, want 1,300 owed: 1,000 commission and the 300 bonus under the partner", got)
	}
}
