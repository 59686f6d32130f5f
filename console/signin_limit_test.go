package console

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"
)

// signInFrom posts the sign-in form with token from the client address
// addr (and header, if any), after fetching the form as that client.
func (f *fixture) signInFrom(t *testing.T, addr, token string, header http.Header) *httptest.ResponseRecorder {
	t.Helper()
	get := httptest.NewRequest(http.MethodGet, "/console/login", nil)
	get.RemoteAddr = addr
	page := httptest.NewRecorder()
	f.router.ServeHTTP(page, get)
	form := url.Values{"csrf": {csrfOf(t, page.Body.String())}, "token": {token}}
	post := httptest.NewRequest(http.MethodPost, "/console/login", strings.NewReader(form.Encode()))
	post.RemoteAddr = addr
	post.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for k, v := range header {
		post.Header[k] = v
	}
	for _, ck := range page.Result().Cookies() {
		post.AddCookie(ck)
	}
	res := httptest.NewRecorder()
	f.router.ServeHTTP(res, post)
	return res
}

func wrongToken(i int) string { return fmt.Sprintf("rz_%043d", i) }

// expect fails the test unless res has status (and, for 429, the wait
// and the Portuguese message on the sign-in page).
func expect(t *testing.T, what string, res *httptest.ResponseRecorder, status int, retryAfter string) {
	t.Helper()
	if res.Code != status {
		t.Fatalf("%s: %d, want %d\n%s", what, res.Code, status, res.Body)
	}
	if status != http.StatusTooManyRequests {
		return
	}
	if got := res.Header().Get("Retry-After"); got != retryAfter {
		t.Fatalf("%s: Retry-After %q, want %q", what, got, retryAfter)
	}
	if body := res.Body.String(); !strings.Contains(body, "Muitas tentativas de entrada sem sucesso. Tente de novo em") ||
		!strings.Contains(body, `name="token"`) {
		t.Fatalf("%s: the sign-in page does not say why\n%s", what, body)
	}
}

// TestSignInFailuresAreLimitedPerAddress: after SignInFailures failed
// sign-ins from an address, the next is refused 429 with Retry-After,
// right token or not, until the window of the first failure passes (the
// console's clock, moved by the test). Sign-ins that work are not
// counted; other addresses are not held back, nor another /64 in IPv6.
func TestSignInFailuresAreLimitedPerAddress(t *testing.T) {
	t.Parallel()
	f := newBareFixture(t)
	const attacker, other = "192.0.2.1:40000", "192.0.2.2:40000"
	for i := range SignInFailures {
		expect(t, fmt.Sprintf("failure %d", i+1), f.signInFrom(t, attacker, wrongToken(i), nil), http.StatusUnauthorized, "")
	}
	window := int(SignInFailureWindow / time.Second)
	expect(t, "the right token after the failures", f.signInFrom(t, attacker, f.admin, nil), http.StatusTooManyRequests, fmt.Sprint(window))
	expect(t, "another port of the address", f.signInFrom(t, "192.0.2.1:40001", f.admin, nil), http.StatusTooManyRequests, fmt.Sprint(window))
	expect(t, "another address", f.signInFrom(t, other, f.admin, nil), http.StatusSeeOther, "")
	if n := f.sessions(t); n != 1 {
		t.Fatalf("%d sessions, want the other address's only", n)
	}

	// One failure short of the limit, sign-ins that work are not counted.
	const user = "192.0.2.3:40000"
	for i := range SignInFailures - 1 {
		expect(t, fmt.Sprintf("user's failure %d", i+1), f.signInFrom(t, user, wrongToken(100+i), nil), http.StatusUnauthorized, "")
	}
	for i := range 3 {
		expect(t, fmt.Sprintf("user's sign-in %d", i+1), f.signInFrom(t, user, f.read, nil), http.StatusSeeOther, "")
	}
	expect(t, "user's last failure", f.signInFrom(t, user, wrongToken(200), nil), http.StatusUnauthorized, "")
	expect(t, "user after the last failure", f.signInFrom(t, user, f.read, nil), http.StatusTooManyRequests, fmt.Sprint(window))

	// The window is the first failure's: a second before it ends, still
	// refused; at its end, the right token signs in again.
	f.later.Store(int64(SignInFailureWindow - time.Second))
	expect(t, "a second before the window ends", f.signInFrom(t, attacker, f.admin, nil), http.StatusTooManyRequests, "1")
	f.later.Store(int64(SignInFailureWindow))
	expect(t, "once the window has passed", f.signInFrom(t, attacker, f.admin, nil), http.StatusSeeOther, "")

	// IPv6 addresses count by their /64.
	for i := range SignInFailures {
		expect(t, fmt.Sprintf("IPv6 failure %d", i+1), f.signInFrom(t, fmt.Sprintf("[2001:db8::%x]:443", i+1), wrongToken(300+i), nil), http.StatusUnauthorized, "")
	}
	expect(t, "same /64", f.signInFrom(t, "[2001:db8::ffff]:443", f.admin, nil), http.StatusTooManyRequests, fmt.Sprint(window))
	expect(t, "another /64", f.signInFrom(t, "[2001:db8:0:1::1]:443", f.admin, nil), http.StatusSeeOther, "")
}

