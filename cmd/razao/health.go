package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"
)

// defaultHealthURL is what razao serve answers readiness on with the
// default listen address.
const defaultHealthURL = "http://127.0.0.1:8080/readyz"

// cmdHealth asks a running razao whether it is ready (GET /readyz: it
// answers 200 when its database does) and fails when it is not: the
// container image's health check, which has no shell and no curl. It
// follows no redirect and reads at most a few KB of the answer.
func cmdHealth(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("health", stderr)
	target := fs.String("url", envOr("RAZAO_HEALTH_URL", defaultHealthURL), "readiness URL of the running service ($RAZAO_HEALTH_URL)")
	timeout := fs.Duration("timeout", 3*time.Second, "how long to wait for the answer")
	if err := fs.Parse(args); err != nil {
		return err
	}
	bad := ""
	if u, err := url.Parse(*target); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		bad = fmt.Sprintf("-url: want an http or https URL, not %q", *target)
	}
	switch {
	case fs.NArg() > 0:
		bad = fmt.Sprintf("unexpected argument %q", fs.Arg(0))
	case *timeout <= 0:
		bad = fmt.Sprintf("-timeout: want a positive duration, not %s", *timeout)
	}
	if bad != "" {
		fmt.Fprintf(stderr, "razao health: %s\n", bad)
		return exitError(2)
	}
	client := &http.Client{
		Timeout:       *timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, *target, nil)
	if err != nil {
		return fmt.Errorf("health: %w", err)
	}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("health: %w", err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("health: %s answered %s", *target, resp.Status)
	}
	fmt.Fprintln(stdout, "ready")
	return nil
}
