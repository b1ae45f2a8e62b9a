package kafkaapi

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"slices"

	"github.com/minikafka/minikafka-go/internal/scram"
)

// SASL mechanism names a Listener may enable.
const (
	MechanismPlain       = "PLAIN"
	MechanismScramSHA256 = "SCRAM-SHA-256"
	MechanismScramSHA512 = "SCRAM-SHA-512"
)

// Listener says how the connections accepted on one net.Listener are
// served: Kafka's listener with its security protocol.
//
//	PLAINTEXT:       TLS nil, SASLMechanisms nil
//	SSL:             TLS set
//	SASL_PLAINTEXT:  SASLMechanisms set
//	SASL_SSL:        both
type Listener struct {
	// Name is the listener's name. Metadata, DescribeCluster and
	// FindCoordinator answers on this listener give each broker's address
	// for the listener of the same name (ClusterView's Broker.Endpoints),
	// as Kafka does, and leave out brokers without one. "" answers with
	// Broker.Host and Port.
	Name string
	// TLS, when set, makes every connection a TLS server connection; the
	// handshake must finish within Config.AuthenticationTimeout.
	TLS *tls.Config
	// SASLMechanisms, when set, makes clients authenticate with one of
	// these mechanisms (MechanismPlain, MechanismScramSHA256,
	// MechanismScramSHA512) before any request but ApiVersions,
	// SaslHandshake and SaslAuthenticate, within
	// Config.AuthenticationTimeout. The Backend must be a
	// CredentialStore.
	SASLMechanisms []string
}

// CredentialStore is the Backend capability that SASL listeners need: the
// stored SCRAM credentials. SCRAM-SHA-256 and SCRAM-SHA-512 check a
// client's proof against them; PLAIN checks the password against the
// user's SCRAM-SHA-512 credential, else its SCRAM-SHA-256 one, so one set
// of users serves all three mechanisms.
type CredentialStore interface {
	// ScramCredential returns a user's credential for a mechanism. It
	// must not block for long (it should read local state).
	ScramCredential(user string, m scram.Mechanism) (scram.Credential, bool)
}

// check validates the listener against the server's backend.
func (l Listener) check(b Backend) error {
	for _, m := range l.SASLMechanisms {
		if !slices.Contains([]string{MechanismPlain, MechanismScramSHA256, MechanismScramSHA512}, m) {
			return &ConfigError{Field: "Listener.SASLMechanisms", Reason: fmt.Sprintf("unknown mechanism %q", m)}
		}
	}
	if len(l.SASLMechanisms) > 0 {
		if _, ok := b.(CredentialStore); !ok {
			return &ConfigError{Field: "Listener.SASLMechanisms", Reason: "the backend stores no credentials"}
		}
	}
	return nil
}

// ServeListener is Serve for a listener with a name, TLS or SASL.
func (s *Server) ServeListener(ctx context.Context, l net.Listener, lc Listener) error {
	if err := lc.check(s.backend); err != nil {
		l.Close()
		return err
	}
	return s.serve(ctx, l, lc)
}

// listenerKey carries the listener name in a connection's context.
type listenerKey struct{}

func withListener(ctx context.Context, name string) context.Context {
	if name == "" {
		return ctx
	}
	return context.WithValue(ctx, listenerKey{}, name)
}

// cluster is Backend.Cluster as seen through the connection's listener.
func (s *Server) cluster(ctx context.Context) ClusterView {
	view := s.backend.Cluster(ctx)
	name, _ := ctx.Value(listenerKey{}).(string)
	if name == "" {
		return view
	}
	brokers := make([]Broker, 0, len(view.Brokers))
	for _, b := range view.Brokers {
		i := slices.IndexFunc(b.Endpoints, func(e Endpoint) bool { return e.Listener == name })
		if i < 0 {
			continue
		}
		b.Host, b.Port = b.Endpoints[i].Host, b.Endpoints[i].Port
		brokers = append(brokers, b)
	}
	view.Brokers = brokers
	return view
}
