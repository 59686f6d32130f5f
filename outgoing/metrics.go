package outgoing

import (
	"context"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/prometheus/client_golang/prometheus"
)

// endpointsDesc is the endpoints by state, read at scrape time: an
// operator alerts on disabled_failing > 0 (an endpoint that failed every
// attempt of its schedule) and watches retrying.
var endpointsDesc = prometheus.NewDesc("razao_outgoing_webhook_endpoints",
	"Webhook endpoints by state: ok, retrying (attempts on the head event failed), disabled_failing (the whole schedule failed), disabled_operator.",
	[]string{"state"}, nil)

// endpointStatesSQL counts the endpoints by state.
const endpointStatesSQL = `SELECT
	count(*) FILTER (WHERE enabled AND attempt = 0) AS ok,
	count(*) FILTER (WHERE enabled AND attempt > 0) AS retrying,
	count(*) FILTER (WHERE NOT enabled AND disabled_reason = 'failing') AS disabled_failing,
	count(*) FILTER (WHERE NOT enabled AND disabled_reason = 'operator') AS disabled_operator
FROM webhook_endpoints`

type statesCollector struct{ db *sqlx.DB }

func (c statesCollector) Describe(ch chan<- *prometheus.Desc) { ch <- endpointsDesc }

func (c statesCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	var n struct {
		OK               int64 `db:"ok"`
		Retrying         int64 `db:"retrying"`
		DisabledFailing  int64 `db:"disabled_failing"`
		DisabledOperator int64 `db:"disabled_operator"`
	}
	if err := sqlx.GetContext(ctx, c.db, &n, endpointStatesSQL); err != nil {
		return // razao_database_up says the database did not answer
	}
	for state, v := range map[string]int64{"ok": n.OK, "retrying": n.Retrying, "disabled_failing": n.DisabledFailing,
		"disabled_operator": n.DisabledOperator} {
		ch <- prometheus.MustNewConstMetric(endpointsDesc, prometheus.GaugeValue, float64(v), state)
	}
}
