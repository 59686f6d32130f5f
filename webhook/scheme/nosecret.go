package scheme

import "fmt"

// withoutSecret is an endpoint's scheme before its PSP has shown the
// secret: Hodle shows it only after the URL answers its WEBHOOK_TEST. It
// answers the registration test (IsTest, which needs no secret) and
// refuses every other delivery as unauthenticated.
type withoutSecret struct {
	Scheme
}

// NewWithoutSecret returns the scheme called name with no secret yet: its
// IsTest still spots the PSP's registration test, and Authenticate refuses
// everything. bcb-pix has no such state (no secret is its mutual-TLS-only
// configuration) and is refused here.
func NewWithoutSecret(name string, cfg Config) (Scheme, error) {
	if len(cfg.Secrets) != 0 {
		return nil, fmt.Errorf("%w: %s: NewWithoutSecret given secrets", ErrConfig, name)
	}
	var inner Scheme
	switch name {
	case hodleName:
		inner = &hodle{}
	case standardName:
		inner = &standard{}
	case abacatepayName:
		inner = &abacatepay{}
	case bcbPixName:
		return nil, fmt.Errorf("%w: %s: a secret is required", ErrConfig, name)
	default:
		return nil, fmt.Errorf("%w: unknown scheme %.40q", ErrConfig, name)
	}
	return withoutSecret{inner}, nil
}

// Authenticate implements Scheme: without a secret nothing is genuine.
func (withoutSecret) Authenticate(Request) error {
	return unauthenticated("the endpoint has no secret yet (it answers only the registration test)")
}
