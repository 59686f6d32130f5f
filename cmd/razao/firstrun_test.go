package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"reflect"
	"regexp"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/razao/razao/internal/pgtest"
	"github.com/razao/razao/webhook/psp"
)

// A config with one endpoint of each scheme, secrets inline (the tests
// run in parallel and cannot set the environment).
const fourSchemes = `
endpoints:
  - name: hodle
    scheme: hodle
    merchant: loja
    secrets: [example-secret-for-local-tests-only]
  - name: psp
    scheme: standard
    merchant: loja
    secrets: [whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw]
  - name: abacatepay
    scheme: abacatepay
    merchant: loja
    secrets: [url-secret-0123456789abcdefghijklmnop]
  - name: pix
    scheme: bcb-pix
    merchant: loja
    secrets: [bcb-url-secret-0123456789abcdefghijk]
`

// startFromConfig runs the real wiring of serve with the endpoints of the
// config file at path, as serve reads them.
func startFromConfig(t *testing.T, path string, getenv func(string) string) (base, token string, stop func()) {
	t.Helper()
	parsed, err := parseServeConfig([]string{"-config", path}, newFlagSet("serve", io.Discard), getenv, true)
	if err != nil {
		t.Fatal(err)
	}
	base, token, _, stop = startServer(t, func(cfg *serveConfig) { cfg.endpoints = parsed.endpoints })
	return base, token, stop
}

