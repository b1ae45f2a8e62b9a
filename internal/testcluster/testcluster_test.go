package testcluster

import (
	"net"
	"strconv"
	"testing"

	"github.com/minikafka/minikafka-go/internal/loopports"
)

// A node's ports lie below the kernel's ephemeral range, and a restarted
// node binds the same ones.
func TestPortsBelowTheEphemeralRange(t *testing.T) {
	c := Start(t, 1)
	before := c.Node(1)
	addrs := []string{before.KafkaAddr(), before.RaftAddr(), before.GossipAddr()}
	for _, a := range addrs {
		_, port, err := net.SplitHostPort(a)
		if err != nil {
			t.Fatal(err)
		}
		if p, _ := strconv.Atoi(port); p < loopports.Low || p >= loopports.High {
			t.Errorf("address %s: port outside [%d, %d)", a, loopports.Low, loopports.High)
		}
	}
	c.StopNode(1)
	c.StartNode(1)
	after := c.Node(1)
	if got := []string{after.KafkaAddr(), after.RaftAddr(), after.GossipAddr()}; got[0] != addrs[0] || got[1] != addrs[1] || got[2] != addrs[2] {
		t.Fatalf("restarted at %v, first started at %v", got, addrs)
	}
}
