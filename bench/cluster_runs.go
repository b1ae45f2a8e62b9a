package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/minikafka/minikafka-go/bench/internal/clusters"
	"github.com/minikafka/minikafka-go/bench/internal/proc"
	"github.com/minikafka/minikafka-go/bench/internal/report"
	"github.com/minikafka/minikafka-go/bench/internal/targets"
)

// buildNode builds cmd/node once per invocation and returns its path.
func (b *bench) buildNode(ctx context.Context) (bin, repo string, err error) {
	repo, err = filepath.Abs(b.o.repo)
	if err != nil {
		return "", "", err
	}
	if b.nodeBin != "" {
		return b.nodeBin, repo, nil
	}
	bin, err = filepath.Abs(filepath.Join(b.o.out, "bin", "minikafka-node"))
	if err != nil {
		return "", "", err
	}
	b.bar.step("building cmd/node")
	if err := clusters.BuildNode(ctx, repo, bin); err != nil {
		return "", "", err
	}
	b.nodeBin = bin
	return bin, repo, nil
}

// minikafka starts a fresh MiniKafka cluster, creates the topic with parts
// partitions and the given topic configs, and measures the systems keys
// (our client, kgo, or our client on a write-caching topic) against it.
func (b *bench) minikafka(ctx context.Context, parts int, name string, configs map[string]string, keys ...string) error {
	name = clusterName(name, parts)
	bin, repo, err := b.buildNode(ctx)
	if err != nil {
		return b.setupFailed(parts, name, err, keys...)
	}
	b.bar.step("starting " + name + " cluster")
	logs, _ := filepath.Abs(filepath.Join(b.o.out, "logs"))
	defer b.dropData(name) // after Stop (defers run last first)
	var secure *clusters.Secure
	if slices.Contains(keys, report.OursTLS) {
		secure = &clusters.Secure{Dir: filepath.Join(b.dataDir, name, "certs")}
	}
	c, err := clusters.StartMiniKafka(ctx, clusters.MiniKafkaConfig{
		Bin: bin, RepoDir: repo, DataDir: filepath.Join(b.dataDir, name), LogDir: logs, Nodes: servers,
		Args: b.o.nodeArgs, Name: name, Secure: secure,
	})
	if err != nil {
		return b.setupFailed(parts, name, fmt.Errorf("cluster: %w", err), keys...)
	}
	defer c.Stop(context.Background())
	leaders, err := c.CreateTopic(ctx, topic, int32(parts), configs)
	if err != nil {
		return b.setupFailed(parts, name, err, keys...)
	}
	if !clusters.Spread(leaders) {
		b.bar.note("%s: partition leaders not spread over the nodes: %s", name, report.LeadersLabel(leaders))
	}
	meter := func() (float64, error) { return proc.CPUSeconds(c.PIDs()...) }
	epochs := func(ctx context.Context) (int64, error) { return c.LeaderEpochs(ctx, topic) }
	var ts []target
	for _, key := range keys {
		t := target{key: key, parts: parts, leaders: leaders, meter: meter, epochs: epochs}
		switch key {
		case report.Franz:
			t.mk = func(size int) (targets.Target, error) { return targets.NewFranz(c.Brokers(), topic, b.o.window(size)) }
		case report.FranzTxn:
			t.mk = b.franzTxn(ctx, c.Brokers(), name)
		default: // ours, ours-cached, ours-tls (whose cluster's ClientOpts carry TLS and SASL)
			t.mk = func(int) (targets.Target, error) {
				return targets.NewOurs(c.Brokers(), topic, append(c.ClientOpts(), b.o.ourOpts()...)...)
			}
		}
		ts = append(ts, t)
	}
	b.measureAll(ctx, ts...)
	b.bar.step("stopping " + name + " cluster")
	return ctx.Err()
}

