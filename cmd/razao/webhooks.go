package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/razao/razao/outgoing"
)

// webhooksConfig is the config file's webhooks section: the webhooks
// razao sends to the selling app (package outgoing). Every key is
// optional.
type webhooksConfig struct {
	// AllowPrivateTargets lets endpoints reach loopback, private,
	// link-local and metadata addresses: development only.
	AllowPrivateTargets bool `yaml:"allow_private_targets"`
	// AllowHTTPTargets lets endpoints be plain http:// URLs (default:
	// https only).
	AllowHTTPTargets bool `yaml:"allow_http_targets"`
	// SecretsKeyEnv names the environment variable holding the key that
	// seals the endpoints' secrets (base64 of 32 random bytes). Without
	// it the secrets are stored as they are.
	SecretsKeyEnv string `yaml:"secrets_key_env"`
	// RotationOverlap: how long a rotated-out secret still signs
	// (default 24h).
	RotationOverlap time.Duration `yaml:"rotation_overlap"`
	// Timeout bounds one attempt (default 10s, at most 2m).
	Timeout time.Duration `yaml:"timeout"`
	// MaxConcurrent bounds the endpoints a replica delivers to at once
	// (default 32).
	MaxConcurrent int `yaml:"max_concurrent"`
	// MaxDeliveriesPerSecond bounds the attempts one replica makes a
	// second, all endpoints together (default 0: no bound).
	MaxDeliveriesPerSecond int `yaml:"max_deliveries_per_second"`
	// AttemptsRetention: how long the attempts log is kept (default 720h).
	AttemptsRetention time.Duration `yaml:"attempts_retention"`
}

// build checks the section and reads the key it names. Errors name the
// variable, never its value.
func (c webhooksConfig) build(getenv func(string) string) (outgoing.Config, error) {
	cfg := outgoing.Config{AllowPrivateTargets: c.AllowPrivateTargets, AllowHTTPTargets: c.AllowHTTPTargets, RotationOverlap: c.RotationOverlap, Timeout: c.Timeout,
		MaxConcurrent: c.MaxConcurrent, AttemptsRetention: c.AttemptsRetention, MaxPerSecond: c.MaxDeliveriesPerSecond}
	if c.SecretsKeyEnv != "" {
		v := getenv(c.SecretsKeyEnv)
		if v == "" {
			return cfg, fmt.Errorf("webhooks: secrets_key_env names %s, which is empty", c.SecretsKeyEnv)
		}
		key, err := base64.StdEncoding.DecodeString(strings.TrimSpace(v))
		if err != nil || len(key) != 32 {
			return cfg, fmt.Errorf("webhooks: %s must hold base64 of 32 bytes (openssl rand -base64 32)", c.SecretsKeyEnv)
		}
		cfg.Key = key
	}
	if c.RotationOverlap < 0 || c.RotationOverlap > 30*24*time.Hour {
		return cfg, errors.New("webhooks: rotation_overlap must be at most 720h")
	}
	if c.AttemptsRetention < 0 {
		return cfg, errors.New("webhooks: attempts_retention must not be negative")
	}
	return cfg, cfg.Validate()
}

// webhooksUsage is razao webhooks' synopsis.
const webhooksUsage = `usage: razao webhooks VERB [flags] [args]
  create -url URL [-topic T]... [-description D] [-disabled]   prints the endpoint with its secret (shown once)
  list                          every endpoint, one JSON object a line (never a secret)
  show ID                       one endpoint
  rotate [-overlap 24h] ID      a new secret (printed once); the old one signs beside it for the overlap
  disable ID | enable ID        stop or resume delivery (enable resumes at the event it stopped on)
  delete ID                     the endpoint, its replays and its attempts
  replay -event N ID            send one event again
  replay -since T -until T ID   send the events created in [since, until) again (RFC 3339 times)
  attempts [-limit N] ID        the latest attempts, newest first
flags of every verb: -database-url URL, -config F (its webhooks section)`

// topicFlags collects -topic, repeatable.
type topicFlags []string

func (t *topicFlags) String() string     { return strings.Join(*t, ",") }
func (t *topicFlags) Set(v string) error { *t = append(*t, v); return nil }

