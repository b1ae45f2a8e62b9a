package broker_test

import (
	"testing"

	"github.com/minikafka/minikafka-go/broker"
	"github.com/minikafka/minikafka-go/internal/testcluster"
)

// A node killed and started again at new addresses at once (a host that
// got a new IP) joins as soon as the others declare its old address down;
// until then they refuse its id as claimed from two addresses, and it
// keeps asking, as a Kafka broker retries its registration.
func TestNodeRestartedAtNewAddressesJoins(t *testing.T) {
	t.Parallel()
	c := testcluster.Start(t, 3)
	old := c.Node(2).GossipAddr()
	c.HaltNode(2)
	c.Configure(2, func(cfg *broker.Config) {
		cfg.KafkaAddr, cfg.RaftAddr, cfg.GossipAddr = "127.0.0.1:0", "127.0.0.1:0", "127.0.0.1:0"
		cfg.Listeners = nil
	})
	c.StartNode(2)
	if c.Node(2).GossipAddr() == old {
		t.Fatalf("node 2 restarted at its old gossip address %s", old)
	}
	c.WaitReady() // 30 s
}
