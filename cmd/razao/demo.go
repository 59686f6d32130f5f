package main

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
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
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	mac := hmac.New(sha256.New, []byte(secret))
	io.WriteString(mac, ts+"."+body)
	d.send("POST", "/webhooks/hodle", body, map[string]string{
		"X-Hodle-Timestamp": ts, "X-Hodle-Signature": hex.EncodeToString(mac.Sum(nil))})
}

func (d *demo) standard(id, body string) {
	key, _ := base64.StdEncoding.DecodeString(strings.TrimPrefix(d.stdSecret, "whsec_"))
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	mac := hmac.New(sha256.New, key)
	io.WriteString(mac, id+"."+ts+"."+body)
	d.send("POST", "/webhooks/psp", body, map[string]string{"webhook-id": id, "webhook-timestamp": ts,
		"webhook-signature": "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))})
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
