package clusters

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/minikafka/minikafka-go/bench/internal/proc"
	"github.com/minikafka/minikafka-go/client"
)

// ErrNotReady means a cluster did not become ready in time.
var ErrNotReady = errors.New("clusters: cluster not ready")

// ErrExited means a server process ended while the cluster was starting.
var ErrExited = errors.New("clusters: server process exited")

// BuildNode builds cmd/node of the module in repoDir into bin.
func BuildNode(ctx context.Context, repoDir, bin string) error {
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/node")
	cmd.Dir = repoDir
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("clusters: build node: %w\n%s", err, out)
	}
	return nil
}

// MiniKafkaConfig describes a local MiniKafka cluster.
type MiniKafkaConfig struct {
	Bin     string // node binary
	RepoDir string // holds configs/node1.yaml ... ; the processes run here
	DataDir string // each node's data goes to DataDir/nodeN (removed first)
	LogDir  string // each node's output goes to LogDir/<Name>-nodeN.log
	Nodes   int    // 1 to 3 (configs/ has three node files)
	// Args are extra flags for every node; "{id}" in any of them becomes
	// the node's id (1..Nodes), e.g. "--debug-addr 127.0.0.1:606{id}".
	Args []string
	// Name prefixes the processes' names and logs: LogDir/<Name>-nodeN.log.
	// Default "minikafka".
	Name string
	// Secure, if set, runs every node as configs/secure does: Kafka only
	// on SASL_SSL (SCRAM-SHA-512), mutual TLS on the Raft port and
	// encrypted gossip, with certificates made in Secure.Dir (secure.go).
	Secure *Secure
}

// IDPlaceholder in a node argument is replaced by the node's id.
const IDPlaceholder = "{id}"

// NodeArgs returns args with every IDPlaceholder replaced by id.
func NodeArgs(args []string, id int) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = strings.ReplaceAll(a, IDPlaceholder, strconv.Itoa(id))
	}
	return out
}

// MiniKafka is a running local cluster.
type MiniKafka struct {
	procs   []*proc.Process
	brokers []string
	opts    []client.Opt // how clients reach the brokers (TLS and SASL for a Secure cluster)
}

// ClientOpts are the options a client needs to reach the brokers, besides
// their addresses.
func (c *MiniKafka) ClientOpts() []client.Opt { return slices.Clone(c.opts) }

// StartMiniKafka starts the nodes and returns once every broker is in the
// cluster's metadata.
func StartMiniKafka(ctx context.Context, cfg MiniKafkaConfig) (_ *MiniKafka, err error) {
	if cfg.Nodes < 1 || cfg.Nodes > 3 {
		return nil, fmt.Errorf("clusters: %d nodes; configs/ has 3", cfg.Nodes)
	}
	if cfg.Name == "" {
		cfg.Name = "minikafka"
	}
	ports, err := FreePorts(3 * cfg.Nodes)
	if err != nil {
		return nil, err
	}
	c := &MiniKafka{}
	if cfg.Secure != nil {
		if err := cfg.Secure.setup(cfg.Nodes); err != nil {
			return nil, err
		}
		c.opts = cfg.Secure.ClientOpts()
	}
	defer func() {
		if err != nil {
			c.Stop(context.Background())
		}
	}()
	var gossip []string
	for i := range cfg.Nodes {
		gossip = append(gossip, addr(ports[3*i+2]))
	}
	for i := range cfg.Nodes {
		id := i + 1
		dir := filepath.Join(cfg.DataDir, "node"+strconv.Itoa(id))
		if err := os.RemoveAll(dir); err != nil {
			return nil, err
		}
		kafka := addr(ports[3*i])
		config, kafkaFlag := filepath.Join(cfg.RepoDir, "configs", fmt.Sprintf("node%d.yaml", id)), []string{"--kafka-addr", kafka}
		if cfg.Secure != nil {
			if config, err = cfg.Secure.nodeConfig(config, id, kafka); err != nil {
				return nil, err
			}
			kafkaFlag = nil // the listener is in the config
		}
		args := append([]string{
			"--config", config,
			"--data-dir", dir,
			"--raft-addr", addr(ports[3*i+1]),
			"--gossip-addr", addr(ports[3*i+2]),
			"--admin-addr", "127.0.0.1:0", // the configs' fixed ports may be taken
			"--join", strings.Join(gossip, ","),
			"--bootstrap-expect", strconv.Itoa(cfg.Nodes),
			"--default-replication-factor", strconv.Itoa(cfg.Nodes),
			"--log-level", "warn",
		}, NodeArgs(cfg.Args, id)...)
		args = append(args, kafkaFlag...)
		name := fmt.Sprintf("%s-node%d", cfg.Name, id)
		p, err := proc.Start(name, cfg.RepoDir, filepath.Join(cfg.LogDir, name+".log"), cfg.Bin, args...)
		if err != nil {
			return nil, err
		}
		c.procs = append(c.procs, p)
		c.brokers = append(c.brokers, kafka)
	}
	return c, c.waitBrokers(ctx, cfg.Nodes, 60*time.Second)
}

