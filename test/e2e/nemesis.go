package e2e

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"time"
)

// Channel is one of the ways nodes talk to each other that the Net
// carries.
type Channel uint8

const (
	// Raft is the Raft port: every Raft group and internal RPC (TCP).
	Raft Channel = iota
	// Gossip is memberlist: UDP packets and TCP streams.
	Gossip
	numChannels
)

func (c Channel) String() string {
	switch c {
	case Raft:
		return "raft"
	case Gossip:
		return "gossip"
	}
	return fmt.Sprintf("channel(%d)", uint8(c))
}

// BothChannels is Raft and Gossip.
var BothChannels = []Channel{Raft, Gossip}

// Link is one direction between two nodes: what From sends to To.
type Link struct {
	From, To int
}

// linkState is what the Net does to one direction of one channel.
type linkState struct {
	cut   bool          // nothing passes: TCP bytes wait, UDP packets are dropped
	delay time.Duration // everything passes this much later (at least)
}

// linkKey names one direction of one channel.
type linkKey struct {
	Link
	ch Channel
}

// NodeIP is node id's loopback address in a partitionable cluster:
// 127.100.0.<id>. Linux routes all of 127/8 to the loopback interface, so
// binding it needs no privilege, and a connection or packet from it names
// its sender.
func NodeIP(id int) netip.Addr { return netip.AddrFrom4([4]byte{127, 100, 0, byte(id)}) }

// nodeOfIP is the node whose NodeIP is ip, or 0.
func nodeOfIP(ip netip.Addr, nodes int) int {
	b := ip.Unmap().As4()
	if b[0] == 127 && b[1] == 100 && b[2] == 0 && int(b[3]) >= 1 && int(b[3]) <= nodes {
		return int(b[3])
	}
	return 0
}

// Net is the network between the nodes of a partitionable cluster: for
// each node and channel, a proxy on the node's own IP that other nodes
// are told to use (its advertised address) and that forwards to the
// node's real listener. A proxy tells the sender by the source IP of a
// connection or packet, so it can cut or delay each direction of each
// pair of nodes, on each channel, and heal it. Cut TCP traffic waits in
// the proxy (as TCP would retransmit it), so a healed connection goes on
// unless an end gave up on it meanwhile; cut UDP packets are lost.
// Traffic from an address that is no node's is refused.
type Net struct {
	nodes int
	logf  func(format string, args ...any)

	wg sync.WaitGroup // every goroutine the Net starts

	mu      sync.Mutex // guards every field below
	links   map[linkKey]linkState
	changed chan struct{} // closed and replaced whenever links change
	closed  bool
	conns   map[net.Conn]struct{} // every open TCP connection, both sides
	closers []io.Closer           // listeners and UDP sockets
	refused int                   // connections and packets from unknown addresses
}

// proxyAddrs are one node's real and proxy addresses.
type proxyAddrs struct {
	raft, gossip           string // the node's listeners (bind addresses)
	raftProxy, gossipProxy string // what other nodes are told (advertised)
}

// NewNet makes a Net for nodes nodes; add each node's proxies with
// listen.
func NewNet(nodes int, logf func(format string, args ...any)) *Net {
	return &Net{nodes: nodes, logf: logf, links: map[linkKey]linkState{}, changed: make(chan struct{}),
		conns: map[net.Conn]struct{}{}}
}

// listen starts node id's proxies on NodeIP(id) at free ports, forwarding
// to a's real addresses, and fills in a's proxy addresses.
func (n *Net) listen(id int, a *proxyAddrs) error {
	ip := NodeIP(id).String()
	rp, err := freePortOn(ip)
	if err != nil {
		return err
	}
	gp, err := freePortOn(ip)
	if err != nil {
		return err
	}
	a.raftProxy = net.JoinHostPort(ip, strconv.Itoa(rp))
	a.gossipProxy = net.JoinHostPort(ip, strconv.Itoa(gp))
	for _, p := range []struct {
		ch       Channel
		from, to string
	}{{Raft, a.raftProxy, a.raft}, {Gossip, a.gossipProxy, a.gossip}} {
		ln, err := net.Listen("tcp", p.from)
		if err != nil {
			return err
		}
		if !n.track(ln) {
			return net.ErrClosed
		}
		n.wg.Add(1)
		go n.acceptLoop(ln, id, p.ch, p.to)
	}
	u, err := net.ListenPacket("udp", a.gossipProxy)
	if err != nil {
		return err
	}
	if !n.track(u) {
		return net.ErrClosed
	}
	n.wg.Add(1)
	go n.udpLoop(u.(*net.UDPConn), id, a.gossip)
	return nil
}