// dropData removes a stopped cluster's data directory unless --keep-data:
// a full run writes tens of GB (about 21 GB for one MiniKafka cluster at
// one partition), and keeping every cluster's until the end filled a
// 68 GB disk.
func (b *bench) dropData(cluster string) {
	if !b.o.keepData {
		os.RemoveAll(filepath.Join(b.dataDir, cluster))
	}
}

// franzTxn makes franz-txn's targets. Every run uses the same
// transactional ids (a new run's InitProducerId bumps their epochs); the
// first one warms them up (targets.WarmTxn), so that the creation of
// __transaction_state and the coordinators' loading fall outside the
// measured runs.
func (b *bench) franzTxn(ctx context.Context, brokers []string, cluster string) func(size int) (targets.Target, error) {
	warm := false
	return func(size int) (targets.Target, error) {
		cfg := targets.FranzTxnConfig{Brokers: brokers, Topic: topic, Window: b.o.window(size),
			IDPrefix: "bench-txn-" + cluster, Producers: b.maxTxnProducers()}
		if !warm {
			wctx, cancel := context.WithTimeout(ctx, time.Minute)
			err := targets.WarmTxn(wctx, cfg)
			cancel()
			if err != nil {
				return nil, err
			}
			warm = true
		}
		cfg.Producers = txnProducers(b.o.txnProducers, cfg.Window)
		return targets.NewFranzTxn(cfg)
	}
}

// maxTxnProducers is the most transactional clients a run of franz-txn
// uses: the ids warmed up.
func (b *bench) maxTxnProducers() int {
	n := 1
	for _, size := range b.o.sizes {
		n = max(n, txnProducers(b.o.txnProducers, b.o.window(size)))
	}
	return n
}

// txnProducers is how many transactional clients run with a window of
// window records: as many as the window holds full transactions for, so
// that as much is outstanding as for the other systems, but at most
// asked, or maxAutoTxnProducers when asked is 0; at least one.
func txnProducers(asked, window int) int {
	if asked <= 0 {
		asked = maxAutoTxnProducers
	}
	return max(1, min(asked, window/targets.TxnRecords))
}

// maxAutoTxnProducers bounds the clients of franz-txn by default (at
// 100 B the window holds 419 transactions).
const maxAutoTxnProducers = 64

// jetstream runs the JetStream client against a fresh JetStream cluster
// with parts streams.
func (b *bench) jetstream(ctx context.Context, parts int, key string, always bool) error {
	name := clusterName(key, parts)
	self, err := os.Executable()
	if err != nil {
		return b.setupFailed(parts, name, err, key)
	}
	b.bar.step("starting " + name + " cluster")
	logs, _ := filepath.Abs(filepath.Join(b.o.out, "logs"))
	defer b.dropData(name) // after Stop (defers run last first)
	c, err := clusters.StartJetStream(ctx, clusters.JetStreamConfig{
		Self: self, DataDir: filepath.Join(b.dataDir, name), LogDir: logs, Name: name, Servers: servers, SyncAlways: always,
	})
	if err != nil {
		return b.setupFailed(parts, name, fmt.Errorf("cluster: %w", err), key)
	}
	defer c.Stop(context.Background())
	streams, leaders, err := c.CreateStreams(ctx, stream, topic, parts, servers)
	if err != nil {
		return b.setupFailed(parts, name, fmt.Errorf("streams: %w", err), key)
	}
	if !clusters.Spread(leaders) {
		b.bar.note("%s: stream leaders not spread over the servers: %s", name, report.LeadersLabel(leaders))
	}
	routes := make([]targets.Route, len(streams))
	for i, s := range streams {
		routes[i] = targets.Route{URL: s.URL, Subject: s.Subject}
	}
	b.measureAll(ctx, target{
		key: key, parts: parts, leaders: leaders,
		meter: func() (float64, error) { return proc.CPUSeconds(c.PIDs()...) },
		mk:    func(size int) (targets.Target, error) { return targets.NewJetStream(routes, b.o.window(size)) },
	})
	b.bar.step("stopping " + name + " cluster")
	return ctx.Err()
}
