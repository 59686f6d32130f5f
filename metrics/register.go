package metrics

import "github.com/prometheus/client_golang/prometheus"

// Register adds collectors a package keeps of its own (reconciliation's)
// to the service's registry; on a nil *Metrics it registers nothing.
func (m *Metrics) Register(cs ...prometheus.Collector) error {
	if m == nil {
		return nil
	}
	for _, c := range cs {
		if err := m.reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}
