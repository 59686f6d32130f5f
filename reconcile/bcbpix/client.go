// Package bcbpix is a client of the Banco Central Pix API's statement:
// GET /pix (the Pix received in a window, page by page) and GET
// /pix/{e2eid} (one Pix), with OAuth 2.0 client credentials over mutual
// TLS, as bank PSPs expose it. It reads; it never decides anything.
package bcbpix

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"
)

// Defaults of Config.
const (
	DefaultPageSize   = 1000
	DefaultTimeout    = 30 * time.Second
	DefaultMaxRetries = 5
	DefaultMaxWait    = 2 * time.Minute
	// MaxPageBytes bounds one answer: 1,000 items with their devoluções
	// are well under 4 MiB.
	MaxPageBytes = 16 << 20
)

// Config is one PSP's Pix API.
type Config struct {
	// BaseURL is the API's base, without /pix.
	BaseURL  string
	TokenURL string
	ClientID string
	// ClientSecret is never logged nor put in an error.
	ClientSecret string
	Scopes       []string // default pix.read
	// TLS holds the client certificate the PSP issued and the CAs its
	// server certificate chains to; it is used for the token too.
	TLS *tls.Config
	// PageSize is itensPorPagina, 1..1000 (default 1000).
	PageSize int
	// Timeout bounds each request, the token's included (default 30 s).
	Timeout time.Duration
	// MaxRetries bounds the retries of one request answered 429 or 503.
	MaxRetries int
	// MaxWait caps one wait, whatever Retry-After asks (default 2 min).
	MaxWait time.Duration
	// Wait waits d or until ctx ends; nil waits on a timer. Tests record
	// the waits instead of spending them.
	Wait func(ctx context.Context, d time.Duration) error
}

// Client reads one PSP's statement. Its token is fetched once and reused
// until it expires.
type Client struct {
	cfg  Config
	base *url.URL
	http *http.Client
}

// ErrNotFound is GET /pix/{e2eid}'s 404.
var ErrNotFound = errors.New("pix not found")

// StatusError is an answer the client does not retry, or one it gave up
// retrying.
type StatusError struct {
	Status int
	Body   string // the first bytes of the answer, for the operator
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("pix api answered %d: %s", e.Status, e.Body)
}