// cmdWebhooks manages the webhook endpoints with the same code as
// /v1/webhook-endpoints.
func cmdWebhooks(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	verbs := map[string]bool{"create": true, "list": true, "show": true, "rotate": true, "disable": true, "enable": true,
		"delete": true, "replay": true, "attempts": true}
	if len(args) == 0 || !verbs[args[0]] {
		fmt.Fprintln(stderr, webhooksUsage)
		if len(args) > 0 && isHelp(args[0]) {
			return nil
		}
		return exitError(2)
	}
	verb := args[0]
	var (
		configPath, url, description, since, until *string
		topics                                     topicFlags
		disabled                                   *bool
		overlap                                    *time.Duration
		event                                      *int64
		limit                                      *int
	)
	conn, fs, err := openWithFlags(ctx, "webhooks "+verb, args[1:], stderr, func(fs *flag.FlagSet) {
		configPath = fs.String("config", os.Getenv("RAZAO_CONFIG"), "YAML config file ($RAZAO_CONFIG): its webhooks section")
		switch verb {
		case "create":
			url = fs.String("url", "", "where to POST the events (required)")
			description = fs.String("description", "", "for people")
			fs.Var(&topics, "topic", "a topic to receive (repeat it; none: every topic)")
			disabled = fs.Bool("disabled", false, "create it disabled")
		case "rotate":
			overlap = fs.Duration("overlap", 0, "how long the old secret still signs (default webhooks.rotation_overlap, 24h)")
		case "replay":
			event = fs.Int64("event", 0, "the event id to send again")
			since = fs.String("since", "", "send the events created from this time (RFC 3339)")
			until = fs.String("until", "", "to this time, excluded (RFC 3339)")
		case "attempts":
			limit = fs.Int("limit", 50, "how many, 1 to 200")
		}
	})
	if err != nil {
		return err
	}
	defer conn.Close()
	file, err := loadFileConfig(*configPath)
	if err != nil {
		return err
	}
	cfg, err := file.Webhooks.build(os.Getenv)
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	svc := outgoing.Service{DB: conn, Config: cfg}
	enc := json.NewEncoder(stdout)
	rest := fs.Args()
	if verb == "create" || verb == "list" {
		if len(rest) != 0 {
			return fmt.Errorf("webhooks %s: unexpected arguments %q", verb, rest)
		}
		if verb == "list" {
			es, err := svc.List(ctx)
			if err != nil {
				return err
			}
			for _, e := range es {
				if err := enc.Encode(e); err != nil {
					return err
				}
			}
			return nil
		}
		on := !*disabled
		e, err := svc.Create(ctx, outgoing.NewEndpoint{URL: *url, Description: *description, Topics: topics, Enabled: &on})
		if err != nil {
			return err
		}
		return enc.Encode(e)
	}
	if len(rest) != 1 {
		return fmt.Errorf("webhooks %s: one endpoint id, got %d arguments", verb, len(rest))
	}
	id, err := strconv.ParseInt(rest[0], 10, 64)
	if err != nil || id <= 0 {
		return fmt.Errorf("webhooks %s: id %q is not a positive integer", verb, rest[0])
	}
	var out any
	switch verb {
	case "show":
		out, err = svc.Get(ctx, id)
	case "rotate":
		out, err = svc.Rotate(ctx, id, *overlap)
	case "disable", "enable":
		on := verb == "enable"
		out, err = svc.Update(ctx, id, outgoing.Patch{Enabled: &on})
	case "delete":
		if err = svc.Delete(ctx, id); err == nil {
			fmt.Fprintf(stdout, "webhook endpoint %d deleted\n", id)
			return nil
		}
	case "replay":
		r := outgoing.Replay{EventID: *event}
		if *since != "" || *until != "" {
			s, err1 := time.Parse(time.RFC3339, *since)
			u, err2 := time.Parse(time.RFC3339, *until)
			if err1 != nil || err2 != nil {
				return errors.New("webhooks replay: -since and -until are RFC 3339 times (2026-09-01T00:00:00Z), both required")
			}
			r.Since, r.Until = &s, &u
		}
		var n int
		if n, err = svc.Replay(ctx, id, r); err == nil {
			out = map[string]int{"queued": n}
		}
	case "attempts":
		out, err = svc.Attempts(ctx, id, 0, *limit)
	}
	if err != nil {
		return err
	}
	return enc.Encode(out)
}
