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
// everything. Only Hodle has that registration flow; for any other scheme
// an endpoint without a secret would refuse every delivery forever, so it
// is a configuration error.
func NewWithoutSecret(name string, cfg Config) (Scheme, error) {
	if len(cfg.Secrets) != 0 {
		return nil, fmt.Errorf("%w: %s: NewWithoutSecret given secrets", ErrConfig, name)
	}
	switch name {
	case hodleName:
		return withoutSecret{&hodle{}}, nil
	case standardName, abacatepayName, bcbPixName:
		return nil, fmt.Errorf("%w: %s: a secret is required (only hodle may start without one, to answer its registration test)", ErrConfig, name)
	default:
		return nil, fmt.Errorf("%w: unknown scheme %.40q", ErrConfig, name)
	}
}

// Authenticate implements Scheme: without a secret nothing is genuine.
func (withoutSecret) Authenticate(Request) error {
	return unauthenticated("the endpoint has no secret yet (it answers only the registration test)")
}
