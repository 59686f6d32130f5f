package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/razao/razao/webhook"
	"github.com/razao/razao/webhook/psp"
)

const pspUsage = `usage: razao psp send [-endpoint NAME] ACTION CHARGE_ID [flags]

ACTION is paid, refunded, failed or test (Hodle's unsigned registration
test). The endpoint, its scheme and its secrets come from the config file
and the environment, as for razao serve ($RAZAO_CONFIG, secrets_env).

  razao psp send -endpoint psp paid order-1
  razao psp send -endpoint psp refunded order-1 -amount 1000 -refund-id rf-1
  razao psp send -endpoint hodle failed order-1

Without -amount, paid sends the charge's amount and refunded what is left
of it, both read from GET /v1/charges/CHARGE_ID with $RAZAO_API_TOKEN.
Ids not given are derived from the charge id: the same command again is a
redelivery (answered "duplicate").

flags:`

// cmdPSP is `razao psp send`: it writes the delivery a PSP would send for
// one event of a charge, signs it as the endpoint's scheme requires, posts
// it to the running service and prints what it sent and the answer. A
// non-2xx answer exits 1.
func cmdPSP(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] != "send" {
		fmt.Fprintln(stderr, strings.TrimSuffix(pspUsage, "\n\nflags:"))
		if len(args) > 0 && isHelp(args[0]) {
			return nil
		}
		return exitError(2)
	}
	fs := newFlagSet("psp send", stderr)
	var (
		config   = fs.String("config", os.Getenv("RAZAO_CONFIG"), "the config file of razao serve ($RAZAO_CONFIG)")
		endpoint = fs.String("endpoint", "", "the endpoint to send to (default: the only one configured)")
		base     = fs.String("url", envOr("RAZAO_URL", "http://127.0.0.1:8080"), "base URL of the running service ($RAZAO_URL)")
		amount   = fs.Int64("amount", 0, "centavos paid or refunded (default: from the charge)")
		fee      = fs.Int64("fee", 0, "the PSP's fee in centavos, where the scheme states one (abacatepay)")
		refundID = fs.String("refund-id", "", "the PSP's id of this refund (refunded)")
		id       = fs.String("id", "", "the PSP's event id (default: derived from the charge id)")
		pspRef   = fs.String("psp-ref", "", "the PSP's payment reference: Hodle trackId, AbacatePay id, Pix endToEndId (default: derived)")
		paid     = fs.Int64("paid-amount", 0, "bcb-pix refunded: centavos of the Pix it returns (default: from the charge)")
	)
	fs.Usage = func() {
		fmt.Fprintln(stderr, pspUsage)
		fs.PrintDefaults()
	}
	pos, err := parseInterleaved(fs, args[1:])
	if err != nil {
		return err
	}
	if len(pos) == 0 || len(pos) > 2 || (len(pos) == 1 && pos[0] != string(psp.Test)) {
		fs.Usage()
		return exitError(2)
	}
	ev := psp.Event{Action: psp.Action(pos[0]), Amount: *amount, Fee: *fee, RefundID: *refundID, ID: *id, PSPRef: *pspRef, PaidAmount: *paid}
	if len(pos) == 2 {
		ev.ChargeID = pos[1]
	}
	switch ev.Action {
	case psp.Paid, psp.Refunded, psp.Failed, psp.Test:
	default:
		return fmt.Errorf("action %q: want paid, refunded, failed or test", pos[0])
	}
	ep, err := pspEndpoint(*config, *endpoint, os.Getenv)
	if err != nil {
		return err
	}
	client := &http.Client{Timeout: 30 * time.Second}
	if err := fillFromCharge(ctx, client, *base, ep.Scheme, &ev); err != nil {
		return err
	}
	d, err := psp.Build(ep, ev, time.Now())
	if err != nil {
		return fmt.Errorf("endpoint %s (%s): %w", ep.Name, ep.Scheme, err)
	}
	return sendDelivery(ctx, client, *base, ep, d, stdout)
}

// parseInterleaved parses flags that may come before, between and after
// the positional arguments ("refunded order-1 -amount 1000"), which
// flag.Parse alone stops at.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			return pos, nil
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

