package adjustments_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/razao/razao/adjustments"
	"github.com/razao/razao/internal/ledgertest"
	"github.com/razao/razao/monthsums"
	"github.com/razao/razao/periods"
	"github.com/razao/razao/postings"
	"github.com/razao/razao/verify"
)

var (
	alice = adjustments.Actor{Name: "alice", TokenID: 1}
	bob   = adjustments.Actor{Name: "bob", TokenID: 2}
	start = time.Date(2026, 9, 2, 12, 0, 0, 0, time.UTC)
)

// setup is a ledger on a database of the test's own, and corrections
// over it with four eyes.
func setup(t *testing.T) (adjustments.Corrections, *postings.Ledger, *sqlx.DB) {
	t.Helper()
	l, db := ledgertest.New(t)
	return adjustments.Corrections{DB: db, Ledger: l}, l, db
}

func request(key string, amount int64) adjustments.Request {
	return adjustments.Request{IdempotencyKey: key, Reason: "caixa", Competence: "2026-09-01",
		Legs: []adjustments.Leg{{Account: "assets:cash", Amount: amount}, {Account: "equity:adjustments", Amount: -amount}}}
}

// The database holds four eyes too: a four-eyes proposal marked booked by
// its own proposer is refused by ck_adjustments_four_eyes, whatever code
// writes it.
func TestTheDatabaseRefusesAProposalBookedByItsProposer(t *testing.T) {
	t.Parallel()
	c, _, db := setup(t)
	a, err := c.Propose(context.Background(), request("k1", 100), alice, start)
	if err != nil {
		t.Fatal(err)
	}
	_, err = db.Exec(`UPDATE adjustments SET status = 'booked', decided_by = proposed_by, decided_at = now(), posting_set_id = 1
		WHERE id = $1`, a.ID)
	var pqErr *pq.Error
	if !errors.As(err, &pqErr) || pqErr.Constraint != "ck_adjustments_four_eyes" {
		t.Fatalf("self-approved booking: %v, want ck_adjustments_four_eyes", err)
	}
	if _, err := c.Approve(context.Background(), a.ID, adjustments.Actor{Name: "alice", TokenID: 99}, start); !errors.Is(err, adjustments.ErrOwnProposal) {
		t.Fatalf("approval by another token of the proposer's name: %v, want ErrOwnProposal", err)
	}
}

// ExpireDue expires the proposals whose time ran out, and only those,
// each with its event, once.
func TestExpireDueExpiresOnlyThoseWhoseTimeRanOut(t *testing.T) {
	t.Parallel()
	c, _, db := setup(t)
	c.Config.TTL = 2 * time.Hour
	ctx := context.Background()
	old, err := c.Propose(ctx, request("old", 100), alice, start)
	if err != nil {
		t.Fatal(err)
	}
	fresh, err := c.Propose(ctx, request("fresh", 200), alice, start.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []int{1, 0} {
		n, err := adjustments.ExpireDue(ctx, db, start.Add(2*time.Hour))
		if err != nil || n != want {
			t.Fatalf("pass %d: expired %d (%v), want %d", i, n, err, want)
		}
	}
	for id, want := range map[int64]adjustments.Status{old.ID: adjustments.StatusExpired, fresh.ID: adjustments.StatusProposed} {
		if a, err := adjustments.Get(ctx, db, id); err != nil || a.Status != want {
			t.Errorf("adjustment %d: %s (%v), want %s", id, a.Status, err, want)
		}
	}
	if n := ledgertest.Count(t, db, `SELECT count(*) FROM outbox WHERE topic = 'adjustment.expired' AND payload->>'adjustment_id' = $1::text`, old.ID); n != 1 {
		t.Fatalf("%d expired events, want 1", n)
	}
	if _, err := c.Approve(ctx, old.ID, bob, start.Add(2*time.Hour)); !errors.Is(err, adjustments.ErrDecided) {
		t.Fatalf("approve an expired proposal: %v, want ErrDecided", err)
	}
}

// A set is reversed at most once: by the code (ErrAlreadyReversed) and,
// should code forget, by uq_posting_sets_reverses. razao verify passes
// over a ledger holding adjustments and a reversal.
func TestASetIsReversedOnceAndVerifyStillPasses(t *testing.T) {
	t.Parallel()
	c, l, db := setup(t)
	ctx := context.Background()
	s, err := postings.Payout("p1", "po-1", "BRL", 700, ledgertest.SaoPaulo(2026, 8, 10, 9, 0))
	payout := ledgertest.Post(t, l, s, err)
	rev, err := c.ProposeReversal(ctx, payout.ID, "pago duas vezes", alice, start)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Propose(ctx, request("k1", 100), alice, start); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Approve(ctx, rev.ID+1, bob, start); err != nil {
		t.Fatal(err)
	}
	booked, err := c.Approve(ctx, rev.ID, bob, start)
	if err != nil || booked.Status != adjustments.StatusBooked || booked.Competence != "2026-08-10" {
		t.Fatalf("approve the reversal: %+v %v", booked, err)
	}
	if _, err := c.ProposeReversal(ctx, payout.ID, "de novo", bob, start); !errors.Is(err, postings.ErrAlreadyReversed) {
		t.Fatalf("a second reversal: %v, want ErrAlreadyReversed", err)
	}
	_, err = db.Exec(`WITH s AS (
		INSERT INTO posting_sets (kind, idempotency_key, amount, currency, competence, event_at, content_hash, reverses)
		VALUES ('adjustment', 'by-hand', 700, 'BRL', '2026-09-01', now(), 'x', $1) RETURNING id, competence_month)
	INSERT INTO postings (posting_set_id, account_id, currency, amount, competence_month)
	SELECT s.id, a.id, 'BRL', v.amount, s.competence_month
	FROM s, (VALUES ('assets:cash', -700), ('equity:adjustments', 700)) v (code, amount) JOIN accounts a ON a.code = v.code`, payout.ID)
	var pqErr *pq.Error
	if !errors.As(err, &pqErr) || pqErr.Constraint != "uq_posting_sets_reverses" {
		t.Fatalf("a second reversal by hand: %v, want uq_posting_sets_reverses", err)
	}
	r, err := verify.Run(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	if !r.OK() {
		var b strings.Builder
		r.WriteTo(&b)
		t.Fatalf("verify over adjustments and a reversal:\n%s", b.String())
	}
}

// Proposals are refused with nothing written when the competence month
// is closed: never moved to the first open month as a late event is.
func TestAnAdjustmentForAClosedMonthIsRefusedNotMoved(t *testing.T) {
	t.Parallel()
	c, l, db := setup(t)
	ctx := context.Background()
	if err := periods.Close(ctx, db, l.Calendar(), periods.Month{Year: 2026, Month: time.August}, start, "test", monthsums.Closing); err != nil {
		t.Fatal(err)
	}
	r := request("k1", 100)
	r.Competence = "2026-08-31"
	if _, err := c.Propose(ctx, r, alice, start); !errors.Is(err, postings.ErrClosedMonth) {
		t.Fatalf("propose into a closed month: %v, want ErrClosedMonth", err)
	}
	c.Config.ApprovalOff = true
	if _, err := c.Propose(ctx, r, alice, start); !errors.Is(err, postings.ErrClosedMonth) {
		t.Fatalf("book at once into a closed month: %v, want ErrClosedMonth", err)
	}
	if n := ledgertest.Count(t, db, `SELECT (SELECT count(*) FROM adjustments) + (SELECT count(*) FROM posting_sets)`); n != 0 {
		t.Fatalf("%d rows written", n)
	}
}
