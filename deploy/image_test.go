package deploy_test

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/viper"

	"github.com/minikafka/minikafka-go/test/netns"
)

// imageConfig is the Dockerfile's config: the COPY of a file of the
// repository to the path the CMD passes to --config, read with viper.
func imageConfig(t *testing.T, ins []instruction) (*viper.Viper, string) {
	t.Helper()
	var cmd []string
	for _, in := range ins {
		if in.cmd == "CMD" {
			cmd = jsonArgs(t, in.args)
		}
	}
	i := slices.Index(cmd, "--config")
	if i < 0 || i+1 >= len(cmd) {
		t.Fatalf("Dockerfile CMD %v: no --config FILE", cmd)
	}
	for _, c := range copies(ins) {
		for _, s := range c.srcs {
			if c.from == "" && dest(s, c.dst) == cmd[i+1] {
				v := viper.New()
				v.SetConfigFile(filepath.Join(root, s))
				v.SetConfigType("yaml")
				if err := v.ReadInConfig(); err != nil {
					t.Fatal(err)
				}
				return v, filepath.Join(root, s)
			}
		}
	}
	t.Fatalf("no COPY puts a file of the repository at the CMD's config %s", cmd[i+1])
	return nil, ""
}

// jsonArgs parses an exec-form instruction (["a", "b"]).
func jsonArgs(t *testing.T, s string) []string {
	t.Helper()
	s, ok := strings.CutPrefix(strings.TrimSuffix(s, "]"), "[")
	if !ok {
		t.Fatalf("want the exec form [...], got %s", s)
	}
	var out []string
	for _, a := range strings.Split(s, ",") {
		out = append(out, strings.Trim(strings.TrimSpace(a), `"`))
	}
	return out
}

func port(t *testing.T, v *viper.Viper, key string) string {
	t.Helper()
	_, p, err := net.SplitHostPort(v.GetString(key))
	if err != nil {
		t.Fatalf("config %s: %v", key, err)
	}
	return p
}

// TestDockerfileMatchesItsConfig: every file the Dockerfile copies from
// the repository exists, every file it copies from the build stage is one
// the stage makes, the entrypoint is the copied node binary, the exposed
// ports are the config's Kafka, Raft, gossip (TCP and UDP) and admin
// ports, and the volume is its data directory.
func TestDockerfileMatchesItsConfig(t *testing.T) {
	ins := parseDockerfile(t)
	made := map[string]bool{}
	for _, b := range goBuilds(ins) {
		made[b.out] = true
	}
	for _, in := range ins {
		if w := words(in.args); in.cmd == "RUN" && len(w) > 2 && w[0] == "mkdir" {
			made[w[len(w)-1]] = true
		}
	}
	var landed []string
	for _, c := range copies(ins) {
		for _, s := range c.srcs {
			landed = append(landed, dest(s, c.dst))
			if c.from != "" && !made[s] {
				t.Errorf("COPY --from=%s %s: the build stage makes no such file", c.from, s)
			} else if _, err := os.Stat(filepath.Join(root, s)); c.from == "" && err != nil {
				t.Errorf("COPY %s: %v", s, err)
			}
		}
	}
	v, _ := imageConfig(t, ins)
	want := []string{port(t, v, "kafka_addr"), port(t, v, "raft_addr"), port(t, v, "gossip_addr"),
		port(t, v, "gossip_addr") + "/udp", port(t, v, "admin_addr")}
	var exposed, volumes, entry []string
	for _, in := range ins {
		switch in.cmd {
		case "EXPOSE":
			exposed = append(exposed, words(in.args)...)
		case "VOLUME":
			volumes = append(volumes, words(in.args)...)
		case "ENTRYPOINT":
			entry = jsonArgs(t, in.args)
		}
	}
	slices.Sort(want)
	slices.Sort(exposed)
	if !slices.Equal(exposed, want) {
		t.Errorf("EXPOSE %v, want the config's ports %v", exposed, want)
	}
	if !slices.Equal(volumes, []string{v.GetString("data_dir")}) {
		t.Errorf("VOLUME %v, want the config's data_dir %s", volumes, v.GetString("data_dir"))
	}
	if len(entry) == 0 || !slices.Contains(landed, entry[0]) || filepath.Base(entry[0]) != "minikafka-node" {
		t.Errorf("ENTRYPOINT %v is not the copied node binary (copied: %v)", entry, landed)
	}
}

// TestDockerImageConfigServes runs the image's static node binary with
// the image's config in a network namespace of its own (the config's
// fixed ports are free there), advertising the namespace's address
// through MINIKAFKA_* variables as docs/deploy.md says, and the image's
// static CLI against it: cluster status and a produce succeed.
func TestDockerImageConfigServes(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := t.TempDir()
	bins := buildStatic(t, dir)
	_, config := imageConfig(t, parseDockerfile(t))
	n, err := netns.Setup(ctx, t, 1)
	switch {
	case errors.Is(err, netns.ErrNoPrivilege) && os.Getenv("CI") == "":
		t.Skipf("%v; run as root (CI does, where this fails)", err)
	case err != nil:
		t.Fatal(err)
	}
	ip := n.IP(1)
	nodeCmd := n.Command(ctx, 1, bins["/out/minikafka-node"], "--config", config)
	nodeCmd.Env = append(os.Environ(), "MINIKAFKA_DATA_DIR="+filepath.Join(dir, "data"),
		"MINIKAFKA_ADVERTISED_KAFKA_ADDR="+ip+":9092", "MINIKAFKA_ADVERTISED_RAFT_ADDR="+ip+":9192",
		"MINIKAFKA_ADVERTISED_GOSSIP_ADDR="+ip+":9292")
	logFile := filepath.Join(dir, "node.log")
	logf, err := os.Create(logFile)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close() // the child has its own descriptor
	nodeCmd.Stdout, nodeCmd.Stderr = logf, logf
	if err := nodeCmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = nodeCmd.Process.Kill(); _ = nodeCmd.Wait() })
	cli := func(stdin string, args ...string) {
		t.Helper()
		cmd := n.Command(ctx, 1, bins["/out/minikafka"], append(args, "--brokers", ip+":9092", "--timeout", "30s")...)
		cmd.Stdin = strings.NewReader(stdin)
		if out, err := cmd.CombinedOutput(); err != nil {
			nodeLog, _ := os.ReadFile(logFile)
			t.Fatalf("minikafka %s: %v\n%s\nnode log:\n%s", strings.Join(args, " "), err, out, nodeLog)
		}
	}
	cli("", "cluster", "status", "--wait", "30s")
	cli("", "topic", "create", "smoke", "--partitions", "1", "--replication-factor", "1")
	cli("hello\n", "produce", "smoke")
}
