package membership

import (
	"fmt"
	"log"
	"log/slog"
	"net"
	"net/netip"
	"strconv"
	"time"

	"github.com/hashicorp/memberlist"
)

// DefaultPort is the gossip port used when BindAddr is empty or a seed has
// no port.
const DefaultPort = 7946

// Default timings. Failure detection takes about ProbeInterval +
// ProbeTimeout + SuspicionMult×ProbeInterval×max(1, log10(members)): about
// 4.5 s with these values below ten members, and at most twice the
// suspicion part when no other member confirms the suspicion.
const (
	DefaultProbeInterval       = 1 * time.Second
	DefaultProbeTimeout        = 500 * time.Millisecond
	DefaultGossipInterval      = 200 * time.Millisecond
	DefaultSuspicionMult       = 3
	DefaultTCPTimeout          = 10 * time.Second
	DefaultDeadNodeReclaimTime = 10 * time.Second
	DefaultBroadcastTimeout    = 5 * time.Second
	DefaultJoinBackoff         = 250 * time.Millisecond
	DefaultJoinMaxBackoff      = 5 * time.Second
	DefaultReconnectInterval   = 2 * time.Second

	// suspicionMaxTimeoutMult caps an unconfirmed suspicion at this many
	// times the minimum (memberlist's LAN default is 6; we want seconds).
	suspicionMaxTimeoutMult = 2
)

// Config configures New. Zero durations and counts take the documented
// defaults; negative ones are an error.
type Config struct {
	// Meta is what this node advertises; it must pass NodeMeta.Validate.
	Meta NodeMeta

	// BindAddr is the gossip "ip:port" to listen on, TCP and UDP. An empty
	// ip (":7946") or "0.0.0.0" listens on every interface; port 0 picks a
	// free port (see LocalAddr). Empty means "0.0.0.0:7946". The host must be
	// an IP literal.
	BindAddr string

	// AdvertiseAddr is the gossip "ip" or "ip:port" other nodes should use,
	// when it differs from BindAddr (NAT, containers). Without a port, or
	// with port 0, the bound port is advertised; so it is whenever BindAddr
	// asks for port 0 (memberlist's rule). Empty: the bound IP, or a private
	// interface IP when bound to all interfaces.
	AdvertiseAddr string

	// SourceIP is the local IP that this node's gossip TCP streams leave
	// from; empty lets the system choose. UDP packets always leave from
	// the bound socket. A test harness that tells nodes apart by the
	// address they send from sets it.
	SourceIP string

	// Logger receives this package's logs and memberlist's (as
	// logger=memberlist). nil discards them.
	Logger *slog.Logger

	// OnEvent, if set, receives every membership change, one at a time from
	// one goroutine owned by the Membership, in the order they happened,
	// never while memberlist holds a lock. It may run before New returns
	// (the first event is this node's own EventJoin). It must not call
	// Shutdown.
	OnEvent func(Event)

	// ProbeInterval is how often each node probes a random other node
	// (default DefaultProbeInterval).
	ProbeInterval time.Duration
	// ProbeTimeout is how long a probe waits for an ack before indirect
	// probes (default DefaultProbeTimeout). Must be below ProbeInterval.
	ProbeTimeout time.Duration
	// GossipInterval is how often queued broadcasts are gossiped (default
	// DefaultGossipInterval).
	GossipInterval time.Duration
	// SuspicionMult scales how long a suspected node has to refute before
	// it is declared failed (default DefaultSuspicionMult).
	SuspicionMult int
	// TCPTimeout bounds each TCP exchange, notably one join attempt to one
	// seed (default DefaultTCPTimeout).
	TCPTimeout time.Duration
	// DeadNodeReclaimTime is how long after a node is declared failed its id
	// may come back from a different address (default
	// DefaultDeadNodeReclaimTime). The same address may rejoin at once.
	DeadNodeReclaimTime time.Duration
	// BroadcastTimeout bounds Leave and UpdateMeta when their context has no
	// deadline (default DefaultBroadcastTimeout).
	BroadcastTimeout time.Duration
	// JoinBackoff is the first pause between join rounds; it doubles up to
	// JoinMaxBackoff (defaults DefaultJoinBackoff, DefaultJoinMaxBackoff).
	JoinBackoff    time.Duration
	JoinMaxBackoff time.Duration
	// ReconnectInterval is how often this node joins, again, the members
	// it saw fail (default DefaultReconnectInterval): after a network
	// partition heals, two sides that declared each other failed meet
	// again only so (memberlist itself only talks to live members).
	ReconnectInterval time.Duration

	// Keys, when set, encrypt and authenticate all gossip (memberlist's
	// keyring, AES-GCM): the first key encrypts, every key decrypts, so a
	// key can be rotated in by listing it second on every node first.
	// Each is 16, 24 or 32 bytes. A message that no key opens, such as a
	// stranger's join, is dropped. Empty: gossip in the clear.
	Keys [][]byte
	// Label, when set, is sent with every gossip message and required of
	// every message received (memberlist's Label), so that clusters that
	// share a network, or a key, keep apart. At most 255 bytes.
	Label string
}

