package console

import (
	"fmt"
	"net/http"
	"net/url"
	"testing"

	"github.com/razao/razao/accounts"
)

// A NUL, a '|', 2^63-1 or a date of year 1 in any id, filter or cursor
// of the pages that find and act is an answer of the console's (a page,
// a 400 or a 404), never a 500: PostgreSQL refuses a NUL in text, and
// each of these reaches a statement's parameters.
func TestFindAndActPagesAnswerHostileValues(t *testing.T) {
	t.Parallel()
	f, srv := setup(t)
	c := signedIn(t, srv, f.admin)
	for _, path := range []string{
		"/console/charges/a%00b", "/console/charges/a%7Cb", "/console/charges/9223372036854775807",
		"/console/search?q=a%00b", "/console/search?q=%7C", "/console/search?q=9223372036854775807",
		"/console/search?q=01%2F01%2F0001", "/console/search?q=92233720368547758,07",
		"/console/journal?cobranca=a%00b", "/console/journal?parceiro=a%00b", "/console/journal?conta=a%00b",
		"/console/journal?de=01%2F01%2F0001&ate=31%2F12%2F9999", "/console/journal?min=92233720368547758,07",
		"/console/journal?cursor=%00", "/console/adjustments?after=9223372036854775807",
		"/console/adjustments?after=9223372036854775808", "/console/adjustments?status=%00",
		"/console/partners/a%00b", "/console/webhooks/9223372036854775807", "/console/webhooks/a%00b",
	} {
		res, body := c.get(path)
		if res.StatusCode >= 500 {
			t.Errorf("%s: %d\n%.300s", path, res.StatusCode, body)
		}
	}
}

// A NUL in what a form writes (an adjustment's note and account, a
// divergence's note) is refused in Portuguese, never a 500.
func TestActFormsRefuseANul(t *testing.T) {
	t.Parallel()
	f, srv := setup(t)
	c := signedIn(t, srv, f.admin)
	_, page := c.get("/console/adjustments")
	for name, form := range map[string]url.Values{
		"note":    proposalForm(t, page, [][3]string{{accounts.Cash, "debito", "1,00"}, {accounts.Adjustments, "credito", "1,00"}}, "nota\x00nula"),
		"account": proposalForm(t, page, [][3]string{{"assets:\x00cash", "debito", "1,00"}, {accounts.Adjustments, "credito", "1,00"}}, "nota"),
	} {
		res, body := c.postForm("/console/adjustments", form)
		if res.StatusCode != http.StatusBadRequest {
			t.Errorf("an adjustment with a NUL in its %s: %d\n%.300s", name, res.StatusCode, body)
		}
	}
	id := divergence(t, f.db, "ev-nul", "c-nul", "detalhe")
	_, page = c.get("/console/divergences")
	res, body := c.postForm(fmt.Sprintf("/console/divergences/%d/resolve", id), url.Values{"csrf": {csrfOf(t, page)}, "note": {"nota\x00nula"}})
	if res.StatusCode >= 500 {
		t.Errorf("a divergence's note with a NUL: %d\n%.300s", res.StatusCode, body)
	}
}
