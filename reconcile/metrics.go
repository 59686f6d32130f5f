package reconcile

import (
	"context"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/razao/razao/metrics"
)

// Metrics counts reconciliation runs and their lines; methods are safe on
// a nil *Metrics.
type Metrics struct {
	runs  *prometheus.CounterVec
	lines *prometheus.CounterVec
}

// NewMetrics registers reconciliation's collectors with the service's;
// db feeds the last final window, read at scrape time so that every
// replica reports the same.
func NewMetrics(m *metrics.Metrics, db *sqlx.DB) (*Metrics, error) {
	rm := &Metrics{
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "razao_reconciliation_runs_total",
			Help: "Reconciliation runs finished, by endpoint and outcome (succeeded, failed).",
		}, []string{"endpoint", "outcome"}),
		lines: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "razao_reconciliation_lines_total",
			Help: "Statement lines and phantom ledger facts of finished runs, by endpoint and outcome (matched, booked, divergence).",
		}, []string{"endpoint", "outcome"}),
	}
	if err := m.Register(rm.runs, rm.lines, &lastFinal{db: db}); err != nil {
		return nil, err
	}
	return rm, nil
}

func (m *Metrics) finished(run Run, endpoint string) {
	if m == nil {
		return
	}
	m.runs.WithLabelValues(endpoint, run.Status).Inc()
	if run.Status != "succeeded" {
		return
	}
	m.lines.WithLabelValues(endpoint, string(Matched)).Add(float64(run.Matched))
	m.lines.WithLabelValues(endpoint, string(Booked)).Add(float64(run.Booked))
	m.lines.WithLabelValues(endpoint, string(Divergence)).Add(float64(run.Divergences))
}

var lastFinalDesc = prometheus.NewDesc("razao_reconciliation_last_final_window_end_seconds",
	"End (Unix time) of the latest final window reconciled successfully, by endpoint.", []string{"endpoint"}, nil)

// lastFinal reads the latest final window of each endpoint when scraped.
type lastFinal struct{ db *sqlx.DB }

func (c *lastFinal) Describe(ch chan<- *prometheus.Desc) { ch <- lastFinalDesc }

func (c *lastFinal) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var rows []struct {
		Endpoint string    `db:"endpoint"`
		End      time.Time `db:"window_end"`
	}
	if err := c.db.SelectContext(ctx, &rows, `SELECT endpoint, max(window_to) AS window_end FROM reconciliation_runs
		WHERE final AND status = 'succeeded' GROUP BY endpoint`); err != nil {
		ch <- prometheus.NewInvalidMetric(lastFinalDesc, err)
		return
	}
	for _, r := range rows {
		ch <- prometheus.MustNewConstMetric(lastFinalDesc, prometheus.GaugeValue, float64(r.End.Unix()), r.Endpoint)
	}
}
