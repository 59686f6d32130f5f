package reconcile

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/razao/razao/inbox"
	"github.com/razao/razao/reconcile/bcbpix"
)

// EndpointConfig is one webhook endpoint's statement source, as read from
// the config file's reconciliation section.
type EndpointConfig struct {
	Endpoint string `yaml:"endpoint"` // the webhook endpoint whose statement it is
	Source   string `yaml:"source"`   // bcb-pix or csv
	// Schedule is a 5-field cron expression (bcb-pix): at each slot the
	// window that just ended and the one that just became final are run.
	Schedule string `yaml:"schedule"`
	// Window is the length of a scheduled window (default 1h); make it
	// longer than the schedule's interval for windows that overlap.
	Window time.Duration `yaml:"window"`
	// FinalAfter is how long after its end a window is final (default
	// 24h): PSPs list late, and only a final window has phantoms.
	FinalAfter time.Duration `yaml:"final_after"`
	// RefundHorizon is how long after its Pix a refund may settle
	// (default 90 days, the Pix rules' limit): once a day a scheduled
	// bcb-pix endpoint sweeps the Pix of that horizon that carry a
	// devolução (see Reconciler.Sweep).
	RefundHorizon time.Duration `yaml:"refund_horizon"`
	// MaxFileBytes bounds an uploaded statement file (default 256 MiB).
	MaxFileBytes int64        `yaml:"max_file_bytes"`
	CSV          CSVMapping   `yaml:"csv"`
	BCBPix       BCBPixConfig `yaml:"bcb_pix"`
}

// BCBPixConfig is a PSP's Pix API. The client secret is named by its
// environment variable, never written in the file.
type BCBPixConfig struct {
	BaseURL         string        `yaml:"base_url"`
	TokenURL        string        `yaml:"token_url"`
	ClientID        string        `yaml:"client_id"`
	ClientSecretEnv string        `yaml:"client_secret_env"`
	Scope           string        `yaml:"scope"`     // default pix.read
	CertFile        string        `yaml:"cert_file"` // the client certificate the PSP issued (PEM)
	KeyFile         string        `yaml:"key_file"`
	CAFile          string        `yaml:"ca_file"`   // the CAs the PSP's server chains to (default: the system's)
	PageSize        int           `yaml:"page_size"` // itensPorPagina, 1..1000 (default 1000)
	Timeout         time.Duration `yaml:"timeout"`   // per request (default 30s)
}

// Defaults of EndpointConfig.
const (
	DefaultWindow       = time.Hour
	DefaultFinalAfter   = 24 * time.Hour
	DefaultMaxFileBytes = 256 << 20
	maxMaxFileBytes     = 4 << 30
)

// DefaultRefundHorizon: a Pix may be refunded up to 90 days after it.
const DefaultRefundHorizon = 90 * 24 * time.Hour

// maxRefundHorizon keeps a sweep's window (two days more than the
// horizon, see sweepWindow) within a window's bound, maxWindow.
const maxRefundHorizon = maxWindow - 2*24*time.Hour

// endpoint is a checked EndpointConfig with what runs need.
type endpoint struct {
	cfg      EndpointConfig
	hook     *inbox.Endpoint
	csv      *csvMapping
	api      statementAPI
	schedule cron.Schedule // nil: not scheduled
}

func (e *endpoint) info() endpointInfo {
	return endpointInfo{name: e.hook.Name, scheme: e.hook.Scheme.Name(), merchant: e.hook.Merchant, finalAfter: e.cfg.FinalAfter}
}

