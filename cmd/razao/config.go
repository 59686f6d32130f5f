package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/trace"
	"gopkg.in/yaml.v3"

	"github.com/razao/razao/adjustments"
	"github.com/razao/razao/exports"
	"github.com/razao/razao/internal/tracing"
	"github.com/razao/razao/money"
	"github.com/razao/razao/outgoing"
	"github.com/razao/razao/periods"
	"github.com/razao/razao/postings"
	"github.com/razao/razao/reconcile"
	"github.com/razao/razao/reports"
	"github.com/razao/razao/webhook"
)

// fileConfig is the config file of `razao serve` (YAML). Secrets are never
// written in it: it names the environment variables that hold them.
type fileConfig struct {
	Listen         string                   `yaml:"listen"`
	AdminListen    string                   `yaml:"admin_listen"` // metrics, health, profiles; "off": none
	LogLevel       string                   `yaml:"log_level"`    // debug, info (default), warn, error
	TLS            tlsConfig                `yaml:"tls"`
	BehindProxy    bool                     `yaml:"behind_proxy"` // TLS ends at a proxy in front: plain HTTP beyond loopback is meant
	TimeZone       string                   `yaml:"time_zone"`
	GoLive         string                   `yaml:"go_live"` // YYYY-MM-DD: no event time before it is accepted
	WorkerInterval time.Duration            `yaml:"worker_interval"`
	MaxAmount      int64                    `yaml:"max_amount"` // centavos; 0: money.DefaultMaxAmount
	Endpoints      []webhook.EndpointConfig `yaml:"endpoints"`
	Exports        exportsConfig            `yaml:"exports"`
	Events         eventsConfig             `yaml:"events"`
	// Reconciliation names each endpoint's statement source.
	Reconciliation []reconcile.EndpointConfig `yaml:"reconciliation"`
	Adjustments    adjustmentsConfig          `yaml:"adjustments"`
	// Tracing exports OpenTelemetry spans over OTLP/HTTP; off without an endpoint.
	Tracing tracing.Config `yaml:"tracing"`
	// AllowRoot lets serve run with effective uid 0: a development
	// machine only ($RAZAO_ALLOW_ROOT=1 does the same).
	AllowRoot bool `yaml:"allow_root"`
	// Webhooks is how razao sends webhooks to the selling app.
	Webhooks webhooksConfig `yaml:"webhooks"`
	// Retention archives and purges what is not the ledger (package archive).
	Retention retentionConfig `yaml:"retention"`
	// ReadDatabaseURL is a streaming standby of the database: reports,
	// lists, the console's pages and the on-demand exports are read from
	// it while it lags at most ReadMaxLag (package reads). Its password,
	// if any, belongs in $READ_DATABASE_URL rather than here.
	ReadDatabaseURL string        `yaml:"read_database_url"`
	ReadMaxLag      time.Duration `yaml:"read_max_lag"` // 0: reads.DefaultMaxLag (5s)
}

// eventsConfig sizes GET /v1/events; zero means the hub's default.
type eventsConfig struct {
	MaxStreams         int `yaml:"max_streams"`           // open streams in all (default 1000; past it 503)
	MaxStreamsPerToken int `yaml:"max_streams_per_token"` // open streams of one API token (default 8; past it 429)
	DBConnections      int `yaml:"db_connections"`        // pool connections the streams use at once (default 2, at most 8)
	MaxBytesPerSecond  int `yaml:"max_bytes_per_second"`  // what the streams together are sent a second (default 32 MiB)
}

// Bounds of events.max_bytes_per_second. Each stream is sent at least one
// event a wake whatever its share, so the bound holds only above what that
// floor sends: 1,000 streams woken 2.5 times a second with 270-byte events
// are 675 kB a second, under the 1 MiB minimum. Above 1 GiB the bound
// bounds nothing on any machine razao runs on.
const (
	minStreamBytesPerSecond = 1 << 20
	maxStreamBytesPerSecond = 1 << 30
)

