package kafkabackend

import (
	"slices"
	"testing"

	"github.com/minikafka/minikafka-go/kafkaapi"
	"github.com/minikafka/minikafka-go/metadata"
)

func TestEndpoints(t *testing.T) {
	plain := endpoints(metadata.Broker{KafkaAddr: "10.0.0.1:9092"})
	if want := []kafkaapi.Endpoint{{Listener: "PLAINTEXT", Host: "10.0.0.1", Port: 9092}}; !slices.Equal(plain, want) {
		t.Errorf("no listeners: %+v, want %+v", plain, want)
	}
	listed := endpoints(metadata.Broker{KafkaAddr: "10.0.0.1:9092", Listeners: "INTERNAL://h1:9093,SASL_SSL://h2:9094"})
	want := []kafkaapi.Endpoint{{Listener: "INTERNAL", Host: "h1", Port: 9093}, {Listener: "SASL_SSL", Host: "h2", Port: 9094}}
	if !slices.Equal(listed, want) {
		t.Errorf("listeners: %+v, want %+v", listed, want)
	}
}

func TestStaticConfigsReportTheNodesConfig(t *testing.T) {
	m := StaticConfigs(Config{NodeID: 3, MaxNodeReplicas: 12, AutoCreateTopics: true})
	for k, want := range map[string]string{"broker.id": "3", "node.id": "3", NodeCapacityConfig: "12",
		"auto.create.topics.enable": "true", "auto.leader.rebalance.enable": "false"} {
		if m[k] != want {
			t.Errorf("%s = %q, want %q", k, m[k], want)
		}
	}
}

// The dirty ratios the node reports are sorted by topic then partition,
// to three decimals, in the form the CLI parses; none led, none listed.
func TestStatusConfigsDirtyRatios(t *testing.T) {
	ratios := []DirtyRatio{{"kv", 10, 0.5}, {"a-b", 0, 1}, {"kv", 2, 0.01234}}
	b := New(Config{}, Deps{DirtyRatios: func() []DirtyRatio { return slices.Clone(ratios) }})
	got := b.StatusConfigs()
	if want := "a-b:0=1.000,kv:2=0.012,kv:10=0.500"; len(got) != 2 || got[0].Name != DirtyRatiosConfig || got[0].Value != want {
		t.Fatalf("status configs %+v, want %s=%s", got, DirtyRatiosConfig, want)
	}
	if got[1].Name != BrokersDownConfig || got[1].Value != "" {
		t.Fatalf("no broker registered: %+v, want %s empty", got[1], BrokersDownConfig)
	}
	ratios = nil
	if got := b.StatusConfigs(); got[0].Value != "" {
		t.Fatalf("no compacted partition led: %q, want empty", got[0].Value)
	}
}
