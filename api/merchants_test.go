package api_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/razao/razao/auth"
	"github.com/razao/razao/charges"
)

// newMerchantsAPI is an API with the merchants the webhook endpoints are
// configured with, the real clock and a write token.
func newMerchantsAPI(t *testing.T, merchants ...string) (http.Handler, string, *sqlx.DB) {
	t.Helper()
	return newAPIWith(t, apiOptions{scopes: []auth.Scope{auth.Write}, now: time.Now, merchants: merchants, unchecked: true})
}

func TestRegisterChargeResolvesItsMerchant(t *testing.T) {
	t.Parallel()
	problem := func(t *testing.T, code int, m map[string]any, want string) {
		t.Helper()
		if code != 400 || !strings.HasSuffix(m["type"].(string), "/invalid-charge") || !strings.Contains(m["detail"].(string), want) {
			t.Fatalf("%d %v, want 400 invalid-charge saying %q", code, m, want)
		}
	}
	t.Run("one merchant: the default", func(t *testing.T) {
		t.Parallel()
		h, token, db := newMerchantsAPI(t, "loja-1")
		code, m, _ := call(t, h, "POST", "/v1/charges", token, `{"id":"order-1","amount":4990}`)
		if code != 201 || m["merchant"] != "loja-1" {
			t.Fatalf("%d %v, want 201 of merchant loja-1", code, m)
		}
		// Registering again without it is the same registration.
		if code, m, _ := call(t, h, "POST", "/v1/charges", token, `{"id":"order-1","amount":4990}`); code != 200 {
			t.Fatalf("again: %d %v, want 200", code, m)
		}
		if code, m, _ := call(t, h, "POST", "/v1/charges", token, `{"id":"order-1","amount":4990,"merchant":"loja-1"}`); code != 200 {
			t.Fatalf("again naming it: %d %v, want 200", code, m)
		}
		code, m, _ = call(t, h, "POST", "/v1/charges", token, `{"id":"order-2","amount":4990,"merchant":"loja-9"}`)
		problem(t, code, m, "loja-9")
		// A charge registered before charges carried a merchant keeps
		// none, and registering it again is still the same registration.
		if _, _, err := charges.Register(context.Background(), db, charges.NewCharge{ID: "legacy-1", Amount: 4990}); err != nil {
			t.Fatal(err)
		}
		if code, m, _ := call(t, h, "POST", "/v1/charges", token, `{"id":"legacy-1","amount":4990}`); code != 200 || m["merchant"] != nil {
			t.Fatalf("legacy again: %d %v, want 200 with no merchant", code, m)
		}
	})
	t.Run("several merchants: required", func(t *testing.T) {
		t.Parallel()
		h, token, _ := newMerchantsAPI(t, "loja-1", "loja-2")
		code, m, _ := call(t, h, "POST", "/v1/charges", token, `{"id":"order-1","amount":4990}`)
		problem(t, code, m, "merchant is required")
		code, m, _ = call(t, h, "POST", "/v1/charges", token, `{"id":"order-1","amount":4990,"merchant":"loja-3"}`)
		problem(t, code, m, "loja-3")
		code, m, _ = call(t, h, "POST", "/v1/charges", token, `{"id":"order-1","amount":4990,"merchant":"loja-2"}`)
		if code != 201 || m["merchant"] != "loja-2" {
			t.Fatalf("%d %v, want 201 of merchant loja-2", code, m)
		}
		// Another merchant under the same id is another registration.
		if code, m, _ := call(t, h, "POST", "/v1/charges", token, `{"id":"order-1","amount":4990,"merchant":"loja-1"}`); code != 409 {
			t.Fatalf("other merchant, same id: %d %v, want 409", code, m)
		}
	})
}
