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
	"net"
)

// FreePorts returns n distinct TCP ports on 127.0.0.1 that were free a
// moment ago. Another process may take one before it is used; a cluster
// that then fails to start says which address was busy.
func FreePorts(n int) ([]int, error) {
	ls := make([]net.Listener, 0, n)
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	ports := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("clusters: free port: %w", err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

func addr(port int) string { return fmt.Sprintf("127.0.0.1:%d", port) }
