package clusters

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// startNATSCluster runs n clustered JetStream servers in this process,
// configured as StartJetStream configures its processes.
func startNATSCluster(t *testing.T, n int) *JetStream {
	t.Helper()
	ports, err := FreePorts(2 * n)
	if err != nil {
		t.Fatal(err)
	}
	var routes []string
	for i := range n {
		routes = append(routes, addr(ports[2*i+1]))
	}
	c := &JetStream{}
	for i := range n {
		name := fmt.Sprintf("js%d", i+1)
		dir := t.TempDir()
		f := filepath.Join(dir, name+".conf")
		text := natsConfig(name, addr(ports[2*i]), addr(ports[2*i+1]), routes, filepath.Join(dir, "store"), false)
		if err := os.WriteFile(f, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		o, err := server.ProcessConfigFile(f)
		if err != nil {
			t.Fatal(err)
		}
		o.NoLog, o.NoSigs = true, true
		s, err := server.NewServer(o)
		if err != nil {
			t.Fatal(err)
		}
		go s.Start()
		t.Cleanup(func() { s.Shutdown(); s.WaitForShutdown() })
		c.urls = append(c.urls, "nats://"+addr(ports[2*i]))
		c.names = append(c.names, name)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := c.waitReady(ctx, 60*time.Second); err != nil {
		t.Fatal(err)
	}
	return c
}

// CreateStreams makes one stream per partition over its own subject, and
// spreads their leaders over the servers; each stream's URL is its
// leader's server.
func TestCreateStreamsSpreadsLeaders(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a 3-server JetStream cluster")
	}
	c := startNATSCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	streams, leaders, err := c.CreateStreams(ctx, "T", "t", 6, 3)
	if err != nil {
		t.Fatal(err)
	}
	if len(leaders) != 3 || leaders["js1"] != 2 || leaders["js2"] != 2 || leaders["js3"] != 2 {
		t.Fatalf("leaders %v, want 2 on each of js1..js3", leaders)
	}
	for i, s := range streams {
		if s.Name != fmt.Sprintf("T-%d", i) || s.Subject != fmt.Sprintf("t.%d", i) {
			t.Fatalf("stream %d: %+v", i, s)
		}
		if want := c.names[i%3]; s.Leader != want || s.URL != c.urls[i%3] {
			t.Fatalf("stream %d led by %s at %s, want %s at %s", i, s.Leader, s.URL, want, c.urls[i%3])
		}
	}
}
