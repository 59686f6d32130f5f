package api_test

import (
	"net/url"
	"strings"
	"testing"

	"github.com/razao/razao/internal/cursor"
	"github.com/razao/razao/internal/ledgertest"
	"github.com/razao/razao/periods"
	"github.com/razao/razao/postings"
)

// Posting sets are found across months by their filters, newest first,
// each with its postings, a page at a time; a cursor serves only the
// filters that issued it.
func TestPostingSetsAreFoundAcrossMonthsWithTheirPostings(t *testing.T) {
	t.Parallel()
	h, token, db := newAPI(t, "read")
	cal, _ := periods.NewCalendar(periods.DefaultTimeZone)
	l := postings.New(db, cal)
	ledgertest.PostAugust(t, l)
	ledgertest.PostSeptember(t, l)

	// p1: c1's commission (August), its payout, two reversals and c4's
	// commission (September).
	var ids []float64
	next := ""
	for pages := 0; ; pages++ {
		if pages > 5 {
			t.Fatal("more than 5 pages of 2 for p1's sets")
		}
		code, m, _ := call(t, h, "GET", "/v1/posting-sets?partner=p1&limit=2&cursor="+next, token, "")
		if code != 200 {
			t.Fatalf("page %d: %d %v", pages, code, m)
		}
		for _, s := range m["sets"].([]any) {
			s := s.(map[string]any)
			if s["partner"] != "p1" || len(s["postings"].([]any)) < 2 {
				t.Errorf("set %v: not p1's, or without its postings", s)
			}
			ids = append(ids, s["id"].(float64))
		}
		n, _ := m["next_cursor"].(string)
		if n == "" {
			break
		}
		next = n
	}
	if len(ids) != 5 {
		t.Fatalf("p1's sets: %v, want 5", ids)
	}
	for i := 1; i < len(ids); i++ {
		if ids[i] >= ids[i-1] {
			t.Fatalf("ids %v: not newest first", ids)
		}
	}
	code, m, _ := call(t, h, "GET", "/v1/posting-sets?account=liabilities:commission-payable&kind=payout&competence_from=2026-09-01&competence_to=2026-09-30", token, "")
	sets, _ := m["sets"].([]any)
	if code != 200 || len(sets) != 1 {
		t.Fatalf("September's payouts: %d %v, want p2's alone", code, m)
	}
	p2 := sets[0].(map[string]any)
	legs := map[string]float64{}
	for _, p := range p2["postings"].([]any) {
		p := p.(map[string]any)
		legs[p["account"].(string)] = p["amount"].(float64)
		if p["currency"] != "BRL" {
			t.Errorf("posting %v: currency", p)
		}
	}
	if p2["partner"] != "p2" || p2["competence"] != "2026-09-25" || legs["liabilities:commission-payable:p2"] != 200 || legs["assets:cash"] != -200 {
		t.Errorf("p2's payout: %v", p2)
	}
	code, m, _ = call(t, h, "GET", "/v1/posting-sets?effective_from="+url.QueryEscape("2026-08-31T22:30:00-03:00")+"&effective_to="+url.QueryEscape("2026-08-31T22:30:00-03:00"), token, "")
	if sets, _ := m["sets"].([]any); code != 200 || len(sets) != 2 {
		t.Fatalf("c2's sale and commission at 2026-08-31 22:30 in São Paulo: %d %v", code, m)
	}
	if code, m, _ := call(t, h, "GET", "/v1/posting-sets?charge=nope", token, ""); code != 200 || len(m["sets"].([]any)) != 0 || m["next_cursor"] != nil {
		t.Fatalf("no such charge: %d %v, want an empty page", code, m)
	}
	if code, _, _ := call(t, h, "GET", "/v1/posting-sets", "", ""); code != 401 {
		t.Errorf("no token: %d, want 401", code)
	}
}

// Every bad filter value, cursor or parameter is a 400 problem naming
// the parameter, never a listing of something else.
func TestPostingSetsRefuseBadInputNamingTheParameter(t *testing.T) {
	t.Parallel()
	h, token, _ := newAPI(t, "read")
	long := strings.Repeat("a", 300)
	for _, c := range []struct{ query, param string }{
		{"kind=bogus", "kind"},
		{"kind=SALE", "kind"},
		{"kind=sale&kind=refund", "kind"},
		{"account=assets:nope", "account"},
		{"account=Assets", "account"},
		{"account=assets%00", "account"},
		{"account=assets|cash", "account"},
		{"account=assets:" + long, "account"},
		{"charge=c%00", "charge"},
		{"charge=c|1", "charge"},
		{"charge=" + long, "charge"},
		{"charge=", "charge"},
		{"partner=p%00", "partner"},
		{"partner=p|1", "partner"},
		{"partner=a:b", "partner"},
		{"partner=" + long, "partner"},
		{"competence_from=0001-01-01", "competence_from"},
		{"competence_from=2026-13-01", "competence_from"},
		{"competence_from=2026-02-30", "competence_from"},
		{"competence_to=2026-08", "competence_to"},
		{"competence_to=10000-01-01", "competence_to"},
		{"competence_from=2026-09-01&competence_to=2026-08-31", "competence_from"},
		{"effective_from=2026-08-01", "effective_from"},
		{"effective_to=0001-01-01T00:00:00Z", "effective_to"},
		{"effective_from=2026-09-01T00:00:00Z&effective_to=2026-08-31T23:59:59Z", "effective_from"},
		{"amount_min=abc", "amount_min"},
		{"amount_min=1.5", "amount_min"},
		{"amount_min=-1", "amount_min"},
		{"amount_min=0", "amount_min"},
		{"amount_max=99999999999999999999", "amount_max"},
		{"amount_max=1000000000001", "amount_max"},
		{"amount_min=500&amount_max=100", "amount_min"},
		{"foo=1", "foo"},
		{"Kind=sale", "Kind"},
		{"cursor=" + cursor.Encode("accounts", 3), "cursor"},
		{"cursor=not-a-cursor", "cursor"},
		{"cursor=" + cursor.Encode(postings.Filter{}.Scope(), 0), "cursor"},
		{"kind=sale&cursor=" + cursor.Encode(postings.Filter{}.Scope(), 5), "cursor"},
		{"limit=abc", "limit"},
	} {
		code, m, hdr := call(t, h, "GET", "/v1/posting-sets?"+c.query, token, "")
		detail, _ := m["detail"].(string)
		if code != 400 || hdr.Get("Content-Type") != "application/problem+json" || !strings.Contains(detail, c.param) {
			t.Errorf("%.80s: %d %v, want a 400 problem naming %s", c.query, code, m, c.param)
		}
	}
	if code, m, _ := call(t, h, "GET", "/v1/posting-sets?amount_max=1000000000001", token, ""); !strings.HasSuffix(m["type"].(string), "/amount-above-max") {
		t.Errorf("amount above the maximum: %d %v, want amount-above-max", code, m)
	}
	if code, m, _ := call(t, h, "GET", "/v1/posting-sets?cursor="+cursor.Encode(postings.Filter{}.Scope(), 5), token, ""); code != 200 {
		t.Errorf("a cursor of this listing and filters: %d %v", code, m)
	}
}
