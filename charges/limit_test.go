package charges_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/razao/razao/charges"
	"github.com/razao/razao/divergences"
	"github.com/razao/razao/internal/pgtest"
	"github.com/razao/razao/money"
	"github.com/razao/razao/periods"
	"github.com/razao/razao/postings"
)

// TestChargesAboveTheLimit: registration refuses a charge above the
// configured limit, naming the field and the limit; and a payment or a
// refund above the ledger's limit that reaches the locked path anyway (a
// delivery stored before the limit was lowered) is a 'malformed'
// divergence, never a posting the ledger refuses on every retry.
func TestChargesAboveTheLimit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	cal, err := periods.NewCalendar(periods.DefaultTimeZone)
	if err != nil {
		t.Fatal(err)
	}
	const limit = money.Limit(5000)
	_, _, err = charges.RegisterWithin(ctx, db, charges.NewCharge{ID: "big", Amount: 5001, Access: "x"}, limit)
	var above *money.AboveMaxError
	if !errors.Is(err, charges.ErrInvalid) || !errors.As(err, &above) || above.Field != "amount" || above.Max != 5000 {
		t.Fatalf("register above the limit: %v", err)
	}
	if _, _, err := charges.RegisterWithin(ctx, db, charges.NewCharge{ID: "at-limit", Amount: 5000, Access: "x"}, limit); err != nil {
		t.Fatalf("register at the limit: %v", err)
	}
	// Registered under the default limit, before this one was configured.
	if _, _, err := charges.Register(ctx, db, charges.NewCharge{ID: "old", Amount: 9000, Access: "x"}); err != nil {
		t.Fatal(err)
	}
	a := charges.NewApplier(db, postings.New(db, cal).WithLimit(limit))
	at := time.Date(2026, 8, 10, 12, 0, 0, 0, time.UTC)
	apply := func(ev charges.Event) charges.Outcome {
		t.Helper()
		tx, err := db.BeginTxx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback()
		l, err := a.LockTx(ctx, tx, []charges.Event{ev}, charges.Wait)
		if err != nil {
			t.Fatal(err)
		}
		out, err := l.Apply(ev)
		if err != nil {
			t.Fatal(err)
		}
		last, err := periods.LockForPosting(ctx, tx)
		if err != nil {
			t.Fatal(err)
		}
		if err := l.WriteTx(ctx, tx, last); err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		return out
	}
	if out := apply(charges.Event{Kind: charges.Paid, ChargeID: "old", Amount: 9000, HasAmount: true, At: at}); out.Result != charges.Divergence || out.Reason != divergences.ReasonMalformed {
		t.Fatalf("payment above the limit: %+v", out)
	}
	if out := apply(charges.Event{Kind: charges.Paid, ChargeID: "at-limit", Amount: 5000, HasAmount: true, At: at}); out.Result != charges.Applied {
		t.Fatalf("payment at the limit: %+v", out)
	}
	if out := apply(charges.Event{Kind: charges.Refunded, ChargeID: "at-limit", RefundID: "r1", Amount: 5001, HasAmount: true, At: at}); out.Result != charges.Divergence || out.Reason != divergences.ReasonMalformed {
		t.Fatalf("refund above the limit: %+v", out)
	}
	var sets int
	if err := db.Get(&sets, `SELECT count(*) FROM posting_sets`); err != nil || sets != 1 {
		t.Fatalf("%d posting sets (%v), want the one sale at the limit", sets, err)
	}
}
