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
	r := New(stateSource{State{Requests: Requests{Panics: 3, QueuedBytes: 1000, QueuedBytesMax: 4096, QueuedWaiting: 2}}})
	got := gathered(t, r)
	for name, want := range map[string]float64{
		"minikafka_kafka_request_panics_total":     3,
		"minikafka_kafka_queued_request_bytes":     1000,
		"minikafka_kafka_queued_request_bytes_max": 4096,
		"minikafka_kafka_queued_request_waiting":   2,
	} {
		if v, ok := got[name]; !ok || v != want {
			t.Errorf("%s = %v (present %v), want %v", name, v, ok, want)
		}
	}
}
