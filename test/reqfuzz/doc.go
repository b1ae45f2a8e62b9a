// Package reqfuzz is a request-level fuzzer against real nodes over TCP
// (issue 27, item 6). It builds requests of every API and version a node
// advertises in ApiVersions, from kmsg's request types filled by
// reflection: each value is hostile with the request's probability (huge
// and duplicated arrays, negative and maximal numbers, unknown ids, long
// and malformed strings, hostile record batches and decompression bombs)
// or plausible (names from pools of existing topics, groups and configs,
// small partitions, sane waits). Some requests go at versions outside the
// advertised range or at keys the node does not serve, and some encodings
// are mutated (truncations, bit flips, length fields made huge, size
// prefixes that lie). Each round pipelines them on several connections;
// when a node closes one, the rest go on a new one.
//
// Everything a round sends follows from the seed, the round number and
// the connection number, so a seed replays the same requests; only the
// interleaving between connections and the node's timing differ.
//
// A run's duties, in order:
//
//  1. Start the target nodes (in this package's tests: node processes
//     started from config files with test/e2e) and create the reference
//     topic with RefConfigs (NewReference then writes known records with
//     an idempotent franz-go producer, and one raw idempotent batch whose
//     offset it remembers).
//  2. Replay the regression cases (testdata/regress/*.case, Replay): each
//     is a request that once found a defect.
//  3. Run rounds (Runner.Round; it returns the protocol violations: an
//     answer that does not decode, or not to its own length, to a
//     version the node does not serve, out of order, or over 64 MiB; a
//     connection closed while every request unanswered on it was one the
//     node admits: well-formed, at an advertised version, within its
//     cost bound, kafkaapi.RequestCost).
//     After each, Runner.Check asks every node for ApiVersions, scans
//     their logs for panics, reads the reference topic back with a fresh
//     franz-go consumer, resends the raw batch (a duplicate must answer
//     its first offset), and reads every node's peak resident memory
//     against the bound. Every Config.CrashEvery rounds,
//     Runner.CrashRestart kills a node (kill -9), starts it again and
//     runs the checks: it must reopen its state.
//  4. On a failed check, report Runner.Failure: the seed, the round and
//     the request that preceded the failure on each connection; the round
//     is saved as a case file. If a node exited or logged a panic,
//     Runner.Triage finds the request that does it alone.
//  5. Report the Stats: requests per API, errors per code, connections
//     the nodes closed, peak resident memory per node, the largest
//     answers.
//
// The tests: TestReqFuzz (make test: one node, a minute, a fixed seed),
// TestReqFuzzLong (make fuzz: three nodes, FUZZ_TIME, a new seed) and
// TestReqFuzzReplay (one case file against new nodes). Their knobs, all
// environment variables:
//
//   - REQFUZZ_SEED: the seed to replay, or "new".
//   - REQFUZZ_TIME: the short run's length (default 1m); FUZZ_TIME the
//     long run's (default 30m), which runs only with REQFUZZ_LONG=1.
//   - REQFUZZ_RSS_MIB: the resident memory bound per node (default 1536).
//   - REQFUZZ_OUT: where failing rounds, example requests and heap
//     profiles are saved (default /tmp/reqfuzz).
//   - REQFUZZ_CASE, REQFUZZ_NODES: the case file TestReqFuzzReplay replays
//     (an absolute path) and against how many nodes (default 1), e.g.
//     REQFUZZ_CASE=$PWD/x.case go test -run TestReqFuzzReplay -v -timeout 30m ./test/reqfuzz/
//   - REQFUZZ_LOG_LEVEL: the nodes' log level (default warn).
//   - REQFUZZ_DEBUG_PORT_BASE: node N serves pprof on 127.0.0.1:<base+N>;
//     a node over the memory bound then has its heap profile saved.
package reqfuzz
