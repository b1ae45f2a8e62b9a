package clusters

import (
	"context"
	"errors"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/minikafka/minikafka-go/client"
	"github.com/minikafka/minikafka-go/internal/testcluster"
)

// CreateTopic passes the topic configs to the nodes, checks them back and
// reports leaders per node; a config the nodes refuse (as a build without
// write.caching refuses it) gives ErrTopicConfigRefused naming the config.
func TestCreateTopicConfigs(t *testing.T) {
	tc := testcluster.Start(t, 1)
	c := &MiniKafka{brokers: tc.Seeds()}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	leaders, err := c.CreateTopic(ctx, "known", 2, map[string]string{"flush.ms": "1000"})
	if err != nil {
		t.Fatal(err)
	}
	if len(leaders) != 1 || sum(leaders) != 2 {
		t.Fatalf("leaders %v, want both partitions on the one node", leaders)
	}

	_, err = c.CreateTopic(ctx, "bogus", 1, map[string]string{"no.such.config": "true"})
	if !errors.Is(err, ErrTopicConfigRefused) || !errors.Is(err, client.ErrInvalidTopicConfig) ||
		!strings.Contains(err.Error(), "no.such.config=true") {
		t.Fatalf("unknown config: err %v, want ErrTopicConfigRefused wrapping INVALID_CONFIG and naming it", err)
	}

	// write.caching (ours-cached's topic), with flush.ms, is created and
	// read back as asked.
	leaders, err = c.CreateTopic(ctx, "cached", 1, map[string]string{"write.caching": "true", "flush.ms": "50"})
	if err != nil || sum(leaders) != 1 {
		t.Fatalf("write.caching topic: leaders %v, err %v", leaders, err)
	}
}

func sum(m map[string]int) int {
	n := 0
	for v := range maps.Values(m) {
		n += v
	}
	return n
}

func TestSpread(t *testing.T) {
	for _, tc := range []struct {
		leaders map[string]int
		want    bool
	}{
		{map[string]int{"1": 4, "2": 4, "3": 4}, true},
		{map[string]int{"1": 5, "2": 4, "3": 3}, false},
		{map[string]int{"1": 1, "2": 0, "3": 0}, true},
		{map[string]int{"1": 2, "2": 0, "3": 0}, false},
		{nil, false},
	} {
		if got := Spread(tc.leaders); got != tc.want {
			t.Errorf("Spread(%v) = %v, want %v", tc.leaders, got, tc.want)
		}
	}
}
