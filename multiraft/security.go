package multiraft

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/hashicorp/raft"
	"github.com/hashicorp/yamux"

	"github.com/minikafka/minikafka-go/internal/nodecert"
)

// ErrWrongSender is returned for an RPC whose header names another node
// than the certificate of the session it came over; the stream closes.
var ErrWrongSender = errors.New("multiraft: the RPC's sender is not the node of the session's certificate")

// ErrWrongPeer is a dial answered by a node certificate whose node is
// known at another address: the peer there is not who the address book
// says it is.
var ErrWrongPeer = errors.New("multiraft: the dialled address answered with another node's certificate")

// TLS configures mutual TLS on the Raft port (Config.TLS). Every
// connection, dialed or accepted, runs a TLS 1.3 handshake before any byte
// of this package's protocol: the peer must present a certificate that
// chains to CAs and names a node (internal/nodecert). An accepted session
// then serves only the RPCs whose sender is that node.
type TLS struct {
	// Certificate is this node's, with its key; it must name
	// Config.NodeID.
	Certificate tls.Certificate
	// CAs verify peers' certificates.
	CAs *x509.CertPool
}

// tlsConfigs checks the certificate against node and returns the
// acceptor's and the dialer's TLS configurations.
func (t *TLS) tlsConfigs(node int32) (server, client *tls.Config, err error) {
	if len(t.Certificate.Certificate) == 0 || t.Certificate.PrivateKey == nil {
		return nil, nil, invalid("TLS.Certificate is empty")
	}
	if t.CAs == nil {
		return nil, nil, invalid("TLS.CAs is nil")
	}
	leaf := t.Certificate.Leaf
	if leaf == nil {
		if leaf, err = x509.ParseCertificate(t.Certificate.Certificate[0]); err != nil {
			return nil, nil, invalid("TLS.Certificate: %v", err)
		}
	}
	id, err := nodecert.NodeID(leaf)
	if err != nil {
		return nil, nil, invalid("TLS.Certificate: %v", err)
	}
	if id != node {
		return nil, nil, invalid("TLS.Certificate names node %d, not NodeID %d", id, node)
	}
	server = &tls.Config{
		MinVersion:   tls.VersionTLS13,
		Certificates: []tls.Certificate{t.Certificate},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    t.CAs,
		VerifyConnection: func(cs tls.ConnectionState) error {
			_, err := nodecert.NodeID(cs.PeerCertificates[0])
			return err
		},
	}
	cas := t.CAs
	client = &tls.Config{
		MinVersion:   tls.VersionTLS13,
		Certificates: []tls.Certificate{t.Certificate},
		// Peers are dialed by address and named by their URI SAN, not by
		// a host name: VerifyConnection checks the chain without one.
		InsecureSkipVerify: true,
		VerifyConnection: func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return nodecert.ErrNotNodeCert
			}
			opts := x509.VerifyOptions{Roots: cas, Intermediates: x509.NewCertPool(),
				KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
			for _, c := range cs.PeerCertificates[1:] {
				opts.Intermediates.AddCert(c)
			}
			if _, err := cs.PeerCertificates[0].Verify(opts); err != nil {
				return err
			}
			_, err := nodecert.NodeID(cs.PeerCertificates[0])
			return err
		},
	}
	return server, client, nil
}

// acceptTLS runs the acceptor's TLS handshake on c (under the deadline the
// caller set) and returns the connection and the node its certificate
// names; without TLS it returns c and 0.
func (h *Host) acceptTLS(c net.Conn) (net.Conn, int32, error) {
	if h.serverTLS == nil {
		return c, 0, nil
	}
	tc := tls.Server(c, h.serverTLS)
	if err := tc.HandshakeContext(h.ctx); err != nil {
		return nil, 0, err
	}
	node, err := nodecert.NodeID(tc.ConnectionState().PeerCertificates[0])
	return tc, node, err
}

// checkSender reports an RPC whose header does not come from node, the
// node of the session's certificate (0: no TLS, nothing to check). Raft
// reads the sender's id and address from the header (it falls back to
// the deprecated Leader and Candidate fields only when they are empty), so
// both must be node's: the id exactly, the address as Config.Resolve
// knows it, when it does.
func (h *Host) checkSender(node int32, hdr raft.RPCHeader) error {
	if node == 0 {
		return nil
	}
	if string(hdr.ID) != string(ServerID(node)) || len(hdr.Addr) == 0 {
		return fmt.Errorf("%w: id %q from node %d", ErrWrongSender, hdr.ID, node)
	}
	if h.resolve != nil {
		if addr, ok := h.resolve(node); ok && addr != string(hdr.Addr) {
			return fmt.Errorf("%w: address %q from node %d at %s", ErrWrongSender, hdr.Addr, node, addr)
		}
	}
	return nil
}

// checkDialled checks the node certificate that answered a dial of addr:
// when Config.Resolve knows that node, it must know it at addr. Without
// this, any node's certificate would do for every address, and whoever
// held one could stand in for the other nodes.
func (h *Host) checkDialled(tc *tls.Conn, addr string) error {
	node, err := nodecert.NodeID(tc.ConnectionState().PeerCertificates[0])
	if err != nil {
		return err
	}
	if h.resolve != nil {
		if known, ok := h.resolve(node); ok && known != addr {
			return fmt.Errorf("%w: node %d answered at %s but is at %s", ErrWrongPeer, node, addr, known)
		}
	}
	return nil
}

// PeerNode returns the node whose certificate authenticated the session a
// service stream came over (Listen's Accept); false without TLS.
func PeerNode(c net.Conn) (int32, bool) {
	sc, ok := c.(*serviceConn)
	if !ok || sc.node == 0 {
		return 0, false
	}
	return sc.node, true
}

// serviceConn is a service stream and, accepted, its session's node.
type serviceConn struct {
	*yamux.Stream
	node int32
}

// Close closes the stream and ends a Read or Write blocked in it, as
// net.Conn promises: a yamux stream's own Close ends only local writes,
// and a read would wait for the peer's FIN or its deadline.
func (c *serviceConn) Close() error {
	err := c.Stream.Close() // sends the FIN first: a past deadline would not stop it
	_ = c.Stream.SetDeadline(time.Unix(1, 0))
	return err
}
