package metrics

import (
	"testing"
)

// TestQuotaMetrics: each entity's rates and throttles come out under
// Kafka-like names with type, user and client_id labels.
func TestQuotaMetrics(t *testing.T) {
	r := New(fakeQuotaSource{})
	r.RegisterQuotas(func() []QuotaEntity {
		return []QuotaEntity{{User: "alice", ClientID: "p1", ProduceByteRate: 1024, ThrottleSeconds: map[string]float64{"produce": 0.25}}}
	})
	mfs, err := r.Gatherer().Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			key := mf.GetName()
			for _, l := range m.GetLabel() {
				key += "," + l.GetName() + "=" + l.GetValue()
			}
			got[key] = m.GetGauge().GetValue()
		}
	}
	for key, want := range map[string]float64{
		"minikafka_quota_byte_rate,client_id=p1,type=produce,user=alice":             1024,
		"minikafka_quota_byte_rate,client_id=p1,type=fetch,user=alice":               0,
		"minikafka_quota_throttle_time_seconds,client_id=p1,type=produce,user=alice": 0.25,
		"minikafka_quota_request_time_percent,client_id=p1,user=alice":               0,
	} {
		if v, ok := got[key]; !ok || v != want {
			t.Errorf("%s = %v (present %v), want %v", key, v, ok, want)
		}
	}
}

type fakeQuotaSource struct{}

func (fakeQuotaSource) Ready() error { return nil }
func (fakeQuotaSource) State() State { return State{} }
