package broker

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"time"

	"github.com/minikafka/minikafka-go/internal/scram"
	"github.com/minikafka/minikafka-go/kafkaapi"
	"github.com/minikafka/minikafka-go/metadata"
)

// Security protocols of a listener: Kafka's names.
const (
	ProtocolPlaintext     = "PLAINTEXT"
	ProtocolSSL           = "SSL"
	ProtocolSASLPlaintext = "SASL_PLAINTEXT"
	ProtocolSASLSSL       = "SASL_SSL"
)

// Client certificate policies of a TLS listener (Kafka's ssl.client.auth).
const (
	ClientAuthNone      = "none"
	ClientAuthRequested = "requested"
	ClientAuthRequired  = "required"
)

// ListenerConfig is one Kafka listener (Kafka's listeners,
// advertised.listeners, listener.security.protocol.map and the listener's
// ssl.* and sasl.enabled.mechanisms).
type ListenerConfig struct {
	// Name is the listener's name; Metadata answers on it give every
	// broker's listener of the same name. Letters, digits, _ and -.
	Name string
	// SecurityProtocol is PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL;
	// default: Name, when Name is one of those.
	SecurityProtocol string
	// Addr is the host:port to bind; AdvertisedAddr what clients are
	// told (default Addr, which must then name a host).
	Addr, AdvertisedAddr string
	// TLSCertFile and TLSKeyFile are the PEM server certificate (chain)
	// and key of an SSL or SASL_SSL listener. TLSCAFile is the PEM CA
	// bundle that client certificates are checked against.
	TLSCertFile, TLSKeyFile, TLSCAFile string
	// ClientAuth is none (default), requested (a client certificate is
	// checked when sent) or required; the last two need TLSCAFile.
	ClientAuth string
	// SASLMechanisms of a SASL listener: PLAIN, SCRAM-SHA-256,
	// SCRAM-SHA-512; default all three.
	SASLMechanisms []string
}

// SASLUser is a SCRAM user a node creates when the cluster does not have
// it yet, so that a cluster with only SASL listeners can be administered.
// A user changed or deleted later is not restored from here while the
// change stands, except that a deleted user is created again.
type SASLUser struct {
	Name     string
	Password string
	// Mechanisms to create credentials for; default both SCRAM ones.
	Mechanisms []string
	// Iterations of the credentials; default 4096.
	Iterations int
}

func (l ListenerConfig) isTLS() bool {
	return l.SecurityProtocol == ProtocolSSL || l.SecurityProtocol == ProtocolSASLSSL
}

func (l ListenerConfig) isSASL() bool {
	return l.SecurityProtocol == ProtocolSASLPlaintext || l.SecurityProtocol == ProtocolSASLSSL
}

// validateListeners checks Listeners and SASLUsers and fills defaults.
// Without Listeners, KafkaAddr is one PLAINTEXT listener. With them,
// KafkaAddr and AdvertisedKafkaAddr become those of the first PLAINTEXT
// listener, else of the first listener: the address the node registers
// for other nodes.
func (c *Config) validateListeners() error {
	if len(c.Listeners) == 0 {
		c.Listeners = []ListenerConfig{{Name: ProtocolPlaintext, SecurityProtocol: ProtocolPlaintext,
			Addr: c.KafkaAddr, AdvertisedAddr: c.AdvertisedKafkaAddr}}
	}
	var names []string
	for i := range c.Listeners {
		l := &c.Listeners[i]
		key := fmt.Sprintf("listeners[%d]", i)
		if err := metadata.CheckListenerName(l.Name); err != nil {
			return bad(key+".name", l.Name, "%v", err)
		}
		key = "listeners." + l.Name
		if slices.Contains(names, l.Name) {
			return bad(key, l.Name, "listener name used twice")
		}
		names = append(names, l.Name)
		if l.SecurityProtocol == "" {
			l.SecurityProtocol = l.Name
		}
		switch l.SecurityProtocol {
		case ProtocolPlaintext, ProtocolSSL, ProtocolSASLPlaintext, ProtocolSASLSSL:
		default:
			return bad(key+".security_protocol", l.SecurityProtocol, "must be PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL")
		}
		if err := checkHostPort(key+".addr", l.Addr, true); err != nil {
			return err
		}
		// Advertising the bind address (port 0 resolved once bound) needs
		// a host clients can reach.
		if l.AdvertisedAddr == "" || l.AdvertisedAddr == l.Addr {
			host, _, _ := net.SplitHostPort(l.Addr)
			if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
				return bad(key+".advertised_addr", "", "must be set when addr binds all interfaces (%s)", l.Addr)
			}
			l.AdvertisedAddr = l.Addr
		} else if err := checkHostPort(key+".advertised_addr", l.AdvertisedAddr, false); err != nil {
			return err
		}
		if l.ClientAuth == "" {
			l.ClientAuth = ClientAuthNone
		}
		if err := l.validateSecurity(key); err != nil {
			return err
		}
	}
	first := c.Listeners[0]
	if i := slices.IndexFunc(c.Listeners, func(l ListenerConfig) bool { return l.SecurityProtocol == ProtocolPlaintext }); i >= 0 {
		first = c.Listeners[i]
	}
	c.KafkaAddr, c.AdvertisedKafkaAddr = first.Addr, first.AdvertisedAddr
	return c.validateSASLUsers()
}

