package postings_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/razao/razao/internal/cursor"
	"github.com/razao/razao/internal/ledgertest"
	"github.com/razao/razao/postings"
)

// findFixture books August and September 2026 (ledgertest), a payout in
// October and an adjustment on equity, and returns the ledger's database.
func findFixture(t *testing.T) *sqlx.DB {
	t.Helper()
	l, db := ledgertest.New(t)
	ledgertest.PostAugust(t, l)
	ledgertest.PostSeptember(t, l)
	s, err := postings.Payout("p1", "2026-10", "BRL", 300, ledgertest.SaoPaulo(2026, 10, 1, 0, 30))
	ledgertest.Post(t, l, s, err)
	ledgertest.Post(t, l, postings.Set{Kind: postings.KindAdjustment, IdempotencyKey: "adj-1", Amount: 123, Currency: "BRL",
		EventAt: ledgertest.SaoPaulo(2026, 10, 2, 12, 0), Description: "ajuste",
		Legs: []postings.Leg{{Account: "assets:cash", Amount: 123}, {Account: "equity:adjustments", Amount: -123}}}, nil)
	return db
}

// oracleSet is a set as the test reads it straight from the tables.
type oracleSet struct {
	ID         int64     `db:"id"`
	Kind       string    `db:"kind"`
	Charge     string    `db:"charge"`
	Partner    string    `db:"partner"`
	Competence time.Time `db:"competence"`
	EventAt    time.Time `db:"event_at"`
	Amount     int64     `db:"amount"`
	Accounts   string    `db:"accounts"`
	Legs       string    `db:"legs"`
}

func (o oracleSet) matches(f postings.Filter) bool {
	hasAccount := false
	for _, a := range strings.Split(o.Accounts, ",") {
		hasAccount = hasAccount || a == f.Account || strings.HasPrefix(a, f.Account+":")
	}
	return (f.Charge == "" || o.Charge == f.Charge) && (f.Partner == "" || o.Partner == f.Partner) &&
		(f.Kind == "" || o.Kind == string(f.Kind)) && (f.Account == "" || hasAccount) &&
		(f.CompetenceFrom.IsZero() || !o.Competence.Before(f.CompetenceFrom)) &&
		(f.CompetenceTo.IsZero() || !o.Competence.After(f.CompetenceTo)) &&
		(f.EffectiveFrom.IsZero() || !o.EventAt.Before(f.EffectiveFrom)) &&
		(f.EffectiveTo.IsZero() || !o.EventAt.After(f.EffectiveTo)) &&
		(f.AmountMin == 0 || o.Amount >= f.AmountMin) && (f.AmountMax == 0 || o.Amount <= f.AmountMax)
}

func date(s string) time.Time {
	t, err := time.Parse(time.DateOnly, s)
	if err != nil {
		panic(err)
	}
	return t
}

