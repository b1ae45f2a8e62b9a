package kafkaapi

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"slices"
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
	// Config.AuthenticationTimeout, against the credentials of
	// Security.ScramCredential.
	SASLMechanisms []string
}

// check validates the listener.
func (l Listener) check() error {
	for _, m := range l.SASLMechanisms {
		if !slices.Contains([]string{MechanismPlain, MechanismScramSHA256, MechanismScramSHA512}, m) {
			return &ConfigError{Field: "Listener.SASLMechanisms", Reason: fmt.Sprintf("unknown mechanism %q", m)}
		}
	}
	return nil
}

// ServeListener is Serve for a listener with a name, TLS or SASL.
func (s *Server) ServeListener(ctx context.Context, l net.Listener, lc Listener) error {
	if err := lc.check(); err != nil {
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
	return onConnListener(ctx, s.backend.Cluster())
}

// onConnListener is view with the brokers' endpoints on the connection's
// listener.
func onConnListener(ctx context.Context, view ClusterView) ClusterView {
	name, _ := ctx.Value(listenerKey{}).(string)
	if name == "" {
		return view
	}
	brokers := make([]Broker, 0, len(view.Brokers))
	for _, b := range view.Brokers {
		if b, ok := onListener(b, name); ok {
			brokers = append(brokers, b)
		}
	}
	view.Brokers = brokers
	down := make([]DownBroker, len(view.Down))
	for i, d := range view.Down {
		down[i] = d
		down[i].Registered, _ = onListener(d.Registered, name)
	}
	view.Down = down
	return view
}

// onListener is b with the endpoint of the named listener as its Host and
// Port; ok is false (and b zero) if b has no such listener.
func onListener(b Broker, name string) (Broker, bool) {
	i := slices.IndexFunc(b.Endpoints, func(e Endpoint) bool { return e.Listener == name })
	if i < 0 {
		return Broker{}, false
	}
	b.Host, b.Port = b.Endpoints[i].Host, b.Endpoints[i].Port
	return b, true
}
