package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// isLoopbackHost reports whether host is a loopback name or address:
// "localhost", 127.0.0.0/8 or ::1. Nothing else is ever a target.
func isLoopbackHost(host string) bool {
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// loopbackURL parses the service's base URL and refuses any host that is
// not loopback.
func loopbackURL(raw string) (*url.URL, error) {
	u, err := url.Parse(strings.TrimRight(raw, "/"))
	if err != nil {
		return nil, fmt.Errorf("-url: %w", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("-url %q: scheme must be http or https", raw)
	}
	if u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("-url %q: give scheme://host:port[/prefix] only", raw)
	}
	if !isLoopbackHost(u.Hostname()) {
		return nil, fmt.Errorf("-url %q: host %q is not loopback; this tool only sends traffic to 127.0.0.0/8, ::1 or localhost", raw, u.Hostname())
	}
	return u, nil
}

// loopbackDial dials only loopback addresses: a name is resolved first and
// only its loopback addresses are dialled, so no packet leaves the machine
// whatever /etc/hosts says.
func loopbackDial(d *net.Dialer) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, err
		}
		if !isLoopbackHost(host) {
			return nil, fmt.Errorf("refusing to dial non-loopback %s", addr)
		}
		if ip := net.ParseIP(host); ip != nil {
			return d.DialContext(ctx, network, addr)
		}
		ips, err := net.DefaultResolver.LookupIPAddr(ctx, host)
		if err != nil {
			return nil, err
		}
		for _, ip := range ips {
			if ip.IP.IsLoopback() {
				return d.DialContext(ctx, network, net.JoinHostPort(ip.IP.String(), port))
			}
		}
		return nil, fmt.Errorf("refusing to dial %s: it resolves to no loopback address", host)
	}
}

// newTransport is tuned so that the client is not the bottleneck: keep-alive
// connections, as many idle ones per host as there are workers, no proxy
// (a proxy from the environment would send traffic off the machine), no
// compression.
func newTransport(idle int) *http.Transport {
	d := &net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}
	return &http.Transport{
		Proxy:                 nil,
		DialContext:           loopbackDial(d),
		MaxIdleConns:          idle + 16,
		MaxIdleConnsPerHost:   idle,
		MaxConnsPerHost:       0,
		IdleConnTimeout:       50 * time.Second, // razao closes idle connections after 60 s
		DisableCompression:    true,
		ForceAttemptHTTP2:     false,
		ResponseHeaderTimeout: 60 * time.Second,
		ExpectContinueTimeout: 0,
	}
}

func newClient(t *http.Transport) *http.Client {
	return &http.Client{
		Transport: t,
		Timeout:   60 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return errors.New("redirects are refused: they could leave loopback")
		},
	}
}

// loader runs scenarios against one service.
type loader struct {
	base      *url.URL
	opt       options
	scheme    scheme
	token     string
	runID     string
	out       io.Writer
	transport *http.Transport
	client    *http.Client
	db        *sql.DB
	// streamBytesPerS is what one stream of the sse scenario received a
	// second, for the fanout scenario after it (0: sse has not run).
	streamBytesPerS float64
}

func newLoader(base *url.URL, o options, sc scheme, token string, out io.Writer) *loader {
	t := newTransport(o.c)
	return &loader{base: base, opt: o, scheme: sc, token: token, runID: newRunID(), out: out,
		transport: t, client: newClient(t)}
}

func (l *loader) close() {
	l.transport.CloseIdleConnections()
	if l.db != nil {
		l.db.Close()
	}
}

func (l *loader) logf(format string, args ...any) {
	fmt.Fprintf(l.out, "  . "+format+"\n", args...)
}

// reply is one answer, or the error that stood in for it.
type reply struct {
	code   int
	status string // the "status" field of razao's JSON answer
	body   []byte
	err    error
	dur    time.Duration
	reused bool
}

// do sends one request and reads the whole answer.
func (l *loader) do(ctx context.Context, client *http.Client, method, path string, body []byte, h http.Header) reply {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	var reused atomic.Bool
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) { reused.Store(i.Reused) }})
	req, err := http.NewRequestWithContext(ctx, method, l.base.String()+path, rd)
	if err != nil {
		return reply{err: err}
	}
	for k, vs := range h {
		req.Header[k] = vs
	}
	start := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		return reply{err: err, dur: time.Since(start)}
	}
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	resp.Body.Close()
	r := reply{code: resp.StatusCode, body: raw, err: err, dur: time.Since(start), reused: reused.Load()}
	var st struct {
		Status string `json:"status"`
	}
	if json.Unmarshal(raw, &st) == nil {
		r.status = st.Status
	}
	return r
}