// waitState waits until the charge is in state: deliveries are applied
// right after their answer. Bounded, but not a timed assertion: the
// state is what is checked.
func waitState(t *testing.T, base, token, id, state string) map[string]any {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, m := apiCall(t, token, "GET", base+"/v1/charges/"+id, "")
		if m["state"] == state {
			return m
		}
		if time.Now().After(deadline) {
			t.Fatalf("charge %s: %v, want state %s", id, m, state)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestPSPSendIsAcceptedAndBookedForEachScheme(t *testing.T) {
	t.Parallel()
	path := writeConfig(t, fourSchemes)
	base, token, stop := startFromConfig(t, path, func(string) string { return "" })
	defer stop()
	send := func(args ...string) string {
		t.Helper()
		code, out := runCmd(t, append([]string{"psp", "send", "-config", path, "-url", base}, args...)...)
		if code != 0 || !strings.Contains(out, "200 OK") {
			t.Fatalf("psp send %v: exit %d\n%s", args, code, out)
		}
		return out
	}
	for _, tc := range []struct {
		endpoint, charge, refundID, refunded string
		fails                                bool
	}{
		{"hodle", "order-h", "rf-1", "partially_refunded", true},
		{"psp", "order-s", "rf-1", "partially_refunded", true},
		{"abacatepay", "order-a", "", "refunded", false}, // AbacatePay refunds are total
		{"pix", "order4", "D1", "partially_refunded", false},
	} {
		t.Run(tc.endpoint, func(t *testing.T) {
			if code, m := apiCall(t, token, "POST", base+"/v1/charges", fmt.Sprintf(`{"id":%q,"amount":4990}`, tc.charge)); code != 201 {
				t.Fatalf("register: %d %v", code, m)
			}
			out := send("-endpoint", tc.endpoint, "paid", tc.charge, "-amount", "4990")
			if !strings.Contains(out, `"status":"accepted"`) {
				t.Fatalf("paid not accepted:\n%s", out)
			}
			// The Pix API appends /pix to the registered URL: psp send
			// posts where a bank would.
			if tc.endpoint == "pix" && !strings.Contains(out, "/webhooks/pix/pix?hmac=REDACTED") {
				t.Fatalf("pix paid not sent to /webhooks/pix/pix:\n%s", out)
			}
			waitState(t, base, token, tc.charge, "paid")
			// The same command again is a redelivery.
			if out := send("-endpoint", tc.endpoint, "paid", tc.charge, "-amount", "4990"); !strings.Contains(out, `"status":"duplicate"`) {
				t.Fatalf("second send not a duplicate:\n%s", out)
			}
			refund := []string{"-endpoint", tc.endpoint, "refunded", tc.charge}
			if tc.refundID != "" {
				refund = append(refund, "-amount", "1000", "-refund-id", tc.refundID, "-paid-amount", "4990")
			}
			send(refund...)
			m := waitState(t, base, token, tc.charge, tc.refunded)
			if want := map[bool]float64{true: 1000, false: 4990}[tc.refundID != ""]; m["refunded_amount"] != want {
				t.Fatalf("refunded_amount %v, want %v", m["refunded_amount"], want)
			}
			if !tc.fails {
				return
			}
			failing := tc.charge + "-f"
			apiCall(t, token, "POST", base+"/v1/charges", fmt.Sprintf(`{"id":%q,"amount":4990}`, failing))
			send("-endpoint", tc.endpoint, "failed", failing)
			waitState(t, base, token, failing, "failed")
		})
	}
}

// Without -amount, paid sends the registered charge's amount, read from
// the API with $RAZAO_API_TOKEN.
func TestPSPSendReadsTheAmountFromTheCharge(t *testing.T) {
	path := writeConfig(t, fourSchemes)
	base, token, stop := startFromConfig(t, path, func(string) string { return "" })
	defer stop()
	apiCall(t, token, "POST", base+"/v1/charges", `{"id":"order-1","amount":12345}`)
	t.Setenv("RAZAO_API_TOKEN", "")
	if code, out := runCmd(t, "psp", "send", "-config", path, "-url", base, "-endpoint", "psp", "paid", "order-1"); code == 0 || !strings.Contains(out, "RAZAO_API_TOKEN") {
		t.Fatalf("without a token: exit %d\n%s", code, out)
	}
	t.Setenv("RAZAO_API_TOKEN", token)
	code, out := runCmd(t, "psp", "send", "-config", path, "-url", base, "-endpoint", "psp", "paid", "order-1")
	if code != 0 || !strings.Contains(out, `"amount":12345`) {
		t.Fatalf("exit %d\n%s", code, out)
	}
	waitState(t, base, token, "order-1", "paid")
	// And what is left, for a refund without -amount.
	if code, out := runCmd(t, "psp", "send", "-config", path, "-url", base, "-endpoint", "psp", "refunded", "order-1", "-refund-id", "rf-all"); code != 0 || !strings.Contains(out, `"amount":12345`) {
		t.Fatalf("refund: exit %d\n%s", code, out)
	}
	waitState(t, base, token, "order-1", "refunded")
}

func TestPSPSendSaysWhatIsWrong(t *testing.T) {
	t.Parallel()
	path := writeConfig(t, fourSchemes)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"paid", "order-1", "-amount", "1"}, "-endpoint is required: " + path + " configures hodle, psp, abacatepay, pix"},
		{[]string{"-endpoint", "nope", "paid", "order-1", "-amount", "1"}, `no endpoint "nope"`},
		{[]string{"-endpoint", "abacatepay", "failed", "order-1"}, "no failed event"},
		{[]string{"-endpoint", "pix", "paid", "order-1", "-amount", "1"}, "txid"},
		{[]string{"-endpoint", "psp", "refunded", "order-1", "-amount", "1"}, "refund id"},
		{[]string{"-endpoint", "psp", "bought", "order-1"}, `action "bought"`},
		// Nothing listens on port 1.
		{[]string{"-endpoint", "psp", "paid", "order-1", "-amount", "1", "-url", "http://127.0.0.1:1"}, "is razao running?"},
	} {
		code, out := runCmd(t, append([]string{"psp", "send", "-config", path}, tc.args...)...)
		if code == 0 || !strings.Contains(out, tc.want) {
			t.Errorf("%v: exit %d, want an error with %q:\n%s", tc.args, code, tc.want, out)
		}
	}
}