// Each filter, alone and combined, finds exactly the sets that match it,
// newest first, each with its legs, over pages of any size: whichever
// index leads the statement (the charge's, the partner's, the account's
// subtree, the competence's months and days, the event time's).
func TestFindReturnsExactlyTheMatchingSetsNewestFirst(t *testing.T) {
	t.Parallel()
	db := findFixture(t)
	var all []oracleSet
	if err := db.Select(&all, `SELECT s.id, s.kind, coalesce(s.charge_id, '') AS charge, coalesce(s.partner, '') AS partner,
		s.competence::timestamp AS competence, s.event_at, s.amount,
		(SELECT string_agg(a.code, ',') FROM postings p JOIN accounts a ON a.id = p.account_id WHERE p.posting_set_id = s.id) AS accounts,
		(SELECT string_agg(a.code || ' ' || p.amount || ' ' || p.currency, ',' ORDER BY p.id) FROM postings p JOIN accounts a ON a.id = p.account_id WHERE p.posting_set_id = s.id) AS legs
		FROM posting_sets s ORDER BY s.id DESC`); err != nil {
		t.Fatal(err)
	}
	if len(all) < 15 {
		t.Fatalf("fixture has %d sets", len(all))
	}
	sp := ledgertest.SaoPaulo
	for _, f := range []postings.Filter{
		{},
		{Charge: "c1"},
		{Charge: "nope"},
		{Partner: "p1"},
		{Partner: "p2", Kind: postings.KindPayout},
		{Kind: postings.KindRefund},
		{Kind: postings.KindAdjustment},
		{Account: "assets:cash"},
		{Account: "liabilities:commission-payable"},
		{Account: "liabilities:commission-payable:p2"},
		{Account: "equity"},
		{Account: "expenses", Kind: postings.KindSale, AmountMin: 3000},
		{Account: "assets:cash", Charge: "c2"},
		{CompetenceFrom: date("2026-08-20"), CompetenceTo: date("2026-09-10")},
		{CompetenceFrom: date("2026-09-01")},
		{CompetenceTo: date("2026-08-31")},
		{CompetenceFrom: date("2026-08-01"), CompetenceTo: date("2026-09-30"), Kind: postings.KindCommission},
		{CompetenceFrom: date("2030-01-01")},
		{EffectiveFrom: sp(2026, 8, 31, 22, 30), EffectiveTo: sp(2026, 9, 15, 8, 0)},
		{EffectiveFrom: time.Date(2026, 9, 1, 0, 0, 0, 0, time.UTC)},
		{EffectiveTo: sp(2026, 8, 31, 22, 29)},
		{EffectiveFrom: sp(2026, 8, 1, 0, 0), EffectiveTo: sp(2026, 10, 31, 0, 0), Partner: "p1"},
		{EffectiveFrom: sp(2026, 9, 3, 11, 0), EffectiveTo: sp(2026, 9, 3, 11, 0)},
		{EffectiveFrom: time.Date(2026, 9, 1, 12, 0, 0, 0, time.UTC), EffectiveTo: time.Date(2026, 10, 31, 0, 0, 0, 0, time.UTC)},
		{EffectiveFrom: time.Date(2026, 8, 31, 0, 0, 0, 0, time.UTC), EffectiveTo: time.Date(2026, 9, 1, 23, 0, 0, 0, time.UTC)},
		{EffectiveFrom: time.Date(2026, 7, 1, 0, 0, 0, 0, time.UTC), EffectiveTo: time.Date(2026, 12, 31, 23, 59, 59, 0, time.UTC), Kind: postings.KindSale},
		{CompetenceFrom: date("2026-08-01"), CompetenceTo: date("2026-08-31"), EffectiveFrom: time.Date(2026, 9, 1, 0, 0, 0, 0, time.UTC)},
		{AmountMin: 1000},
		{AmountMax: 500},
		{AmountMin: 4990, AmountMax: 4990},
	} {
		t.Run(describe(f), func(t *testing.T) {
			var want, got []string
			for _, o := range all {
				if o.matches(f) {
					want = append(want, fmt.Sprintf("%d %s", o.ID, o.Legs))
				}
			}
			for _, limit := range []int{1, 2, 100} {
				got = got[:0]
				next := ""
				for pages := 0; ; pages++ {
					if pages > len(all)+1 {
						t.Fatal("paging does not end")
					}
					p, err := postings.Find(context.Background(), db, f, next, limit)
					if err != nil {
						t.Fatal(err)
					}
					if len(p.Sets) > limit {
						t.Fatalf("page of %d sets, limit %d", len(p.Sets), limit)
					}
					for _, s := range p.Sets {
						var legs []string
						for _, l := range s.Postings {
							legs = append(legs, fmt.Sprintf("%s %d %s", l.Account, l.Amount, l.Currency))
						}
						got = append(got, fmt.Sprintf("%d %s", s.ID, strings.Join(legs, ",")))
					}
					if p.NextCursor == "" {
						break
					}
					next = p.NextCursor
				}
				if !slices.Equal(got, want) {
					t.Fatalf("limit %d: found\n%s\nwant\n%s", limit, strings.Join(got, "\n"), strings.Join(want, "\n"))
				}
			}
		})
	}
}

