package broker

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/minikafka/minikafka-go/internal/nodecert"
	"github.com/minikafka/minikafka-go/internal/vfs"
	"github.com/minikafka/minikafka-go/kafkaapi"
	"github.com/minikafka/minikafka-go/multiraft"
)

// SecurityConfig is how nodes authenticate each other: mutual TLS on the
// Raft port, encrypted gossip, and the credentials of the Kafka requests
// nodes send each other (transaction markers and verifications). Unset,
// nodes trust whoever reaches their Raft and gossip ports.
type SecurityConfig struct {
	// RaftTLSCertFile, RaftTLSKeyFile and RaftTLSCAFile
	// (raft_tls_cert_file, raft_tls_key_file, raft_tls_ca_file) turn on
	// mutual TLS on the Raft port: this node's PEM certificate, which must
	// name node_id (URI SAN minikafka:node:<id>, as make certs writes), its
	// key, and the CA bundle that peers' certificates must chain to. All
	// three or none.
	RaftTLSCertFile, RaftTLSKeyFile, RaftTLSCAFile string
	// GossipKeys (gossip_keys) are base64 AES keys of 16, 24 or 32 bytes
	// that encrypt gossip; the first encrypts, all decrypt. Empty: gossip
	// in the clear.
	GossipKeys []string
	// ClusterLabel (cluster_label) tags every gossip message; messages
	// with another label are dropped. At most 255 bytes.
	ClusterLabel string
	// InterBrokerListener (inter_broker_listener) is the listener other
	// nodes use to reach this node's Kafka API (Kafka's
	// inter.broker.listener.name); default the first PLAINTEXT listener,
	// else the first listener.
	InterBrokerListener string
	// InterBrokerSASLMechanism, InterBrokerSASLUser and
	// InterBrokerSASLPassword (inter_broker_sasl_*) authenticate this
	// node's requests on a SASL inter-broker listener. The mechanism
	// defaults to SCRAM-SHA-512 when the listener enables it, else its
	// first.
	InterBrokerSASLMechanism, InterBrokerSASLUser, InterBrokerSASLPassword string
	// InterBrokerTLSCAFile (inter_broker_tls_ca_file) is the CA bundle
	// that other nodes' inter-broker TLS listeners are checked against;
	// default raft_tls_ca_file.
	InterBrokerTLSCAFile string
	// RaftAllowUnauthenticated (raft_allow_unauthenticated) lets a node
	// with a SASL listener or authorization_enabled start without mutual
	// TLS on the Raft port, which it otherwise refuses: whoever reaches
	// that port can rewrite the metadata, users and ACLs included.
	RaftAllowUnauthenticated bool

	raftTLS    *multiraft.TLS // loaded by validate; nil without raft_tls_*
	gossipKeys [][]byte       // decoded GossipKeys
	interTLS   *tls.Config    // for a TLS inter-broker listener, else nil
	interSASL  kgo.Opt        // for a SASL inter-broker listener, else nil
}

// validateSecurity checks and loads Security; it runs after
// validateListeners, and makes KafkaAddr the inter-broker listener's.
func (c *Config) validateSecurity() error {
	s := &c.Security
	if err := s.loadRaftTLS(c.NodeID); err != nil {
		return err
	}
	s.gossipKeys = nil
	for i, k := range s.GossipKeys {
		b, err := base64.StdEncoding.DecodeString(k)
		if err != nil {
			return bad(fmt.Sprintf("gossip_keys[%d]", i), "(hidden)", "not base64: %v", err)
		}
		if len(b) != 16 && len(b) != 24 && len(b) != 32 {
			return bad(fmt.Sprintf("gossip_keys[%d]", i), "(hidden)", "decodes to %d bytes, want 16, 24 or 32", len(b))
		}
		s.gossipKeys = append(s.gossipKeys, b)
	}
	if len(s.ClusterLabel) > 255 {
		return bad("cluster_label", s.ClusterLabel, "must be at most 255 bytes")
	}
	if s.InterBrokerListener == "" {
		return nil
	}
	i := slices.IndexFunc(c.Listeners, func(l ListenerConfig) bool { return l.Name == s.InterBrokerListener })
	if i < 0 {
		return bad("inter_broker_listener", s.InterBrokerListener, "names no listener")
	}
	l := c.Listeners[i]
	c.KafkaAddr, c.AdvertisedKafkaAddr = l.Addr, l.AdvertisedAddr
	if err := s.loadInterTLS(l); err != nil {
		return err
	}
	return s.loadInterSASL(l)
}

