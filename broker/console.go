package broker

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"slices"

	"github.com/minikafka/minikafka-go/console"
	"github.com/minikafka/minikafka-go/metrics"
)

// webConsole is the node's web console (Node.console).
type webConsole = console.Console

// errNoConsoleListener: every listener wants a client certificate, which
// the console does not have.
var errNoConsoleListener = errors.New("no Kafka listener the console can use (all require client certificates)")

// startConsole makes the node's web console and runs its sampler until
// the node stops. A console that cannot be made is logged and left out:
// the node serves Kafka without it.
func (n *Node) startConsole() {
	k, err := n.consoleKafka()
	if err == nil {
		n.console, err = console.New(console.Config{Source: n.admin, GroupOffsets: n.localGroupOffsets, Kafka: k,
			AdminKey: n.cfg.ConsoleAdminKey, Logger: n.logger.With("part", "console")})
	}
	if err != nil {
		n.logger.Warn("web console disabled", "err", err)
		return
	}
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		n.console.Run(n.ctx)
	}()
}

// withConsole serves the console under /console/ and h elsewhere.
func (n *Node) withConsole(h http.Handler) http.Handler {
	if n.console == nil {
		return h
	}
	mux := http.NewServeMux()
	mux.Handle("/console", n.console.Handler())
	mux.Handle("/console/", n.console.Handler())
	mux.Handle("/", h)
	return mux
}

// consoleKafka picks the listener the console reads the cluster through:
// a SASL one when there is one (every visitor then logs in, and the
// broker's ACLs decide what each sees), else a plaintext or TLS one.
// Listeners that require client certificates are not used.
func (n *Node) consoleKafka() (console.Kafka, error) {
	ls := n.Listeners()
	if len(ls) == 0 {
		return console.Kafka{}, errNoConsoleListener
	}
	rank := func(l ListenerConfig) int {
		switch {
		case l.ClientAuth == ClientAuthRequired:
			return 0
		case l.SecurityProtocol == ProtocolSASLPlaintext:
			return 4
		case l.SecurityProtocol == ProtocolSASLSSL:
			return 3
		case l.SecurityProtocol == ProtocolPlaintext:
			return 2
		}
		return 1
	}
	best := slices.MaxFunc(ls, func(x, y ListenerConfig) int { return rank(x) - rank(y) })
	if rank(best) == 0 {
		return console.Kafka{}, errNoConsoleListener
	}
	k := console.Kafka{Addr: loopback(best.Addr), SASL: best.isSASL(), Mechanisms: best.SASLMechanisms}
	if best.isTLS() {
		// The advertised address is the one the certificate names.
		k.Addr = best.AdvertisedAddr
		if _, port, err := net.SplitHostPort(best.Addr); err == nil {
			host, _, _ := net.SplitHostPort(best.AdvertisedAddr)
			k.Addr = net.JoinHostPort(host, port)
		}
		roots, err := consoleRoots(best)
		if err != nil {
			return console.Kafka{}, err
		}
		k.TLS = &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}
	}
	return k, nil
}

// consoleRoots are the certificates the console trusts on its own TLS
// listener: the listener's CA bundle, else its own certificate chain.
func consoleRoots(l ListenerConfig) (*x509.CertPool, error) {
	file := l.TLSCAFile
	if file == "" {
		file = l.TLSCertFile
	}
	pem, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("console: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("console: no certificate in %s", file)
	}
	return pool, nil
}

// loopback is addr with an unspecified host replaced by 127.0.0.1.
func loopback(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if ip := net.ParseIP(host); err == nil && (host == "" || (ip != nil && ip.IsUnspecified())) {
		return net.JoinHostPort("127.0.0.1", port)
	}
	return addr
}

// localGroupOffsets lists the committed offsets of every group whose
// __consumer_offsets partition this node holds a replica of, leader or
// follower, with the end offsets of the partitions it holds (-1
// elsewhere): the console's lag history then covers every group this
// node can see, not only those it coordinates.
func (n *Node) localGroupOffsets() []metrics.GroupOffset {
	reps := n.reps.All()
	ends := map[tp]int64{}
	for _, lr := range reps {
		ends[tp{lr.Info().Topic, lr.Info().Partition}] = lr.Partition().HighWatermark()
	}
	return groupOffsets(reps, ends, true)
}
