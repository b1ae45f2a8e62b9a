// Package jepsen runs Jepsen's Kafka workload against a cluster and checks
// the history it records (issue 29).
//
// Several client processes of stock franz-go clients (Workload) each do a
// random mix of idempotent sends, transactions (a few sends to several
// partitions, committed or aborted; in consume-transform-produce mode a
// GroupTransactSession's poll, sends and offset commit) and polls by
// assign and subscribe consumers at both isolation levels. A Recorder
// keeps every operation with its invocation and completion times, its
// outcome and what it wrote and read. An operation whose outcome the
// client cannot know (a timeout) crashes its process, as in Jepsen: the
// worker's clients are closed and it goes on as a new process.
//
// A Nemesis injects faults on an e2e.Cluster meanwhile: kill -9,
// SIGSTOP/SIGCONT, graceful restart, network partitions, and kills aimed
// at a partition leader or a coordinator. After the run the cluster is
// healed, open transactions settle, and FinalReads reads every partition
// from the start at both isolation levels. history.Check then looks for
// every anomaly and prints the summary line.
package jepsen
