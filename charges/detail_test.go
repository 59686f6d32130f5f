package charges_test

import (
	"context"
	"testing"
	"time"

	"github.com/razao/razao/charges"
	"github.com/razao/razao/internal/pgtest"
)

// GetDetail read its five statements one after another on the pool: a
// payment committing between them showed the charge pending beside the
// payment's grant. The gate: a transaction holds access_grants (the last
// table GetDetail reads) until GetDetail waits on it, then grants access
// and marks the charge paid, and commits. GetDetail must show one state:
// pending without the grant, as its snapshot saw before the payment.
func TestChargeDetailIsReadInOneSnapshot(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	if _, _, err := charges.Register(ctx, db, charges.NewCharge{ID: "ch-1", Amount: 4990, Access: "course:x"}); err != nil {
		t.Fatal(err)
	}
	gate := db.MustBegin()
	defer gate.Rollback()
	gate.MustExec(`LOCK TABLE access_grants IN ACCESS EXCLUSIVE MODE`)
	type result struct {
		d   charges.Detail
		err error
	}
	done := make(chan result, 1)
	go func() {
		d, err := charges.GetDetail(ctx, db, "ch-1")
		done <- result{d, err}
	}()
	deadline := time.Now().Add(30 * time.Second) // a safety net
	for {
		var waiting bool
		if err := db.Get(&waiting, `SELECT EXISTS (SELECT 1 FROM pg_locks WHERE relation = 'access_grants'::regclass AND NOT granted)`); err != nil {
			t.Fatal(err)
		}
		if waiting {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("GetDetail never waited on access_grants")
		}
		time.Sleep(5 * time.Millisecond)
	}
	gate.MustExec(`INSERT INTO access_grants (charge_id, access) VALUES ('ch-1', 'course:x')`)
	gate.MustExec(`UPDATE charges SET state = 'paid', paid_amount = 4990, fee = 0 WHERE id = 'ch-1'`)
	if err := gate.Commit(); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	if r.d.State != "pending" || r.d.Access != nil {
		t.Fatalf("state %q with grant %+v: want pending without a grant, as before the payment", r.d.State, r.d.Access)
	}
}
