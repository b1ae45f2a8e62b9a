package deploy_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/viper"
)

// unitFile and unitConfig are the shipped systemd unit and the config it
// runs (installed as /etc/minikafka/node.yaml).
var (
	unitFile   = filepath.Join(root, "deploy", "systemd", "minikafka-node.service")
	unitConfig = filepath.Join(root, "deploy", "systemd", "node.yaml")
)

// unitKey is the value of key in the unit ("" if absent).
func unitKey(t *testing.T, unit, key string) string {
	t.Helper()
	for _, l := range strings.Split(unit, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), key+"="); ok {
			return v
		}
	}
	return ""
}

// TestSystemdUnitVerifies: systemd-analyze verify accepts the unit
// without a single warning (an unknown key or a bad value is only a
// warning to it). The unit's ExecStart binary is not installed here, so
// the copy verified runs a stand-in at a temporary path; nothing else
// changes.
func TestSystemdUnitVerifies(t *testing.T) {
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("systemd-analyze not found: install the Debian package systemd (make test-deps does)")
		}
		t.Skip("systemd-analyze not found: install the Debian package systemd (make test-deps does)")
	}
	b, err := os.ReadFile(unitFile)
	if err != nil {
		t.Fatal(err)
	}
	unit := string(b)
	const bin = "/usr/local/bin/minikafka-node"
	exe := unitKey(t, unit, "ExecStart")
	if !strings.HasPrefix(exe, bin+" ") {
		t.Fatalf("ExecStart=%s, want %s as docs/deploy.md installs it", exe, bin)
	}
	dir := t.TempDir()
	stand := filepath.Join(dir, "minikafka-node")
	if err := os.WriteFile(stand, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	copyPath := filepath.Join(dir, "minikafka-node.service")
	if err := os.WriteFile(copyPath, []byte(strings.Replace(unit, "ExecStart="+bin, "ExecStart="+stand, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(analyze, "verify", copyPath).CombinedOutput()
	if err != nil || len(strings.TrimSpace(string(out))) > 0 {
		t.Fatalf("systemd-analyze verify %s: %v\n%s", unitFile, err, out)
	}
}

// TestSystemdUnitMatchesItsConfig: the unit runs the config it names,
// whose data_dir is the unit's StateDirectory, and the config binds all
// interfaces while advertising an address for each of Kafka, Raft and
// gossip, with three seeds to join.
func TestSystemdUnitMatchesItsConfig(t *testing.T) {
	b, err := os.ReadFile(unitFile)
	if err != nil {
		t.Fatal(err)
	}
	unit := string(b)
	if exe := unitKey(t, unit, "ExecStart"); !strings.HasSuffix(exe, " --config /etc/minikafka/node.yaml") {
		t.Errorf("ExecStart=%s, want --config /etc/minikafka/node.yaml (where deploy/systemd/node.yaml is installed)", exe)
	}
	v := viper.New()
	v.SetConfigFile(unitConfig)
	if err := v.ReadInConfig(); err != nil {
		t.Fatal(err)
	}
	if want := "/var/lib/" + unitKey(t, unit, "StateDirectory"); v.GetString("data_dir") != want {
		t.Errorf("data_dir %s, want the unit's StateDirectory %s", v.GetString("data_dir"), want)
	}
	for _, k := range []string{"kafka_addr", "raft_addr", "gossip_addr"} {
		if !strings.HasPrefix(v.GetString(k), "0.0.0.0:") || v.GetString("advertised_"+k) == "" {
			t.Errorf("%s=%s advertised as %q: want all interfaces bound and an address advertised",
				k, v.GetString(k), v.GetString("advertised_"+k))
		}
	}
	if seeds := v.GetStringSlice("join"); len(seeds) != 3 || v.GetInt("bootstrap_expect") != 3 {
		t.Errorf("join %v, bootstrap_expect %d: want three nodes", seeds, v.GetInt("bootstrap_expect"))
	}
}