// exportsConfig schedules the CSV exports; no schedule, no scheduler.
type exportsConfig struct {
	Schedule string   `yaml:"schedule"` // cron, e.g. "0 6 1 * *": 06:00 on the 1st, for the month before
	Dir      string   `yaml:"dir"`
	Kinds    []string `yaml:"kinds"`    // journal, trial-balance, income-statement (default: all)
	Dialects []string `yaml:"dialects"` // rfc4180, br (default: both)
	// LedgerFormats: the journal also as hledger, beancount files (default: none).
	LedgerFormats []string `yaml:"ledger_formats"`
}

// serveConfig is what `razao serve` runs with, from defaults, then the
// config file, then the environment, then flags.
type serveConfig struct {
	db             dbFlags
	configPath     string
	listen         string
	adminListen    string // adminOff: no admin listener
	logLevel       slog.Level
	tls            *tlsServing // nil: plain HTTP
	behindProxy    bool        // TLS ends at a proxy in front
	timeZone       string
	goLive         time.Time
	migrate        bool
	workerInterval time.Duration
	endpoints      []*webhook.Endpoint
	exports        *exports.Config
	timeouts       serverTimeouts
	maxAmount      money.Limit // bounds every amount that enters (charges, payouts, sets, PSPs' amounts)
	events         eventsConfig
	reconciliation []reconcile.EndpointConfig
	getenv         func(string) string // the environment the config was read with: reconciliation's secrets
	adjustments    adjustments.Config  // how corrections are approved
	tracing        *tracing.Config     // nil: no tracing
	allowRoot      bool                // serve may run as root (allow_root, $RAZAO_ALLOW_ROOT)
	webhooks       outgoing.Config     // the webhooks razao sends
	retention      *retention          // nil: nothing archived nor purged
	readURL        string              // a streaming standby for reads; "": none
	readMaxLag     time.Duration       // the standby is not used past it; 0: reads.DefaultMaxLag
	// tracer, when set (tests), receives the spans instead of an
	// exporter built from tracing.
	tracer trace.TracerProvider
}

// serverTimeouts bound how long a client may hold a connection: a slow
// sender (slow-loris) is cut at ReadHeader/Read, a slow reader at Write.
type serverTimeouts struct {
	ReadHeader, Read, Write, Idle time.Duration
}

var defaultTimeouts = serverTimeouts{ReadHeader: 5 * time.Second, Read: 15 * time.Second, Write: 30 * time.Second, Idle: 60 * time.Second}

