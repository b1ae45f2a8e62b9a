package loopports

import (
	"net"
	"strconv"
	"testing"
)

// Ports are distinct, in the range, and free for both TCP and UDP.
func TestFreeNInRangeDistinctAndBindable(t *testing.T) {
	ps, err := FreeN(9)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for _, p := range ps {
		if p < Low || p >= High || seen[p] {
			t.Fatalf("ports %v: want distinct ports in [%d, %d)", ps, Low, High)
		}
		seen[p] = true
		addr := "127.0.0.1:" + strconv.Itoa(p)
		l, err := net.Listen("tcp", addr)
		if err != nil {
			t.Fatalf("tcp %s: %v", addr, err)
		}
		l.Close()
		u, err := net.ListenPacket("udp", addr)
		if err != nil {
			t.Fatalf("udp %s: %v", addr, err)
		}
		u.Close()
	}
}

// A port bound for UDP only is not free: gossip would fail on it.
func TestFreeSkipsAPortTakenForUDP(t *testing.T) {
	u, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer u.Close()
	if free("127.0.0.1", u.LocalAddr().(*net.UDPAddr).Port) {
		t.Fatal("a port bound for UDP was reported free")
	}
}