// Hodle's registration flow: the endpoint starts before Hodle shows the
// secret; it answers WEBHOOK_TEST, refuses a signed payment with 401, and
// the log says so at start, naming the variable.
func TestHodleEndpointWithoutSecretAnswersOnlyItsTest(t *testing.T) {
	t.Parallel()
	path := writeConfig(t, "endpoints:\n  - {name: hodle, scheme: hodle, merchant: loja, secrets_env: [RAZAO_TEST_HODLE_NOT_YET]}\n")
	parsed, err := parseServeConfig([]string{"-config", path}, newFlagSet("serve", io.Discard), func(string) string { return "" }, true)
	if err != nil {
		t.Fatalf("an endpoint without its secret yet must start: %v", err)
	}
	_, url := pgtest.NewWithURL(t)
	logs := &syncBuffer{} // written by the serving goroutine while read here
	cfg := serveConfig{db: dbFlags{url: url}, timeZone: "America/Sao_Paulo", migrate: true, workerInterval: time.Second, endpoints: parsed.endpoints}
	ctx, cancel := context.WithCancel(context.Background())
	srv, err := newServer(ctx, cfg, slog.New(slog.NewJSONHandler(logs, nil)), time.Now)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	defer func() { cancel(); <-done; srv.Close() }()
	base := "http://" + ln.Addr().String()
	if !strings.Contains(logs.String(), `"level":"WARN","msg":"webhook endpoint has no secret yet`) || !strings.Contains(logs.String(), "RAZAO_TEST_HODLE_NOT_YET") {
		t.Fatalf("no warning at start:\n%s", logs.String())
	}

	code, out := runCmd(t, "psp", "send", "-config", path, "-url", base, "test")
	if code != 0 || !strings.Contains(out, "200 OK") || !strings.Contains(out, `"status":"test"`) {
		t.Fatalf("WEBHOOK_TEST: exit %d\n%s", code, out)
	}
	// A payment signed with any secret: refused.
	d, err := psp.Build(psp.Endpoint{Name: "hodle", Scheme: "hodle", Secret: "a-guess"},
		psp.Event{Action: psp.Paid, ChargeID: "order-1", Amount: 4990}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	req, _ := d.Request(base)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("signed payment to an endpoint without secret: %d, want 401", resp.StatusCode)
	}
	// And psp send says why it cannot sign one.
	if code, out := runCmd(t, "psp", "send", "-config", path, "-url", base, "paid", "order-1", "-amount", "1"); code == 0 || !strings.Contains(out, "no secret yet") {
		t.Fatalf("psp send paid without a secret: exit %d\n%s", code, out)
	}
}

