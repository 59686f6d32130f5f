package console

import (
	"container/list"
	"crypto/sha256"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Failed sign-ins allowed per client address, and per token value tried,
// in a window that starts at the first of them: past that, sign-in from
// the address (or with the value) is refused 429, right token or not,
// until the window ends.
const (
	SignInFailures      = 10
	SignInFailureWindow = 15 * time.Minute
	// signInKeys bounds the addresses (and, apart, the values) counted
	// at once. Past it the oldest count is dropped: an attacker rotating
	// addresses makes the table no larger, and gains no attempts it
	// would not have from its new addresses anyway.
	signInKeys = 10_000
)

// signInLimit counts the console's failed sign-ins. It is per process:
// behind n replicas an address gets n times the attempts. That is
// accepted because it is not what protects a token (256 random bits
// cannot be guessed at any rate); it bounds what failing sign-ins cost
// the database and keeps them from going unanswered, and a counter in the
// database would cost a write per failure, the load it is there to bound.
type signInLimit struct {
	mu     sync.Mutex
	now    func() time.Time
	max    int
	window time.Duration
	// addrs and values each hold at most size counts, oldest first (a
	// count starts with its first failure and every window is as long, so
	// the oldest is also the first to expire).
	addrs, values counts
}

type counts struct {
	size  int
	byKey map[string]*list.Element
	order list.List // of *failures
}

type failures struct {
	key   string
	first time.Time
	n     int
}

func newSignInLimit(now func() time.Time, max int, window time.Duration, size int) *signInLimit {
	return &signInLimit{now: now, max: max, window: window,
		addrs:  counts{size: size, byKey: map[string]*list.Element{}},
		values: counts{size: size, byKey: map[string]*list.Element{}}}
}

// refused reports whether a sign-in from addr with value is refused, and
// for how long yet: either has failed max times in its window.
func (l *signInLimit) refused(addr, value string) (time.Duration, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	wait := max(l.addrs.blocked(now, addr, l.max, l.window), l.values.blocked(now, valueKey(value), l.max, l.window))
	return wait, wait > 0
}

// failed counts a failed sign-in from addr with value.
func (l *signInLimit) failed(addr, value string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	l.addrs.add(now, addr, l.window)
	l.values.add(now, valueKey(value), l.window)
}

// blocked is how long key stays refused: the rest of its window once it
// has failed max times.
func (c *counts) blocked(now time.Time, key string, max int, window time.Duration) time.Duration {
	e, ok := c.byKey[key]
	if !ok {
		return 0
	}
	f := e.Value.(*failures)
	left := f.first.Add(window).Sub(now)
	if f.n < max || left <= 0 {
		return 0
	}
	return left
}

func (c *counts) add(now time.Time, key string, window time.Duration) {
	// Expired counts are dropped from the front as failures come in.
	for e := c.order.Front(); e != nil; e = c.order.Front() {
		f := e.Value.(*failures)
		if now.Before(f.first.Add(window)) {
			break
		}
		c.remove(e)
	}
	if e, ok := c.byKey[key]; ok {
		e.Value.(*failures).n++
		return
	}
	if c.order.Len() >= c.size {
		c.remove(c.order.Front())
	}
	c.byKey[key] = c.order.PushBack(&failures{key: key, first: now, n: 1})
}

func (c *counts) remove(e *list.Element) {
	delete(c.byKey, c.order.Remove(e).(*failures).key)
}

// valueKey is what a tried token value is counted under: its digest, so
// no plaintext (a mistyped real token, say) is kept.
func valueKey(value string) string {
	sum := sha256.Sum256([]byte(value))
	return string(sum[:16])
}

// clientAddr is the address sign-ins are counted under: the peer's, or,
// behind a proxy, the one the proxy appended last to X-Forwarded-For (a
// client reaching razao past the proxy could write any there, which buys
// it no more than rotating addresses). An IPv6 address counts as its
// /64, which one client usually holds whole.
func (c *Console) clientAddr(r *http.Request) string {
	s := r.RemoteAddr
	if host, _, err := net.SplitHostPort(s); err == nil {
		s = host
	}
	if c.BehindTLSProxy {
		if xff := r.Header.Values("X-Forwarded-For"); len(xff) > 0 {
			last := xff[len(xff)-1]
			if i := strings.LastIndexByte(last, ','); i >= 0 {
				last = last[i+1:]
			}
			if _, err := netip.ParseAddr(strings.TrimSpace(last)); err == nil {
				s = strings.TrimSpace(last)
			}
		}
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return s
	}
	a = a.Unmap()
	if a.Is6() {
		p, _ := a.Prefix(64)
		return p.String()
	}
	return a.String()
}

// waitText is how long the sign-in page says to wait, rounded up.
func waitText(wait time.Duration) string {
	if wait <= time.Minute {
		return strconv.FormatInt(int64((wait+time.Second-1)/time.Second), 10) + " s"
	}
	return strconv.FormatInt(int64((wait+time.Minute-1)/time.Minute), 10) + " min"
}
