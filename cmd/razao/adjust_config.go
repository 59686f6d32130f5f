package main

import (
	"fmt"
	"time"

	"github.com/razao/razao/adjustments"
)

// adjustmentsConfig is the config file's adjustments section: how
// corrections (POST /v1/adjustments, reversals, razao adjust) are
// approved.
type adjustmentsConfig struct {
	// Approval is "on" (the default: a second admin of another name
	// approves each correction) or "off" (booked at once by its
	// proposer: a one-person shop).
	Approval string `yaml:"approval"`
	// TTL is how long a proposal waits for its approval (default 168h, 7
	// days; 1h to 2160h).
	TTL time.Duration `yaml:"ttl"`
}

// build checks the section and returns the policy it sets.
func (c adjustmentsConfig) build() (adjustments.Config, error) {
	var cfg adjustments.Config
	switch c.Approval {
	case "", "on":
	case "off":
		cfg.ApprovalOff = true
	default:
		return cfg, fmt.Errorf("adjustments: approval %q: on (a second person approves, the default) or off (booked at once)", c.Approval)
	}
	cfg.TTL = c.TTL
	return cfg, cfg.Validate()
}

// describeAdjustments says in one line what a policy does.
func describeAdjustments(cfg adjustments.Config) string {
	ttl := cfg.TTL
	if ttl == 0 {
		ttl = adjustments.DefaultTTL
	}
	if cfg.ApprovalOff {
		return "adjustments: approval off, each correction booked at once by its proposer"
	}
	return fmt.Sprintf("adjustments: approval on, a second admin of another name approves each correction within %s", ttl)
}