// pspEndpoint finds the endpoint in the config file, with its current
// secret from the same environment serve reads.
func pspEndpoint(path, name string, getenv func(string) string) (psp.Endpoint, error) {
	if path == "" {
		return psp.Endpoint{}, fmt.Errorf("no config file: give -config or set RAZAO_CONFIG (make run uses scripts/dev.yaml; source .dev/env)")
	}
	file, err := loadFileConfig(path)
	if err != nil {
		return psp.Endpoint{}, err
	}
	var names []string
	var found *webhook.EndpointConfig
	for i, ec := range file.Endpoints {
		names = append(names, ec.Name)
		if ec.Name == name || (name == "" && len(file.Endpoints) == 1) {
			found = &file.Endpoints[i]
		}
	}
	switch {
	case found == nil && name == "":
		return psp.Endpoint{}, fmt.Errorf("-endpoint is required: %s configures %s", path, strings.Join(names, ", "))
	case found == nil:
		return psp.Endpoint{}, fmt.Errorf("no endpoint %q in %s (it has %s)", name, path, strings.Join(names, ", "))
	}
	// The same checks serve makes, so what is sent is what serve expects.
	if _, err := webhook.NewEndpoint(*found, getenv); err != nil {
		return psp.Endpoint{}, err
	}
	secrets, _, err := found.ResolveSecrets(getenv)
	if err != nil {
		return psp.Endpoint{}, err
	}
	ep := psp.Endpoint{Name: found.Name, Scheme: found.Scheme, PublicKey: found.PublicKey}
	if len(secrets) > 0 {
		ep.Secret = secrets[0]
	}
	return ep, nil
}

// fillFromCharge reads the charge from the API when the event needs an
// amount the command line did not give.
func fillFromCharge(ctx context.Context, client *http.Client, base, scheme string, ev *psp.Event) error {
	needAmount := (ev.Action == psp.Paid || ev.Action == psp.Refunded && scheme != "abacatepay") && ev.Amount == 0
	needPaid := ev.Action == psp.Refunded && scheme == "bcb-pix" && ev.PaidAmount == 0
	if !needAmount && !needPaid {
		return nil
	}
	token := os.Getenv("RAZAO_API_TOKEN")
	if token == "" {
		return fmt.Errorf("%s without -amount (or, for bcb-pix, -paid-amount) reads the charge from the API: set RAZAO_API_TOKEN (source .dev/env), or give the amount", ev.Action)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(base, "/")+"/v1/charges/"+url.PathEscape(ev.ChargeID), nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("read charge %s: %w (is razao running? make run)", ev.ChargeID, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("read charge %s: GET /v1/charges/%s answered %d: %s", ev.ChargeID, ev.ChargeID, resp.StatusCode, bytes.TrimSpace(raw))
	}
	var c struct {
		Amount         int64  `json:"amount"`
		PaidAmount     *int64 `json:"paid_amount"`
		RefundedAmount int64  `json:"refunded_amount"`
	}
	if err := json.Unmarshal(raw, &c); err != nil {
		return fmt.Errorf("read charge %s: %w", ev.ChargeID, err)
	}
	paid := c.Amount
	if c.PaidAmount != nil {
		paid = *c.PaidAmount
	}
	if needPaid {
		ev.PaidAmount = paid
	}
	if needAmount && ev.Action == psp.Paid {
		ev.Amount = c.Amount
	} else if needAmount {
		if ev.Amount = paid - c.RefundedAmount; ev.Amount <= 0 {
			return fmt.Errorf("charge %s has nothing left to refund; give -amount to send one anyway", ev.ChargeID)
		}
	}
	return nil
}

// sendDelivery posts d and prints the request (secrets redacted) and the
// answer.
func sendDelivery(ctx context.Context, client *http.Client, base string, ep psp.Endpoint, d psp.Delivery, stdout io.Writer) error {
	req, err := d.Request(base)
	if err != nil {
		return err
	}
	req = req.WithContext(ctx)
	about := fmt.Sprintf("endpoint %s, scheme %s", ep.Name, ep.Scheme)
	if d.ID != "" {
		about += ", event id " + d.ID
	}
	fmt.Fprintf(stdout, "POST %s%s  (%s)\n", strings.TrimRight(base, "/"), d.Redacted(), about)
	for _, k := range []string{"X-Hodle-Timestamp", "X-Hodle-Signature", "Webhook-Id", "Webhook-Timestamp", "Webhook-Signature", "X-Webhook-Signature"} {
		if v := d.Header.Get(k); v != "" {
			fmt.Fprintf(stdout, "  %s: %s\n", k, v)
		}
	}
	if d.Header.Get("X-Webhook-Secret") != "" {
		fmt.Fprintln(stdout, "  X-Webhook-Secret: REDACTED")
	}
	fmt.Fprintf(stdout, "  %s\n", d.Body)
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("send to %s: %w (is razao running? make run)", base, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	fmt.Fprintf(stdout, "-> %s\n  %s\n", resp.Status, bytes.TrimSpace(raw))
	if resp.StatusCode/100 != 2 {
		return exitError(1)
	}
	return nil
}