func (l *ListenerConfig) validateSecurity(key string) error {
	if l.isTLS() {
		if l.TLSCertFile == "" || l.TLSKeyFile == "" {
			return bad(key+".tls_cert_file", l.TLSCertFile, "a %s listener needs tls_cert_file and tls_key_file", l.SecurityProtocol)
		}
		switch l.ClientAuth {
		case ClientAuthNone:
		case ClientAuthRequested, ClientAuthRequired:
			// Without a CA bundle, client certificates would be checked
			// against the system's public CAs.
			if l.TLSCAFile == "" {
				return bad(key+".tls_ca_file", "", "client_auth %s needs tls_ca_file", l.ClientAuth)
			}
		default:
			return bad(key+".client_auth", l.ClientAuth, "must be none, requested or required")
		}
		if _, err := l.tlsConfig(); err != nil {
			return bad(key, l.TLSCertFile, "%v", err)
		}
	} else if l.TLSCertFile != "" || l.TLSKeyFile != "" || l.TLSCAFile != "" || l.ClientAuth != ClientAuthNone {
		return bad(key+".security_protocol", l.SecurityProtocol, "TLS settings on a listener without TLS (use SSL or SASL_SSL)")
	}
	if !l.isSASL() {
		if len(l.SASLMechanisms) > 0 {
			return bad(key+".sasl_mechanisms", l.SASLMechanisms, "SASL mechanisms on a listener without SASL (use SASL_PLAINTEXT or SASL_SSL)")
		}
		return nil
	}
	if len(l.SASLMechanisms) == 0 {
		l.SASLMechanisms = []string{kafkaapi.MechanismPlain, kafkaapi.MechanismScramSHA256, kafkaapi.MechanismScramSHA512}
	}
	for _, m := range l.SASLMechanisms {
		switch m {
		case kafkaapi.MechanismPlain, kafkaapi.MechanismScramSHA256, kafkaapi.MechanismScramSHA512:
		default:
			return bad(key+".sasl_mechanisms", m, "must be PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512")
		}
	}
	return nil
}

