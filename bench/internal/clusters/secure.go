package clusters

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/minikafka/minikafka-go/client"
	"github.com/minikafka/minikafka-go/internal/nodecert"
)

// Secure is what a MiniKafka cluster of MiniKafkaConfig.Secure needs: a
// directory for its certificates and per-node configs. The user is
// configs/secure's: admin with SCRAM-SHA-512.
type Secure struct {
	Dir string // certificates and the nodes' configs go here

	gossipKey string // base64, made by setup
}

// Credentials of the cluster's SCRAM user, as configs/secure has them.
const (
	secureUser     = "admin"
	securePassword = "admin-secret"
)

// setup writes a CA and node certificates for nodes 1..n, and draws the
// gossip key.
func (s *Secure) setup(n int) error {
	ids := make([]int32, n)
	for i := range ids {
		ids[i] = int32(i + 1)
	}
	if err := nodecert.Write(s.Dir, ids, 24*time.Hour); err != nil {
		return fmt.Errorf("clusters: certificates: %w", err)
	}
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return err
	}
	s.gossipKey = base64.StdEncoding.EncodeToString(key)
	return nil
}

// nodeConfig writes node id's config: base (configs/nodeN.yaml) without
// its kafka_addr, plus a SASL_SSL listener at kafka and the security keys
// of configs/secure. It returns the file's path.
func (s *Secure) nodeConfig(base string, id int, kafka string) (string, error) {
	b, err := os.ReadFile(base)
	if err != nil {
		return "", err
	}
	var lines []string
	for _, l := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(l, "kafka_addr:") {
			lines = append(lines, l)
		}
	}
	f := nodecert.FilesIn(s.Dir, int32(id))
	lines = append(lines,
		"listeners:",
		"  - name: SASL_SSL",
		"    addr: "+kafka,
		"    tls_cert_file: "+f.Cert,
		"    tls_key_file: "+f.Key,
		"    sasl_mechanisms: [SCRAM-SHA-512]",
		"sasl_users:",
		"  - name: "+secureUser,
		"    password: "+securePassword,
		"    mechanisms: [SCRAM-SHA-512]",
		"raft_tls_cert_file: "+f.Cert,
		"raft_tls_key_file: "+f.Key,
		"raft_tls_ca_file: "+f.CA,
		"gossip_keys: ["+s.gossipKey+"]",
		"cluster_label: minikafka-bench",
		"inter_broker_listener: SASL_SSL",
		"inter_broker_sasl_mechanism: SCRAM-SHA-512",
		"inter_broker_sasl_user: "+secureUser,
		"inter_broker_sasl_password: "+securePassword,
		"")
	path := filepath.Join(s.Dir, fmt.Sprintf("node%d.yaml", id))
	return path, os.WriteFile(path, []byte(strings.Join(lines, "\n")), 0o600)
}

// ClientOpts are what our client needs to reach the cluster: TLS trusting
// the CA, and SASL as the cluster's user.
func (s *Secure) ClientOpts() []client.Opt {
	return []client.Opt{client.TLSCAFile(nodecert.FilesIn(s.Dir, 1).CA),
		client.SASL(client.SASLScramSHA512, secureUser, securePassword)}
}
