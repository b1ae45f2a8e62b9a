package clusters

import (
	"os"
	"path/filepath"
	"slices"
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

func TestNodeArgsSubstituteID(t *testing.T) {
	args := []string{"--debug-addr", "127.0.0.1:606{id}", "--raft-log-store", "pebble", "--x", "{id}-{id}"}
	for id, want := range map[int][]string{
		1: {"--debug-addr", "127.0.0.1:6061", "--raft-log-store", "pebble", "--x", "1-1"},
		3: {"--debug-addr", "127.0.0.1:6063", "--raft-log-store", "pebble", "--x", "3-3"},
	} {
		if got := NodeArgs(args, id); !slices.Equal(got, want) {
			t.Errorf("node %d: %q, want %q", id, got, want)
		}
	}
	if args[1] != "127.0.0.1:606{id}" {
		t.Fatalf("NodeArgs changed its input: %q", args)
	}
	if got := NodeArgs(nil, 2); len(got) != 0 {
		t.Fatalf("no args gave %q", got)
	}
}
