package main

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/pprof"
	"strings"
)

// defaultAdminListen is where the admin listener answers unless told
// otherwise: loopback, so /metrics and the profiles stay on the machine.
const defaultAdminListen = "127.0.0.1:9090"

// adminOff in admin_listen turns the admin listener off.
const adminOff = "off"

// checkAdminExposure refuses an admin listener beyond loopback without
// TLS: its metrics count the business (deliveries, divergences, what is
// pending) and its profiles show the process's memory. A proxy's TLS does
// not count: the admin listener is not meant to be proxied.
func checkAdminExposure(listen string, tlsOn bool) error {
	if listen == adminOff {
		return nil
	}
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		return fmt.Errorf("config: admin_listen %q: %w", listen, err)
	}
	if tlsOn || isLoopback(host) {
		return nil
	}
	return fmt.Errorf("config: refusing admin_listen %s without TLS: beyond loopback, metrics and profiles would cross the network in clear text. "+
		"Keep it on loopback (the default, %s), configure tls (cert_file, key_file), which the admin listener then serves too, or turn it off with admin_listen: off", listen, defaultAdminListen)
}

// adminRoutes is the admin listener's handler: Prometheus metrics, the
// health checks, and Go's profiles. The profiles are registered one by
// one on a mux of their own, never http.DefaultServeMux, and without
// /debug/pprof/cmdline: a -database-url flag would show its password.
func (s *server) adminRoutes(metrics http.Handler) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", metrics)
	mux.HandleFunc("GET /healthz", healthz)
	mux.HandleFunc("GET /readyz", s.ready)
	mux.HandleFunc("GET /debug/pprof/", func(w http.ResponseWriter, r *http.Request) {
		if strings.TrimPrefix(r.URL.Path, "/debug/pprof/") == "cmdline" {
			http.NotFound(w, r)
			return
		}
		pprof.Index(w, r)
	})
	mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("GET /debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
	return mux
}

// healthz answers while the process runs.
func healthz(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, `{"status":"ok"}`)
}
