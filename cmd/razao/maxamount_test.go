package main

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/razao/razao/money"
)

func TestMaxAmountFromFileEnvAndFlag(t *testing.T) {
	t.Parallel()
	parse := func(args []string, yaml string, env map[string]string) (serveConfig, error) {
		if yaml != "" {
			args = append([]string{"-config", writeConfig(t, yaml)}, args...)
		}
		return parseServeConfig(args, newFlagSet("serve", io.Discard), func(k string) string { return env[k] }, true)
	}
	for _, tt := range []struct {
		name string
		args []string
		yaml string
		env  map[string]string
		want int64
	}{
		{"default: R$ 10 billion", nil, "", nil, 1_000_000_000_000},
		{"file", nil, "max_amount: 500000\n", nil, 500_000},
		{"env over file", nil, "max_amount: 500000\n", map[string]string{"RAZAO_MAX_AMOUNT": "600000"}, 600_000},
		{"flag over env", []string{"-max-amount", "700000"}, "max_amount: 500000\n", map[string]string{"RAZAO_MAX_AMOUNT": "600000"}, 700_000},
		{"the database's ceiling", nil, "max_amount: 1000000000000000\n", nil, money.Ceiling},
	} {
		cfg, err := parse(tt.args, tt.yaml, tt.env)
		if err != nil || cfg.maxAmount.Max() != tt.want {
			t.Errorf("%s: %d, %v, want %d", tt.name, cfg.maxAmount.Max(), err, tt.want)
		}
	}
	for _, tt := range []struct {
		name string
		args []string
		yaml string
		env  map[string]string
	}{
		{"above the ceiling", nil, "max_amount: 1000000000000001\n", nil},
		{"negative", nil, "max_amount: -1\n", nil},
		{"not a number", nil, "", map[string]string{"RAZAO_MAX_AMOUNT": "10 bi"}},
		{"zero flag", []string{"-max-amount", "0"}, "", nil},
	} {
		if _, err := parse(tt.args, tt.yaml, tt.env); err == nil || !strings.Contains(err.Error(), "max") {
			t.Errorf("%s: %v, want an error about the max amount", tt.name, err)
		}
	}
}

// TestServeBoundsAmountsByTheConfiguredMaximum: razao serve passes its
// max_amount to every door an amount comes in by: a charge, a payout, a
// PSP's payment.
func TestServeBoundsAmountsByTheConfiguredMaximum(t *testing.T) {
	t.Parallel()
	base, token, db, stop := startServer(t, func(c *serveConfig) { c.maxAmount = 100_000 })
	defer stop()
	code, m := apiCall(t, token, "POST", base+"/v1/charges", `{"id":"c-big","amount":100001,"access":"x"}`)
	if code != 400 || !strings.Contains(m["detail"].(string), "100000") {
		t.Fatalf("charge above the maximum: %d %v", code, m)
	}
	if code, m := apiCall(t, token, "POST", base+"/v1/charges", `{"id":"c-1","amount":100000,"access":"x"}`); code != 201 {
		t.Fatalf("charge at the maximum: %d %v", code, m)
	}
	req, _ := http.NewRequest("POST", base+"/v1/partners/p1/payouts", strings.NewReader(`{"amount":100001,"allow_over_owed":true}`))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Idempotency-Key", "po-1")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 400 {
		t.Fatalf("payout above the maximum: %d", resp.StatusCode)
	}
	body, _ := json.Marshal(map[string]any{"type": "charge.paid", "timestamp": "2026-08-10T12:00:00Z",
		"data": map[string]any{"charge_id": "c-1", "amount": 100001}})
	resp = signedStandard(t, base, "msg-1", body)
	resp.Body.Close()
	if resp.StatusCode != 400 {
		t.Fatalf("payment above the maximum: %d", resp.StatusCode)
	}
	var n int
	if err := db.Get(&n, `SELECT count(*) FROM posting_sets`); err != nil || n != 0 {
		t.Fatalf("%d posting sets (%v), want none", n, err)
	}
}
