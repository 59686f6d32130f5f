package main

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeConfig(t *testing.T, yaml string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "razao.yaml")
	if err := os.WriteFile(p, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestBadConfigFailsAtStartWithoutLeakingSecrets(t *testing.T) {
	t.Parallel()
	const secret = "super-secret-value-that-must-not-leak"
	env := map[string]string{"HODLE_SECRET": secret, "SHORT": "tooshort", "STD_BAD": "whsec_!!!" + secret}
	getenv := func(k string) string { return env[k] }
	tests := []struct{ name, yaml, want string }{
		{"unknown scheme", "endpoints: [{name: a, scheme: nope, merchant: m, secrets_env: [HODLE_SECRET]}]", "nope"},
		{"missing secret variable", "endpoints: [{name: a, scheme: bcb-pix, merchant: m, secrets_env: [UNSET_VAR]}]", "UNSET_VAR"},
		// Only Hodle may start without a secret (its registration test);
		// any other scheme would refuse every delivery forever.
		{"standard secret variable unset", "endpoints: [{name: a, scheme: standard, merchant: m, secrets_env: [UNSET_VAR]}]", "UNSET_VAR"},
		{"abacatepay without any secret", "endpoints: [{name: a, scheme: abacatepay, merchant: m}]", "a secret is required"},
		{"current secret unset, previous set", "endpoints: [{name: a, scheme: hodle, merchant: m, secrets_env: [UNSET_VAR, HODLE_SECRET]}]", "UNSET_VAR, the current secret"},
		{"unknown key", "endpoints: [{name: a, scheme: hodle, merchant: m, secret_env: [HODLE_SECRET]}]", "line 1: unknown key \"secret_env\" in an endpoint"},
		{"bad standard secret", "endpoints: [{name: a, scheme: standard, merchant: m, secrets_env: [STD_BAD]}]", "endpoint a"},
		{"short abacatepay secret", "endpoints: [{name: a, scheme: abacatepay, merchant: m, secrets_env: [SHORT]}]", "endpoint a"},
		{"bad endpoint name", "endpoints: [{name: 'A B', scheme: hodle, merchant: m, secrets_env: [HODLE_SECRET]}]", "name"},
		{"no merchant", "endpoints: [{name: a, scheme: hodle, secrets_env: [HODLE_SECRET]}]", "merchant"},
		{"duplicate endpoint", "endpoints: [{name: a, scheme: hodle, merchant: m, secrets_env: [HODLE_SECRET]}, {name: a, scheme: hodle, merchant: m, secrets_env: [HODLE_SECRET]}]", "twice"},
		{"bad time zone", "time_zone: Mars/Olympus", "Mars/Olympus"},
		{"not yaml", "endpoints: [", "yaml"},
		{"streams on most of the pool", "events: {db_connections: 20}", "db_connections"},
		{"negative stream limit", "events: {max_streams_per_token: -1}", "max_streams_per_token"},
		{"streams' byte budget below 1 MiB", "events: {max_bytes_per_second: 1048575}", "max_bytes_per_second must be 1048576 (1 MiB) to"},
		{"streams' byte budget negative", "events: {max_bytes_per_second: -1}", "max_bytes_per_second"},
		{"streams' byte budget at int64 max", "events: {max_bytes_per_second: 9223372036854775807}", "got 9223372036854775807"},
		{"admin listener on every interface", "admin_listen: ':9090'", "refusing admin_listen :9090 without TLS"},
		{"admin listener on a public address", "admin_listen: 203.0.113.7:9090", "refusing admin_listen 203.0.113.7:9090 without TLS"},
		{"admin listener behind a proxy", "behind_proxy: true\nadmin_listen: 0.0.0.0:9090", "refusing admin_listen 0.0.0.0:9090"},
		{"admin listener without a port", "admin_listen: 127.0.0.1", "admin_listen"},
		{"unknown log level", "log_level: verbose", `log_level "verbose"`},
		{"log level with a NUL", "log_level: \"info\\0\"", "log_level"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := writeConfig(t, tc.yaml)
			_, err := parseServeConfig([]string{"-config", path}, newFlagSet("serve", os.Stderr), getenv, true)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error mentioning %q", err, tc.want)
			}
			if strings.Contains(err.Error(), secret) || strings.Contains(err.Error(), "tooshort") {
				t.Fatalf("error leaks a secret: %v", err)
			}
		})
	}
}