func TestConfigCheck(t *testing.T) {
	t.Parallel()
	exportDir := t.TempDir()
	good := writeConfig(t, fourSchemes+"listen: 127.0.0.1:9000\ntime_zone: UTC\nworker_interval: 2s\nexports:\n  schedule: \"0 6 1 * *\"\n  dir: "+exportDir+"\n")
	code, out := runCmd(t, "config", "check", "-config", good)
	if code != 0 {
		t.Fatalf("good config: exit %d\n%s", code, out)
	}
	for _, want := range []string{"ok    config file " + good + ": readable, every key known", "ok    listen 127.0.0.1:9000", "time_zone UTC",
		"worker_interval 2s", "ok    exports: \"0 6 1 * *\" into " + exportDir, "ok    endpoint hodle: scheme hodle, merchant loja, POST /webhooks/hodle",
		"ok    endpoint pix: scheme bcb-pix", "config check: ok"} {
		if !strings.Contains(out, want) {
			t.Errorf("good config: output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "example-secret-for-local-tests-only") {
		t.Fatalf("config check prints a secret:\n%s", out)
	}

	for _, tc := range []struct {
		name, yaml, want string
		code             int
	}{
		{"unknown key", "listen: 127.0.0.1:1\nendpoints:\n  - name: a\n    scheme: hodle\n    merchant: m\n    secret_env: [X]\n", `line 6: unknown key "secret_env" in an endpoint (known: name, scheme, merchant, secrets, secrets_env`, 1},
		{"unknown top-level key", "listn: 127.0.0.1:1\n", `line 1: unknown key "listn" at the top level`, 1},
		{"unknown key of an endpoint lists the mutual TLS keys too", "endpoints:\n  - name: a\n    scheme: bcb-pix\n    merchant: m\n    client_ca: x\n",
			`line 5: unknown key "client_ca" in an endpoint (known: name, scheme, merchant, secrets, secrets_env, public_key, max_body_bytes, max_items, client_ca_file, client_subjects, client_sans, client_cert_header, trusted_proxies)`, 1},
		{"unknown key in tls", "tls:\n  cert: x\n", `line 2: unknown key "cert" in tls (known: cert_file, key_file`, 1},
		{"unknown key in events", "events:\n  max_stream: 3\n", `line 2: unknown key "max_stream" in events (known: max_streams`, 1},
		{"hodle secret not set yet", "endpoints: [{name: h, scheme: hodle, merchant: m, secrets_env: [RAZAO_TEST_UNSET_1]}]", "warn  endpoint h: scheme hodle, merchant m, POST /webhooks/h, max body 262144 bytes: no secret yet (RAZAO_TEST_UNSET_1 empty)", 0},
		{"bcb-pix secret variable unset", "endpoints: [{name: p, scheme: bcb-pix, merchant: m, secrets_env: [RAZAO_TEST_UNSET_2]}]", "FAIL  config: webhook endpoint config: endpoint p: environment variable RAZAO_TEST_UNSET_2 is empty or unset", 1},
		{"bad endpoint", "endpoints: [{name: 'Bad Name', scheme: hodle, merchant: m}]", `FAIL  config: webhook endpoint config: name "Bad Name"`, 1},
		{"unknown scheme", "endpoints: [{name: a, scheme: paypal, merchant: m}]", `unknown scheme "paypal"`, 1},
		{"export dir missing", "exports: {schedule: '@monthly', dir: /nonexistent/razao}", "FAIL  exports.dir /nonexistent/razao", 1},
		{"bad duration", "worker_interval: soon\n", "line 1: cannot unmarshal !!str `soon` here: want a duration such as 1s, 500ms or 2m", 1},
		{"a number for a duration", "worker_interval: 1\n", "line 1: cannot unmarshal !!int `1` here: want a duration such as 1s", 1},
		{"tls files missing", "tls: {cert_file: /nonexistent/cert.pem, key_file: /nonexistent/key.pem}\n", "FAIL  tls: cert_file /nonexistent/cert.pem", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out := runCmd(t, "config", "check", "-config", writeConfig(t, tc.yaml))
			if code != tc.code || !strings.Contains(out, tc.want) {
				t.Fatalf("exit %d (want %d), want %q in:\n%s", code, tc.code, tc.want, out)
			}
		})
	}
	if code, out := runCmd(t, "config", "check", "-config", "/nonexistent.yaml"); code != 1 || !strings.Contains(out, "no such file") {
		t.Fatalf("missing file: exit %d\n%s", code, out)
	}
}

// docs/configuration.md documents every key the config file takes, and
// config check knows each (it parses them all): a key added in code and
// not in that page fails here.
func TestDocsDocumentEveryConfigKey(t *testing.T) {
	t.Parallel()
	page, err := os.ReadFile("../../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	var walk func(prefix string, typ reflect.Type)
	walk = func(prefix string, typ reflect.Type) {
		for typ.Kind() == reflect.Slice || typ.Kind() == reflect.Pointer {
			typ = typ.Elem()
		}
		if typ.Kind() != reflect.Struct || typ == reflect.TypeFor[time.Duration]() {
			return
		}
		for i := range typ.NumField() {
			key, _, _ := strings.Cut(typ.Field(i).Tag.Get("yaml"), ",")
			if key == "" || key == "-" {
				continue
			}
			// A row of the page's table of keys ("Every key").
			if !regexp.MustCompile("(?m)^\\| (&nbsp;&nbsp;)*`" + regexp.QuoteMeta(key) + "` \\|").Match(page) {
				t.Errorf("docs/configuration.md's table of config keys lacks `%s` (%s%s)", key, prefix, key)
			}
			walk(prefix+key+".", typ.Field(i).Type)
		}
	}
	walk("", reflect.TypeFor[fileConfig]())
}

func TestVersionPrintsTheBuildInformation(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"version"}, {"--version"}} {
		code, out := runCmd(t, args...)
		if code != 0 || !regexp.MustCompile(`(?m)^razao \S+\n  module   \S+\n  commit   \S+\n  time     \S+\n  modified \S+.*\n  go       go1\.`).MatchString(out) {
			t.Fatalf("%v: exit %d\n%s", args, code, out)
		}
	}
	// What a build from a clone records.
	info := &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Path: "github.com/razao/razao", Version: "v1.2.3"},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "0123abcd"}, {Key: "vcs.time", Value: "2026-12-01T10:00:00Z"}, {Key: "vcs.modified", Value: "true"}}}
	want := "razao v1.2.3\n  module   github.com/razao/razao\n  commit   0123abcd\n  time     2026-12-01T10:00:00Z\n  modified true (uncommitted changes in the build)\n  go       go1.26.0\n"
	if got := versionText(info, true); got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
}

