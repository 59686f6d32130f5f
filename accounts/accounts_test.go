package accounts_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/razao/razao/accounts"
	"github.com/razao/razao/internal/ledgertest"
	"github.com/razao/razao/internal/pgtest"
)

func TestEnsureCreatesPartnerAccountOnceUnderConcurrency(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	code, err := accounts.PartnerPayable("partner-42")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	ids := make([]int64, 10)
	for i := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			a, err := accounts.Ensure(context.Background(), db, code)
			if err != nil {
				t.Error(err)
			}
			ids[i] = a.ID
		}()
	}
	wg.Wait()
	for _, id := range ids {
		if id != ids[0] || id == 0 {
			t.Fatalf("ids %v, want one account", ids)
		}
	}
	a, _ := accounts.Get(context.Background(), db, code)
	if a.Type != accounts.Liability || a.NormalSide != "credit" || a.Currency != "BRL" {
		t.Fatalf("partner account %+v, want a BRL credit liability", a)
	}
}

func TestEnsureRefusesNewRootsAndBadCodes(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	for _, code := range []string{"gifts:cash", "Assets:cash", "assets::cash", "assets:cash;drop", ""} {
		if _, err := accounts.Ensure(context.Background(), db, code); err == nil {
			t.Errorf("Ensure(%q) succeeded", code)
		}
	}
	if _, err := accounts.PartnerPayable("a:b"); !errors.Is(err, accounts.ErrInvalidCode) {
		t.Errorf("PartnerPayable(a:b) = %v, want ErrInvalidCode", err)
	}
}

func TestParentBalanceIsSumOfChildren(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	ctx := context.Background()
	p1, _ := accounts.Ensure(ctx, db, "liabilities:commission-payable:p1")
	p2, _ := accounts.Ensure(ctx, db, "liabilities:commission-payable:p2")
	exp, _ := accounts.Get(ctx, db, accounts.CommissionExpense)
	tx := db.MustBegin()
	var id int64
	tx.Get(&id, `INSERT INTO posting_sets (kind, idempotency_key, amount, currency, competence, event_at, content_hash)
		VALUES ('adjustment', 'k', 500, 'BRL', '2026-08-01', now(), 'x') RETURNING id`)
	tx.MustExec(`INSERT INTO postings (posting_set_id, account_id, currency, amount, competence_month)
		VALUES ($1, $2, 'BRL', -300, '2026-08-01'), ($1, $3, 'BRL', -200, '2026-08-01'), ($1, $4, 'BRL', 500, '2026-08-01')`,
		id, p1.ID, p2.ID, exp.ID)
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	for code, want := range map[string]int64{
		"liabilities:commission-payable:p1": -300,
		"liabilities:commission-payable":    -500,
		"liabilities":                       -500,
		"expenses":                          500,
	} {
		if got := ledgertest.Balance(t, db, code, ""); got != want {
			t.Errorf("Balance(%s) = %d; want %d", code, got, want)
		}
	}
	if got := ledgertest.Balance(t, db, "liabilities", "2026-08-01"); got != 0 {
		t.Errorf("balance before August = %d, want 0", got)
	}
}
