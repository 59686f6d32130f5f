package webhook_test

import (
	"testing"

	"github.com/razao/razao/webhook"
)

// TestEndpointItemBoundDefaultsAndLimits pins max_items' default and range.
func TestEndpointItemBoundDefaultsAndLimits(t *testing.T) {
	t.Parallel()
	cfg := webhook.EndpointConfig{Name: "pix", Scheme: "bcb-pix", Merchant: "loja-1", Secrets: []string{bcbSecret}}
	ep, err := webhook.NewEndpoint(cfg, nil)
	if err != nil || ep.MaxItems != webhook.DefaultMaxItems || webhook.DefaultMaxItems != 2500 {
		t.Fatalf("default: %v %v", ep, err)
	}
	for _, n := range []int{-1, 100_001} {
		cfg.MaxItems = n
		if _, err := webhook.NewEndpoint(cfg, nil); err == nil {
			t.Errorf("max_items %d accepted", n)
		}
	}
}