// normalize validates c and fills in defaults. Errors wrap ErrInvalidConfig,
// ErrInvalidMeta or ErrMetaTooLarge.
func (c Config) normalize() (Config, error) {
	if err := c.Meta.Validate(); err != nil {
		return c, fmt.Errorf("membership: config meta: %w", err)
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	durations := []struct {
		name string
		v    *time.Duration
		def  time.Duration
	}{
		{"ProbeInterval", &c.ProbeInterval, DefaultProbeInterval},
		{"ProbeTimeout", &c.ProbeTimeout, DefaultProbeTimeout},
		{"GossipInterval", &c.GossipInterval, DefaultGossipInterval},
		{"TCPTimeout", &c.TCPTimeout, DefaultTCPTimeout},
		{"DeadNodeReclaimTime", &c.DeadNodeReclaimTime, DefaultDeadNodeReclaimTime},
		{"BroadcastTimeout", &c.BroadcastTimeout, DefaultBroadcastTimeout},
		{"JoinBackoff", &c.JoinBackoff, DefaultJoinBackoff},
		{"JoinMaxBackoff", &c.JoinMaxBackoff, DefaultJoinMaxBackoff},
		{"ReconnectInterval", &c.ReconnectInterval, DefaultReconnectInterval},
	}
	for _, d := range durations {
		switch {
		case *d.v < 0:
			return c, fmt.Errorf("%w: %s is negative (%v)", ErrInvalidConfig, d.name, *d.v)
		case *d.v == 0:
			*d.v = d.def
		}
	}
	switch {
	case c.SuspicionMult < 0:
		return c, fmt.Errorf("%w: SuspicionMult is negative (%d)", ErrInvalidConfig, c.SuspicionMult)
	case c.SuspicionMult == 0:
		c.SuspicionMult = DefaultSuspicionMult
	}
	if c.ProbeTimeout >= c.ProbeInterval {
		return c, fmt.Errorf("%w: ProbeTimeout %v must be below ProbeInterval %v", ErrInvalidConfig, c.ProbeTimeout, c.ProbeInterval)
	}
	if c.JoinMaxBackoff < c.JoinBackoff {
		c.JoinMaxBackoff = c.JoinBackoff
	}
	for i, k := range c.Keys {
		if len(k) != 16 && len(k) != 24 && len(k) != 32 {
			return c, fmt.Errorf("%w: Keys[%d] is %d bytes, want 16, 24 or 32", ErrInvalidConfig, i, len(k))
		}
	}
	if len(c.Label) > memberlist.LabelMaxSize {
		return c, fmt.Errorf("%w: Label is %d bytes, at most %d", ErrInvalidConfig, len(c.Label), memberlist.LabelMaxSize)
	}
	if c.BindAddr == "" {
		c.BindAddr = net.JoinHostPort("0.0.0.0", strconv.Itoa(DefaultPort))
	}
	if _, _, err := parseIPPort(c.BindAddr, false); err != nil {
		return c, fmt.Errorf("%w: BindAddr: %v", ErrInvalidConfig, err)
	}
	if c.SourceIP != "" {
		if _, err := netip.ParseAddr(c.SourceIP); err != nil {
			return c, fmt.Errorf("%w: SourceIP %q is not an IP address", ErrInvalidConfig, c.SourceIP)
		}
	}
	if c.AdvertiseAddr != "" {
		if _, _, err := parseIPPort(c.AdvertiseAddr, true); err != nil {
			return c, fmt.Errorf("%w: AdvertiseAddr: %v", ErrInvalidConfig, err)
		}
	}
	return c, nil
}

// parseIPPort splits "ip:port". An empty ip means all interfaces (0.0.0.0);
// with portOptional a bare "ip" gives port 0.
func parseIPPort(s string, portOptional bool) (netip.Addr, uint16, error) {
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		if !portOptional {
			return netip.Addr{}, 0, err
		}
		host, port = s, "0"
	}
	ip := netip.IPv4Unspecified()
	if host != "" {
		if ip, err = netip.ParseAddr(host); err != nil {
			return netip.Addr{}, 0, fmt.Errorf("host of %q must be an IP address", s)
		}
	}
	p, err := strconv.ParseUint(port, 10, 16)
	if err != nil {
		return netip.Addr{}, 0, fmt.Errorf("bad port in %q", s)
	}
	return ip.Unmap(), uint16(p), nil
}

// memberlistConfig builds memberlist's config from a normalized Config on
// the base of DefaultLANConfig.
func (c Config) memberlistConfig(d *delegate, logger *log.Logger) *memberlist.Config {
	bindIP, bindPort, _ := parseIPPort(c.BindAddr, false) // checked by normalize
	mc := memberlist.DefaultLANConfig()
	mc.Name = NodeName(c.Meta.ID)
	mc.BindAddr = bindIP.String()
	mc.BindPort = int(bindPort)
	mc.AdvertisePort = int(bindPort)
	if c.AdvertiseAddr != "" {
		ip, port, _ := parseIPPort(c.AdvertiseAddr, true) // checked by normalize
		mc.AdvertiseAddr = ip.String()
		if port != 0 {
			mc.AdvertisePort = int(port)
		}
	}
	mc.ProbeInterval = c.ProbeInterval
	mc.ProbeTimeout = c.ProbeTimeout
	mc.GossipInterval = c.GossipInterval
	mc.SuspicionMult = c.SuspicionMult
	mc.SuspicionMaxTimeoutMult = suspicionMaxTimeoutMult
	mc.TCPTimeout = c.TCPTimeout
	mc.DeadNodeReclaimTime = c.DeadNodeReclaimTime
	mc.Logger = logger
	mc.Delegate = d
	mc.Events = d
	mc.Alive = d
	mc.Merge = d
	mc.Conflict = d
	mc.Label = c.Label
	if len(c.Keys) > 0 {
		// Both checked by normalize: NewKeyring fails only on a bad length.
		mc.Keyring, _ = memberlist.NewKeyring(c.Keys[1:], c.Keys[0])
		mc.GossipVerifyIncoming, mc.GossipVerifyOutgoing = true, true
	}
	return mc
}