// validateRaftAuth refuses Kafka-side authentication (a SASL listener) or
// authorisation over a Raft port that trusts whoever connects, unless
// raft_allow_unauthenticated says so. It runs after validateSecurity.
func (c *Config) validateRaftAuth() error {
	if c.Security.raftTLS != nil || c.Security.RaftAllowUnauthenticated {
		return nil
	}
	const why = "the Raft port takes unauthenticated peers, who can rewrite users and ACLs: " +
		"set raft_tls_cert_file, raft_tls_key_file and raft_tls_ca_file (mutual TLS between nodes), " +
		"or raft_allow_unauthenticated: true"
	for _, l := range c.Listeners {
		if l.isSASL() {
			return bad("listeners."+l.Name+".security_protocol", l.SecurityProtocol, "a SASL listener, but %s", why)
		}
	}
	if c.AuthorizationEnabled {
		return bad("authorization_enabled", true, "ACLs are on, but %s", why)
	}
	return nil
}

// validateAuthLimits checks the guards of SASL authentication.
func (c *Config) validateAuthLimits() error {
	switch {
	case c.ConnectionFailedAuthenticationDelay < 0:
		return bad("connection_failed_authentication_delay", c.ConnectionFailedAuthenticationDelay, "must not be negative")
	case c.MaxFailedAuthenticationsPerIP < 0:
		return bad("max_failed_authentications_per_ip", c.MaxFailedAuthenticationsPerIP, "must be 0 (no limit) or more")
	case c.FailedAuthenticationsWindow < time.Millisecond:
		return bad("failed_authentications_window", c.FailedAuthenticationsWindow, "must be at least 1ms")
	}
	return nil
}

// privateDataDir creates dir, or tightens it to vfs.DirMode when it is
// looser: it holds the metadata's SCRAM keys and the clients' records.
// What the node creates in it is vfs.DirMode and vfs.FileMode.
func privateDataDir(dir string) error {
	if err := os.MkdirAll(dir, vfs.DirMode); err != nil {
		return fmt.Errorf("broker: data_dir: %w", err)
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("broker: data_dir: %w", err)
	}
	if fi.Mode().Perm() != vfs.DirMode {
		if err := os.Chmod(dir, vfs.DirMode); err != nil {
			return fmt.Errorf("broker: data_dir %s is %v; making it %v: %w", dir, fi.Mode().Perm(), vfs.DirMode, err)
		}
	}
	return nil
}

// noneIfZero is a limit of ours, where 0 means none, as kafkaapi.Config
// takes it, where 0 means the default and a negative value none.
func noneIfZero[T int | time.Duration](v T) T {
	if v == 0 {
		return -1
	}
	return v
}

func (s *SecurityConfig) loadRaftTLS(node int32) error {
	s.raftTLS = nil
	files := []string{s.RaftTLSCertFile, s.RaftTLSKeyFile, s.RaftTLSCAFile}
	if i := slices.Index(files, ""); i >= 0 {
		if slices.IndexFunc(files, func(f string) bool { return f != "" }) < 0 {
			return nil // no TLS
		}
		key := []string{"raft_tls_cert_file", "raft_tls_key_file", "raft_tls_ca_file"}[i]
		return bad(key, "", "raft_tls_cert_file, raft_tls_key_file and raft_tls_ca_file go together")
	}
	cert, err := tls.LoadX509KeyPair(s.RaftTLSCertFile, s.RaftTLSKeyFile)
	if err != nil {
		return bad("raft_tls_cert_file", s.RaftTLSCertFile, "loading it with raft_tls_key_file: %v", err)
	}
	id, err := nodecert.NodeID(cert.Leaf)
	if err != nil {
		return bad("raft_tls_cert_file", s.RaftTLSCertFile, "%v", err)
	}
	if id != node {
		return bad("raft_tls_cert_file", s.RaftTLSCertFile, "names node %d, not node_id %d", id, node)
	}
	pool, err := loadCAs("raft_tls_ca_file", s.RaftTLSCAFile)
	if err != nil {
		return err
	}
	s.raftTLS = &multiraft.TLS{Certificate: cert, CAs: pool}
	return nil
}

