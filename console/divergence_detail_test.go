package console

import (
	"context"
	"strings"
	"testing"

	"github.com/razao/razao/divergences"
)

// pix1's second payment, through the real webhook front, is said in
// Portuguese on the divergences' page and on the charge's timeline, its
// amount in reais; the API's detail stays the English it always was.
func TestASecondPaymentsDivergenceIsSaidInPortuguese(t *testing.T) {
	t.Parallel()
	f, _ := withCharges(t)
	srv := serve(t, f.router)
	c := signedIn(t, srv, f.read)
	var id int64
	if err := f.db.Get(&id, `SELECT id FROM divergences WHERE charge_id = 'pix1' AND reason = 'second_payment'`); err != nil {
		t.Fatal(err)
	}
	d, err := divergences.Get(context.Background(), f.db, id)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(d.Detail, "charge already paid by ") {
		t.Fatalf("stored detail %q: want the English as before", d.Detail)
	}
	var api struct{ Divergences []divergences.Divergence }
	c.api(f.read, "/v1/divergences?status=open", &api)
	for _, a := range api.Divergences {
		if a.ID == id && a.Detail != d.Detail {
			t.Errorf("API detail %q, want %q", a.Detail, d.Detail)
		}
	}
	// pix1's second payment is of R$ 49,90, in the scheme's ids.
	want := "cobrança já paga por bcb-pix:" + pixE2E + "; chegou também o pagamento bcb-pix:E00000000000000000000000000000A2 de R$ 49,90"
	_, list := c.get("/console/divergences")
	_, charge := c.get("/console/charges/pix1")
	for name, page := range map[string]string{"divergences": list, "charge pix1": charge} {
		if !strings.Contains(page, want) {
			t.Errorf("%s page does not say %q", name, want)
		}
		if strings.Contains(page, "charge already paid by") || strings.Contains(page, "arrived too") {
			t.Errorf("%s page says the second payment in English", name)
		}
	}
}

// A divergence opened before details were stored with their kind (no
// detail_code) is shown with its English detail as stored.
func TestAnOldDivergenceShowsItsStoredDetail(t *testing.T) {
	t.Parallel()
	f := newBareFixture(t)
	srv := serve(t, f.router)
	divergence(t, f.db, "evt-old", "ord-old", "no charge with ord-old (as stored before)")
	_, page := signedIn(t, srv, f.read).get("/console/divergences")
	if !strings.Contains(page, `<dd class="detail">no charge with ord-old (as stored before)</dd>`) {
		t.Errorf("the old divergence's stored detail is not shown")
	}
}
