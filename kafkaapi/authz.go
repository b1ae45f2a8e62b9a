package kafkaapi

import (
	"context"
	"crypto/tls"

	"github.com/minikafka/minikafka-go/acl"
)

// session is what the server knows of a connection's client; the
// connection's context carries it.
type session struct {
	host string
	// certPrincipal is "User:<subject DN>" of a TLS client certificate,
	// set before any request is read; "" without one.
	certPrincipal string
	// auth is the SASL state (nil without SASL); its user counts once
	// authenticated.
	auth *connAuth
}

type sessionKey struct{}

func withSession(ctx context.Context, s *session) context.Context {
	return context.WithValue(ctx, sessionKey{}, s)
}

// principal is the connection's Kafka principal.
func (s *session) principal() string {
	switch {
	case s.auth != nil && s.auth.authenticated():
		return acl.UserPrefix + s.auth.user
	case s.certPrincipal != "":
		return s.certPrincipal
	}
	return acl.Anonymous
}

// certPrincipal is Kafka's principal for a TLS client certificate: its
// subject's distinguished name in RFC 2253 form; "" without a
// certificate.
func certPrincipal(cs tls.ConnectionState) string {
	if len(cs.PeerCertificates) == 0 {
		return ""
	}
	return acl.UserPrefix + cs.PeerCertificates[0].Subject.String()
}

// clientOf returns the principal and host of ctx's connection; a context
// without one (a request not from a connection) is anonymous.
func clientOf(ctx context.Context) (principal, host string) {
	sess, _ := ctx.Value(sessionKey{}).(*session)
	if sess == nil {
		return acl.Anonymous, ""
	}
	return sess.principal(), sess.host
}

// authorize decides whether the client of ctx's connection may do op on
// the named resource.
func (s *Server) authorize(ctx context.Context, op acl.Operation, rt acl.ResourceType, name string) bool {
	principal, host := clientOf(ctx)
	return s.backend.Authorize(acl.Request{Principal: principal, Host: host, Operation: op, Resource: rt, Name: name})
}

// authorizeAny is Security.AuthorizeAny for ctx's client.
func (s *Server) authorizeAny(ctx context.Context, op acl.Operation, rt acl.ResourceType) bool {
	principal, host := clientOf(ctx)
	return s.backend.AuthorizeAny(principal, host, op, rt)
}

// authorizedOps keeps the operations of supported (bits by ACL
// operation code) that the client may do on the resource: what Kafka
// reports as authorized operations.
func (s *Server) authorizedOps(ctx context.Context, supported int32, rt acl.ResourceType, name string) int32 {
	var out int32
	for op := acl.OpRead; op <= acl.OpIdempotentWrite; op++ {
		if supported&(1<<op) != 0 && s.authorize(ctx, op, rt, name) {
			out |= 1 << op
		}
	}
	return out
}

// authorizeCluster decides op on the CLUSTER resource.
func (s *Server) authorizeCluster(ctx context.Context, op acl.Operation) bool {
	return s.authorize(ctx, op, acl.ResourceCluster, acl.ClusterName)
}

func (s *Server) authorizeTopic(ctx context.Context, op acl.Operation, topic string) bool {
	return s.authorize(ctx, op, acl.ResourceTopic, topic)
}

func (s *Server) authorizeGroup(ctx context.Context, op acl.Operation, group string) bool {
	return s.authorize(ctx, op, acl.ResourceGroup, group)
}

func (s *Server) authorizeTxnID(ctx context.Context, op acl.Operation, id string) bool {
	return s.authorize(ctx, op, acl.ResourceTransactionalID, id)
}
