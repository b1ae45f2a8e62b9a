package clusters

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/minikafka/minikafka-go/bench/internal/proc"
)

// JetStreamConfig describes a local JetStream cluster.
type JetStreamConfig struct {
	Self       string // this bench binary, which serves "natsd --config FILE"
	DataDir    string // each server's store goes to DataDir/jsN (removed first)
	LogDir     string // each server's output goes to LogDir/<Name>-jsN.log
	Name       string // names logs and the cluster, e.g. "js-always"
	Servers    int    // usually 3
	SyncAlways bool   // jetstream { sync_interval: always }; else the default (fsync every 2 min)
}

// JetStream is a running local JetStream cluster.
type JetStream struct {
	procs []*proc.Process
	urls  []string
	names []string // server_name of each, in urls order
}

// natsConfig renders one server's configuration file.
func natsConfig(name, client, clusterAddr string, routes []string, storeDir string, syncAlways bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "server_name: %q\nlisten: %q\n", name, client)
	fmt.Fprintf(&b, "jetstream {\n  store_dir: %q\n", storeDir)
	if syncAlways {
		b.WriteString("  sync_interval: always\n")
	}
	b.WriteString("}\n")
	fmt.Fprintf(&b, "cluster {\n  name: \"bench\"\n  listen: %q\n  routes: [\n", clusterAddr)
	for _, r := range routes {
		fmt.Fprintf(&b, "    \"nats-route://%s\"\n", r)
	}
	b.WriteString("  ]\n}\n")
	return b.String()
}

// StartJetStream starts the servers and returns once JetStream answers
// (its meta group has a leader).
func StartJetStream(ctx context.Context, cfg JetStreamConfig) (_ *JetStream, err error) {
	ports, err := FreePorts(2 * cfg.Servers)
	if err != nil {
		return nil, err
	}
	c := &JetStream{}
	defer func() {
		if err != nil {
			c.Stop(context.Background())
		}
	}()
	var routes []string
	for i := range cfg.Servers {
		routes = append(routes, addr(ports[2*i+1]))
	}
	for i := range cfg.Servers {
		name := fmt.Sprintf("js%d", i+1)
		store := filepath.Join(cfg.DataDir, name)
		if err := os.RemoveAll(store); err != nil {
			return nil, err
		}
		if err := os.MkdirAll(store, 0o755); err != nil {
			return nil, err
		}
		conf := filepath.Join(cfg.DataDir, name+".conf")
		text := natsConfig(name, addr(ports[2*i]), addr(ports[2*i+1]), routes, store, cfg.SyncAlways)
		if err := os.WriteFile(conf, []byte(text), 0o644); err != nil {
			return nil, err
		}
		p, err := proc.Start(cfg.Name+"-"+name, cfg.DataDir,
			filepath.Join(cfg.LogDir, cfg.Name+"-"+name+".log"), cfg.Self, "natsd", "--config", conf)
		if err != nil {
			return nil, err
		}
		c.procs = append(c.procs, p)
		c.urls = append(c.urls, "nats://"+addr(ports[2*i]))
		c.names = append(c.names, name)
	}
	return c, poll(ctx, 60*time.Second, c.procs, func(ctx context.Context) error {
		for _, u := range c.urls {
			nc, err := nats.Connect(u, nats.Timeout(time.Second), nats.NoReconnect())
			if err != nil {
				return err
			}
			js, err := jetstream.New(nc)
			if err == nil {
				_, err = js.AccountInfo(ctx)
			}
			nc.Close()
			if err != nil {
				return fmt.Errorf("%s: %w", u, err)
			}
		}
		return nil
	})
}

// URLs returns the client URLs.
func (c *JetStream) URLs() []string { return append([]string(nil), c.urls...) }

// PIDs returns the server processes' ids.
func (c *JetStream) PIDs() []int { return pids(c.procs) }

// CreateStream creates a file-stored stream with the given replicas over
// subjects and returns the client URL of its leader's server.
func (c *JetStream) CreateStream(ctx context.Context, name string, subjects []string, replicas int) (string, error) {
	nc, err := nats.Connect(strings.Join(c.urls, ","), nats.Timeout(2*time.Second))
	if err != nil {
		return "", err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return "", err
	}
	var leader string
	err = poll(ctx, 30*time.Second, c.procs, func(ctx context.Context) error {
		s, err := js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
			Name: name, Subjects: subjects, Storage: jetstream.FileStorage, Replicas: replicas,
		})
		if err != nil {
			return err
		}
		info, err := s.Info(ctx)
		if err != nil {
			return err
		}
		if info.Cluster == nil || info.Cluster.Leader == "" {
			return fmt.Errorf("stream %s has no leader yet", name)
		}
		leader = info.Cluster.Leader
		return nil
	})
	if err != nil {
		return "", err
	}
	for i, n := range c.names {
		if n == leader {
			return c.urls[i], nil
		}
	}
	return "", fmt.Errorf("clusters: stream leader %q is not one of ours", leader)
}

// Stop stops every server (SIGTERM, then SIGKILL after 10s) in parallel.
func (c *JetStream) Stop(ctx context.Context) error { return stopAll(ctx, c.procs, 10*time.Second) }