func buildEndpoint(cfg EndpointConfig, hooks map[string]*inbox.Endpoint, loc *time.Location, getenv func(string) string,
	wait func(context.Context, time.Duration) error) (*endpoint, error) {
	hook, ok := hooks[cfg.Endpoint]
	if !ok {
		return nil, fmt.Errorf("%w: endpoint %q is not a configured webhook endpoint", ErrConfig, cfg.Endpoint)
	}
	if cfg.Window == 0 {
		cfg.Window = DefaultWindow
	}
	if cfg.FinalAfter == 0 {
		cfg.FinalAfter = DefaultFinalAfter
	}
	if cfg.MaxFileBytes == 0 {
		cfg.MaxFileBytes = DefaultMaxFileBytes
	}
	if cfg.RefundHorizon == 0 {
		cfg.RefundHorizon = DefaultRefundHorizon
	}
	if cfg.Window < time.Minute || cfg.Window > 31*24*time.Hour || cfg.FinalAfter < 0 || cfg.FinalAfter > 90*24*time.Hour {
		return nil, fmt.Errorf("%w: %s: window must be 1m..31 days and final_after 0..90 days", ErrConfig, cfg.Endpoint)
	}
	if cfg.MaxFileBytes < 1<<10 || cfg.MaxFileBytes > maxMaxFileBytes {
		return nil, fmt.Errorf("%w: %s: max_file_bytes must be 1 KiB..4 GiB", ErrConfig, cfg.Endpoint)
	}
	if cfg.RefundHorizon < 24*time.Hour || cfg.RefundHorizon > maxRefundHorizon {
		return nil, fmt.Errorf("%w: %s: refund_horizon must be 1 day..%d days", ErrConfig, cfg.Endpoint, maxRefundHorizon/(24*time.Hour))
	}
	ep := &endpoint{cfg: cfg, hook: hook}
	var err error
	switch cfg.Source {
	case "csv":
		if cfg.Schedule != "" {
			return nil, fmt.Errorf("%w: %s: a csv source is uploaded, not scheduled", ErrConfig, cfg.Endpoint)
		}
		ep.csv, err = cfg.CSV.build(loc)
	case "bcb-pix":
		if hook.Scheme.Name() != "bcb-pix" {
			return nil, fmt.Errorf("%w: %s: a bcb-pix statement needs a bcb-pix endpoint (its inbox keys are the webhook's)", ErrConfig, cfg.Endpoint)
		}
		ep.api, err = cfg.BCBPix.client(getenv, wait)
		if err == nil && cfg.Schedule != "" {
			if ep.schedule, err = cron.ParseStandard(cfg.Schedule); err != nil {
				err = fmt.Errorf("%w: schedule %q: %w", ErrConfig, cfg.Schedule, err)
			}
		}
	default:
		return nil, fmt.Errorf("%w: %s: source %q (want bcb-pix or csv)", ErrConfig, cfg.Endpoint, cfg.Source)
	}
	if err != nil {
		return nil, fmt.Errorf("reconciliation of %s: %w", cfg.Endpoint, err)
	}
	return ep, nil
}

func (b BCBPixConfig) client(getenv func(string) string, wait func(context.Context, time.Duration) error) (*bcbpix.Client, error) {
	if b.ClientSecretEnv == "" || getenv(b.ClientSecretEnv) == "" {
		return nil, fmt.Errorf("%w: bcb_pix: client_secret_env must name a set environment variable", ErrConfig)
	}
	cert, err := tls.LoadX509KeyPair(b.CertFile, b.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("%w: bcb_pix: client certificate: %w", ErrConfig, err)
	}
	tc := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	if b.CAFile != "" {
		pem, err := os.ReadFile(b.CAFile)
		if err != nil {
			return nil, fmt.Errorf("%w: bcb_pix: ca_file: %w", ErrConfig, err)
		}
		tc.RootCAs = x509.NewCertPool()
		if !tc.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%w: bcb_pix: ca_file %s holds no PEM certificate", ErrConfig, b.CAFile)
		}
	}
	var scopes []string
	if b.Scope != "" {
		scopes = []string{b.Scope}
	}
	return bcbpix.New(bcbpix.Config{BaseURL: b.BaseURL, TokenURL: b.TokenURL, ClientID: b.ClientID,
		ClientSecret: getenv(b.ClientSecretEnv), Scopes: scopes, TLS: tc, PageSize: b.PageSize, Timeout: b.Timeout, Wait: wait})
}
