package storm

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Delivery is one webhook notification as the PSP holds it: a stable id
// (webhook-id, the inbox key) and fixed body bytes. Every send of it, and
// every retry, carries the same id and body with a fresh timestamp.
type Delivery struct {
	ID       string `json:"id"`
	Kind     string `json:"kind"` // paid | refund
	ChargeID string `json:"charge_id"`
	RefundID string `json:"refund_id,omitempty"`
	Amount   int64  `json:"amount"`
	Body     []byte `json:"-"`
	// Forged deliveries are signed with a key razao never saw.
	Forged bool `json:"forged,omitempty"`
}

// Send roles: why a delivery was sent.
const (
	RoleFirst = "first" // the delivery's first send
	RoleTwin  = "twin"  // the same delivery to another replica at the same moment
	RoleLate  = "late"  // a redelivery after it was accepted
	RoleForge = "forged"
)

// Attempt is one HTTP request of one send.
type Attempt struct {
	Delivery string    `json:"delivery"`
	Role     string    `json:"role"`
	Replica  int       `json:"replica"`
	N        int       `json:"n"` // 0 for the first try of the send
	Start    time.Time `json:"start"`
	End      time.Time `json:"end"`
	Code     int       `json:"code"`             // 0: no HTTP answer
	Status   string    `json:"status,omitempty"` // the body's status
	Err      string    `json:"err,omitempty"`
}

// OK reports a 2xx answer.
func (a Attempt) OK() bool { return a.Code >= 200 && a.Code < 300 }

// Recorder keeps every attempt and counts sends.
type Recorder struct {
	mu       sync.Mutex
	attempts []Attempt
	sends    int
}

func (r *Recorder) add(a Attempt) {
	r.mu.Lock()
	r.attempts = append(r.attempts, a)
	r.mu.Unlock()
}

func (r *Recorder) send() {
	r.mu.Lock()
	r.sends++
	r.mu.Unlock()
}

// answeredSince reports whether an attempt that started at or after t got
// an HTTP answer.
func (r *Recorder) answeredSince(t time.Time) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := len(r.attempts) - 1; i >= 0; i-- {
		if a := r.attempts[i]; !a.Start.Before(t) && a.Code != 0 {
			return true
		}
	}
	return false
}

// Attempts returns a copy of the attempts so far.
func (r *Recorder) Attempts() []Attempt {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Attempt(nil), r.attempts...)
}

// Sends is how many sends were made (each with one or more attempts).
func (r *Recorder) Sends() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.sends
}

// PSP signs and sends deliveries the way a Standard Webhooks sender does,
// retrying a send on any non-2xx answer or transport error with a bounded
// exponential back-off, to a replica chosen at random (a load balancer).
type PSP struct {
	Targets     []string // replica base URLs
	Endpoint    string
	MaxAttempts int
	key         []byte
	forgedKey   []byte
	client      *http.Client
	Rec         *Recorder
}

// NewPSP returns a sender for the standard endpoint with secret (whsec_...).
func NewPSP(targets []string, endpoint, secret string, maxAttempts int) (*PSP, error) {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil {
		return nil, fmt.Errorf("secret: %w", err)
	}
	if maxAttempts <= 0 {
		maxAttempts = 60
	}
	tr := &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
		MaxIdleConns:        256,
		MaxIdleConnsPerHost: 64,
		IdleConnTimeout:     30 * time.Second,
	}
	return &PSP{Targets: targets, Endpoint: endpoint, MaxAttempts: maxAttempts, key: key,
		forgedKey: []byte("not-the-secret-" + randomHex(8)),
		client:    &http.Client{Transport: tr, Timeout: 40 * time.Second}, Rec: &Recorder{}}, nil
}

// Close releases idle connections.
func (p *PSP) Close() { p.client.CloseIdleConnections() }

// Send sends d to replica first and, on failure, retries it up to
// MaxAttempts in all. It returns the last attempt. A forged delivery is
// sent once (the forger does not matter; the answer does).
func (p *PSP) Send(ctx context.Context, d Delivery, first int, role string) Attempt {
	p.Rec.send()
	target := first
	var last Attempt
	backoff := 50 * time.Millisecond
	for n := 0; n < p.MaxAttempts; n++ {
		last = p.attempt(ctx, d, target, role, n)
		p.Rec.add(last)
		if last.OK() || d.Forged || !retryable(last.Code) || ctx.Err() != nil {
			return last
		}
		sleep := backoff/2 + rand.N(backoff/2+1)
		select {
		case <-ctx.Done():
			return last
		case <-time.After(sleep):
		}
		backoff = min(2*backoff, time.Second)
		target = rand.IntN(len(p.Targets))
	}
	return last
}

// retryable: a PSP retries on transport errors, 408, 429 and 5xx. Any
// other 4xx to an authentic delivery is a verdict (and, here, a finding).
func retryable(code int) bool {
	return code == 0 || code == http.StatusRequestTimeout || code == http.StatusTooManyRequests || code >= 500
}

func (p *PSP) attempt(ctx context.Context, d Delivery, replica int, role string, n int) Attempt {
	a := Attempt{Delivery: d.ID, Role: role, Replica: replica, N: n, Start: time.Now()}
	key := p.key
	if d.Forged {
		key = p.forgedKey
	}
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	mac := hmac.New(sha256.New, key)
	io.WriteString(mac, d.ID+"."+ts+".")
	mac.Write(d.Body)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.Targets[replica]+"/webhooks/"+p.Endpoint, bytes.NewReader(d.Body))
	if err != nil {
		a.End, a.Err = time.Now(), err.Error()
		return a
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("webhook-id", d.ID)
	req.Header.Set("webhook-timestamp", ts)
	req.Header.Set("webhook-signature", "v1,"+base64.StdEncoding.EncodeToString(mac.Sum(nil)))
	resp, err := p.client.Do(req)
	if err != nil {
		a.End, a.Err = time.Now(), err.Error()
		return a
	}
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	resp.Body.Close()
	a.End, a.Code = time.Now(), resp.StatusCode
	if err != nil {
		// The status line came but the body did not: the PSP cannot trust
		// it, so it counts as no answer (and will be retried).
		a.Code, a.Err = 0, "reading body: "+err.Error()
		return a
	}
	var body struct {
		Status string `json:"status"`
	}
	if json.Unmarshal(raw, &body) == nil {
		a.Status = body.Status
	}
	return a
}

// api calls the /v1 API with the bearer token and returns the status code.
func apiCall(ctx context.Context, client *http.Client, base, token, method, path string, body any) (int, []byte, error) {
	b, err := json.Marshal(body)
	if err != nil {
		return 0, nil, err
	}
	req, err := http.NewRequestWithContext(ctx, method, base+path, bytes.NewReader(b))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, raw, nil
}

// standardBody is razao's own event body for the standard scheme.
func standardBody(typ, chargeID, refundID string, amount int64, at time.Time) []byte {
	data := map[string]any{"charge_id": chargeID, "amount": amount, "occurred_at": at.Format(time.RFC3339)}
	if refundID != "" {
		data["refund_id"] = refundID
	}
	b, _ := json.Marshal(map[string]any{"type": typ, "timestamp": at.Format(time.RFC3339), "data": data})
	return b
}