func TestConfigPrecedenceFlagsOverEnvOverFile(t *testing.T) {
	t.Parallel()
	path := writeConfig(t, "listen: 127.0.0.1:7001\ntime_zone: UTC\n")
	env := map[string]string{"RAZAO_LISTEN": "127.0.0.1:7002"}
	cfg, err := parseServeConfig([]string{"-config", path}, newFlagSet("serve", os.Stderr), func(k string) string { return env[k] }, true)
	if err != nil || cfg.listen != "127.0.0.1:7002" || cfg.timeZone != "UTC" {
		t.Fatalf("env over file: %+v %v", cfg, err)
	}
	cfg, err = parseServeConfig([]string{"-config", path, "-listen", "127.0.0.1:7003"}, newFlagSet("serve", os.Stderr), func(k string) string { return env[k] }, true)
	if err != nil || cfg.listen != "127.0.0.1:7003" {
		t.Fatalf("flag over env: %+v %v", cfg, err)
	}
}

func TestEventsConfigIsRead(t *testing.T) {
	t.Parallel()
	path := writeConfig(t, "events: {max_streams: 200, max_streams_per_token: 4, db_connections: 3, max_bytes_per_second: 1048576}\n")
	cfg, err := parseServeConfig([]string{"-config", path}, newFlagSet("serve", os.Stderr), func(string) string { return "" }, true)
	if err != nil || cfg.events != (eventsConfig{MaxStreams: 200, MaxStreamsPerToken: 4, DBConnections: 3, MaxBytesPerSecond: 1 << 20}) {
		t.Fatalf("events config: %+v %v", cfg.events, err)
	}
}

// The admin listener is on loopback unless told otherwise, may be turned
// off, and its address and the log level come from flag, environment or
// file in that order.
func TestAdminListenAndLogLevel(t *testing.T) {
	t.Parallel()
	none := func(string) string { return "" }
	cfg, err := parseServeConfig(nil, newFlagSet("serve", os.Stderr), none, true)
	if err != nil || cfg.adminListen != "127.0.0.1:9090" || cfg.logLevel != slog.LevelInfo {
		t.Fatalf("defaults: %q %v %v", cfg.adminListen, cfg.logLevel, err)
	}
	path := writeConfig(t, "admin_listen: off\nlog_level: warn\n")
	cfg, err = parseServeConfig([]string{"-config", path}, newFlagSet("serve", os.Stderr), none, true)
	if err != nil || cfg.adminListen != adminOff || cfg.logLevel != slog.LevelWarn {
		t.Fatalf("file: %q %v %v", cfg.adminListen, cfg.logLevel, err)
	}
	env := map[string]string{"RAZAO_ADMIN_LISTEN": "[::1]:9191", "RAZAO_LOG_LEVEL": "DEBUG"}
	cfg, err = parseServeConfig([]string{"-config", path}, newFlagSet("serve", os.Stderr), func(k string) string { return env[k] }, true)
	if err != nil || cfg.adminListen != "[::1]:9191" || cfg.logLevel != slog.LevelDebug {
		t.Fatalf("env over file: %q %v %v", cfg.adminListen, cfg.logLevel, err)
	}
	cfg, err = parseServeConfig([]string{"-config", path, "-admin-listen", "localhost:0", "-log-level", "error"}, newFlagSet("serve", os.Stderr),
		func(k string) string { return env[k] }, true)
	if err != nil || cfg.adminListen != "localhost:0" || cfg.logLevel != slog.LevelError {
		t.Fatalf("flag over env: %q %v %v", cfg.adminListen, cfg.logLevel, err)
	}
}
