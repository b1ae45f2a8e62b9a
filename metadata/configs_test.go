package metadata

import (
	"encoding/hex"
	"errors"
	"maps"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

func TestCreateTopicValidatesConfigs(t *testing.T) {
	base := cluster3(t)
	for _, tc := range []struct {
		name    string
		configs map[string]string
		wantErr bool
	}{
		{"valid", map[string]string{"retention.ms": "-1", "cleanup.policy": "delete"}, false},
		{"unknown name", map[string]string{"no.such": "1"}, true},
		{"bad value", map[string]string{"segment.ms": "0"}, true},
		{"empty key", map[string]string{"": "x"}, true},
	} {
		cmd := CreateTopic{Name: "t", Partitions: 1, ReplicationFactor: 1, Assignment: [][]int32{{1}}, Configs: tc.configs}
		next, _, err := step(t, base, cmd)
		if !tc.wantErr {
			if err != nil {
				t.Errorf("%s: %v", tc.name, err)
			}
			continue
		}
		var ice *InvalidConfigError
		if !errors.Is(err, ErrInvalidConfig) || !errors.As(err, &ice) {
			t.Errorf("%s: err = %v, want ErrInvalidConfig", tc.name, err)
		}
		if tc.configs[""] == "" && !errors.Is(err, kerr.InvalidConfig) && tc.name != "empty key" {
			t.Errorf("%s: err = %v does not wrap kerr.InvalidConfig", tc.name, err)
		}
		if _, ok := next.Topic("t"); ok {
			t.Errorf("%s: topic created", tc.name)
		}
	}
}

// A CreateTopic written at encoding version 1, before configs were
// interpreted, still applies with configs that would not validate now.
func TestCreateTopicVersion1KeepsUninterpretedConfigs(t *testing.T) {
	v1, _ := hex.DecodeString("0301" + "00000001" + "74" + "00000001" + "0001" + "00000001" + "00000001" + "00000001" +
		"00000001" + "00000001" + "6b" + "00000001" + "76")
	cmd, err := Decode(v1)
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := Encode(cmd); hex.EncodeToString(again) != hex.EncodeToString(v1) {
		t.Fatalf("re-encoded as %x", again)
	}
	s := must(t, cluster3(t), cmd)
	if tp, ok := s.Topic("t"); !ok || tp.Configs["k"] != "v" {
		t.Fatalf("topic %+v %v", tp, ok)
	}
}

func TestAlterConfigs(t *testing.T) {
	base := must(t, cluster3(t), CreateTopic{Name: "t", Partitions: 1, ReplicationFactor: 1, Assignment: [][]int32{{1}},
		Configs: map[string]string{"retention.ms": "1000"}})
	tests := []struct {
		name    string
		cmd     AlterConfigs
		wantErr error
		topic   map[string]string // the topic's configs afterwards
		cluster map[string]string
	}{
		{"replace", AlterConfigs{Resource: ConfigTopic, Topic: "t", Configs: map[string]string{"segment.ms": "5000"}}, nil,
			map[string]string{"segment.ms": "5000"}, nil},
		{"clear", AlterConfigs{Resource: ConfigTopic, Topic: "t"}, nil, nil, nil},
		{"unknown topic", AlterConfigs{Resource: ConfigTopic, Topic: "x"}, ErrUnknownTopicOrPartition,
			map[string]string{"retention.ms": "1000"}, nil},
		{"unknown name", AlterConfigs{Resource: ConfigTopic, Topic: "t", Configs: map[string]string{"x": "1"}}, ErrInvalidConfig,
			map[string]string{"retention.ms": "1000"}, nil},
		{"bad value", AlterConfigs{Resource: ConfigTopic, Topic: "t", Configs: map[string]string{"retention.ms": "-3"}}, kerr.InvalidConfig,
			map[string]string{"retention.ms": "1000"}, nil},
		{"cluster defaults", AlterConfigs{Resource: ConfigClusterDefaults, Configs: map[string]string{"log.retention.hours": "1"}}, nil,
			map[string]string{"retention.ms": "1000"}, map[string]string{"log.retention.hours": "1"}},
		{"topic name on cluster defaults", AlterConfigs{Resource: ConfigClusterDefaults, Topic: "t"}, ErrInvalidConfig,
			map[string]string{"retention.ms": "1000"}, nil},
		{"topic config name on cluster defaults", AlterConfigs{Resource: ConfigClusterDefaults, Configs: map[string]string{"retention.ms": "1"}},
			ErrInvalidConfig, map[string]string{"retention.ms": "1000"}, nil},
		{"unknown resource", AlterConfigs{Resource: 9}, ErrInvalidConfig, map[string]string{"retention.ms": "1000"}, nil},
	}
	for _, tc := range tests {
		next, res, err := step(t, base, tc.cmd)
		if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil) != (err == nil) {
			t.Errorf("%s: err = %v, want %v", tc.name, err, tc.wantErr)
			continue
		}
		if err == nil && !maps.Equal(res.(AlterConfigsResult).Configs, tc.cmd.Configs) {
			t.Errorf("%s: result %+v", tc.name, res)
		}
		tp, _ := next.Topic("t")
		if !maps.Equal(tp.Configs, tc.topic) || !maps.Equal(next.ClusterConfigs(), tc.cluster) {
			t.Errorf("%s: topic configs %v, cluster %v", tc.name, tp.Configs, next.ClusterConfigs())
		}
	}
	// Readers get copies.
	s := must(t, base, AlterConfigs{Resource: ConfigClusterDefaults, Configs: map[string]string{"log.retention.ms": "1"}})
	s.ClusterConfigs()["log.retention.ms"] = "2"
	if s.ClusterConfigs()["log.retention.ms"] != "1" {
		t.Fatal("ClusterConfigs aliases the state")
	}
}
