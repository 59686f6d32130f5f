package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/razao/razao/webhook/psp"
)

// demo drives a running razao the way a PSP and the selling app would, and
// prints every answer: a new user sees deduplication, the lock, a refund
// and a forgery refused, then the balances they left.
type demo struct {
	base, token, hodleSecret, stdSecret string
	out                                 io.Writer
	client                              *http.Client
}

func cmdDemo(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	d := demo{out: stdout, client: &http.Client{Timeout: 30 * time.Second}}
	fs := newFlagSet("demo", stderr)
	fs.StringVar(&d.base, "url", envOr("RAZAO_URL", "http://127.0.0.1:8080"), "base URL of the running service ($RAZAO_URL)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	d.token = os.Getenv("RAZAO_API_TOKEN")
	d.hodleSecret = os.Getenv("RAZAO_DEV_HODLE_SECRET")
	d.stdSecret = os.Getenv("RAZAO_DEV_STANDARD_SECRET")
	if err := d.preflight(); err != nil {
		return err
	}
	if d.hodleSecret == "" || d.stdSecret == "" {
		return fmt.Errorf("set RAZAO_DEV_HODLE_SECRET and RAZAO_DEV_STANDARD_SECRET (make demo reads them from .dev/secrets.env)")
	}
	return d.run()
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

func (d *demo) run() error {
	run := randomHex(4)
	order, other := "demo-"+run, "demo-"+run+"-b"
	d.step("register two charges of R$ 49,90 with a 10% partner commission")
	for _, id := range []string{order, other} {
		d.api("POST", "/v1/charges", fmt.Sprintf(`{"id":%q,"amount":4990,"partner":"parceiro-1","commission_bp":1000,"access":"curso:go"}`, id))
	}
	paid := fmt.Sprintf(`{"event":"DEPOSIT_ASSET_SUCCESS","data":{"trackId":"track-%s","externalId":%q,"valueInBrl":"49.90"}}`, run, order)
	d.step("hodle: signed confirmation")
	d.hodle(paid, d.hodleSecret)
	d.step("hodle: the same delivery again (deduplicated by the inbox)")
	d.hodle(paid, d.hodleSecret)
	d.step("standard: two payments of one charge at the same moment (two webhook-ids; the charge row lock serialises them: one pays, the other is a second_payment divergence)")
	var wg sync.WaitGroup
	for i := 0; i < 2; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			body := fmt.Sprintf(`{"type":"charge.paid","timestamp":%q,"data":{"charge_id":%q,"amount":4990}}`, time.Now().UTC().Format(time.RFC3339), other)
			d.standard(fmt.Sprintf("msg-%s-%d", run, i), body)
		}()
	}
	wg.Wait()
	d.step("hodle: partial refund of R$ 10,00")
	d.hodle(fmt.Sprintf(`{"event":"DEPOSIT_ASSET_REFUNDED","data":{"eventId":"refund-%s","externalId":%q,"valueInBrl":"10.00"}}`, run, order), d.hodleSecret)
	d.step("forged: a confirmation signed with the wrong secret (refused, nothing stored)")
	d.hodle(strings.Replace(paid, "track-", "forged-", 1), "not-the-secret")
	// Each delivery was answered once stored; it is applied a moment later.
	waited := time.Now()
	applied := d.waitState(order, "partially_refunded") && d.waitState(other, "paid")
	d.step("the charge, its posting sets and its grant")
	if applied {
		fmt.Fprintf(d.out, "(each delivery was answered once stored durably, and applied right after: %d ms of waiting here)\n",
			time.Since(waited).Milliseconds())
	}
	d.api("GET", "/v1/charges/"+order, "")
	d.step("balances of the whole ledger (centavos; debits positive)")
	d.api("GET", "/v1/balances", "")
	return nil
}

// waitState waits, quietly and for a few seconds at most, until the charge
// is in state: deliveries are applied right after the answer, not before.
func (d *demo) waitState(id, state string) bool {
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := d.chargeState(id)
		if got == state {
			return true
		}
		if time.Now().After(deadline) {
			fmt.Fprintf(d.out, "(charge %s is %q after 10 s, not %q: see razao's log and GET /v1/divergences)\n", id, got, state)
			return false
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (d *demo) chargeState(id string) string {
	req, err := http.NewRequest("GET", d.base+"/v1/charges/"+id, nil)
	if err != nil {
		return ""
	}
	req.Header.Set("Authorization", "Bearer "+d.token)
	resp, err := d.client.Do(req)
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	var c struct {
		State string `json:"state"`
	}
	json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&c)
	return c.State
}

func (d *demo) step(title string) { fmt.Fprintf(d.out, "\n== %s\n", title) }

func (d *demo) hodle(body, secret string) {
	d.signed(psp.Endpoint{Name: "hodle", Scheme: "hodle", Secret: secret}, "", body)
}

func (d *demo) standard(id, body string) {
	d.signed(psp.Endpoint{Name: "psp", Scheme: "standard", Secret: d.stdSecret}, id, body)
}

// signed signs body as ep's PSP would (webhook/psp, the signer of razao
// psp send) and sends it.
func (d *demo) signed(ep psp.Endpoint, id, body string) {
	del, err := psp.Sign(ep, []byte(body), id, time.Now())
	if err != nil {
		fmt.Fprintf(d.out, "sign for %s: %v\n", ep.Name, err)
		return
	}
	headers := map[string]string{}
	for k := range del.Header {
		headers[k] = del.Header.Get(k)
	}
	d.send("POST", del.Path, body, headers)
}

// preflight fails fast, before any step, when the service does not answer
// or refuses the token: a demo against nothing would print only errors.
func (d *demo) preflight() error {
	quick := &http.Client{Timeout: 3 * time.Second}
	resp, err := quick.Get(d.base + "/healthz")
	if err != nil {
		return fmt.Errorf("razao does not answer at %s (%v): start it with 'make run' in another terminal", d.base, err)
	}
	resp.Body.Close()
	if d.token == "" {
		return fmt.Errorf("RAZAO_API_TOKEN is empty: make demo reads it from .dev/api-token, which 'make run' writes")
	}
	req, err := http.NewRequest("GET", d.base+"/v1/balances", nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+d.token)
	resp, err = quick.Do(req)
	if err != nil {
		return fmt.Errorf("razao at %s: %w", d.base, err)
	}
	resp.Body.Close()
	if resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden {
		return fmt.Errorf("razao at %s refuses the token (%s): restart 'make run', which renews .dev/api-token", d.base, resp.Status)
	}
	return nil
}

func (d *demo) api(method, path, body string) {
	d.send(method, path, body, map[string]string{"Authorization": "Bearer " + d.token})
}

func (d *demo) send(method, path, body string, headers map[string]string) {
	req, err := http.NewRequest(method, d.base+path, strings.NewReader(body))
	if err != nil {
		fmt.Fprintf(d.out, "%s %s: %v\n", method, path, err)
		return
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := d.client.Do(req)
	if err != nil {
		fmt.Fprintf(d.out, "%s %s: %v\n", method, path, err)
		return
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	var pretty bytes.Buffer
	if json.Indent(&pretty, raw, "   ", "  ") != nil {
		pretty.Write(raw)
	}
	fmt.Fprintf(d.out, "%s %s -> %d\n   %s\n", method, path, resp.StatusCode, strings.TrimSpace(pretty.String()))
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}
