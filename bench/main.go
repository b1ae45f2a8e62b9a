// Command bench compares MiniKafka-Go with NATS JetStream on this machine,
// and our client with franz-go's, under the same workloads (issues 6 and
// 14).
//
//	cd bench && go run . [--quick] [flags]     (or: make bench / make bench-quick)
//
// In one run it builds cmd/node from the parent module, then for every
// partition count of --partitions starts fresh clusters one after another:
// a 3-node MiniKafka cluster (processes from configs/nodeN.yaml, ports and
// data directories overridden by flags) for our client and kgo, another
// whose topic has write.caching=true for our client, and 3-server
// JetStream clusters (this binary re-executed as "bench natsd", embedding
// nats-server) once with sync_interval: always and once with the default
// sync, with one stream per partition. Against each it produces records of
// every --sizes size, round robin over the partitions, acknowledged after
// replication: first at peak (closed loop, a bounded window of outstanding
// records), then at a fixed offered load of half our client's peak. It
// prints a table with ratios ours/peer, stalls, scaling with partitions
// and the aims of issue 14, and writes out/results.json and out/chart.png
// and out/chart.svg. Server logs go to out/logs/.
//
// Exit status: 0 when every run succeeded (the aims are reported, not
// enforced), 1 when a run failed, a cluster did not start or the nodes
// refused a topic config, 2 for bad flags.
package main

import (
	"os"

	"github.com/minikafka/minikafka-go/bench/internal/clusters"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "natsd" {
		os.Exit(clusters.RunNATSD(os.Args[2:], os.Stderr))
	}
	os.Exit(run(os.Args[1:]))
}