// Help never needs a database: an unreachable one must not matter.
func TestHelpWorksWithoutADatabase(t *testing.T) {
	t.Parallel()
	const nowhere = "postgres://nobody@127.0.0.1:1/none?sslmode=disable&connect_timeout=1"
	for _, args := range [][]string{
		{"token", "-h"}, {"token", "--help"}, {"token", "create", "-h", "-database-url", nowhere},
		{"inbox", "-h"}, {"period", "-h"}, {"psp", "-h"}, {"psp", "send", "-h"}, {"config", "-h"}, {"config", "check", "-h"},
	} {
		if code, out := runCmd(t, args...); code != 0 || !strings.Contains(out, "usage") && !strings.Contains(out, "-database-url") {
			t.Errorf("%v: exit %d\n%s", args, code, out)
		}
	}
}

// On a database nobody migrated, a command says what to do instead of
// `relation "api_tokens" does not exist`.
func TestCommandsOnAnEmptyDatabaseSayRunMigrate(t *testing.T) {
	t.Parallel()
	base := pgtest.ServerURL(t)
	name := fmt.Sprintf("razao_empty_%d", time.Now().UnixNano())
	admin := pgtest.New(t) // any connection to the server will do to create a database
	if _, err := admin.Exec(`CREATE DATABASE ` + pq.QuoteIdentifier(name)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Exec(`DROP DATABASE IF EXISTS ` + pq.QuoteIdentifier(name) + ` WITH (FORCE)`) })
	url := pgtest.WithDatabase(base, name)
	for _, args := range [][]string{{"token", "list"}, {"token", "create", "-name", "x"}, {"period", "list"}, {"verify"}, {"inbox", "retry", "1"},
		{"export", "-kind", "journal", "-month", "2026-08", "-out", os.DevNull}} {
		// -database-url before the positional arguments.
		args = append(args[:len(args):len(args)], "-database-url", url)
		if args[0] == "inbox" {
			args = []string{"inbox", "retry", "-database-url", url, "1"}
		}
		code, out := runCmd(t, args...)
		if code == 0 || !strings.Contains(out, "no razao schema yet: run razao migrate") || strings.Contains(out, "does not exist") {
			t.Errorf("%v: exit %d\n%s", args, code, out)
		}
	}
	// A schema that misses a migration says which.
	if code, out := runCmd(t, "migrate", "-database-url", url); code != 0 {
		t.Fatalf("migrate: %d %s", code, out)
	}
	migrated, err := sqlx.Open("postgres", url)
	if err != nil {
		t.Fatal(err)
	}
	defer migrated.Close()
	if _, err := migrated.Exec(`DELETE FROM schema_migrations WHERE version = (SELECT max(version) FROM schema_migrations)`); err != nil {
		t.Fatal(err)
	}
	if code, out := runCmd(t, "token", "list", "-database-url", url); code == 0 || !regexp.MustCompile(`1 migration\(s\) of this binary not applied \(\d{4}_\w+\.sql\): run razao migrate`).MatchString(out) {
		t.Fatalf("behind: exit %d\n%s", code, out)
	}
}

