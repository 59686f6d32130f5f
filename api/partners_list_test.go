package api_test

import (
	"strings"
	"testing"

	"github.com/razao/razao/internal/cursor"
	"github.com/razao/razao/internal/ledgertest"
	"github.com/razao/razao/periods"
	"github.com/razao/razao/postings"
)

// The partners, by id, a page at a time: each with the figures of its own
// summary and its newest payout; a partner never paid has none.
func TestPartnersListShowsEachWithItsLastPayout(t *testing.T) {
	t.Parallel()
	h, token, db := newAPI(t)
	cal, _ := periods.NewCalendar(periods.DefaultTimeZone)
	l := postings.New(db, cal)
	ledgertest.Commission(t, l, "c1", "p1", 100000, 1000, ledgertest.SaoPaulo(2026, 8, 5, 10, 0))
	ledgertest.Commission(t, l, "c2", "p2", 4990, 500, ledgertest.SaoPaulo(2026, 8, 6, 10, 0))
	ledgertest.Commission(t, l, "c3", "p3", 3000, 1000, ledgertest.SaoPaulo(2026, 8, 7, 10, 0))
	// In this order: the newest payout is the one booked last (a map's
	// order is random, and made this test fail one run in two).
	for _, p := range []struct{ key, amount string }{{"po-1", "1000"}, {"po-2", "2500"}} {
		if code, m := payout(t, h, token, p.key, `{"amount":`+p.amount+`,"effective_at":"2026-08-2`+p.key[3:]+`T12:00:00Z"}`); code != 201 {
			t.Fatalf("payout %s: %d %v", p.key, code, m)
		}
	}
	code, m, _ := call(t, h, "GET", "/v1/partners?limit=2", token, "")
	if code != 200 {
		t.Fatalf("first page: %d %v", code, m)
	}
	first := m["partners"].([]any)
	next, _ := m["next_cursor"].(string)
	if len(first) != 2 || next == "" {
		t.Fatalf("first page of 2: %v", m)
	}
	code, m, _ = call(t, h, "GET", "/v1/partners?limit=2&cursor="+next, token, "")
	if code != 200 || m["next_cursor"] != nil || len(m["partners"].([]any)) != 1 {
		t.Fatalf("last page: %d %v", code, m)
	}
	all := append(first, m["partners"].([]any)...)
	var ids []string
	for _, p := range all {
		p := p.(map[string]any)
		ids = append(ids, p["partner"].(string))
		// The same figures as the partner's own summary.
		_, one, _ := call(t, h, "GET", "/v1/partners/"+p["partner"].(string), token, "")
		for _, f := range []string{"owed", "commissions", "reversed", "paid", "adjustments", "account", "currency"} {
			if p[f] != one[f] {
				t.Errorf("%s %s: %v in the list, %v in its summary", p["partner"], f, p[f], one[f])
			}
		}
	}
	if strings.Join(ids, ",") != "p1,p2,p3" {
		t.Fatalf("partners %v, want p1,p2,p3 by id", ids)
	}
	p1 := all[0].(map[string]any)
	last, _ := p1["last_payout"].(map[string]any)
	if last == nil || last["amount"] != 2500.0 || last["competence"] != "2026-08-22" || last["effective_at"] != "2026-08-22T12:00:00Z" || p1["paid"] != 3500.0 {
		t.Errorf("p1: %v, want paid 3500 and its last payout the one of 2500 on 2026-08-22", p1)
	}
	for _, p := range all[1:] {
		if lp := p.(map[string]any)["last_payout"]; lp != nil {
			t.Errorf("%v was never paid but shows a last payout %v", p.(map[string]any)["partner"], lp)
		}
	}
}

// A cursor the listing did not issue is a 400 naming it.
func TestPartnersListRefusesAForeignCursor(t *testing.T) {
	t.Parallel()
	h, token, _ := newAPI(t, "read")
	for _, c := range []string{cursor.Encode("accounts", 3), "not-a-cursor", cursor.EncodeKey("partners", "a:b"), cursor.EncodeKey("partners", "P1"),
		cursor.EncodeKey("partners", "p1|p2"), cursor.EncodeKey("partners", "p1\x00"), cursor.EncodeKey("partners", strings.Repeat("p", 300))} {
		code, m, _ := call(t, h, "GET", "/v1/partners?cursor="+c, token, "")
		if code != 400 || !strings.Contains(m["detail"].(string), "cursor") {
			t.Errorf("cursor %q: %d %v, want 400 naming the cursor", c, code, m)
		}
	}
	if code, m, _ := call(t, h, "GET", "/v1/partners", token, ""); code != 200 || len(m["partners"].([]any)) != 0 {
		t.Errorf("no partners: %d %v, want 200 and an empty list", code, m)
	}
}