func (l *loader) apiHeader() http.Header {
	h := http.Header{"Content-Type": {"application/json"}}
	if l.token != "" {
		h.Set("Authorization", "Bearer "+l.token)
	}
	return h
}

// health fails fast when nothing serves at the URL.
func (l *loader) health(ctx context.Context) error {
	c, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	r := l.do(c, l.client, http.MethodGet, "/readyz", nil, nil)
	if r.err != nil {
		return fmt.Errorf("%s/readyz: %w", l.base, r.err)
	}
	if r.code != http.StatusOK {
		return fmt.Errorf("%s/readyz answered %d: %s", l.base, r.code, bytes.TrimSpace(r.body))
	}
	return nil
}

// chargeSpec is a charge the scenario registers.
type chargeSpec struct {
	ID           string `json:"id"`
	Amount       int64  `json:"amount"`
	Partner      string `json:"partner"`
	CommissionBP int64  `json:"commission_bp"`
	Access       string `json:"access"`
}

// commission is razao's floor(A·r/10000).
func (c chargeSpec) commission() int64 { return c.Amount * c.CommissionBP / 10000 }

// register creates the charges through the API at concurrency c (not
// timed as load). Every charge must come back 201.
func (l *loader) register(ctx context.Context, specs []chargeSpec) error {
	var mu sync.Mutex
	var firstErr error
	var failed int
	forEach(ctx, len(specs), l.opt.c, func(ctx context.Context, i int) {
		body, _ := json.Marshal(specs[i])
		r := l.do(ctx, l.client, http.MethodPost, "/v1/charges", body, l.apiHeader())
		if r.err == nil && r.code == http.StatusCreated {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		failed++
		if firstErr == nil {
			if r.err != nil {
				firstErr = r.err
			} else {
				firstErr = fmt.Errorf("POST /v1/charges %s -> %d %s", specs[i].ID, r.code, bytes.TrimSpace(r.body))
			}
		}
	})
	if firstErr != nil {
		return fmt.Errorf("%d of %d charges not registered; first: %w", failed, len(specs), firstErr)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("registering charges: %w", err)
	}
	return nil
}

// chargeDetail is what GET /v1/charges/{id} answers, as far as checked here.
type chargeDetail struct {
	ID             string `json:"id"`
	Amount         int64  `json:"amount"`
	State          string `json:"state"`
	PaidAmount     *int64 `json:"paid_amount"`
	Commission     int64  `json:"commission"`
	RefundedAmount int64  `json:"refunded_amount"`
	Refunds        []struct {
		RefundID string `json:"refund_id"`
		Amount   int64  `json:"amount"`
	} `json:"refunds"`
	PostingSets []struct {
		ID       int64  `json:"id"`
		Kind     string `json:"kind"`
		Amount   int64  `json:"amount"`
		Postings []struct {
			Account string `json:"account"`
			Amount  int64  `json:"amount"`
		} `json:"postings"`
	} `json:"posting_sets"`
	AccessGrant *struct {
		Access string `json:"access"`
	} `json:"access_grant"`
}

func (l *loader) getCharge(ctx context.Context, id string) (chargeDetail, error) {
	var d chargeDetail
	r := l.do(ctx, l.client, http.MethodGet, "/v1/charges/"+url.PathEscape(id), nil, l.apiHeader())
	if r.err != nil {
		return d, r.err
	}
	if r.code != http.StatusOK {
		return d, fmt.Errorf("GET /v1/charges/%s -> %d %s", id, r.code, bytes.TrimSpace(r.body))
	}
	if err := json.Unmarshal(r.body, &d); err != nil {
		return d, fmt.Errorf("GET /v1/charges/%s: %w", id, err)
	}
	return d, nil
}

// forEach runs fn(i) for i in [0, n) on c workers until done or ctx ends.
func forEach(ctx context.Context, n, c int, fn func(ctx context.Context, i int)) {
	var next atomic.Int64
	var wg sync.WaitGroup
	if c > n {
		c = n
	}
	for w := 0; w < c; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				fn(ctx, i)
			}
		}()
	}
	wg.Wait()
}
