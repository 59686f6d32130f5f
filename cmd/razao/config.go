package main

import (
	"flag"
	"fmt"
	"os"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/razao/razao/postings"
	"github.com/razao/razao/webhook"
)

// fileConfig is the config file of `razao serve` (YAML). Secrets are never
// written in it: it names the environment variables that hold them.
type fileConfig struct {
	Listen         string                   `yaml:"listen"`
	TimeZone       string                   `yaml:"time_zone"`
	WorkerInterval time.Duration            `yaml:"worker_interval"`
	Endpoints      []webhook.EndpointConfig `yaml:"endpoints"`
}

// serveConfig is what `razao serve` runs with, from defaults, then the
// config file, then the environment, then flags.
type serveConfig struct {
	db             dbFlags
	configPath     string
	listen         string
	timeZone       string
	migrate        bool
	workerInterval time.Duration
	endpoints      []*webhook.Endpoint
}

func parseServeConfig(args []string, fs *flag.FlagSet, getenv func(string) string) (serveConfig, error) {
	cfg := serveConfig{listen: "127.0.0.1:8080", timeZone: postings.DefaultTimeZone, workerInterval: time.Second}
	cfg.db.register(fs)
	fs.StringVar(&cfg.configPath, "config", getenv("RAZAO_CONFIG"), "YAML config file ($RAZAO_CONFIG)")
	listen := fs.String("listen", "", "address to listen on ($RAZAO_LISTEN; default 127.0.0.1:8080)")
	tz := fs.String("time-zone", "", "IANA time zone of competence dates ($RAZAO_TIME_ZONE; default America/Sao_Paulo)")
	fs.BoolVar(&cfg.migrate, "migrate", true, "apply migrations before serving")
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	var file fileConfig
	if cfg.configPath != "" {
		b, err := os.ReadFile(cfg.configPath)
		if err != nil {
			return cfg, fmt.Errorf("config: %w", err)
		}
		if err := yaml.Unmarshal(b, &file); err != nil {
			return cfg, fmt.Errorf("config %s: %w", cfg.configPath, err)
		}
	}
	cfg.listen = first(*listen, getenv("RAZAO_LISTEN"), file.Listen, cfg.listen)
	cfg.timeZone = first(*tz, getenv("RAZAO_TIME_ZONE"), file.TimeZone, cfg.timeZone)
	if file.WorkerInterval > 0 {
		cfg.workerInterval = file.WorkerInterval
	}
	if _, err := postings.NewCalendar(cfg.timeZone); err != nil {
		return cfg, fmt.Errorf("config: %w", err)
	}
	return cfg, cfg.loadSecrets(file, getenv)
}

// loadSecrets builds the endpoints. Errors name variables and endpoints,
// never values.
func (cfg *serveConfig) loadSecrets(file fileConfig, getenv func(string) string) error {
	seen := map[string]bool{}
	for _, ec := range file.Endpoints {
		ep, err := webhook.NewEndpoint(ec, getenv)
		if err != nil {
			return fmt.Errorf("config: %w", err)
		}
		if seen[ep.Name] {
			return fmt.Errorf("config: endpoint %s is defined twice", ep.Name)
		}
		seen[ep.Name] = true
		cfg.endpoints = append(cfg.endpoints, ep)
	}
	return nil
}

func first(vs ...string) string {
	for _, v := range vs {
		if v != "" {
			return v
		}
	}
	return ""
}
