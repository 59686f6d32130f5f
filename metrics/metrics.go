// Package metrics exposes razao's Prometheus metrics: what the webhook
// front received and did, how long processing took, the inbox backlog, the
// retries and the open divergences. Methods are safe on a nil *Metrics, so
// tests and tools can run without a registry.
package metrics

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/razao/razao/divergences"
	"github.com/razao/razao/inbox"
)

// Metrics holds the service's collectors in a registry of its own (no
// package-level state).
type Metrics struct {
	reg        *prometheus.Registry
	deliveries *prometheus.CounterVec
	processing *prometheus.HistogramVec
	retries    prometheus.Counter
	exportRuns *prometheus.CounterVec
	requests   *prometheus.CounterVec
	durations  *prometheus.HistogramVec
	// The series counted on every request and delivery, by their labels.
	deliveryOf, requestOf   children[prometheus.Counter]
	processedOf, durationOf children[prometheus.Observer]
}

// children caches a vector's series by their label values. The vector's
// own WithLabelValues checks, hashes and looks up its labels under a lock
// on every call, and the request path made four such calls per delivery.
// Every label here comes from a bounded list (endpoint names, route
// templates, methods, outcomes, codes), so the cache holds no series the
// vector would not.
type children[T any] struct {
	with func(...string) T
	m    sync.Map // labels joined by NUL → T
}

func (c *children[T]) get(labels ...string) T {
	key := strings.Join(labels, "\x00")
	if v, ok := c.m.Load(key); ok {
		return v.(T)
	}
	v, _ := c.m.LoadOrStore(key, c.with(labels...))
	return v.(T)
}

// New returns the metrics of one service; db feeds the gauges read from the
// database at scrape time (backlog, oldest pending age, open divergences).
func New(db *sqlx.DB) *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		deliveries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "razao_webhook_deliveries_total",
			Help: "Webhook deliveries received, by endpoint and outcome (accepted, duplicate, test, ignored, malformed, unauthorized, too_large, unavailable...).",
		}, []string{"endpoint", "outcome"}),
		processing: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "razao_delivery_processing_seconds",
			Help:    "Duration of the locked processing transaction of one delivery, by result.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 14),
		}, []string{"result"}),
		retries: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "razao_delivery_failures_total",
			Help: "Processing attempts that failed and were scheduled for a retry (or given up).",
		}),
		exportRuns: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "razao_export_runs_total",
			Help: "Scheduled export runs, by kind and outcome.",
		}, []string{"kind", "outcome"}),
		// Labels come from the route template and a closed list of
		// methods (httplog), never from the raw path: bounded series.
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "razao_http_requests_total",
			Help: "HTTP requests answered, by route template (\"unmatched\" for no route), method and status code.",
		}, []string{"route", "method", "code"}),
		durations: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "razao_http_request_duration_seconds",
			Help:    "Duration of HTTP requests, by route template and method.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 14),
		}, []string{"route", "method"}),
	}
	m.deliveryOf.with, m.requestOf.with = m.deliveries.WithLabelValues, m.requests.WithLabelValues
	m.processedOf.with, m.durationOf.with = m.processing.WithLabelValues, m.durations.WithLabelValues
	m.reg.MustRegister(m.deliveries, m.processing, m.retries, m.exportRuns, m.requests, m.durations,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		&dbCollector{db: db})
	return m
}

// Handler serves the registry for Prometheus to scrape.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Timeout: 10 * time.Second})
}

// Delivery counts one webhook delivery's outcome.
func (m *Metrics) Delivery(endpoint, outcome string) {
	if m != nil {
		m.deliveryOf.get(endpoint, outcome).Inc()
	}
}

// Processed records one processing transaction.
func (m *Metrics) Processed(result string, d time.Duration) {
	if m != nil {
		m.processedOf.get(result).Observe(d.Seconds())
	}
}

// Failure counts a failed processing attempt.
func (m *Metrics) Failure() {
	if m != nil {
		m.retries.Inc()
	}
}

// ExportRun counts a scheduled export run.
func (m *Metrics) ExportRun(kind, outcome string) {
	if m != nil {
		m.exportRuns.WithLabelValues(kind, outcome).Inc()
	}
}

// HTTPRequest counts one answered HTTP request and its duration; route is
// a path template and method one of a closed list (see httplog).
func (m *Metrics) HTTPRequest(route, method string, code int, d time.Duration) {
	if m != nil {
		m.requestOf.get(route, method, strconv.Itoa(code)).Inc()
		m.durationOf.get(route, method).Observe(d.Seconds())
	}
}

// dbCollector reads the gauges that live in the database when scraped, so
// every replica reports the same truth and nothing is cached in process:
// each through the reads of the package that owns its table.
type dbCollector struct {
	db *sqlx.DB
}

var (
	backlogDesc = prometheus.NewDesc("razao_inbox_pending", "Deliveries stored but not yet applied.", nil, nil)
	oldestDesc  = prometheus.NewDesc("razao_inbox_oldest_pending_seconds", "Age of the oldest delivery not yet applied (0 when none).", nil, nil)
	parkedDesc  = prometheus.NewDesc("razao_inbox_parked", "Refunds parked until their payment lands.", nil, nil)
	openDesc    = prometheus.NewDesc("razao_divergences_open", "Divergences waiting for finance.", nil, nil)
	upDesc      = prometheus.NewDesc("razao_database_up", "1 when the database answered the scrape's queries.", nil, nil)
)

func (c *dbCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{backlogDesc, oldestDesc, parkedDesc, openDesc, upDesc} {
		ch <- d
	}
}

func (c *dbCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	backlog, err := inbox.ReadBacklog(ctx, c.db)
	var open int64
	if err == nil {
		open, err = divergences.CountOpen(ctx, c.db)
	}
	if err != nil {
		ch <- prometheus.MustNewConstMetric(upDesc, prometheus.GaugeValue, 0)
		return
	}
	ch <- prometheus.MustNewConstMetric(upDesc, prometheus.GaugeValue, 1)
	ch <- prometheus.MustNewConstMetric(backlogDesc, prometheus.GaugeValue, float64(backlog.Pending))
	ch <- prometheus.MustNewConstMetric(oldestDesc, prometheus.GaugeValue, backlog.Oldest)
	ch <- prometheus.MustNewConstMetric(parkedDesc, prometheus.GaugeValue, float64(backlog.Parked))
	ch <- prometheus.MustNewConstMetric(openDesc, prometheus.GaugeValue, float64(open))
}

// EventStreams exposes how often the event hub woke its streams and how
// often it read the outbox for them: with every stream at one cursor, reads
// stay near wakes whatever the number of streams, and a gap between the two
// that grows with the streams is a regression. paced counts the reads that
// stopped at the streams' share of their byte budget: while it grows, the
// streams are behind the outbox.
func (m *Metrics) EventStreams(wakes, reads, paced func() uint64) {
	if m == nil {
		return
	}
	m.reg.MustRegister(
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "razao_event_stream_wakes_total",
			Help: "Times the event hub woke its open streams (a notification, the poll, or events held back).",
		}, func() float64 { return float64(wakes()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "razao_event_stream_reads_total",
			Help: "Reads of the outbox made by the event hub for its streams.",
		}, func() float64 { return float64(reads()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "razao_event_stream_paced_reads_total",
			Help: "Reads of the outbox that stopped at the streams' share of events.max_bytes_per_second: the streams are behind while it grows.",
		}, func() float64 { return float64(paced()) }))
}
