package clusters

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
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
	return c, c.waitReady(ctx, 60*time.Second)
}

// waitReady returns once every server answers JetStream requests (its
// meta group has a leader), or after limit.
func (c *JetStream) waitReady(ctx context.Context, limit time.Duration) error {
	return poll(ctx, limit, c.procs, func(ctx context.Context) error {
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

// Stream is one stream CreateStreams made.
type Stream struct {
	Name, Subject string
	Leader        string // server name
	URL           string // client URL of the leader's server
}

// CreateStreams creates n file-stored streams with the given replicas,
// stream i named "<prefix>-<i>" over the one subject "<subject>.<i>". With
// more than one, it asks nats to move stream i's leadership to server
// i mod servers (a leader stepdown with a preferred server) so that the
// leaders are spread as a Kafka topic's are; nats may decline, so the
// leaders are read back. It returns the streams and how many each server
// leads (every server listed).
func (c *JetStream) CreateStreams(ctx context.Context, prefix, subject string, n, replicas int) ([]Stream, map[string]int, error) {
	nc, err := nats.Connect(strings.Join(c.urls, ","), nats.Timeout(2*time.Second))
	if err != nil {
		return nil, nil, fmt.Errorf("clusters: connect: %w", err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, nil, fmt.Errorf("clusters: jetstream: %w", err)
	}
	streams := make([]Stream, n)
	for i := range streams {
		streams[i] = Stream{Name: fmt.Sprintf("%s-%d", prefix, i), Subject: fmt.Sprintf("%s.%d", subject, i)}
		if err := c.createStream(ctx, js, streams[i], replicas); err != nil {
			return nil, nil, err
		}
	}
	if n > 1 {
		// Best effort: with the leaders where nats put them the run is
		// still valid, and the leaders column shows the placement.
		_ = c.spreadLeaders(ctx, nc, js, streams)
	}
	leaders := map[string]int{}
	for _, name := range c.names {
		leaders[name] = 0
	}
	for i := range streams {
		if err := c.readLeader(ctx, js, &streams[i]); err != nil {
			return nil, nil, err
		}
		leaders[streams[i].Leader]++
	}
	return streams, leaders, ctx.Err()
}

// createStream creates one stream and waits until it has a leader.
func (c *JetStream) createStream(ctx context.Context, js jetstream.JetStream, st Stream, replicas int) error {
	err := poll(ctx, 30*time.Second, c.procs, func(ctx context.Context) error {
		s, err := js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
			Name: st.Name, Subjects: []string{st.Subject}, Storage: jetstream.FileStorage, Replicas: replicas,
		})
		if err != nil {
			return err
		}
		info, err := s.Info(ctx)
		if err != nil {
			return err
		}
		if info.Cluster == nil || info.Cluster.Leader == "" {
			return fmt.Errorf("stream %s has no leader yet", st.Name)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("clusters: stream %s: %w", st.Name, err)
	}
	return nil
}

// readLeader sets st's Leader and URL from the stream's info.
func (c *JetStream) readLeader(ctx context.Context, js jetstream.JetStream, st *Stream) error {
	return poll(ctx, 30*time.Second, c.procs, func(ctx context.Context) error {
		s, err := js.Stream(ctx, st.Name)
		if err != nil {
			return err
		}
		info, err := s.Info(ctx)
		if err != nil {
			return err
		}
		if info.Cluster == nil {
			return fmt.Errorf("stream %s has no cluster info", st.Name)
		}
		i := slices.Index(c.names, info.Cluster.Leader)
		if i < 0 {
			return fmt.Errorf("stream %s: leader %q is not one of ours", st.Name, info.Cluster.Leader)
		}
		st.Leader, st.URL = c.names[i], c.urls[i]
		return nil
	})
}

// spreadLeaders asks for stream i's leader on server i mod servers until
// every stream is led there, or 30s pass.
func (c *JetStream) spreadLeaders(ctx context.Context, nc *nats.Conn, js jetstream.JetStream, streams []Stream) error {
	asked := make([]time.Time, len(streams))
	return poll(ctx, 30*time.Second, c.procs, func(ctx context.Context) error {
		wrong := 0
		for i := range streams {
			want := c.names[i%len(c.names)]
			if err := c.readLeader(ctx, js, &streams[i]); err != nil {
				return err
			}
			if streams[i].Leader == want {
				continue
			}
			wrong++
			if time.Since(asked[i]) > 2*time.Second { // give the last request time to act
				asked[i] = time.Now()
				if err := stepDown(ctx, nc, streams[i].Name, want); err != nil {
					return err
				}
			}
		}
		if wrong > 0 {
			return fmt.Errorf("%d stream leaders not on their server yet", wrong)
		}
		return nil
	})
}

// stepDown asks the leader of stream to hand leadership to server.
func stepDown(ctx context.Context, nc *nats.Conn, stream, server string) error {
	req := fmt.Sprintf(`{"placement":{"preferred":%q}}`, server)
	m, err := nc.RequestWithContext(ctx, "$JS.API.STREAM.LEADER.STEPDOWN."+stream, []byte(req))
	if err != nil {
		return fmt.Errorf("stepdown %s: %w", stream, err)
	}
	var resp struct {
		Success bool `json:"success"`
		Error   *struct {
			Description string `json:"description"`
		} `json:"error"`
	}
	if err := json.Unmarshal(m.Data, &resp); err != nil {
		return fmt.Errorf("stepdown %s: %w", stream, err)
	}
	if !resp.Success && resp.Error != nil {
		return fmt.Errorf("stepdown %s to %s: %s", stream, server, resp.Error.Description)
	}
	return nil
}

// Stop stops every server (SIGTERM, then SIGKILL after 10s) in parallel.
func (c *JetStream) Stop(ctx context.Context) error { return stopAll(ctx, c.procs, 10*time.Second) }