// New checks cfg and returns a client.
func New(cfg Config) (*Client, error) {
	base, err := url.Parse(strings.TrimSuffix(cfg.BaseURL, "/"))
	if err != nil || base.Scheme != "https" || base.Host == "" {
		return nil, fmt.Errorf("bcb-pix: base_url %q must be an https URL", cfg.BaseURL)
	}
	if tu, err := url.Parse(cfg.TokenURL); err != nil || tu.Scheme != "https" || tu.Host == "" {
		return nil, fmt.Errorf("bcb-pix: token_url %q must be an https URL", cfg.TokenURL)
	}
	if cfg.ClientID == "" || cfg.ClientSecret == "" {
		return nil, errors.New("bcb-pix: client_id and the client secret are required")
	}
	if cfg.TLS == nil || len(cfg.TLS.Certificates) == 0 && cfg.TLS.GetClientCertificate == nil {
		return nil, errors.New("bcb-pix: a client certificate is required (mutual TLS)")
	}
	if cfg.PageSize == 0 {
		cfg.PageSize = DefaultPageSize
	}
	if cfg.PageSize < 1 || cfg.PageSize > 1000 {
		return nil, fmt.Errorf("bcb-pix: page_size %d must be 1..1000", cfg.PageSize)
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.MaxRetries <= 0 {
		cfg.MaxRetries = DefaultMaxRetries
	}
	if cfg.MaxWait <= 0 {
		cfg.MaxWait = DefaultMaxWait
	}
	if cfg.Wait == nil {
		cfg.Wait = sleep
	}
	if len(cfg.Scopes) == 0 {
		cfg.Scopes = []string{"pix.read"}
	}
	tr := &http.Transport{TLSClientConfig: cfg.TLS.Clone(), ForceAttemptHTTP2: true,
		TLSHandshakeTimeout: 10 * time.Second, ResponseHeaderTimeout: cfg.Timeout, MaxIdleConnsPerHost: 4}
	mtls := &http.Client{Transport: tr, Timeout: cfg.Timeout, CheckRedirect: refuseRedirect}
	cc := clientcredentials.Config{ClientID: cfg.ClientID, ClientSecret: cfg.ClientSecret,
		TokenURL: cfg.TokenURL, Scopes: cfg.Scopes, AuthStyle: oauth2.AuthStyleInHeader}
	// The token source keeps this context for every token it fetches: it
	// carries the mutual-TLS client, whose Timeout bounds each fetch.
	tokenCtx := context.WithValue(context.Background(), oauth2.HTTPClient, mtls)
	ts := oauth2.ReuseTokenSource(nil, cc.TokenSource(tokenCtx))
	// Each attempt is bounded by its context (see once); a Client.Timeout
	// here would ask oauth2's Transport for the CancelRequest it lacks.
	return &Client{cfg: cfg, base: base, http: &http.Client{
		Transport: &oauth2.Transport{Source: ts, Base: tr}, CheckRedirect: refuseRedirect}}, nil
}

// refuseRedirect follows no redirect, for the statement's calls and the
// token's alike: oauth2.Transport sets the bearer token on every request
// it sends, a redirected one included, so a redirect followed to another
// host would hand it the token (and the token endpoint's, the client's
// secret), and read that host's answer as the statement.
func refuseRedirect(req *http.Request, via []*http.Request) error {
	e := &RedirectError{To: req.URL.Redacted()}
	if req.Response != nil {
		e.Status = req.Response.StatusCode
	}
	from := *via[len(via)-1].URL
	from.RawQuery = ""
	e.From = from.Redacted()
	if len(e.To) > 300 {
		e.To = strings.ToValidUTF8(e.To[:300], "") + "…"
	}
	return e
}

// RedirectError is an answer that redirects: never followed. It names
// the hop, for the operator to take up with the PSP.
type RedirectError struct {
	Status   int
	From, To string // the URL redirected (without its query), and its Location
}

func (e *RedirectError) Error() string {
	return fmt.Sprintf("%s answered %d redirecting to %s: a redirect is not followed", e.From, e.Status, e.To)
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Page is one page of GET /pix, its paging checked (see readPage).
type Page struct {
	// Body is the answer as received; a run keeps its length and SHA-256.
	Body []byte
	// Items are its Pix, each as received.
	Items []json.RawMessage
	// Number is paginaAtual; PageSize itensPorPagina; Count
	// quantidadeDePaginas; Total quantidadeTotalDeItens.
	Number, PageSize, Count int
	Total                   int64
}

// pageAnswer is PixConsultados. Every field is a pointer, or a slice
// that stays nil when absent or null, so that one the answer left out is
// told from a zero.
type pageAnswer struct {
	Parametros *struct {
		Paginacao *struct {
			PaginaAtual            *int   `json:"paginaAtual"`
			ItensPorPagina         *int   `json:"itensPorPagina"`
			QuantidadeDePaginas    *int   `json:"quantidadeDePaginas"`
			QuantidadeTotalDeItens *int64 `json:"quantidadeTotalDeItens"`
		} `json:"paginacao"`
	} `json:"parametros"`
	Pix []json.RawMessage `json:"pix"`
}

// ErrPaging is a page whose paging is missing or does not add up: read
// as it stands, a statement cut short would read as a whole one.
var ErrPaging = errors.New("the statement's paging does not add up, so it may be cut: it is not read")

// readPage reads the answer to page number of itensPorPagina asked. The
// paging is required, and must add up within the page: a page before
// the last is full, the last holds what the total leaves, a page past
// the last holds nothing. (Whether the pages of a statement agree with
// one another is the reader's to judge, over the pages it read.)
func readPage(body []byte, number, asked int) (Page, error) {
	fail := func(format string, args ...any) (Page, error) {
		return Page{}, fmt.Errorf("bcb-pix: GET /pix page %d: %s (%w)", number, fmt.Sprintf(format, args...), ErrPaging)
	}
	var a pageAnswer
	if err := json.Unmarshal(body, &a); err != nil {
		return Page{}, fmt.Errorf("bcb-pix: GET /pix page %d: not a page: %w", number, err)
	}
	switch {
	case a.Parametros == nil:
		return fail("parametros is missing")
	case a.Parametros.Paginacao == nil:
		return fail("parametros.paginacao is missing")
	}
	pg := a.Parametros.Paginacao
	for _, f := range []struct {
		name    string
		missing bool
	}{{"paginaAtual", pg.PaginaAtual == nil}, {"itensPorPagina", pg.ItensPorPagina == nil},
		{"quantidadeDePaginas", pg.QuantidadeDePaginas == nil}, {"quantidadeTotalDeItens", pg.QuantidadeTotalDeItens == nil}} {
		if f.missing {
			return fail("parametros.paginacao.%s is missing", f.name)
		}
	}
	if a.Pix == nil {
		return fail("pix is missing or null")
	}
	p := Page{Body: body, Items: a.Pix, Number: *pg.PaginaAtual, PageSize: *pg.ItensPorPagina,
		Count: *pg.QuantidadeDePaginas, Total: *pg.QuantidadeTotalDeItens}
	n, per := int64(len(p.Items)), int64(p.PageSize)
	pages := (p.Total + per - 1) / max(per, 1)
	// What the total leaves for this page.
	want := min(max(p.Total-int64(number)*per, 0), per)
	switch {
	case p.Number != number:
		return fail("the answer is page %d", p.Number)
	case p.PageSize < 1 || p.PageSize > asked:
		return fail("itensPorPagina %d, where 1..%d (as asked) was expected", p.PageSize, asked)
	case p.Count < 0 || p.Total < 0:
		return fail("negative counts (quantidadeDePaginas %d, quantidadeTotalDeItens %d)", p.Count, p.Total)
	case int64(p.Count) != pages && !(p.Total == 0 && p.Count <= 1):
		return fail("quantidadeDePaginas %d, where quantidadeTotalDeItens %d at itensPorPagina %d makes %d",
			p.Count, p.Total, p.PageSize, pages)
	case n == want:
		return p, nil
	case n > per:
		return fail("%d items, more than its itensPorPagina %d", n, per)
	case number < p.Count-1:
		return fail("%d items on page %d of %d, not the %d of a full page: a page before the last must be full",
			n, number, p.Count, per)
	case number >= p.Count:
		return fail("%d items on a page past the last (quantidadeDePaginas %d)", n, p.Count)
	}
	return fail("%d items on the last page, where quantidadeTotalDeItens %d at itensPorPagina %d leaves %d",
		n, p.Total, p.PageSize, want)
}

// Time is how the API's inicio and fim are written.
const Time = time.RFC3339Nano

// Query is what GET /pix is asked for: the Pix received (by their
// horario) in [Inicio, Fim], both ends inclusive as the specification
// says; with RefundsOnly, only those that carry a devolução
// (devolucaoPresente=true), which is how refunds settled long after
// their Pix are found.
type Query struct {
	Inicio, Fim time.Time
	RefundsOnly bool
}

// Page fetches page number (from 0) of the Pix q asks for.
func (c *Client) Page(ctx context.Context, query Query, number int) (Page, error) {
	q := url.Values{}
	q.Set("inicio", query.Inicio.UTC().Format(Time))
	q.Set("fim", query.Fim.UTC().Format(Time))
	if query.RefundsOnly {
		q.Set("devolucaoPresente", "true")
	}
	q.Set("paginacao.paginaAtual", strconv.Itoa(number))
	q.Set("paginacao.itensPorPagina", strconv.Itoa(c.cfg.PageSize))
	body, err := c.get(ctx, "/pix", q)
	if err != nil {
		return Page{}, fmt.Errorf("bcb-pix: GET /pix page %d: %w", number, err)
	}
	return readPage(body, number, c.cfg.PageSize)
}

// Pix fetches one Pix by its endToEndId: the way to settle one doubt.
func (c *Client) Pix(ctx context.Context, e2eid string) (json.RawMessage, error) {
	if len(e2eid) != 32 || strings.Trim(e2eid, "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz") != "" {
		return nil, fmt.Errorf("bcb-pix: endToEndId must be 32 alphanumerics")
	}
	body, err := c.get(ctx, "/pix/"+e2eid, nil)
	if err != nil {
		return nil, fmt.Errorf("bcb-pix: GET /pix/%s: %w", e2eid, err)
	}
	return body, nil
}

// get GETs path, retrying 429 and 503 with back-off (Retry-After when
// the PSP says how long), each attempt bounded by the client's Timeout.
func (c *Client) get(ctx context.Context, path string, q url.Values) ([]byte, error) {
	u := *c.base
	u.Path += path
	u.RawQuery = q.Encode()
	for attempt := 0; ; attempt++ {
		body, wait, err := c.once(ctx, u.String(), attempt)
		if err == nil || wait == 0 {
			return body, err
		}
		if attempt >= c.cfg.MaxRetries {
			return nil, fmt.Errorf("gave up after %d retries: %w", attempt, err)
		}
		if err := c.cfg.Wait(ctx, wait); err != nil {
			return nil, err
		}
	}
}

// once makes one attempt; a non-zero wait says it may be retried after it.
func (c *Client) once(ctx context.Context, u string, attempt int) ([]byte, time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, 0, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.http.Do(req)
	var redirect *RedirectError
	if errors.As(err, &redirect) {
		// Without the url.Errors around it, which name the redirect's
		// target as the request.
		return nil, 0, redirect
	}
	if err != nil {
		return nil, 0, scrub(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxPageBytes+1))
	if err != nil {
		return nil, 0, fmt.Errorf("read answer: %w", err)
	}
	if len(body) > MaxPageBytes {
		return nil, 0, fmt.Errorf("answer larger than %d bytes", MaxPageBytes)
	}
	switch {
	case resp.StatusCode == http.StatusOK:
		return body, 0, nil
	case resp.StatusCode == http.StatusNotFound:
		return nil, 0, ErrNotFound
	case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable:
		return nil, c.backoff(resp.Header.Get("Retry-After"), attempt), statusError(resp.StatusCode, body)
	}
	return nil, 0, statusError(resp.StatusCode, body)
}

// backoff is how long to wait before the next attempt: what Retry-After
// says (seconds or an HTTP date), else 1 s doubling; never over MaxWait.
func (c *Client) backoff(retryAfter string, attempt int) time.Duration {
	d := time.Second << min(attempt, 10)
	if s, err := strconv.Atoi(strings.TrimSpace(retryAfter)); err == nil && s >= 0 {
		d = time.Duration(s) * time.Second
	} else if t, err := http.ParseTime(retryAfter); err == nil {
		d = time.Until(t)
	}
	return min(max(d, time.Millisecond), c.cfg.MaxWait)
}

func statusError(code int, body []byte) error {
	b := string(body)
	if len(b) > 200 {
		b = b[:200]
	}
	return &StatusError{Status: code, Body: strings.ToValidUTF8(b, "?")}
}

// scrub keeps a token fetch's failure from carrying more than its status:
// oauth2's error holds the token endpoint's whole answer.
func scrub(err error) error {
	var re *oauth2.RetrieveError
	if errors.As(err, &re) {
		code := ""
		if re.Response != nil {
			code = strconv.Itoa(re.Response.StatusCode)
		}
		return fmt.Errorf("token refused (%s %s)", code, re.ErrorCode)
	}
	return err
}
