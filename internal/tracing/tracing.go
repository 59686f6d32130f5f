// Package tracing holds razao's OpenTelemetry tracing: the tracer
// provider built from the config file's tracing section (an OTLP/HTTP
// exporter), the HTTP middleware that opens a span per request named by
// its route template, and the SQL driver options that give each statement
// a span under the span of its context.
//
// Tracing is off by default, and off costs nothing: no provider is built,
// no middleware is installed and the database driver is not wrapped. The
// provider is passed to what needs it, never set globally, so tests that
// run in parallel each see their own spans.
package tracing

import (
	"context"
	"errors"
	"fmt"
	neturl "net/url"
	"time"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
)

// DefaultServiceName is service.name when the config names none.
const DefaultServiceName = "razao"

// ShutdownTimeout bounds the flush of the spans still buffered at exit: a
// collector that is gone must not hold the process.
const ShutdownTimeout = 5 * time.Second

// Config is the config file's tracing section.
type Config struct {
	// Endpoint is the collector's OTLP/HTTP base URL, e.g.
	// http://127.0.0.1:4318 (spans go to its /v1/traces). Empty: off.
	Endpoint string `yaml:"otlp_endpoint"`
	// ServiceName is the service.name resource attribute (default razao).
	ServiceName string `yaml:"service_name"`
	// SampleRatio is the share of traces kept, 0 to 1 (nil: 1, every one).
	// A trace started elsewhere keeps its caller's decision.
	SampleRatio *float64 `yaml:"sample_ratio"`
}

// Resolve fills the defaults, takes the endpoint from
// OTEL_EXPORTER_OTLP_ENDPOINT when the file names none, and refuses a bad
// value naming its key. It returns whether tracing is on.
func (c *Config) Resolve(getenv func(string) string) (bool, error) {
	if c.Endpoint == "" {
		c.Endpoint = getenv("OTEL_EXPORTER_OTLP_ENDPOINT")
	}
	if c.ServiceName == "" {
		c.ServiceName = DefaultServiceName
	}
	if r := c.SampleRatio; r != nil && !(*r >= 0 && *r <= 1) { // NaN too
		return false, fmt.Errorf("tracing: sample_ratio %v: want a number from 0 to 1", *r)
	}
	if c.Endpoint == "" {
		if c.SampleRatio != nil {
			return false, errors.New("tracing: sample_ratio needs otlp_endpoint (or OTEL_EXPORTER_OTLP_ENDPOINT): without it nothing is traced")
		}
		return false, nil
	}
	u, err := neturl.Parse(c.Endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		// Never the value itself: a URL may carry credentials.
		return false, errors.New("tracing: otlp_endpoint: want an http:// or https:// URL such as http://127.0.0.1:4318")
	}
	if u.User != nil {
		return false, errors.New("tracing: otlp_endpoint: credentials in the URL are not taken; set OTEL_EXPORTER_OTLP_HEADERS")
	}
	return true, nil
}

// ratio is the sample ratio, 1 by default.
func (c Config) ratio() float64 {
	if c.SampleRatio == nil {
		return 1
	}
	return *c.SampleRatio
}

// NewProvider builds the tracer provider exporting to c.Endpoint over
// OTLP/HTTP in batches. c must have been resolved. The caller shuts it
// down (Shutdown) after the drain, which flushes what is buffered.
func NewProvider(ctx context.Context, c Config, version string) (*sdktrace.TracerProvider, error) {
	exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(traceURL(c.Endpoint)))
	if err != nil {
		return nil, fmt.Errorf("tracing: otlp exporter: %w", err)
	}
	res, err := resource.Merge(resource.Default(), resource.NewWithAttributes(semconv.SchemaURL,
		semconv.ServiceName(c.ServiceName), semconv.ServiceVersion(version)))
	if err != nil {
		return nil, fmt.Errorf("tracing: resource: %w", err)
	}
	return sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(exp),
		sdktrace.WithResource(res),
		sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(c.ratio()))),
	), nil
}

// traceURL is the base URL with the OTLP traces path, as the
// specification appends it to OTEL_EXPORTER_OTLP_ENDPOINT.
func traceURL(base string) string {
	u, _ := neturl.Parse(base) // checked by Resolve
	if u.Path == "" || u.Path == "/" {
		u.Path = "/v1/traces"
	}
	return u.String()
}

// Shutdown flushes the provider's spans and stops it, within
// ShutdownTimeout.
func Shutdown(tp *sdktrace.TracerProvider) error {
	ctx, cancel := context.WithTimeout(context.Background(), ShutdownTimeout)
	defer cancel()
	return tp.Shutdown(ctx)
}

// Tracer names the tracer of one of razao's packages.
func Tracer(tp trace.TracerProvider, pkg string) trace.Tracer {
	return tp.Tracer("github.com/razao/razao/" + pkg)
}
