package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/minikafka/minikafka-go/bench/internal/clusters"
	"github.com/minikafka/minikafka-go/client"
)

// nodes is the size of the soak's cluster.
const nodes = 3

// writeConfigs writes configs/node1..3.yaml under dir: the shipped
// configs' settings with quiet logs and no auto-creation, and the topic's
// retention and segment size as the node's defaults too (segment_bytes,
// log_retention_ms), so that they act even where CreateTopics does not yet
// apply topic configs. The cluster harness overrides addresses and data
// directories with flags.
func writeConfigs(dir string, o options) error {
	if err := os.MkdirAll(filepath.Join(dir, "configs"), 0o755); err != nil {
		return err
	}
	for id := 1; id <= nodes; id++ {
		cfg := fmt.Sprintf(`# Node %d of the soak's cluster (bench/soak).
node_id: %d
data_dir: ./data/node%d
bootstrap_expect: %d
default_partitions: 3
default_replication_factor: %d
auto_create_topics: false
log_level: warn
segment_bytes: %d
log_retention_ms: %d
`, id, id, id, nodes, nodes, o.segmentBytes, o.retention.Milliseconds())
		if err := os.WriteFile(filepath.Join(dir, "configs", "node"+strconv.Itoa(id)+".yaml"), []byte(cfg), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// startCluster builds the node binary and starts the cluster from
// configs written under o.out.
func startCluster(ctx context.Context, o options) (*clusters.MiniKafka, error) {
	bin, err := filepath.Abs(filepath.Join(o.out, "minikafka-node"))
	if err != nil {
		return nil, err
	}
	fmt.Println("building cmd/node ...")
	if err := clusters.BuildNode(ctx, "..", bin); err != nil {
		return nil, err
	}
	dir := filepath.Join(o.out, "cluster")
	if err := writeConfigs(dir, o); err != nil {
		return nil, err
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	return clusters.StartMiniKafka(ctx, clusters.MiniKafkaConfig{
		Bin: bin, RepoDir: abs, DataDir: filepath.Join(abs, "data"), LogDir: abs, Nodes: nodes,
	})
}

// createTopic creates the soak's topic with its configs and waits until
// every partition is led by its preferred replica.
func createTopic(ctx context.Context, c *clusters.MiniKafka, o options) error {
	adm, err := client.NewAdmin(client.Brokers(c.Brokers()...), client.RequestTimeout(10*time.Second))
	if err != nil {
		return err
	}
	defer adm.Close()
	configs := map[string]string{
		"retention.ms":  strconv.FormatInt(o.retention.Milliseconds(), 10),
		"segment.bytes": strconv.Itoa(o.segmentBytes),
	}
	if err := adm.CreateTopic(ctx, topic, int32(o.partitions), nodes, configs); err != nil && !errors.Is(err, client.ErrTopicAlreadyExists) {
		return fmt.Errorf("create topic %s: %w", topic, err)
	}
	_, err = c.CreateTopic(ctx, topic, int32(o.partitions), nil) // waits for settled leaders
	return err
}