func parseServeConfig(args []string, fs *flag.FlagSet, getenv func(string) string, serving bool) (serveConfig, error) {
	cfg := serveConfig{listen: "127.0.0.1:8080", adminListen: defaultAdminListen, timeZone: periods.DefaultTimeZone, workerInterval: time.Second, timeouts: defaultTimeouts,
		maxAmount: money.Limit(money.DefaultMaxAmount)}
	cfg.db.register(fs)
	fs.StringVar(&cfg.configPath, "config", getenv("RAZAO_CONFIG"), "YAML config file ($RAZAO_CONFIG)")
	listen, behindProxy, adminListen, logLevel := new(string), new(bool), new(string), new(string)
	if serving {
		fs.StringVar(listen, "listen", "", "address to listen on ($RAZAO_LISTEN; default 127.0.0.1:8080)")
		fs.StringVar(adminListen, "admin-listen", "", "address of /metrics, health and /debug/pprof, or off ($RAZAO_ADMIN_LISTEN; default "+defaultAdminListen+")")
		fs.StringVar(logLevel, "log-level", "", "debug, info, warn or error ($RAZAO_LOG_LEVEL; default info)")
		fs.BoolVar(&cfg.migrate, "migrate", true, "apply migrations before serving")
		fs.BoolVar(behindProxy, "behind-proxy", false, "TLS ends at a proxy in front: serve plain HTTP beyond loopback (behind_proxy in the config file)")
	}
	tz := fs.String("time-zone", "", "IANA time zone of competence dates ($RAZAO_TIME_ZONE; default America/Sao_Paulo)")
	goLive := fs.String("go-live", "", "first date an event may carry, YYYY-MM-DD ($RAZAO_GO_LIVE; default "+periods.DefaultGoLive+")")
	readURL := new(string)
	fs.Var(unshownURL{readURL}, "read-database-url", "URL of a streaming standby serving reports and lists (default $READ_DATABASE_URL)")
	maxAmount := fs.String("max-amount", "", "largest amount taken in, in centavos ($RAZAO_MAX_AMOUNT; default 1000000000000, R$ 10 billion)")
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	file, err := loadFileConfig(cfg.configPath)
	if err != nil {
		return cfg, err
	}
	cfg.listen = first(*listen, getenv("RAZAO_LISTEN"), file.Listen, cfg.listen)
	cfg.adminListen = first(*adminListen, getenv("RAZAO_ADMIN_LISTEN"), file.AdminListen, cfg.adminListen)
	if cfg.logLevel, err = parseLogLevel(first(*logLevel, getenv("RAZAO_LOG_LEVEL"), file.LogLevel)); err != nil {
		return cfg, err
	}
	cfg.timeZone = first(*tz, getenv("RAZAO_TIME_ZONE"), file.TimeZone, cfg.timeZone)
	if file.MaxAmount != 0 {
		cfg.maxAmount = money.Limit(file.MaxAmount)
	}
	if v := first(*maxAmount, getenv("RAZAO_MAX_AMOUNT")); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return cfg, fmt.Errorf("config: max amount %q: not an integer of centavos", v)
		}
		cfg.maxAmount = money.Limit(n)
	}
	if err := cfg.maxAmount.Validate(); err != nil {
		return cfg, fmt.Errorf("config: %w", err)
	}
	if e := file.Events; e.MaxStreams < 0 || e.MaxStreamsPerToken < 0 || e.DBConnections < 0 || e.DBConnections > 8 {
		return cfg, fmt.Errorf("config: events: max_streams and max_streams_per_token must not be negative, db_connections must be 0..8 (of a pool of 32)")
	}
	if e := file.Events; e.MaxBytesPerSecond != 0 && (e.MaxBytesPerSecond < minStreamBytesPerSecond || e.MaxBytesPerSecond > maxStreamBytesPerSecond) {
		return cfg, fmt.Errorf("config: events: max_bytes_per_second must be %d (1 MiB) to %d (1 GiB), or 0 for the default of 32 MiB; got %d",
			minStreamBytesPerSecond, maxStreamBytesPerSecond, e.MaxBytesPerSecond)
	}
	cfg.events = file.Events
	cfg.readURL = first(*readURL, getenv("READ_DATABASE_URL"), file.ReadDatabaseURL)
	if file.ReadMaxLag < 0 {
		return cfg, fmt.Errorf("config: read_max_lag must not be negative, got %s", file.ReadMaxLag)
	}
	cfg.readMaxLag = file.ReadMaxLag
	if file.WorkerInterval > 0 {
		cfg.workerInterval = file.WorkerInterval
	}
	cal, err := periods.NewCalendar(cfg.timeZone)
	if err != nil {
		return cfg, fmt.Errorf("config: %w", err)
	}
	if cfg.goLive, err = periods.ParseGoLive(first(*goLive, getenv("RAZAO_GO_LIVE"), file.GoLive), time.Now()); err != nil {
		return cfg, fmt.Errorf("config: %w", err)
	}
	if cfg.adjustments, err = file.Adjustments.build(); err != nil {
		return cfg, fmt.Errorf("config: %w", err)
	}
	if cfg.webhooks, err = file.Webhooks.build(getenv); err != nil {
		return cfg, fmt.Errorf("config: %w", err)
	}
	if cfg.retention, err = file.Retention.build(cal.Location(), file.Webhooks.AttemptsRetention); err != nil {
		return cfg, fmt.Errorf("config: %w", err)
	}
	if cfg.exports, err = file.Exports.build(cal.Location()); err != nil {
		return cfg, fmt.Errorf("config: exports: %w", err)
	}
	if cfg.allowRoot, err = parseAllowRoot(file.AllowRoot, getenv); err != nil {
		return cfg, err
	}
	if on, err := file.Tracing.Resolve(getenv); err != nil {
		return cfg, fmt.Errorf("config: %w", err)
	} else if on {
		cfg.tracing = &file.Tracing
	}
	if err := cfg.loadSecrets(file, getenv); err != nil {
		return cfg, err
	}
	if err := cfg.checkReconciliation(file, cal, getenv); err != nil {
		return cfg, err
	}
	return cfg, cfg.checkServing(file, *behindProxy)
}

