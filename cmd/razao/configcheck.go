package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/razao/razao/archive"
	"github.com/razao/razao/money"
	"github.com/razao/razao/reads"
)

// cmdConfig is `razao config check`: it reads the config file and the
// environment exactly as `razao serve` would (same flags, same
// precedence), checks what serve checks at start and what it would only
// find later (the export directory), and prints each check. It starts
// nothing and never connects to the database. A problem exits 1.
func cmdConfig(_ context.Context, args []string, stdout, stderr io.Writer) error {
	const usage = "usage: razao config check [-config FILE] [the flags of razao serve]"
	if len(args) == 0 || args[0] != "check" {
		fmt.Fprintln(stderr, usage)
		if len(args) > 0 && isHelp(args[0]) {
			return nil
		}
		return exitError(2)
	}
	c := checker{out: stdout, stderr: stderr}
	if err := c.check(args[1:], os.Getenv); err != nil {
		return err
	}
	if c.failed {
		fmt.Fprintln(stdout, "config check: FAILED")
		return exitError(1)
	}
	fmt.Fprintf(stdout, "config check: ok (%d warning(s))\n", c.warnings)
	return nil
}

type checker struct {
	out      io.Writer
	stderr   io.Writer
	failed   bool
	warnings int
}

func (c *checker) ok(format string, a ...any) { fmt.Fprintf(c.out, "ok    "+format+"\n", a...) }
func (c *checker) warn(format string, a ...any) {
	c.warnings++
	fmt.Fprintf(c.out, "warn  "+format+"\n", a...)
}
func (c *checker) fail(format string, a ...any) {
	c.failed = true
	fmt.Fprintf(c.out, "FAIL  "+format+"\n", a...)
}

func (c *checker) check(args []string, getenv func(string) string) error {
	fs := newFlagSet("config check", c.stderr)
	cfg, err := parseServeConfig(args, fs, getenv, true)
	if errors.Is(err, flag.ErrHelp) {
		return err
	}
	if cfg.configPath == "" {
		c.warn("no config file (-config or $RAZAO_CONFIG): defaults and environment only, no webhook endpoint")
	}
	if err != nil {
		// parseServeConfig stops at the first problem; its message names
		// the key, endpoint or variable, never a secret.
		c.fail("%v", err)
		return nil
	}
	if cfg.configPath != "" {
		c.ok("config file %s: readable, every key known", cfg.configPath)
	}
	if _, _, err := net.SplitHostPort(cfg.listen); err != nil {
		c.fail("listen %q: %v", cfg.listen, err)
	} else {
		c.ok("listen %s", cfg.listen)
	}
	c.ok("time_zone %s, go_live %s", cfg.timeZone, cfg.goLive.Format("2006-01-02"))
	c.ok("max_amount %d centavos (R$ %s)", cfg.maxAmount.Max(), money.FormatReais(cfg.maxAmount.Max(), ','))
	c.ok("worker_interval %s", cfg.workerInterval)
	if cfg.allowRoot {
		c.warn("allow_root: serve would run as root if started so (a development machine only)")
	}
	c.ok("%s", describeAdjustments(cfg.adjustments))
	c.checkTLS(cfg)
	c.checkExports(cfg)
	c.checkRetention(cfg)
	c.checkEndpoints(cfg, getenv)
	if cfg.db.url == "" {
		c.warn("no DATABASE_URL (or -database-url): serve would not start (not contacted here)")
	} else {
		c.ok("database URL given (not contacted by this check)")
	}
	c.checkReads(cfg)
	return nil
}

// checkTLS loads the certificate and key as serve would (an unreadable
// pair, or an expired certificate, stops serve at start).
func (c *checker) checkTLS(cfg serveConfig) {
	if cfg.tls == nil {
		c.ok("tls: none (plain HTTP)")
		return
	}
	if _, err := newCertReloader(cfg.tls, slog.New(slog.DiscardHandler), time.Now); err != nil {
		c.fail("%v", err)
		return
	}
	c.ok("tls: cert_file %s and key_file %s load, the certificate has not expired", cfg.tls.certFile, cfg.tls.keyFile)
}

