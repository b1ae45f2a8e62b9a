package e2e

import (
	"errors"
	"math/rand/v2"
	"net"
	"strconv"
	"sync"
)

// Ports are taken from [portLow, portHigh), below Linux's default
// ephemeral range (32768-60999): in-process tests that listen on port 0,
// and outgoing connections, get ephemeral ports, so they cannot take a
// port between our choice and the node binding it.
const (
	portLow  = 20000
	portHigh = 32000
)

// portsMu guards portsTaken: ports handed out by this process.
var (
	portsMu    sync.Mutex
	portsTaken = map[int]bool{}
)

// ErrNoFreePort means no free port was found in the harness's range.
var ErrNoFreePort = errors.New("e2e: no free port")

// freePort returns a port of 127.0.0.1 that is free for TCP and UDP
// (gossip needs both) and was not handed out before by this process.
func freePort() (int, error) { return freePortOn("127.0.0.1") }

// freePortOn is freePort on a loopback IP.
func freePortOn(ip string) (int, error) {
	portsMu.Lock()
	defer portsMu.Unlock()
	for range 1000 {
		p := portLow + rand.IntN(portHigh-portLow)
		if portsTaken[p] {
			continue
		}
		addr := net.JoinHostPort(ip, strconv.Itoa(p))
		l, err := net.Listen("tcp", addr)
		if err != nil {
			continue
		}
		u, err := net.ListenPacket("udp", addr)
		l.Close()
		if err != nil {
			continue
		}
		u.Close()
		portsTaken[p] = true
		return p, nil
	}
	return 0, ErrNoFreePort
}
