package metrics

import (
	"testing"

	dto "github.com/prometheus/client_model/go"
)

// stateSource is a Source with a fixed State.
type stateSource struct{ s State }

func (f stateSource) Ready() error { return nil }
func (f stateSource) State() State { return f.s }

// gathered returns the value of each unlabelled minikafka series.
func gathered(t *testing.T, r *Registry) map[string]float64 {
	t.Helper()
	mfs, err := r.Gatherer().Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			if len(m.GetLabel()) > 0 {
				continue
			}
			switch mf.GetType() {
			case dto.MetricType_COUNTER:
				out[mf.GetName()] = m.GetCounter().GetValue()
			case dto.MetricType_GAUGE:
				out[mf.GetName()] = m.GetGauge().GetValue()
			}
		}
	}
	return out
}

// The Kafka listener's request counts are exported.
func TestRequestCountsExported(t *testing.T) {
	r := New(stateSource{State{Requests: Requests{Panics: 3}}}, 0)
	got := gathered(t, r)
	if v, ok := got["minikafka_kafka_request_panics_total"]; !ok || v != 3 {
		t.Fatalf("minikafka_kafka_request_panics_total = %v (present %v), want 3", v, ok)
	}
}