// A subtree of many accounts (forty partners' payables) is merged from
// each account's newest sets above a floor its probe found: the pages
// hold exactly the subtree's sets, newest first.
func TestFindMergesASubtreeOfManyAccounts(t *testing.T) {
	t.Parallel()
	l, db := ledgertest.New(t)
	for i := range 120 {
		ledgertest.Commission(t, l, fmt.Sprintf("c%d", i), fmt.Sprintf("p%d", i%40), 10000, 1000,
			ledgertest.SaoPaulo(2026, 8, 1+i%28, 10, 0))
		s, err := postings.Sale(fmt.Sprintf("c%d", i), "BRL", 10000, 0, ledgertest.SaoPaulo(2026, 8, 1+i%28, 10, 0))
		ledgertest.Post(t, l, s, err)
	}
	var want []int64
	if err := db.Select(&want, `SELECT id FROM posting_sets WHERE kind = 'commission' ORDER BY id DESC`); err != nil {
		t.Fatal(err)
	}
	for _, limit := range []int{1, 5, 50, 200} {
		var got []int64
		next := ""
		for {
			p, err := postings.Find(context.Background(), db, postings.Filter{Account: "liabilities:commission-payable"}, next, limit)
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range p.Sets {
				got = append(got, s.ID)
			}
			if next = p.NextCursor; next == "" {
				break
			}
		}
		if !slices.Equal(got, want) {
			t.Fatalf("limit %d: %v, want %v", limit, got, want)
		}
	}
}

// A cursor is bound to its filter: one issued under another filter, or by
// another listing, is refused naming the cursor.
func TestFindRefusesACursorOfAnotherFilter(t *testing.T) {
	t.Parallel()
	q := findFixture(t)
	p, err := postings.Find(context.Background(), q, postings.Filter{Partner: "p1"}, "", 1)
	if err != nil || p.NextCursor == "" {
		t.Fatalf("first page: %v %+v", err, p)
	}
	for _, c := range []string{cursor.Encode("journal:2026-08", 3), cursor.Encode(postings.Filter{}.Scope(), 5), "x"} {
		_, err := postings.Find(context.Background(), q, postings.Filter{Partner: "p1"}, c, 1)
		if !errors.Is(err, cursor.ErrInvalid) || !strings.Contains(err.Error(), "cursor") {
			t.Errorf("cursor %q: %v, want an invalid cursor", c, err)
		}
	}
	_, err = postings.Find(context.Background(), q, postings.Filter{Partner: "p2"}, p.NextCursor, 1)
	if !errors.Is(err, cursor.ErrInvalid) {
		t.Errorf("p1's cursor under p2: %v, want an invalid cursor", err)
	}
}

// describe names a filter by the fields it sets.
func describe(f postings.Filter) string {
	var parts []string
	add := func(name string, set bool, v any) {
		if set {
			parts = append(parts, fmt.Sprintf("%s=%v", name, v))
		}
	}
	add("charge", f.Charge != "", f.Charge)
	add("partner", f.Partner != "", f.Partner)
	add("kind", f.Kind != "", f.Kind)
	add("account", f.Account != "", f.Account)
	add("competence_from", !f.CompetenceFrom.IsZero(), f.CompetenceFrom.Format(time.DateOnly))
	add("competence_to", !f.CompetenceTo.IsZero(), f.CompetenceTo.Format(time.DateOnly))
	add("effective_from", !f.EffectiveFrom.IsZero(), f.EffectiveFrom.Format(time.RFC3339))
	add("effective_to", !f.EffectiveTo.IsZero(), f.EffectiveTo.Format(time.RFC3339))
	add("amount_min", f.AmountMin != 0, f.AmountMin)
	add("amount_max", f.AmountMax != 0, f.AmountMax)
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ",")
}
