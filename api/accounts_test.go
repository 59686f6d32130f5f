package api_test

import (
	"context"
	"strings"
	"testing"

	"github.com/razao/razao/accounts"
	"github.com/razao/razao/internal/cursor"
)

// The chart lists every account in id order with its Portuguese name and
// parent; a partner's account, created with its first commission, is
// named for the partner; pages of any size add up to the chart.
func TestChartOfAccountsListsEveryAccountNamed(t *testing.T) {
	t.Parallel()
	h, token, db := newAPI(t, "read")
	if _, err := accounts.Ensure(context.Background(), db, "liabilities:commission-payable:p1"); err != nil {
		t.Fatal(err)
	}
	code, m, _ := call(t, h, "GET", "/v1/accounts", token, "")
	if code != 200 || m["next_cursor"] != nil {
		t.Fatalf("chart: %d %v", code, m)
	}
	all := m["accounts"].([]any)
	byCode := map[string]map[string]any{}
	lastID := 0.0
	for _, a := range all {
		a := a.(map[string]any)
		if id := a["id"].(float64); id <= lastID {
			t.Errorf("account %v after id %v: not in id order", a, lastID)
		} else {
			lastID = id
		}
		byCode[a["code"].(string)] = a
		if c := a["code"].(string); a["name"] == c {
			t.Errorf("account %s has no Portuguese name", c)
		}
	}
	if n, want := len(all), 22; n != want {
		t.Fatalf("%d accounts, want the 21 of the standard chart and p1's", n)
	}
	for code, want := range map[string][3]string{
		"assets":                            {"Ativo", "asset", ""},
		"assets:cash":                       {"Caixa (saldo no PSP)", "asset", "assets"},
		"income:revenue":                    {"Receita de vendas", "income", "income"},
		"expenses:med-returns":              {"Devoluções MED", "expense", "expenses"},
		"assets:till:pix-change":            {"Caixa físico — Pix Troco", "asset", "assets:till"},
		"liabilities:customer-credits":      {"Créditos de clientes", "liability", "liabilities"},
		"expenses:reconciliation-losses":    {"Perdas na conciliação", "expense", "expenses"},
		"liabilities:commission-payable:p1": {"Comissões a pagar — p1", "liability", "liabilities:commission-payable"},
	} {
		a := byCode[code]
		parent, _ := a["parent"].(string)
		if a == nil || a["name"] != want[0] || a["type"] != want[1] || parent != want[2] {
			t.Errorf("%s: %v, want name %q, type %s, parent %q", code, a, want[0], want[1], want[2])
		}
	}
	if a := byCode["liabilities:commission-payable:p1"]; a["normal_side"] != "credit" || a["currency"] != "BRL" {
		t.Errorf("p1's account: %v, want credit BRL like its parent", a)
	}

	var paged []any
	next := ""
	for pages := 0; ; pages++ {
		if pages > 3 {
			t.Fatal("more than 3 pages of 7 for 20 accounts")
		}
		code, m, _ := call(t, h, "GET", "/v1/accounts?limit=7&cursor="+next, token, "")
		if code != 200 {
			t.Fatalf("page %d: %d %v", pages, code, m)
		}
		paged = append(paged, m["accounts"].([]any)...)
		n, _ := m["next_cursor"].(string)
		if n == "" {
			break
		}
		next = n
	}
	if len(paged) != len(all) {
		t.Fatalf("pages of 7 hold %d accounts, the chart %d", len(paged), len(all))
	}
	for i := range all {
		if paged[i].(map[string]any)["code"] != all[i].(map[string]any)["code"] {
			t.Fatalf("page order differs at %d: %v against %v", i, paged[i], all[i])
		}
	}
}

// A cursor the chart did not issue (another listing's, or no cursor at
// all) is a 400 naming it, never a page from somewhere else.
func TestChartOfAccountsRefusesAForeignCursor(t *testing.T) {
	t.Parallel()
	h, token, _ := newAPI(t, "read")
	for _, c := range []string{cursor.Encode("journal:2026-08", 3), "not-a-cursor", cursor.Encode("accounts", -1)[:4] + "%00"} {
		code, m, _ := call(t, h, "GET", "/v1/accounts?cursor="+c, token, "")
		if code != 400 || !strings.HasSuffix(m["type"].(string), "/invalid-parameter") || !strings.Contains(m["detail"].(string), "cursor") {
			t.Errorf("cursor %q: %d %v, want 400 invalid-parameter naming the cursor", c, code, m)
		}
	}
	if code, _, _ := call(t, h, "GET", "/v1/accounts", "", ""); code != 401 {
		t.Errorf("no token: %d, want 401", code)
	}
}

// A page size that is not a whole number from 1 on is a 400 naming the
// limit on every paged listing, never a page of another size than asked;
// one larger than the listing serves is capped.
func TestPagedListingsRefuseABadLimit(t *testing.T) {
	t.Parallel()
	h, token, _ := newAPI(t, "read")
	for _, path := range []string{"/v1/accounts", "/v1/partners", "/v1/reports/journal/2026-08", "/v1/divergences", "/v1/reconciliations"} {
		for _, bad := range []string{"abc", "0", "-1", "1.5", "%20", "-99999999999999999999"} {
			code, m, _ := call(t, h, "GET", path+"?limit="+bad, token, "")
			if detail, _ := m["detail"].(string); code != 400 || !strings.Contains(detail, "limit") {
				t.Errorf("%s?limit=%s: %d %v, want 400 naming the limit", path, bad, code, m)
			}
		}
		for _, ok := range []string{"1", "1000", "5000", "99999999999999999999"} {
			if code, m, _ := call(t, h, "GET", path+"?limit="+ok, token, ""); code != 200 {
				t.Errorf("%s?limit=%s: %d %v, want 200", path, ok, code, m)
			}
		}
	}
}