// TestSignInFailuresAreLimitedPerTokenValue: one token value tried from
// SignInFailures addresses is refused from any other, while the right
// token from that address still signs in; behind a proxy, the address is
// the one the proxy appended to X-Forwarded-For.
func TestSignInFailuresAreLimitedPerTokenValue(t *testing.T) {
	t.Parallel()
	f := newBareFixture(t)
	leaked := wrongToken(7)
	for i := range SignInFailures {
		expect(t, fmt.Sprintf("failure %d", i+1), f.signInFrom(t, fmt.Sprintf("198.51.100.%d:1", i+1), leaked, nil), http.StatusUnauthorized, "")
	}
	expect(t, "the value from a new address", f.signInFrom(t, "198.51.100.200:1", leaked, nil), http.StatusTooManyRequests, fmt.Sprint(int(SignInFailureWindow/time.Second)))
	expect(t, "the right token from it", f.signInFrom(t, "198.51.100.200:1", f.admin, nil), http.StatusSeeOther, "")

	f.console.BehindTLSProxy = true
	const proxy = "10.0.0.5:50000"
	xff := func(addr string) http.Header { return http.Header{"X-Forwarded-For": {"203.0.113.77, " + addr}} }
	for i := range SignInFailures {
		expect(t, fmt.Sprintf("proxied failure %d", i+1), f.signInFrom(t, proxy, wrongToken(400+i), xff("203.0.113.1")), http.StatusUnauthorized, "")
	}
	expect(t, "proxied, same client", f.signInFrom(t, proxy, f.admin, xff("203.0.113.1")), http.StatusTooManyRequests, fmt.Sprint(int(SignInFailureWindow/time.Second)))
	expect(t, "proxied, another client", f.signInFrom(t, proxy, f.admin, xff("203.0.113.2")), http.StatusSeeOther, "")
}

// TestSignInLimitHoldsBoundedCounts: addresses rotated past the table's
// size keep it at its size, the oldest dropped first; expired counts go
// as new failures come.
func TestSignInLimitHoldsBoundedCounts(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 10, 2, 12, 0, 0, 0, time.UTC)
	l := newSignInLimit(func() time.Time { return now }, 3, time.Minute, 100)
	for i := range 10_000 {
		l.failed(fmt.Sprintf("10.%d.%d.%d", i>>16, (i>>8)&255, i&255), wrongToken(i))
		if a, v := len(l.addrs.byKey), len(l.values.byKey); a > 100 || v > 100 || l.addrs.order.Len() != a || l.values.order.Len() != v {
			t.Fatalf("after %d addresses: %d and %d counts (lists %d, %d), want at most 100", i+1, a, v, l.addrs.order.Len(), l.values.order.Len())
		}
	}
	// The newest stay counted.
	for range 2 {
		l.failed("10.0.39.15", "x") // the last address: its third failure
	}
	if _, refused := l.refused("10.0.39.15", "y"); !refused {
		t.Fatal("the newest address is not counted")
	}
	now = now.Add(time.Minute)
	l.failed("192.0.2.1", "z")
	if a, v := len(l.addrs.byKey), len(l.values.byKey); a != 1 || v != 1 {
		t.Fatalf("%d address and %d value counts a window later, want 1 and 1", a, v)
	}
}
