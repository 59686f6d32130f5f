package main

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"
)

// serveAsIsEnv, in the environment of this test binary, makes it run
// `razao serve` with its arguments instead of the tests, with the
// environment it was given: TestServeRefusesRootWithoutTheOptIn's child.
const serveAsIsEnv = "RAZAO_TEST_SERVE_AS_IS"

func TestRefuseRootOnlyRefusesUidZeroWithoutTheOptIn(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		euid    int
		allowed bool
		refused bool
	}{{0, false, true}, {0, true, false}, {1000, false, false}, {65532, false, false}, {65532, true, false}} {
		err := refuseRoot(tc.euid, tc.allowed)
		if (err != nil) != tc.refused {
			t.Errorf("euid %d, allowed %v: %v, want refused %v", tc.euid, tc.allowed, err, tc.refused)
		}
		if err != nil && (!strings.Contains(err.Error(), "allow_root: true") || !strings.Contains(err.Error(), "RAZAO_ALLOW_ROOT=1")) {
			t.Errorf("the refusal does not name the opt-in: %v", err)
		}
	}
}

func TestAllowRootComesFromTheFileOrTheEnvironment(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		file    bool
		env     string
		want    bool
		wantErr bool
	}{{false, "", false, false}, {true, "", true, false}, {false, "1", true, false}, {false, "true", true, false},
		{false, "0", false, false}, {true, "0", true, false}, {false, "yes", false, true}} {
		got, err := parseAllowRoot(tc.file, func(k string) string {
			if k == allowRootEnv {
				return tc.env
			}
			return ""
		})
		if got != tc.want || (err != nil) != tc.wantErr {
			t.Errorf("file %v, $%s=%q: %v, %v; want %v, error %v", tc.file, allowRootEnv, tc.env, got, err, tc.want, tc.wantErr)
		}
	}
	path := writeConfig(t, "allow_root: true\n")
	cfg, err := parseServeConfig([]string{"-config", path}, newFlagSet("serve", os.Stderr), func(string) string { return "" }, true)
	if err != nil || !cfg.allowRoot {
		t.Errorf("allow_root: true in the file: allowRoot %v, %v", cfg.allowRoot, err)
	}
}

// Serve as root, without allow_root or $RAZAO_ALLOW_ROOT, stops before it
// touches the database or a port, and says how to run it instead.
func TestServeRefusesRootWithoutTheOptIn(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("not root: the refusal is for uid 0 (TestRefuseRootOnlyRefusesUidZeroWithoutTheOptIn covers the rule)")
	}
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, allowRootEnv+"=") })
	cmd := exec.Command(os.Args[0], "-database-url", "postgres://127.0.0.1:1/none?connect_timeout=1", "-listen", "127.0.0.1:0", "-admin-listen", "off")
	cmd.Env = append(env, serveAsIsEnv+"=1")
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "refusing to serve as root (effective uid 0)") {
		t.Fatalf("serve as root: %v\n%s\nwant the refusal", err, out)
	}
	// With the opt-in in the config file it gets past the check, to the
	// database that is not there, which it waits for.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd = exec.CommandContext(ctx, os.Args[0], "-config", writeConfig(t, "allow_root: true\n"),
		"-database-url", "postgres://127.0.0.1:1/none?connect_timeout=1", "-listen", "127.0.0.1:0", "-admin-listen", "off")
	cmd.Env = append(env, serveAsIsEnv+"=1")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer cmd.Process.Kill()
	var seen strings.Builder
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		seen.WriteString(sc.Text() + "\n")
		if strings.Contains(sc.Text(), "waiting for the database") {
			return
		}
	}
	t.Fatalf("serve as root with allow_root: true did not get to the database:\n%s", seen.String())
}
