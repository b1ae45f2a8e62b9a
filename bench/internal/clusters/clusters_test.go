package clusters

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nats-io/nats-server/v2/server"
)

// The generated configuration parses, and the sync setting is what we
// claim next to the figures.
func TestNATSConfigParses(t *testing.T) {
	for _, always := range []bool{false, true} {
		dir := t.TempDir()
		text := natsConfig("js1", "127.0.0.1:4222", "127.0.0.1:6222",
			[]string{"127.0.0.1:6222", "127.0.0.1:6223"}, filepath.Join(dir, "store"), always)
		f := filepath.Join(dir, "js1.conf")
		if err := os.WriteFile(f, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		o, err := server.ProcessConfigFile(f)
		if err != nil {
			t.Fatalf("always=%v: %v\n%s", always, err, text)
		}
		if o.SyncAlways != always || !o.JetStream || o.ServerName != "js1" || o.Cluster.Name != "bench" || len(o.Routes) != 2 {
			t.Fatalf("always=%v: parsed %+v", always, o)
		}
		if o.Port != 4222 || o.Cluster.Port != 6222 || !strings.HasSuffix(o.StoreDir, "store") {
			t.Fatalf("ports %d/%d store %s", o.Port, o.Cluster.Port, o.StoreDir)
		}
	}
}

func TestFreePortsDistinct(t *testing.T) {
	ps, err := FreePorts(9)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for _, p := range ps {
		if p <= 0 || seen[p] {
			t.Fatalf("ports %v", ps)
		}
		seen[p] = true
	}
}