func (c *MiniKafka) waitBrokers(ctx context.Context, n int, limit time.Duration) error {
	adm, err := client.NewAdmin(append(c.ClientOpts(), client.Brokers(c.brokers...), client.RequestTimeout(2*time.Second),
		client.RetryBackoff(50*time.Millisecond, 200*time.Millisecond))...)
	if err != nil {
		return err
	}
	defer adm.Close()
	return poll(ctx, limit, c.procs, func(ctx context.Context) error {
		d, err := adm.DescribeCluster(ctx)
		if err != nil {
			return err
		}
		if len(d.Brokers) < n || d.Controller < 0 {
			return fmt.Errorf("%d of %d brokers, controller %d", len(d.Brokers), n, d.Controller)
		}
		return nil
	})
}

// Brokers returns the Kafka listener addresses.
func (c *MiniKafka) Brokers() []string { return append([]string(nil), c.brokers...) }

// PIDs returns the node processes' ids.
func (c *MiniKafka) PIDs() []int { return pids(c.procs) }

// ErrTopicConfigRefused means the nodes answered INVALID_CONFIG to the
// topic's configs (a name or value this node build does not know), or
// described the created topic with other values.
var ErrTopicConfigRefused = errors.New("clusters: the nodes refused the topic configs")

// CreateTopic creates a topic with the cluster's replication factor and
// the given topic configs, and returns once leadership has settled: every
// partition is led by its preferred replica (the node hands leadership
// there within leader_rebalance_interval, which would otherwise land in
// the middle of a measured run) and no leader epoch changed for a second.
// It returns how many partitions each node leads then, by node id, from
// the cluster's metadata (every broker listed, 0 if it leads none). The
// topic's configs are read back (DescribeConfigs) and must be as asked.
func (c *MiniKafka) CreateTopic(ctx context.Context, topic string, partitions int32, configs map[string]string) (map[string]int, error) {
	adm, err := client.NewAdmin(append(c.ClientOpts(), client.Brokers(c.brokers...), client.RequestTimeout(5*time.Second))...)
	if err != nil {
		return nil, err
	}
	defer adm.Close()
	err = adm.CreateTopic(ctx, topic, partitions, int16(len(c.brokers)), configs)
	switch {
	case errors.Is(err, client.ErrInvalidTopicConfig):
		return nil, fmt.Errorf("%w %s of topic %s (INVALID_CONFIG: does this build of cmd/node have them?): %w",
			ErrTopicConfigRefused, configList(configs), topic, err)
	case err != nil && !errors.Is(err, client.ErrTopicAlreadyExists):
		return nil, fmt.Errorf("clusters: create topic %s: %w", topic, err)
	}
	if err := checkConfigs(ctx, adm, topic, configs); err != nil {
		return nil, err
	}
	var leaders map[string]int
	var last int64 = -1
	var since time.Time
	err = poll(ctx, 30*time.Second, c.procs, func(ctx context.Context) error {
		ts, err := adm.DescribeTopics(ctx, topic)
		if err != nil {
			return err
		}
		if len(ts) != 1 || ts[0].Err != nil || len(ts[0].Partitions) != int(partitions) {
			return fmt.Errorf("topic %s not described yet", topic)
		}
		var sum int64
		leaders = map[string]int{}
		for _, p := range ts[0].Partitions {
			if p.Leader < 0 || p.Err != nil || len(p.Replicas) == 0 || p.Leader != p.Replicas[0] {
				last = -1
				return fmt.Errorf("partition %d led by %d, preferred %v", p.Partition, p.Leader, p.Replicas)
			}
			sum += int64(p.LeaderEpoch)
			leaders[strconv.Itoa(int(p.Leader))]++
		}
		if sum != last {
			last, since = sum, time.Now()
		}
		if time.Since(since) < time.Second {
			return fmt.Errorf("topic %s: leadership not settled yet", topic)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return leaders, c.addIdle(ctx, adm, leaders)
}

// addIdle adds every broker that leads no partition to leaders, with 0.
func (c *MiniKafka) addIdle(ctx context.Context, adm *client.Admin, leaders map[string]int) error {
	d, err := adm.DescribeCluster(ctx)
	if err != nil {
		return fmt.Errorf("clusters: describe cluster: %w", err)
	}
	for _, b := range d.Brokers {
		if id := strconv.Itoa(int(b.NodeID)); leaders[id] == 0 {
			leaders[id] = 0
		}
	}
	return nil
}

// checkConfigs returns ErrTopicConfigRefused unless topic has configs.
func checkConfigs(ctx context.Context, adm *client.Admin, topic string, configs map[string]string) error {
	if len(configs) == 0 {
		return nil
	}
	got, err := adm.DescribeTopicConfigs(ctx, topic)
	if err != nil {
		return fmt.Errorf("clusters: describe configs of %s: %w", topic, err)
	}
	have := map[string]string{}
	for _, c := range got {
		have[c.Name] = c.Value
	}
	for k, v := range configs {
		if have[k] != v {
			return fmt.Errorf("%w: topic %s has %s=%q, asked for %q", ErrTopicConfigRefused, topic, k, have[k], v)
		}
	}
	return nil
}

// configList shows configs as name=value pairs, sorted.
func configList(configs map[string]string) string {
	kv := make([]string, 0, len(configs))
	for k, v := range configs {
		kv = append(kv, k+"="+v)
	}
	slices.Sort(kv)
	return strings.Join(kv, ",")
}

// Spread reports whether leaders are spread evenly: no server leads more
// than one partition more than another.
func Spread(leaders map[string]int) bool {
	if len(leaders) == 0 {
		return false
	}
	lo, hi := -1, 0
	for _, n := range leaders {
		if lo < 0 || n < lo {
			lo = n
		}
		hi = max(hi, n)
	}
	return hi-lo <= 1
}

// LeaderEpochs returns the sum of the topic's partitions' leader epochs
// (Raft terms). It grows by at least one with every election, so a change
// across a run means leadership moved during it.
func (c *MiniKafka) LeaderEpochs(ctx context.Context, topic string) (int64, error) {
	adm, err := client.NewAdmin(append(c.ClientOpts(), client.Brokers(c.brokers...), client.RequestTimeout(5*time.Second))...)
	if err != nil {
		return 0, err
	}
	defer adm.Close()
	ts, err := adm.DescribeTopics(ctx, topic)
	if err != nil {
		return 0, err
	}
	if len(ts) != 1 || ts[0].Err != nil {
		return 0, fmt.Errorf("clusters: describe %s: %v", topic, ts)
	}
	var sum int64
	for _, p := range ts[0].Partitions {
		sum += int64(p.LeaderEpoch)
	}
	return sum, nil
}

// Stop stops every node (SIGTERM, then SIGKILL after 15s) in parallel.
func (c *MiniKafka) Stop(ctx context.Context) error { return stopAll(ctx, c.procs, 15*time.Second) }

func pids(ps []*proc.Process) []int {
	out := make([]int, len(ps))
	for i, p := range ps {
		out[i] = p.PID()
	}
	return out
}

func stopAll(ctx context.Context, ps []*proc.Process, grace time.Duration) error {
	errs := make(chan error, len(ps))
	for _, p := range ps {
		go func() { errs <- p.Stop(ctx, grace) }()
	}
	var all []error
	for range ps {
		all = append(all, <-errs)
	}
	return errors.Join(all...)
}

// poll calls check until it succeeds, a process exits, or limit passes.
func poll(ctx context.Context, limit time.Duration, ps []*proc.Process, check func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	for {
		for _, p := range ps {
			if ok, err := p.Exited(); ok {
				return fmt.Errorf("%w: %s (%v); see its log", ErrExited, p.Name, err)
			}
		}
		cctx, ccancel := context.WithTimeout(ctx, 3*time.Second)
		err := check(cctx)
		ccancel()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w after %v: %w", ErrNotReady, limit, err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}
