// Package kafkaapi is the node's Kafka wire-protocol front end: a TCP
// listener that frames, decodes (with franz-go's kmsg), answers and encodes
// Kafka requests, and talks to the rest of the node only through Backend.
//
// A caller's duties, in order:
//
//  1. Implement Backend, every one of its roles below, and Partition
//     (partition.go); every method is required, and one that a node
//     switches off by configuration gives the "disabled" answer its
//     contract documents. Errors should be, or wrap, a *kerr.Error from
//     github.com/twmb/franz-go/pkg/kerr; that is the shared vocabulary for
//     Kafka error codes. Anything else is answered UNKNOWN_SERVER_ERROR, or
//     REQUEST_TIMED_OUT for an expired context (see ErrorCode).
//  2. Build a Server with New, then call Serve with a listener, or
//     ServeListener for a named listener with TLS or SASL (listener.go;
//     SASL checks passwords against Security.ScramCredential). Each blocks
//     until its context is done or Close is called.
//  3. Call Close (or cancel Serve's context) to stop: Close closes every
//     listener and connection and returns only after every goroutine the
//     server started has exited.
//
// The roles of a Backend (backend.go unless named), each safe for
// concurrent use:
//
//   - Topics: Cluster (local state, topics in a stable order), topic and
//     partition creation and deletion (ctx carries the request's deadline;
//     kerr.TopicAlreadyExists, kerr.InvalidPartitions, kerr.NotController,
//     ...), AutoCreateTopics, and Partition, the local replica
//     (kerr.UnknownTopicOrPartition, kerr.NotLeaderForPartition).
//   - Admin: the node's static Configs, topic and cluster-wide config
//     overrides (validated by the server before Alter*), and partition
//     reassignment; Reassignments answering kerr.UnsupportedVersion turns
//     both reassignment APIs off.
//   - Groups (groups.go): the coordinator node of a group and this node's
//     GroupCoordinators, which answer the group APIs and TxnOffsetCommit at
//     the request's version (kerr.CoordinatorNotAvailable,
//     kerr.NotCoordinator, kerr.CoordinatorLoadInProgress).
//   - Transactions (txnapis.go): InitProducerID, the coordinator node of a
//     transactional id and this node's TxnCoordinators (the same errors as
//     Groups; kerr.CoordinatorNotAvailable when none runs), and
//     TxnVerifier (txnverify.go), which Config.DisableTxnPartitionVerification
//     turns off.
//   - Security: Authorize and AuthorizeAny (cheap, non-blocking; a node
//     without authorization allows everything), stored ACLs (ACLs answering
//     kerr.SecurityDisabled turns the ACL APIs off), and SCRAM credentials
//     (ScramCredential for SASL; ScramUsers answering kerr.UnsupportedVersion
//     turns the SCRAM APIs off).
//
// A Partition is the log (Produce in call order, Read, the offsets,
// Changed, Fetched, DeleteRecords), its lookups (OffsetForTimestamp,
// MaxTimestamp, EpochEndOffset), leadership (IsLeader, LeaderEpoch,
// Settle) and the partition side of transactions (LastStableOffset and
// AbortedTxns, WriteTxnMarker, TxnVerified and ProduceVerified). A
// partition without transaction state answers a negative
// LastStableOffset; one that does not track its largest timestamp answers
// MaxTimestamp ok=false.
//
// Supported APIs and versions (anything else closes the connection, as
// Kafka does, except an ApiVersions request above v3, which gets a v0
// UNSUPPORTED_VERSION answer so that the client can retry lower):
//
//	Produce 3-9, Fetch 4-12, ListOffsets 0-7, Metadata 0-12,
//	ApiVersions 0-3, CreateTopics 0-7, InitProducerId 0-4,
//	OffsetForLeaderEpoch 0-4, WriteTxnMarkers 0-1, DescribeConfigs 0-4,
//	AlterConfigs 0-2, IncrementalAlterConfigs 0-1, DescribeCluster 0-1,
//	SaslHandshake 0-1 (v0 refused), SaslAuthenticate 0-2,
//	DescribeUserScramCredentials 0, AlterUserScramCredentials 0,
//	DescribeAcls, CreateAcls and DeleteAcls 0-3, and the group and
//	transaction APIs
//
// Authorisation. The backend's Security.Authorize is asked, where Kafka's
// KafkaApis asks its authorizer, whether the connection's principal (the
// SASL user, a TLS client certificate's subject, else User:ANONYMOUS)
// may do each operation; a denial gets Kafka's error code (authz.go).
//
// Produce below v3 and Fetch below v4 carry message sets of format v0 or
// v1, which the node does not store (Kafka converts them; Kafka 4 dropped
// them too).
//
// Connection model. One reader goroutine per connection reads frames,
// decodes them and starts each request in arrival order; one writer
// goroutine answers them in the same order. Starting a request must be
// quick: only Produce does work when started (it hands its batches to
// Partition.Produce in request order, so the Raft proposals keep the
// client's order, and first verifies a transactional batch its partition
// does not know as verified, which waits for the coordinator's answer, as
// Kafka reads no more of a connection until its request is answered);
// WriteTxnMarkers proposes its markers when started, and the brokers'
// AddPartitionsToTxn (v4-5), ReadShareGroupState and WriteShareGroupState
// run from their start on goroutines of their own (startAsync), as
// partition leaders send many of them on one connection and one may wait
// for a transaction's markers or a coordinator's commit (one node's
// writes of one share partition go one at a time). Every other API does
// its work when its turn to be answered comes, on the writer, so it observes
// the effects of all earlier requests on the connection. The answers
// always go in arrival order. Config.MaxInFlight bounds started but
// unanswered requests; when it is reached the reader stops reading, which
// pushes back on the client through TCP.
//
// Semantics worth knowing:
//   - acks=1 is treated like acks=-1 by the node (Raft has no leader-only
//     acknowledgement); acks=0 writes no response frame, but the writer still
//     waits for the outcome and closes the connection if any partition
//     failed, as Kafka does, so the client refreshes its metadata.
//   - Fetch sessions (KIP-227) are not supported: a full fetch (session
//     epoch 0 or -1) is answered without a session (session id 0), which
//     clients take as "no sessions on this broker"; an incremental fetch
//     (epoch > 0) is answered FETCH_SESSION_ID_NOT_FOUND, as a Kafka broker
//     with no session cache does.
//   - A request that breaks the protocol (bad frame, unknown or unadvertised
//     API or version, undecodable body) closes the connection, but only
//     after every request before it has been answered.
//   - A partition with no data is answered with an empty record set, never
//     a null one (librdkafka rejects a null set).
//   - Leader epochs are Raft terms, stamped into each stored batch.
//     OffsetForLeaderEpoch answers as Kafka's leader epoch cache does, from
//     the batches' epochs. A replica that just became leader applies its
//     predecessors' entries only once its own first entry commits; a
//     Partition is settled (Partition.Settle) before
//     OffsetForLeaderEpoch, ListOffsets or a Fetch past its high watermark
//     is answered, so that none of them takes the short log for the truth.
//   - DescribeConfigs describes topics (Kafka's topic configs, package
//     topicconfig, with their sources in Kafka's precedence: the topic's
//     override, the cluster-wide dynamic default, the node's static value,
//     Kafka's default), the cluster-wide defaults (broker resource "") and
//     the receiving broker (Backend.Configs with the defaults over them).
//   - AlterConfigs and IncrementalAlterConfigs change a topic's overrides
//     or the cluster-wide defaults (broker resource ""). Invalid names and
//     values are INVALID_CONFIG; a specific broker id is INVALID_REQUEST
//     (there are no per-broker dynamic configs), as is a resource named
//     twice. IncrementalAlterConfigs is computed from the current configs
//     and stored whole, so two concurrent ones on one resource may lose
//     one's change (last writer wins).
//   - A Fetch answers only data below the high watermark, long-polls up to
//     MaxWaitMillis (at most Config.MaxFetchWait) until MinBytes are
//     available across all its partitions, returns at most MaxBytes (at
//     most Config.FetchMaxBytes), and always returns at least one whole
//     batch of the first non-empty partition even over MaxBytes or
//     PartitionMaxBytes (KIP-74).
//   - Transactions, the partition side (Partition.LastStableOffset,
//     AbortedTxns, WriteTxnMarker): a
//     Fetch with isolation level read_committed returns data only below
//     the last stable offset and lists the aborted transactions that
//     overlap the returned offsets; every Fetch reports the last stable
//     offset. ListOffsets with read_committed answers the last stable
//     offset for the latest offset and finds no timestamp at or past it.
//     WriteTxnMarkers writes COMMIT and ABORT markers through the
//     partitions' replicated logs; it is an inter-broker API that, as in a
//     Kafka without an authorizer, any connection may call for now.
//   - Transactions, the coordinator side (Transactions, and
//     TxnOffsetCommit on a GroupCoordinator): FindCoordinator for
//     transactional ids, AddPartitionsToTxn 0-4 (v4 is the brokers' form,
//     batching transactions, with VerifyOnly), AddOffsetsToTxn and
//     EndTxn go to the id's coordinator; TxnOffsetCommit to the group's;
//     DescribeTransactions and ListTransactions answer from this node's
//     coordinators.
//   - Transactions, verification (TxnVerifier, Partition.TxnVerified and
//     ProduceVerified; KIP-890): a transactional batch goes into a partition only if its
//     coordinator says the partition is in the producer's ongoing
//     transaction (INVALID_TXN_STATE otherwise, and nothing is written);
//     a partition remembers a verified transaction until its marker, so
//     each is verified once per partition. A transactional batch without
//     the request's transactional id is
//     TRANSACTIONAL_ID_AUTHORIZATION_FAILED, as in Kafka.
//   - A produced batch's record count must match the records it holds
//     (INVALID_RECORD otherwise, as Kafka), and a CreateTopics request may
//     ask for at most Config.MaxCreatePartitions partitions in all.
package kafkaapi