// checkServing builds the tls section and refuses what would serve in
// clear text beyond loopback, or take client certificates that cannot
// arrive.
func (cfg *serveConfig) checkServing(file fileConfig, behindProxy bool) error {
	var err error
	if cfg.tls, err = file.TLS.build(); err != nil {
		return err
	}
	cfg.behindProxy = behindProxy || file.BehindProxy
	if err := checkExposure(cfg.listen, cfg.tls != nil, cfg.behindProxy); err != nil {
		return err
	}
	if err := checkAdminExposure(cfg.adminListen, cfg.tls != nil); err != nil {
		return err
	}
	return checkMTLSReachable(cfg.endpoints, cfg.tls != nil)
}

// loadFileConfig reads the config file at path ("" is no file: an empty
// config). A key the file does not define is an error naming the key and
// its line, so a typo (secret_env for secrets_env) is not silently a
// default.
func loadFileConfig(path string) (fileConfig, error) {
	var file fileConfig
	if path == "" {
		return file, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return file, fmt.Errorf("config: %w", err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&file); err != nil && !errors.Is(err, io.EOF) { // EOF: an empty file
		return file, fmt.Errorf("config %s: %w", path, yamlError(err))
	}
	return file, nil
}

// configSections names, for yaml's error messages, the Go types of the
// config file by the section a reader sees.
var configSections = map[string]struct {
	name string
	typ  reflect.Type
}{
	"main.fileConfig":          {"at the top level", reflect.TypeFor[fileConfig]()},
	"webhook.EndpointConfig":   {"in an endpoint", reflect.TypeFor[webhook.EndpointConfig]()},
	"main.exportsConfig":       {"in exports", reflect.TypeFor[exportsConfig]()},
	"reconcile.EndpointConfig": {"in a reconciliation", reflect.TypeFor[reconcile.EndpointConfig]()},
	"reconcile.CSVMapping":     {"in a reconciliation's csv", reflect.TypeFor[reconcile.CSVMapping]()},
	"reconcile.BCBPixConfig":   {"in a reconciliation's bcb_pix", reflect.TypeFor[reconcile.BCBPixConfig]()},
	"main.tlsConfig":           {"in tls", reflect.TypeFor[tlsConfig]()},
	"main.eventsConfig":        {"in events", reflect.TypeFor[eventsConfig]()},
	"main.adjustmentsConfig":   {"in adjustments", reflect.TypeFor[adjustmentsConfig]()},
	"tracing.Config":           {"in tracing", reflect.TypeFor[tracing.Config]()},
	"main.webhooksConfig":      {"in webhooks", reflect.TypeFor[webhooksConfig]()},
	"main.retentionConfig":     {"in retention", reflect.TypeFor[retentionConfig]()},
}

var (
	yamlUnknownRE = regexp.MustCompile(`^line (\d+): field (\S+) not found in type (\S+)$`)
	yamlTypeRE    = regexp.MustCompile(` into \S+$`)
)

// yamlError rewrites yaml's errors in the config file's own terms: the
// key and its line, never a Go type name.
func yamlError(err error) error {
	var te *yaml.TypeError
	if !errors.As(err, &te) {
		return err
	}
	msgs := make([]string, 0, len(te.Errors))
	for _, e := range te.Errors {
		if m := yamlUnknownRE.FindStringSubmatch(e); m != nil {
			sec, ok := configSections[m[3]]
			if !ok {
				msgs = append(msgs, fmt.Sprintf("line %s: unknown key %q", m[1], m[2]))
				continue
			}
			msgs = append(msgs, fmt.Sprintf("line %s: unknown key %q %s (known: %s)", m[1], m[2], sec.name, strings.Join(yamlKeys(sec.typ), ", ")))
			continue
		}
		if strings.HasSuffix(e, " into time.Duration") {
			msgs = append(msgs, yamlTypeRE.ReplaceAllString(e, " here: want a duration such as 1s, 500ms or 2m"))
			continue
		}
		msgs = append(msgs, yamlTypeRE.ReplaceAllString(e, " here"))
	}
	return errors.New(strings.Join(msgs, "; "))
}

// yamlKeys lists the yaml keys of a config struct, in their order.
func yamlKeys(t reflect.Type) []string {
	var keys, inlined []string
	for i := range t.NumField() {
		k, opts, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ",")
		switch {
		case k == "" && strings.Contains(opts, "inline"):
			inlined = append(inlined, yamlKeys(t.Field(i).Type)...) // the section's own keys too, listed last
		case k != "" && k != "-":
			keys = append(keys, k)
		}
	}
	return append(keys, inlined...)
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

// checkReconciliation checks the reconciliation section against the
// endpoints, at start (and in config check), before anything runs: the
// certificates and secrets it names are read now.
func (cfg *serveConfig) checkReconciliation(file fileConfig, cal periods.Calendar, getenv func(string) string) error {
	cfg.reconciliation, cfg.getenv = file.Reconciliation, getenv
	if len(cfg.reconciliation) == 0 {
		return nil
	}
	_, err := reconcile.New(reconcile.Options{Ledger: postings.New(nil, cal), Hooks: webhook.InboxEndpoints(cfg.endpoints),
		Endpoints: cfg.reconciliation, Getenv: getenv})
	if err != nil {
		return fmt.Errorf("config: %w", err)
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

func (e exportsConfig) build(loc *time.Location) (*exports.Config, error) {
	if e.Schedule == "" {
		return nil, nil
	}
	if e.Dir == "" {
		return nil, fmt.Errorf("dir is required with a schedule")
	}
	if len(e.Kinds) == 0 {
		e.Kinds = []string{"journal", "trial-balance", "income-statement"}
	}
	if len(e.Dialects) == 0 {
		e.Dialects = []string{"rfc4180", "br"}
	}
	cfg := &exports.Config{Schedule: e.Schedule, Dir: e.Dir, Location: loc}
	for _, k := range e.Kinds {
		kind, err := reports.ParseExportKind(k)
		if err != nil {
			return nil, err
		}
		cfg.Kinds = append(cfg.Kinds, kind)
	}
	for _, d := range e.Dialects {
		dialect, err := reports.ParseDialect(d)
		if err != nil {
			return nil, err
		}
		cfg.Dialects = append(cfg.Dialects, dialect)
	}
	for _, f := range e.LedgerFormats {
		format, err := reports.ParseLedgerFormat(f)
		if err != nil {
			return nil, err
		}
		cfg.LedgerFormats = append(cfg.LedgerFormats, format)
	}
	return cfg, nil
}

// parseLogLevel reads log_level: debug, info, warn or error ("" is info).
// At warn and above, the requests' lines (info) are not written.
func parseLogLevel(v string) (slog.Level, error) {
	switch strings.ToLower(v) {
	case "", "info":
		return slog.LevelInfo, nil
	case "debug":
		return slog.LevelDebug, nil
	case "warn":
		return slog.LevelWarn, nil
	case "error":
		return slog.LevelError, nil
	}
	return 0, fmt.Errorf("config: log_level %q: want debug, info, warn or error", v)
}
