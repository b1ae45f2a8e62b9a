// Package metrics is a node's operator surface: Prometheus metrics, the
// health endpoints /livez and /readyz, and a plain HTML status page, all
// served by Handler on the node's admin address.
//
// The caller's duties, in order:
//
//  1. Create one Registry per node with New, before the node's components,
//     and pass its hooks to them: Registry.RequestDone as the Kafka
//     server's observer, Registry.ObserveCommit as the Raft host's commit
//     hook, Registry.ObserveFsync as the partition logs' fsync hook, and
//     one Traffic per local partition replica, counted by its produce and
//     fetch paths.
//  2. Implement Source: everything else (log sizes and offsets, follower
//     progress, committed group offsets, connections, the cluster view) is
//     read from it at scrape time, so that hot paths pay nothing for it.
//  3. Serve Handler(reg, src) over HTTP.
//
// The metric names and their meaning are listed in docs/metrics.md.
package metrics
