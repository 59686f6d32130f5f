package reports_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/razao/razao/internal/ledgertest"
	"github.com/razao/razao/reports"
)

func TestJournalPages(t *testing.T) {
	t.Parallel()
	l, db := ledgertest.New(t)
	ctx := context.Background()
	ledgertest.PostAugust(t, l)
	ledgertest.PostSeptember(t, l)

	// Four pages of two sets: 1-2, 3-4, 5-6, and none left after 6.
	var got []string
	cursor := ""
	for page := 0; ; page++ {
		p, err := reports.Journal(ctx, db, aug2026, cursor, 2)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range p.Sets {
			var legs []string
			for _, leg := range s.Postings {
				legs = append(legs, fmt.Sprintf("%s %d", leg.Account, leg.Amount))
			}
			got = append(got, fmt.Sprintf("%d %s %s [%s]", s.ID, s.Kind, s.Competence, strings.Join(legs, ", ")))
		}
		if p.NextCursor == "" {
			break
		}
		if page > 3 {
			t.Fatal("too many pages")
		}
		cursor = p.NextCursor
	}
	want := []string{
		"1 sale 2026-08-05 [assets:cash 9850, expenses:psp-fees 150, income:revenue -10000]",
		"2 commission 2026-08-05 [expenses:commission 1000, liabilities:commission-payable:p1 -1000]",
		"3 sale 2026-08-31 [assets:cash 4915, expenses:psp-fees 75, income:revenue -4990]",
		"4 commission 2026-08-31 [expenses:commission 249, liabilities:commission-payable:p2 -249]",
		"5 sale 2026-08-20 [assets:cash 2500, income:revenue -2500]",
		"6 payout 2026-08-28 [liabilities:commission-payable:p1 500, assets:cash -500]",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("journal\n got %q\nwant %q", got, want)
	}

	p, err := reports.Journal(ctx, db, aug2026, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	c2 := p.Sets[2]
	if len(p.Sets) != 6 || p.NextCursor != "" || c2.ChargeID != "c2" || c2.IdempotencyKey != "sale:c2" || c2.Amount != 4990 ||
		!c2.EventAt.Equal(ledgertest.SaoPaulo(2026, 8, 31, 22, 30)) || c2.EventAt.Location() != time.UTC {
		t.Errorf("default page: %d sets, next %q, c2 %+v", len(p.Sets), p.NextCursor, c2)
	}

	first, err := reports.Journal(ctx, db, aug2026, "", 2)
	if err != nil {
		t.Fatal(err)
	}
	for name, cursor := range map[string]string{
		"another month's cursor": first.NextCursor,
		"garbage":                "%%%",
		"forged position":        "am91cm5hbDoyMDI2LTA5fHg",
	} {
		if _, err := reports.Journal(ctx, db, sep2026, cursor, 2); !errors.Is(err, reports.ErrInvalidCursor) {
			t.Errorf("%s: %v, want ErrInvalidCursor", name, err)
		}
	}
	empty, err := reports.Journal(ctx, db, oct2026, "", 10)
	if err != nil || len(empty.Sets) != 0 || empty.NextCursor != "" || empty.Sets == nil {
		t.Errorf("empty month: %+v, %v", empty, err)
	}
}
