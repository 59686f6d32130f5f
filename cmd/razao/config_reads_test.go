package main

import (
	"os"
	"strings"
	"testing"
	"time"
)

// TestReadDatabaseURLComesFromFlagEnvOrFileAndReadMaxLagIsChecked: the
// standby's URL is taken as the database's is (flag, then
// $READ_DATABASE_URL, then the file), read_max_lag is kept, and a
// negative one is refused naming the key.
func TestReadDatabaseURLComesFromFlagEnvOrFileAndReadMaxLagIsChecked(t *testing.T) {
	t.Parallel()
	path := writeConfig(t, "read_database_url: postgres://file@standby/razao\nread_max_lag: 2s\n")
	parse := func(env map[string]string, args ...string) (serveConfig, error) {
		return parseServeConfig(append([]string{"-config", path}, args...), newFlagSet("serve", os.Stderr), func(k string) string { return env[k] }, true)
	}
	cfg, err := parse(nil)
	if err != nil || cfg.readURL != "postgres://file@standby/razao" || cfg.readMaxLag != 2*time.Second {
		t.Fatalf("from the file: %q %s %v", cfg.readURL, cfg.readMaxLag, err)
	}
	env := map[string]string{"READ_DATABASE_URL": "postgres://env@standby/razao"}
	if cfg, err = parse(env); err != nil || cfg.readURL != env["READ_DATABASE_URL"] {
		t.Fatalf("from the environment: %q %v", cfg.readURL, err)
	}
	if cfg, err = parse(env, "-read-database-url", "postgres://flag@standby/razao"); err != nil || cfg.readURL != "postgres://flag@standby/razao" {
		t.Fatalf("from the flag: %q %v", cfg.readURL, err)
	}
	bad := writeConfig(t, "read_max_lag: -1s\n")
	_, err = parseServeConfig([]string{"-config", bad}, newFlagSet("serve", os.Stderr), func(string) string { return "" }, true)
	if err == nil || !strings.Contains(err.Error(), "read_max_lag") {
		t.Fatalf("a negative read_max_lag: %v", err)
	}
}
