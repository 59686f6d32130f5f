package webhook

import (
	"errors"
	"fmt"
	"regexp"

	"github.com/razao/razao/inbox"
	"github.com/razao/razao/webhook/scheme"
)

// DefaultMaxBody is the largest body accepted when an endpoint sets none.
const DefaultMaxBody = 256 << 10

// DefaultMaxItems is the most events one delivery may carry when an
// endpoint sets none: a bcb-pix callback makes one per Pix and one per
// devolução. Each is an inbox row and a share of its processing; a PSP
// with more sends several callbacks. A body of DefaultMaxBody holds about
// 2,200 Pix, so with both defaults the body limit binds first and a
// legitimate callback is never refused for its count; the bound is for an
// endpoint that raises max_body_bytes (docs/performance.md, "max_items").
const DefaultMaxItems = 2500

// maxMaxItems bounds max_items.
const maxMaxItems = 100_000

// EndpointConfig is one configured webhook endpoint, as read from the
// config file. Secrets are named by environment variable (SecretsEnv) or,
// for local use, given inline (Secrets); current first, then previous.
type EndpointConfig struct {
	Name         string   `yaml:"name"`
	Scheme       string   `yaml:"scheme"`
	Merchant     string   `yaml:"merchant"`
	MTLS         MTLS     `yaml:",inline"` // bcb-pix: client_ca_file, client_subjects, client_sans, client_cert_header, trusted_proxies
	Secrets      []string `yaml:"secrets"`
	SecretsEnv   []string `yaml:"secrets_env"`
	PublicKey    string   `yaml:"public_key"`
	MaxBodyBytes int64    `yaml:"max_body_bytes"`
	// MaxItems is the most events one delivery may carry (0: DefaultMaxItems).
	MaxItems int `yaml:"max_items"`
}

// Endpoint is a configured endpoint ready to authenticate deliveries.
type Endpoint struct {
	// Endpoint is what the inbox keys and checks its deliveries by: its
	// Name, Merchant and Scheme, and MaxItems, the most events one
	// delivery may carry (a delivery with more is kept as malformed, 400).
	inbox.Endpoint
	mtls    *clientAuth // nil: the endpoint takes no client certificate
	MaxBody int64
	// NoSecret says the endpoint has no secret yet (Hodle shows it only
	// after its registration test): it answers that test and refuses
	// everything else with 401. Unset names the variables that were empty.
	NoSecret bool
	Unset    []string
}

var nameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,62}$`)

// ErrConfig reports a bad endpoint configuration. Its messages never
// contain a secret.
var ErrConfig = errors.New("webhook endpoint config")

// NewEndpoint checks cfg and builds its scheme; getenv reads SecretsEnv.
func NewEndpoint(cfg EndpointConfig, getenv func(string) string) (*Endpoint, error) {
	if !nameRE.MatchString(cfg.Name) {
		return nil, fmt.Errorf("%w: name %q must be 1-63 of a-z 0-9 _ -", ErrConfig, cfg.Name)
	}
	if cfg.Merchant == "" {
		return nil, fmt.Errorf("%w: endpoint %s: merchant is required", ErrConfig, cfg.Name)
	}
	secrets, unset, err := cfg.ResolveSecrets(getenv)
	if err != nil {
		return nil, err
	}
	max := cfg.MaxBodyBytes
	if max == 0 {
		max = DefaultMaxBody
	}
	if max < 1<<10 || max > 16<<20 {
		return nil, fmt.Errorf("%w: endpoint %s: max_body_bytes must be 1 KiB..16 MiB", ErrConfig, cfg.Name)
	}
	items := cfg.MaxItems
	if items == 0 {
		items = DefaultMaxItems
	}
	if items < 1 || items > maxMaxItems {
		return nil, fmt.Errorf("%w: endpoint %s: max_items must be 1..%d", ErrConfig, cfg.Name, maxMaxItems)
	}
	ep := &Endpoint{Endpoint: inbox.Endpoint{Name: cfg.Name, Merchant: cfg.Merchant, MaxItems: items}, MaxBody: max, Unset: unset}
	sc := scheme.Config{Secrets: secrets, PublicKey: cfg.PublicKey}
	switch {
	case len(secrets) == 0 && cfg.Scheme == "bcb-pix" && len(unset) > 0:
		// No secrets at all is bcb-pix's mutual-TLS-only configuration;
		// a variable named but empty is a mistake, not that.
		return nil, fmt.Errorf("%w: endpoint %s: environment variable %s is empty or unset", ErrConfig, cfg.Name, unset[0])
	case len(secrets) == 0 && cfg.Scheme != "bcb-pix":
		if ep.Scheme, err = scheme.NewWithoutSecret(cfg.Scheme, sc); err == nil {
			ep.NoSecret = true
		} else if len(unset) > 0 {
			err = fmt.Errorf("%w (environment variable %s is empty or unset)", err, unset[0])
		}
	default:
		ep.Scheme, err = scheme.New(cfg.Scheme, sc)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: endpoint %s: %w", ErrConfig, cfg.Name, err)
	}
	if ep.mtls, err = newEndpointMTLS(cfg, len(secrets) > 0); err != nil {
		return nil, err
	}
	return ep, nil
}

// ResolveSecrets returns the endpoint's secrets, current first: the
// inline ones, then those of the variables in SecretsEnv, skipping empty
// variables (unset lists them). An empty current variable with a previous
// one set is an error: the current secret comes first. Errors name
// variables, never values.
func (cfg EndpointConfig) ResolveSecrets(getenv func(string) string) (secrets, unset []string, err error) {
	secrets = append(secrets, cfg.Secrets...)
	for _, env := range cfg.SecretsEnv {
		v := getenv(env)
		if v == "" {
			unset = append(unset, env)
			continue
		}
		if len(unset) > 0 && len(secrets) == 0 {
			return nil, nil, fmt.Errorf("%w: endpoint %s: %s is set but %s, the current secret, is empty or unset",
				ErrConfig, cfg.Name, env, unset[0])
		}
		secrets = append(secrets, v)
	}
	return secrets, unset, nil
}

// Merchants lists the distinct merchants of the endpoints, in their order.
func Merchants(eps []*Endpoint) []string {
	var out []string
	seen := map[string]bool{}
	for _, ep := range eps {
		if !seen[ep.Merchant] {
			seen[ep.Merchant] = true
			out = append(out, ep.Merchant)
		}
	}
	return out
}

// InboxEndpoints is the endpoints as the inbox knows them, in their
// order: what a source that stores deliveries for them (reconciliation)
// is given.
func InboxEndpoints(eps []*Endpoint) []*inbox.Endpoint {
	out := make([]*inbox.Endpoint, len(eps))
	for i, ep := range eps {
		out[i] = &ep.Endpoint
	}
	return out
}