// track registers a listener or socket for Close; false if the Net is
// closed (the closer was closed).
func (n *Net) track(c io.Closer) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		c.Close()
		return false
	}
	n.closers = append(n.closers, c)
	return true
}

// Close stops every proxy, closes every connection and waits for the
// Net's goroutines.
func (n *Net) Close() {
	n.mu.Lock()
	if !n.closed {
		n.closed = true
		close(n.changed)
		for _, c := range n.closers {
			c.Close()
		}
		for c := range n.conns {
			c.Close()
		}
	}
	n.mu.Unlock()
	n.wg.Wait()
}

// Refused is how many connections and packets came from an address that
// is no node's.
func (n *Net) Refused() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.refused
}

// set changes the state of from->to on chans with f, and wakes every
// waiting pump.
func (n *Net) set(from, to int, chans []Channel, f func(*linkState)) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return
	}
	for _, ch := range chans {
		k := linkKey{Link{from, to}, ch}
		s := n.links[k]
		f(&s)
		if s == (linkState{}) {
			delete(n.links, k)
		} else {
			n.links[k] = s
		}
	}
	close(n.changed)
	n.changed = make(chan struct{})
}

// Cut stops everything from sends to to on chans (one direction).
func (n *Net) Cut(from, to int, chans ...Channel) {
	n.set(from, to, chans, func(s *linkState) { s.cut = true })
}

// Delay makes everything from sends to to on chans arrive d later.
func (n *Net) Delay(from, to int, d time.Duration, chans ...Channel) {
	n.set(from, to, chans, func(s *linkState) { s.delay = d })
}

// Partition cuts, on chans, both directions between every node of each
// group and every node of the others. Nodes in no group keep their links.
func (n *Net) Partition(chans []Channel, groups ...[]int) {
	for i, g := range groups {
		for j, h := range groups {
			if i == j {
				continue
			}
			for _, a := range g {
				for _, b := range h {
					n.Cut(a, b, chans...)
				}
			}
		}
	}
	n.logf("e2e: net: partition %v on %v", groups, chans)
}

// Isolate cuts, on chans, both directions between node id and every
// other node.
func (n *Net) Isolate(id int, chans ...Channel) {
	var others []int
	for o := 1; o <= n.nodes; o++ {
		if o != id {
			others = append(others, o)
		}
	}
	n.Partition(chans, []int{id}, others)
}

// Heal restores every link.
func (n *Net) Heal() {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return
	}
	n.links = map[linkKey]linkState{}
	close(n.changed)
	n.changed = make(chan struct{})
	n.logf("e2e: net: healed")
}

// state returns the state of k and the channel closed at its next change;
// ok is false once the Net is closed.
func (n *Net) state(k linkKey) (s linkState, changed <-chan struct{}, ok bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.links[k], n.changed, !n.closed
}

// pass waits while k is cut; false if the Net closed meanwhile. It
// returns k's delay.
func (n *Net) pass(k linkKey) (time.Duration, bool) {
	for {
		s, changed, ok := n.state(k)
		if !ok {
			return 0, false
		}
		if !s.cut {
			return s.delay, true
		}
		<-changed
	}
}

// sender is the node that sent from addr, or 0.
func (n *Net) sender(addr net.Addr) int {
	var ap netip.AddrPort
	switch a := addr.(type) {
	case *net.TCPAddr:
		ap = a.AddrPort()
	case *net.UDPAddr:
		ap = a.AddrPort()
	}
	return nodeOfIP(ap.Addr(), n.nodes)
}

// refuse counts and logs traffic from an unknown address.
func (n *Net) refuse(what string, addr net.Addr) {
	n.mu.Lock()
	n.refused++
	first := n.refused == 1
	n.mu.Unlock()
	if first {
		n.logf("e2e: net: refused %s from %v, which is no node's address", what, addr)
	}
}

// addConn registers c for Close; false (c closed) if the Net is closed.
func (n *Net) addConn(c net.Conn) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		c.Close()
		return false
	}
	n.conns[c] = struct{}{}
	return true
}

func (n *Net) dropConn(c net.Conn) {
	n.mu.Lock()
	delete(n.conns, c)
	n.mu.Unlock()
	c.Close()
}