// tlsConfig loads the listener's certificate and CA files.
func (l ListenerConfig) tlsConfig() (*tls.Config, error) {
	cert, err := tls.LoadX509KeyPair(l.TLSCertFile, l.TLSKeyFile)
	if err != nil {
		return nil, fmt.Errorf("loading tls_cert_file and tls_key_file: %w", err)
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	if l.TLSCAFile != "" {
		pemBytes, err := os.ReadFile(l.TLSCAFile)
		if err != nil {
			return nil, fmt.Errorf("tls_ca_file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pemBytes) {
			return nil, fmt.Errorf("tls_ca_file %s holds no PEM certificate", l.TLSCAFile)
		}
		cfg.ClientCAs = pool
	}
	switch l.ClientAuth {
	case ClientAuthRequested:
		cfg.ClientAuth = tls.VerifyClientCertIfGiven
	case ClientAuthRequired:
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
	}
	return cfg, nil
}

// kafkaListener is the listener as the Kafka front end serves it.
func (l ListenerConfig) kafkaListener() (kafkaapi.Listener, error) {
	kl := kafkaapi.Listener{Name: l.Name}
	if l.isTLS() {
		cfg, err := l.tlsConfig()
		if err != nil {
			return kl, err
		}
		kl.TLS = cfg
	}
	if l.isSASL() {
		kl.SASLMechanisms = l.SASLMechanisms
	}
	return kl, nil
}

func (c *Config) validateSASLUsers() error {
	var names []string
	for i := range c.SASLUsers {
		u := &c.SASLUsers[i]
		key := fmt.Sprintf("sasl_users[%d]", i)
		if u.Name == "" || len(u.Name) > metadata.MaxScramUserLen {
			return bad(key+".name", u.Name, "must be 1 to %d bytes", metadata.MaxScramUserLen)
		}
		if slices.Contains(names, u.Name) {
			return bad(key+".name", u.Name, "user listed twice")
		}
		names = append(names, u.Name)
		if u.Password == "" {
			return bad(key+".password", "", "must be set")
		}
		if len(u.Mechanisms) == 0 {
			u.Mechanisms = []string{kafkaapi.MechanismScramSHA256, kafkaapi.MechanismScramSHA512}
		}
		for _, m := range u.Mechanisms {
			if _, ok := scram.ParseMechanism(m); !ok {
				return bad(key+".mechanisms", m, "must be SCRAM-SHA-256 or SCRAM-SHA-512")
			}
		}
		if u.Iterations == 0 {
			u.Iterations = scram.DefaultIterations
		}
		if u.Iterations < scram.MinIterations || u.Iterations > scram.MaxIterations {
			return bad(key+".iterations", u.Iterations, "must be %d to %d", scram.MinIterations, scram.MaxIterations)
		}
	}
	return nil
}

// advertisedListeners is the node's listeners in Kafka's
// advertised.listeners form, as gossiped and registered.
func advertisedListeners(ls []ListenerConfig) string {
	out := make([]metadata.Listener, len(ls))
	for i, l := range ls {
		out[i] = metadata.Listener{Name: l.Name, Addr: l.AdvertisedAddr}
	}
	return metadata.FormatListeners(out)
}

// serveKafka starts the Kafka front end on the bound listener.
func (n *Node) serveKafka() error {
	var err error
	n.kafka, err = kafkaapi.New(n.backend, kafkaapi.Config{
		MaxRequestBytes:       n.cfg.MaxRequestBytes,
		QueuedMaxRequestBytes: n.cfg.QueuedMaxRequestBytes,
		MaxConnections:        n.cfg.MaxConnections,
		MaxConnectionsPerIP:   n.cfg.MaxConnectionsPerIP,
		ConnectionsMaxIdle:    n.cfg.ConnectionsMaxIdle,
		Logger:                n.logger,
		Observer:              n.metrics,
		Quotas:                n.newQuotas(),

		DisableTxnPartitionVerification: !n.cfg.TxnPartitionVerification,

		FailedAuthenticationDelay:     noneIfZero(n.cfg.ConnectionFailedAuthenticationDelay),
		MaxFailedAuthenticationsPerIP: noneIfZero(n.cfg.MaxFailedAuthenticationsPerIP),
		FailedAuthenticationsWindow:   n.cfg.FailedAuthenticationsWindow,
	})
	if err != nil {
		return err
	}
	kls := make([]kafkaapi.Listener, len(n.kafkaLns))
	for i, lc := range n.cfg.Listeners {
		if kls[i], err = lc.kafkaListener(); err != nil {
			return fmt.Errorf("broker: listener %s: %w", lc.Name, err)
		}
	}
	caughtUp := make(chan struct{})
	n.wg.Go(func() { defer close(caughtUp); n.awaitMetadata() })
	for i, ln := range n.kafkaLns {
		kl := kls[i]
		n.wg.Go(func() {
			<-caughtUp // until then connections wait in the listener's backlog
			if err := n.kafka.ServeListener(n.ctx, ln, kl); err != nil && !errors.Is(err, kafkaapi.ErrServerClosed) {
				n.logger.Error("kafka listener stopped", "listener", kl.Name, "err", err)
			}
		})
	}
	return nil
}

// awaitMetadata returns once the node's metadata has caught up with the
// cluster's (Controller.CatchUp), the node stops, or Tuning.MetadataCatchUp
// passes. A node that served before would answer from what it knew when
// it stopped: a topic created meanwhile would not exist for it. Past the
// bound (no metadata quorum) it serves what it knows, which Kafka's broker
// never does, so that partitions whose own groups have a quorum stay
// reachable.
func (n *Node) awaitMetadata() {
	ctx, cancel := context.WithTimeout(n.ctx, n.cfg.Tuning.MetadataCatchUp)
	defer cancel()
	start := time.Now()
	if err := n.meta.CatchUp(ctx); err != nil {
		if n.ctx.Err() == nil {
			n.logger.Warn("serving Kafka requests before the metadata caught up", "waited", time.Since(start), "err", err)
		}
		return
	}
	n.logger.Debug("metadata caught up; serving Kafka requests", "waited", time.Since(start))
}