// make demo stops at once, non-zero, saying what is missing, when nothing
// answers or the token is missing or refused.
func TestDemoFailsFastWithoutServiceOrToken(t *testing.T) {
	t.Setenv("RAZAO_DEV_HODLE_SECRET", "x")
	t.Setenv("RAZAO_DEV_STANDARD_SECRET", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	t.Setenv("RAZAO_API_TOKEN", "")
	if code, out := runCmd(t, "demo", "-url", "http://127.0.0.1:1"); code == 0 || !strings.Contains(out, "razao does not answer at http://127.0.0.1:1") || !strings.Contains(out, "make run") {
		t.Fatalf("service down: exit %d\n%s", code, out)
	}
	base, _, _, stop := startServer(t)
	defer stop()
	if code, out := runCmd(t, "demo", "-url", base); code == 0 || !strings.Contains(out, "RAZAO_API_TOKEN is empty") {
		t.Fatalf("no token: exit %d\n%s", code, out)
	}
	t.Setenv("RAZAO_API_TOKEN", "razao_not-a-token")
	if code, out := runCmd(t, "demo", "-url", base); code == 0 || !strings.Contains(out, "refuses the token") || strings.Contains(out, "== register") {
		t.Fatalf("bad token: exit %d\n%s", code, out)
	}
}

// razao help (or -h) prints the commands on stdout, so that `razao help |
// less` shows them; razao with no command is a usage error, on stderr.
func TestHelpGoesToStdout(t *testing.T) {
	t.Parallel()
	for _, arg := range []string{"help", "-h", "--help"} {
		var out, errOut bytes.Buffer
		if code := run(context.Background(), []string{arg}, &out, &errOut); code != 0 || !strings.Contains(out.String(), "commands:") || errOut.Len() != 0 {
			t.Errorf("razao %s: exit %d, stdout %q, stderr %q", arg, code, out.String(), errOut.String())
		}
	}
	var out, errOut bytes.Buffer
	if code := run(context.Background(), nil, &out, &errOut); code != 2 || !strings.Contains(errOut.String(), "commands:") || out.Len() != 0 {
		t.Errorf("razao: exit %d, stdout %q, stderr %q", code, out.String(), errOut.String())
	}
	// razao help COMMAND is that command's -h.
	if code, out := runCmd(t, "help", "verify"); code != 0 || !strings.Contains(out, "-json") || strings.Contains(out, "commands:") {
		t.Errorf("razao help verify: exit %d\n%s", code, out)
	}
}

// -h printed $DATABASE_URL, password included, as -database-url's
// default, on every command that opens the database.
func TestHelpNeverPrintsTheDatabaseURL(t *testing.T) {
	t.Setenv("DATABASE_URL", "postgres://u:s3cretpw@127.0.0.1:1/x")
	for _, args := range [][]string{{"verify", "-h"}, {"migrate", "-h"}, {"export", "-h"}, {"token", "create", "-h"},
		{"inbox", "retry", "-h"}, {"period", "list", "-h"}, {"serve", "-h"}, {"reconcile", "-h"}, {"config", "check", "-h"}} {
		_, out := runCmd(t, args...)
		if strings.Contains(out, "s3cretpw") || strings.Contains(out, "127.0.0.1:1/x") {
			t.Errorf("%v prints the database URL:\n%s", args, out)
		}
		if !strings.Contains(out, "-database-url URL") {
			t.Errorf("%v does not list -database-url URL:\n%s", args, out)
		}
	}
}

// razao inbox retry says what is missing or wrong: the note, the id.
func TestInboxRetrySaysWhatIsWrong(t *testing.T) {
	t.Parallel()
	_, url := pgtest.NewWithURL(t)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"inbox", "retry", "-database-url", url, "12"}, "-note is required"},
		{[]string{"inbox", "retry", "-database-url", url, "-note", "fixed", "abc"}, `delivery id "abc": want the positive number of a stored delivery`},
		{[]string{"inbox", "retry", "-database-url", url, "-note", "fixed", "999999"}, "delivery 999999 has no divergence (it did not give up, or there is no such delivery)"},
	} {
		if code, out := runCmd(t, c.args...); code == 0 || !strings.Contains(out, c.want) || strings.Contains(out, "strconv") {
			t.Errorf("%v: exit %d, want %q in:\n%s", c.args[2:], code, c.want, out)
		}
	}
}
