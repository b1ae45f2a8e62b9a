// Package reqfuzz is a request-level fuzzer against real nodes over TCP
// (issue 27, item 6). It builds requests of every API and version a node
// advertises in ApiVersions, from kmsg's request types filled by
// reflection with hostile values (huge and duplicated arrays, negative
// and maximal numbers, unknown ids, long and malformed strings, versions
// outside the advertised range, fetch and group waits), mutates some of
// their encodings (truncations, bit flips, length fields made huge, size
// prefixes that lie), and pipelines them on several connections.
//
// Everything a round sends follows from the seed, the round number and
// the connection number, so a seed replays the same requests; only the
// interleaving between connections and the node's timing differ.
//
// A run's duties, in order:
//
//  1. Start the target nodes (in this package's tests: node processes
//     started from config files with test/e2e) and create the reference
//     topic (NewReference): an idempotent franz-go producer writes known
//     records and one raw idempotent batch whose offset is remembered.
//  2. Replay the regression cases (testdata/regress, Replay).
//  3. Run rounds (Runner.Round). After each, Runner.Check asks every node
//     for ApiVersions, reads the reference topic back with a fresh
//     franz-go consumer, resends the raw batch (a duplicate must answer
//     its first offset), and reads every node's resident memory against
//     the bound.
//  4. On a failed check, print the seed, the round and the requests that
//     preceded the failure (Failure), saved as a replayable case file.
//  5. Print the Summary: requests per API, errors per code, connections
//     the server closed, peak resident memory per node.
package reqfuzz
