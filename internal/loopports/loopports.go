// Package loopports picks free loopback ports for the nodes that test
// harnesses start as processes (test/e2e, bench), which bind them a
// moment later.
//
// Ports come from [Low, High), below Linux's default ephemeral range
// (32768-60999): listeners on port 0 and outgoing connections get
// ephemeral ports, so neither can take a port between our choice and the
// node binding it (the bench once lost a run to a gossip port taken so).
// Another process binding in our range can still; the node then fails
// saying which address was busy.
package loopports

import (
	"errors"
	"math/rand/v2"
	"net"
	"strconv"
	"sync"
)

// The range ports are picked from.
const (
	Low  = 20000
	High = 32000
)

// ErrNoFreePort means no free port was found in [Low, High).
var ErrNoFreePort = errors.New("loopports: no free port")

// mu guards taken: ports handed out by this process, never handed out
// again (a stopped node's port may still be in TIME_WAIT or rebound).
var (
	mu    sync.Mutex
	taken = map[int]bool{}
)

// Free returns a port of the loopback IP ip that is free for TCP and UDP
// (memberlist's gossip needs both) and was not handed out before by this
// process.
func Free(ip string) (int, error) {
	mu.Lock()
	defer mu.Unlock()
	for range 1000 {
		p := Low + rand.IntN(High-Low)
		if taken[p] || !free(ip, p) {
			continue
		}
		taken[p] = true
		return p, nil
	}
	return 0, ErrNoFreePort
}

// FreeN returns n ports of 127.0.0.1 as Free does.
func FreeN(n int) ([]int, error) {
	ports := make([]int, n)
	for i := range ports {
		p, err := Free("127.0.0.1")
		if err != nil {
			return nil, err
		}
		ports[i] = p
	}
	return ports, nil
}

func free(ip string, port int) bool {
	addr := net.JoinHostPort(ip, strconv.Itoa(port))
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return false
	}
	defer l.Close()
	u, err := net.ListenPacket("udp", addr)
	if err != nil {
		return false
	}
	u.Close()
	return true
}