// acceptLoop accepts connections to node to's proxy of ch and forwards
// each to target, from the sender's IP.
func (n *Net) acceptLoop(ln net.Listener, to int, ch Channel, target string) {
	defer n.wg.Done()
	for {
		c, err := ln.Accept()
		if err != nil {
			return // closed
		}
		from := n.sender(c.RemoteAddr())
		if from == 0 {
			n.refuse("a connection", c.RemoteAddr())
			c.Close()
			continue
		}
		if !n.addConn(c) {
			return
		}
		n.wg.Add(1)
		go n.forwardConn(c, from, to, ch, target)
	}
}

// forwardConn connects to target from node from's IP and pumps bytes
// both ways, each direction under its link.
func (n *Net) forwardConn(c net.Conn, from, to int, ch Channel, target string) {
	defer n.wg.Done()
	d := net.Dialer{Timeout: 5 * time.Second, LocalAddr: &net.TCPAddr{IP: NodeIP(from).AsSlice()}}
	up, err := d.Dial("tcp", target)
	if err != nil || !n.addConn(up) {
		n.dropConn(c) // the node is down: the sender sees the connection end
		return
	}
	n.wg.Add(2)
	go n.pump(up, c, linkKey{Link{from, to}, ch})
	go n.pump(c, up, linkKey{Link{to, from}, ch})
}

// pump copies src to dst, each chunk once k lets it pass; at the end of
// src it closes both (also once k lets the end pass).
func (n *Net) pump(dst, src net.Conn, k linkKey) {
	defer n.wg.Done()
	buf := make([]byte, 32<<10)
	for {
		nr, err := src.Read(buf)
		if nr > 0 {
			read := time.Now()
			delay, ok := n.pass(k)
			if !ok {
				return
			}
			time.Sleep(time.Until(read.Add(delay)))
			if _, werr := dst.Write(buf[:nr]); werr != nil {
				err = werr
			}
		}
		if err != nil {
			if _, ok := n.pass(k); ok {
				n.dropConn(dst)
				n.dropConn(src)
			}
			return
		}
	}
}

// udpLoop forwards the packets that node to's gossip proxy receives to
// target, each from a socket on its sender's IP (so the node sees who
// sent it); what the node answers to such a socket goes back to the
// sender's address.
func (n *Net) udpLoop(u *net.UDPConn, to int, target string) {
	defer n.wg.Done()
	dst, err := net.ResolveUDPAddr("udp", target)
	if err != nil {
		n.logf("e2e: net: gossip target %s: %v", target, err)
		return
	}
	type relay struct {
		sock *net.UDPConn
		mu   sync.Mutex   // guards back
		back *net.UDPAddr // the sender's address, for answers
	}
	relays := map[int]*relay{} // by sender; only this goroutine uses it
	buf := make([]byte, 64<<10)
	for {
		nr, src, err := u.ReadFromUDP(buf)
		if err != nil {
			return // closed
		}
		from := n.sender(src)
		if from == 0 {
			n.refuse("a packet", src)
			continue
		}
		r := relays[from]
		if r == nil {
			s, err := net.ListenUDP("udp", &net.UDPAddr{IP: NodeIP(from).AsSlice()})
			if err != nil || !n.track(s) {
				continue
			}
			r = &relay{sock: s}
			relays[from] = r
			n.wg.Add(1)
			go func() { // answers from node to back to the sender
				defer n.wg.Done()
				b := make([]byte, 64<<10)
				for {
					m, _, err := s.ReadFromUDP(b)
					if err != nil {
						return
					}
					r.mu.Lock()
					back := r.back
					r.mu.Unlock()
					n.sendUDP(s, back, bytes.Clone(b[:m]), linkKey{Link{to, from}, Gossip})
				}
			}()
		}
		r.mu.Lock()
		r.back = src
		r.mu.Unlock()
		n.sendUDP(r.sock, dst, bytes.Clone(buf[:nr]), linkKey{Link{from, to}, Gossip})
	}
}

// sendUDP sends p from sock to dst unless k is cut, after k's delay.
func (n *Net) sendUDP(sock *net.UDPConn, dst *net.UDPAddr, p []byte, k linkKey) {
	s, _, ok := n.state(k)
	if !ok || s.cut {
		return
	}
	if s.delay <= 0 {
		_, _ = sock.WriteToUDP(p, dst)
		return
	}
	n.wg.Add(1)
	time.AfterFunc(s.delay, func() {
		defer n.wg.Done()
		_, _ = sock.WriteToUDP(p, dst)
	})
}