// loadInterTLS makes the TLS config of this node's inter-broker clients:
// it trusts inter_broker_tls_ca_file (or raft_tls_ca_file) and presents
// the node's certificate, if any.
func (s *SecurityConfig) loadInterTLS(l ListenerConfig) error {
	s.interTLS = nil
	if !l.isTLS() {
		return nil
	}
	key, file := "inter_broker_tls_ca_file", s.InterBrokerTLSCAFile
	if file == "" {
		key, file = "raft_tls_ca_file", s.RaftTLSCAFile
	}
	if file == "" {
		return bad("inter_broker_tls_ca_file", "", "the inter-broker listener %s uses TLS: set inter_broker_tls_ca_file or raft_tls_ca_file", l.Name)
	}
	pool, err := loadCAs(key, file)
	if err != nil {
		return err
	}
	s.interTLS = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	if s.raftTLS != nil {
		s.interTLS.Certificates = []tls.Certificate{s.raftTLS.Certificate}
	}
	return nil
}

func (s *SecurityConfig) loadInterSASL(l ListenerConfig) error {
	s.interSASL = nil
	if !l.isSASL() {
		return nil
	}
	if s.InterBrokerSASLUser == "" || s.InterBrokerSASLPassword == "" {
		return bad("inter_broker_sasl_user", s.InterBrokerSASLUser,
			"the inter-broker listener %s uses SASL: set inter_broker_sasl_user and inter_broker_sasl_password", l.Name)
	}
	mech := s.InterBrokerSASLMechanism
	if mech == "" {
		mech = l.SASLMechanisms[0]
		if slices.Contains(l.SASLMechanisms, kafkaapi.MechanismScramSHA512) {
			mech = kafkaapi.MechanismScramSHA512
		}
	}
	if !slices.Contains(l.SASLMechanisms, mech) {
		return bad("inter_broker_sasl_mechanism", mech, "the listener %s enables %v", l.Name, l.SASLMechanisms)
	}
	user, pass := s.InterBrokerSASLUser, s.InterBrokerSASLPassword
	switch mech {
	case kafkaapi.MechanismPlain:
		s.interSASL = kgo.SASL(plain.Auth{User: user, Pass: pass}.AsMechanism())
	case kafkaapi.MechanismScramSHA256:
		s.interSASL = kgo.SASL(scram.Auth{User: user, Pass: pass}.AsSha256Mechanism())
	case kafkaapi.MechanismScramSHA512:
		s.interSASL = kgo.SASL(scram.Auth{User: user, Pass: pass}.AsSha512Mechanism())
	}
	s.InterBrokerSASLMechanism = mech
	return nil
}

// interBrokerOpts are the options of a Kafka client that talks to other
// nodes: TLS and SASL as the inter-broker listener needs.
func (s *SecurityConfig) interBrokerOpts() []kgo.Opt {
	var opts []kgo.Opt
	if s.interTLS != nil {
		opts = append(opts, kgo.DialTLSConfig(s.interTLS.Clone()))
	}
	if s.interSASL != nil {
		opts = append(opts, s.interSASL)
	}
	return opts
}

func loadCAs(key, file string) (*x509.CertPool, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, bad(key, file, "%v", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		return nil, bad(key, file, "holds no PEM certificate")
	}
	return pool, nil
}