func (c *checker) checkExports(cfg serveConfig) {
	e := cfg.exports
	if e == nil {
		c.ok("exports: no schedule, no scheduled exports")
		return
	}
	if _, err := cron.ParseStandard(e.Schedule); err != nil {
		c.fail("exports.schedule %q: %v", e.Schedule, err)
	}
	st, err := os.Stat(e.Dir)
	switch {
	case err != nil:
		c.fail("exports.dir %s: %v", e.Dir, err)
	case !st.IsDir():
		c.fail("exports.dir %s: not a directory", e.Dir)
	case syscall.Access(e.Dir, 0x2 /* W_OK */) != nil:
		c.fail("exports.dir %s: not writable by this user", e.Dir)
	default:
		c.ok("exports: %q into %s, %d kind(s), %d dialect(s), %d ledger format(s)", e.Schedule, e.Dir, len(e.Kinds), len(e.Dialects), len(e.LedgerFormats))
	}
}

func (c *checker) checkEndpoints(cfg serveConfig, getenv func(string) string) {
	file, err := loadFileConfig(cfg.configPath)
	if err != nil { // parsed once already; cannot differ
		c.fail("%v", err)
		return
	}
	for i, ep := range cfg.endpoints {
		ec := file.Endpoints[i]
		secrets, _, _ := ec.ResolveSecrets(getenv)
		var from []string
		if len(ec.Secrets) > 0 {
			from = append(from, fmt.Sprintf("%d inline", len(ec.Secrets)))
		}
		for _, v := range ec.SecretsEnv {
			state := "set"
			if getenv(v) == "" {
				state = "empty"
			}
			from = append(from, v+" "+state)
		}
		desc := fmt.Sprintf("endpoint %s: scheme %s, merchant %s, POST /webhooks/%s, max body %d bytes",
			ep.Name, ep.Scheme.Name(), ep.Merchant, ep.Name, ep.MaxBody)
		switch {
		case ep.NoSecret:
			if len(from) == 0 {
				from = []string{"none configured"}
			}
			c.warn("%s: no secret yet (%s): answers only the PSP's registration test, 401 to everything else",
				desc, strings.Join(from, ", "))
		case len(secrets) == 0:
			c.ok("%s: no URL secret, mutual TLS only", desc)
		default:
			c.ok("%s: %d secret(s) (%s)", desc, len(secrets), strings.Join(from, ", "))
		}
	}
	if len(cfg.endpoints) == 0 && cfg.configPath != "" {
		c.warn("no webhook endpoint configured: no PSP can deliver")
	}
}

// checkRetention says what retention would do; the directory was checked
// (it exists and takes a file) when the config was read.
func (c *checker) checkRetention(cfg serveConfig) {
	r := cfg.retention
	if r == nil {
		c.warn("retention: no archive_dir: nothing is archived nor purged, and the inbox, outbox and logs grow for ever")
		return
	}
	var ages []string
	for _, k := range archive.Kinds {
		age := "kept forever"
		if a := r.Age(k); a > 0 {
			age = a.String()
		}
		ages = append(ages, fmt.Sprintf("%s %s", k, age))
	}
	runs := "razao archive run only (serve runs none)"
	if r.every > 0 {
		runs = fmt.Sprintf("serve runs it every %s for at most %s", r.every, r.budget)
	}
	c.ok("retention: archives into %s (%s); %s", r.Dir, strings.Join(ages, ", "), runs)
}

// checkReads says where reads that need not see their own writes go.
func (c *checker) checkReads(cfg serveConfig) {
	if cfg.readURL == "" {
		c.ok("read_database_url: none, every read from the primary")
		return
	}
	lag := cfg.readMaxLag
	if lag == 0 {
		lag = reads.DefaultMaxLag
	}
	if cfg.readURL == cfg.db.url {
		c.warn("read_database_url is DATABASE_URL itself: reads would go to the primary anyway (a primary is never used as a standby)")
		return
	}
	c.ok("read_database_url given (not contacted by this check): reports, lists, console pages and on-demand exports from the standby while it lags at most %s (read_max_lag), else from the primary", lag)
}
