package membership

import (
	"fmt"
	"log"
	"net"
	"time"

	"github.com/hashicorp/memberlist"
)

// sourceTransport is memberlist's NetTransport whose TCP streams leave
// from a given local IP. Its UDP packets leave from the bound socket.
type sourceTransport struct {
	*memberlist.NetTransport
	src *net.TCPAddr
}

var _ memberlist.NodeAwareTransport = (*sourceTransport)(nil)

// DialTimeout is DialAddressTimeout without a node name.
func (t *sourceTransport) DialTimeout(addr string, timeout time.Duration) (net.Conn, error) {
	return t.DialAddressTimeout(memberlist.Address{Addr: addr}, timeout)
}

// DialAddressTimeout dials a.Addr from the source IP.
func (t *sourceTransport) DialAddressTimeout(a memberlist.Address, timeout time.Duration) (net.Conn, error) {
	d := net.Dialer{Timeout: timeout, LocalAddr: t.src}
	return d.Dial("tcp", a.Addr)
}

// bindRetries is how often a port-0 bind is tried: the TCP port the
// kernel picks may be taken for UDP (memberlist's own rule; its error does
// not wrap the cause, so any error is retried).
const bindRetries = 10

// useSourceTransport sets mc.Transport to a sourceTransport bound where mc
// says, filling in the bound port when mc asks for port 0.
func useSourceTransport(mc *memberlist.Config, src string, logger *log.Logger) error {
	nc := &memberlist.NetTransportConfig{BindAddrs: []string{mc.BindAddr}, BindPort: mc.BindPort, Logger: logger}
	tries := 1
	if mc.BindPort == 0 {
		tries = bindRetries
	}
	var nt *memberlist.NetTransport
	var err error
	for range tries {
		if nt, err = memberlist.NewNetTransport(nc); err == nil {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("membership: bind %s:%d: %w", mc.BindAddr, mc.BindPort, err)
	}
	if mc.BindPort == 0 {
		port := nt.GetAutoBindPort()
		if mc.AdvertisePort == 0 {
			mc.AdvertisePort = port
		}
		mc.BindPort = port
	}
	mc.Transport = &sourceTransport{NetTransport: nt, src: &net.TCPAddr{IP: net.ParseIP(src)}}
	return nil
}
