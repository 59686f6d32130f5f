package main

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// razao health passes on a 200 and only then: a 503, a redirect (never
// followed, even to a server that would say ready), a server that is not
// there, or a bad flag fail it.
func TestHealthPassesOnlyOnReady(t *testing.T) {
	t.Parallel()
	ready := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte(`{"status":"ready"}`)) }))
	defer ready.Close()
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
		w.Write([]byte(strings.Repeat("x", 1<<20)))
	}))
	defer down.Close()
	moved := httptest.NewServer(http.RedirectHandler(ready.URL, http.StatusFound))
	defer moved.Close()
	gone := httptest.NewServer(http.NotFoundHandler())
	gone.Close()

	if code, out := runCmd(t, "health", "-url", ready.URL+"/readyz"); code != 0 || strings.TrimSpace(out) != "ready" {
		t.Errorf("ready: exit %d, %q", code, out)
	}
	for name, c := range map[string]struct {
		args []string
		exit int
		says string
	}{
		"503":        {[]string{"-url", down.URL}, 1, "503 Service Unavailable"},
		"redirect":   {[]string{"-url", moved.URL}, 1, "302 Found"},
		"no server":  {[]string{"-url", gone.URL, "-timeout", "2s"}, 1, "connection refused"},
		"not http":   {[]string{"-url", "ftp://127.0.0.1/readyz"}, 2, "-url"},
		"no host":    {[]string{"-url", "http:///readyz"}, 2, "-url"},
		"timeout 0":  {[]string{"-url", ready.URL, "-timeout", "0s"}, 2, "-timeout"},
		"extra word": {[]string{"-url", ready.URL, "now"}, 2, `unexpected argument "now"`},
	} {
		code, out := runCmd(t, append([]string{"health"}, c.args...)...)
		if code != c.exit || !strings.Contains(out, c.says) || strings.Contains(out, "ready\n") {
			t.Errorf("%s: exit %d, %q; want exit %d saying %q", name, code, out, c.exit, c.says)
		}
	}
}
