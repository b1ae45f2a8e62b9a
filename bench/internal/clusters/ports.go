// Package clusters starts and stops the 3-server clusters a benchmark
// compares, as local processes on loopback: MiniKafka nodes (the node
// binary, configured from configs/nodeN.yaml with ports and data
// directories overridden by flags) and NATS JetStream servers (this bench
// binary re-executed as "natsd", which embeds nats-server).
//
// A caller's duties: build the node binary first (BuildNode); start a
// cluster (StartMiniKafka / StartJetStream), which returns once it serves
// clients; create the topic or stream; read PIDs for CPU accounting; and
// call Stop on every cluster it started, also on error paths. A process
// that runs "natsd" must call RunNATSD from its main.
package clusters

import (
	"fmt"

	"github.com/minikafka/minikafka-go/internal/loopports"
)

// FreePorts returns n distinct ports of 127.0.0.1, free for TCP and UDP a
// moment ago, from below the kernel's ephemeral range (internal/loopports):
// a port the kernel handed out for a listener on :0 is also a source port
// it hands to outgoing connections, and one of those once took a node's
// gossip port before the node bound it.
func FreePorts(n int) ([]int, error) {
	ps, err := loopports.FreeN(n)
	if err != nil {
		return nil, fmt.Errorf("clusters: %w", err)
	}
	return ps, nil
}

func addr(port int) string { return fmt.Sprintf("127.0.0.1:%d", port) }
