package api_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/jmoiron/sqlx"

	"github.com/razao/razao/internal/ledgertest"
)

// secondPayment records a second payment of 49.90 set aside by the
// delivery path in August 2026, and returns its divergence's id.
func secondPayment(t *testing.T, db *sqlx.DB) int64 {
	t.Helper()
	var id int64
	err := db.Get(&id, `WITH i AS (INSERT INTO inbox (delivery_key, endpoint, scheme, merchant, event_type, event_id, kind, event, body, status)
			VALUES ('psp|charge.paid|ev-2', 'psp', 'generic', 'shop', 'charge.paid', 'ev-2', 'paid',
				'{"Kind":"paid","Amount":4990,"HasAmount":true,"OccurredAt":"2026-08-20T15:00:00Z"}', '\x7b7d', 'divergent') RETURNING id)
		INSERT INTO divergences (inbox_id, charge_id, reason, detail) SELECT id, 'c1', 'second_payment', 'paid twice' FROM i RETURNING id`)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// GET /v1/divergences/{id} offers the bookings of a money divergence with
// its amount; resolving by one books it and links it; the divergence then
// offers none.
func TestDivergenceIsShownWithItsOffersAndResolvedByBooking(t *testing.T) {
	t.Parallel()
	h, token, db := newAPI(t)
	id := secondPayment(t, db)
	path := fmt.Sprintf("/v1/divergences/%d", id)
	code, m, _ := call(t, h, "GET", path, token, "")
	offers, _ := m["offers"].([]any)
	if code != 200 || len(offers) != 1 {
		t.Fatalf("GET %s: %d %v", path, code, m)
	}
	if o := offers[0].(map[string]any); o["resolution"] != "customer_credit" || o["amount"] != 4990.0 {
		t.Errorf("offer %v, want customer_credit of 4990", o)
	}
	code, m, _ = call(t, h, "POST", path+"/resolve", token, `{"resolution":"customer_credit","competence":"2026-09-01"}`)
	if code != 200 || m["resolution"] != "customer_credit" || m["resolution_set_id"] == nil || m["status"] != "resolved" {
		t.Fatalf("resolve: %d %v", code, m)
	}
	if n := ledgertest.Count(t, db, `SELECT count(*) FROM posting_sets WHERE competence = '2026-09-01' AND id = $1`, int64(m["resolution_set_id"].(float64))); n != 1 {
		t.Error("the set is not booked on the competence asked for")
	}
	if code, m, _ = call(t, h, "GET", path, token, ""); code != 200 || len(m["offers"].([]any)) != 0 {
		t.Errorf("a resolved divergence offers %v", m["offers"])
	}
	for _, bad := range []string{"/v1/divergences/0", "/v1/divergences/x", "/v1/divergences/99"} {
		if code, _, _ := call(t, h, "GET", bad, token, ""); code != 404 {
			t.Errorf("GET %s: %d, want 404", bad, code)
		}
	}
}

// Every bad resolution is a 4xx problem naming its field, and nothing is
// written.
func TestResolveRefusesBadInputNamingTheField(t *testing.T) {
	t.Parallel()
	h, token, db := newAPI(t)
	id := secondPayment(t, db)
	db.MustExec(`INSERT INTO closed_periods (month, closed_by) VALUES ('2026-08-01', 'test')`)
	path := fmt.Sprintf("/v1/divergences/%d/resolve", id)
	cases := []struct {
		name, body  string
		status      int
		slug, field string
	}{
		{"a note alone for money", `{"note":"pagou duas vezes"}`, 409, "booking-required", "customer_credit"},
		{"unknown resolution", `{"resolution":"gift"}`, 400, "invalid-parameter", "resolution"},
		{"another reason's resolution", `{"resolution":"fee_difference"}`, 422, "resolution-not-offered", "resolution"},
		{"missing parameter", `{"resolution":"credit_refund"}`, 400, "invalid-parameter", "credit_divergence_id"},
		{"extra parameter", `{"resolution":"customer_credit","credit_divergence_id":1}`, 400, "invalid-parameter", "credit_divergence_id"},
		{"a parameter with a note alone", `{"note":"x","credit_divergence_id":1}`, 400, "invalid-parameter", "credit_divergence_id"},
		{"unknown field", `{"resolution":"customer_credit","amount":1}`, 400, "invalid-json", "amount"},
		// Refused before any field is read (strictjson): every body is.
		{"NUL in the note", `{"resolution":"customer_credit","note":"a\u0000b"}`, 400, "invalid-json", "U+0000"},
		{"overlong note", `{"resolution":"customer_credit","note":"` + strings.Repeat("x", 2001) + `"}`, 400, "invalid-parameter", "note"},
		{"bad competence", `{"resolution":"customer_credit","competence":"2026-13-01"}`, 400, "invalid-parameter", "competence"},
		{"closed month", `{"resolution":"customer_credit","competence":"2026-08-31"}`, 409, "closed-month", "competence"},
	}
	for _, c := range cases {
		code, m, _ := call(t, h, "POST", path, token, c.body)
		detail, _ := m["detail"].(string)
		if code != c.status || m["type"] != "https://razao.dev/problems/"+c.slug || !strings.Contains(detail, c.field) {
			t.Errorf("%s: %d %v, want %d %s naming %s", c.name, code, m, c.status, c.slug, c.field)
		}
	}
	if n := ledgertest.Count(t, db, `SELECT count(*) FROM posting_sets`); n != 0 {
		t.Errorf("%d sets written by refused resolutions", n)
	}
	if n := ledgertest.Count(t, db, `SELECT count(*) FROM divergences WHERE status = 'open'`); n != 1 {
		t.Error("a refused resolution resolved the divergence")
	}
	if code, _, _ := call(t, h, "POST", path, token, `{"resolution":"customer_credit"}`); code != 200 {
		t.Fatalf("the valid resolution: %d", code)
	}
	if code, m, _ := call(t, h, "POST", path, token, `{"resolution":"customer_credit"}`); code != 409 || m["type"] != "https://razao.dev/problems/already-resolved" {
		t.Errorf("resolving twice: %d %v", code, m)
	}
}
