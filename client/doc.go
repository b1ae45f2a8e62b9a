// Package client is MiniKafka's Kafka client: a producer, a consumer of
// assigned partitions, a consumer group member, and an admin client. It speaks the Kafka wire
// protocol (requests are encoded with franz-go's kmsg) and works against
// MiniKafka nodes and any Kafka-compatible broker. Batching, partitioning,
// retries, idempotence and connections are this package's own.
//
// # Producing
//
// A caller's duties, in order:
//
//  1. Create a Producer with NewProducer and options (Brokers is required;
//     every other option documents its default). Conflicting options are a
//     *ConfigError: idempotence (on by default) with any acks but AllAcks
//     wraps ErrIdempotenceNeedsAcksAll.
//  2. Call Produce for each record. It returns at once with nil (the
//     record is buffered and its promise will be called exactly once) or
//     with an error (ErrBufferFull and the like; the promise is never
//     called). The first record of a topic waits for the topic's metadata,
//     bounded by ctx. ProduceSync is Produce plus waiting for the results.
//  3. Read each record's result in its promise: on success Partition and
//     Offset are set (Offset is -1 with NoAck). Promises run one at a time
//     on the producer's goroutine, in offset order within a partition;
//     keep them short, and do not call Flush or Close from them.
//  4. Call Flush to wait for everything produced so far, and Close when
//     done: Close flushes, then releases connections and goroutines.
//
// What the producer guarantees (docs/contract.md P1-P8):
//
//   - Placement: an explicit partition (Record.ExplicitPartition) wins; a
//     keyed record goes to crc32.ChecksumIEEE(key) % n with the default
//     CRC32Partitioner, or where the Java client puts it with
//     Murmur2Partitioner; keyless records stick to one partition per
//     partition count, starting at 0, moving to (p+1) % n when a batch
//     holding them closes.
//   - Buffering: each record counts 39 + len(key) + len(value) bytes. Past
//     BufferLimit, Produce fails with ErrBufferFull (or waits, bounded by
//     its ctx, with BlockOnBufferFull); nothing buffered is lost.
//   - Batching: a partition's pending records close into one batch, in
//     send order, when their estimated bytes reach BatchSize (and are sent
//     at once), when the oldest has waited Linger, or on Flush and Close;
//     nothing else closes a batch. A background goroutine drives linger.
//   - Results: record i of a batch gets offset base+i; every record of a
//     failed batch gets the same error.
//   - Retries and order: retriable failures (connection loss, timeouts,
//     NOT_LEADER_OR_FOLLOWER and other retriable codes) are retried with
//     backoff until DeliveryTimeout, refreshing metadata when leaders
//     move. Up to 5 requests are in flight per broker. The idempotent
//     producer numbers each batch; when one fails, the partition's later
//     batches are resent after it, in order, with the same sequences, and
//     the broker deduplicates any that were already written. A retried
//     batch goes alone, so that the broker's window of the last 5 batches
//     still holds it if an earlier attempt was written. Sequences
//     advance only past batches known written: a batch that fails for good
//     frees its numbers for the next ones; one whose fate is unknown when
//     it times out makes the producer move to a new epoch first.
//   - Identity: TransactionalID (or the older TransactionalName, which
//     only fences) gives a stable producer id; a newer producer with the
//     same id fences this one, which then fails every record with a
//     *FencedError (errors.Is ErrProducerFenced).
//
// Without idempotence (Idempotence(false)) a retry may write a batch twice
// or after a later one, as with Kafka's producer.
//
// Why promises rather than futures: a callback per record costs no channel
// or goroutine, composes into ProduceSync and Flush, and is what Go Kafka
// clients use; a caller who wants a future wraps the promise around a
// channel.
//
// Example:
//
//	p, err := client.NewProducer(client.Brokers("localhost:9092"), client.Linger(10*time.Millisecond))
//	if err != nil {
//		return err
//	}
//	defer p.Close(context.Background())
//	err = p.Produce(ctx, &client.Record{Topic: "events", Key: []byte("same"), Value: []byte("hello")},
//		func(r *client.Record, err error) {
//			if err != nil {
//				log.Printf("not delivered: %v", err)
//				return
//			}
//			log.Printf("%s[%d]@%d", r.Topic, r.Partition, r.Offset)
//		})
//
// # Transactions
//
// A producer with TransactionalID writes records (and, for
// consume-transform-produce, a group's offsets) that are committed or
// aborted together. A caller's duties, in order:
//
//  1. InitTransactions once: it finds the transaction coordinator and gets
//     the producer id, fencing older producers with the same id and
//     aborting their open transaction.
//  2. BeginTransaction, then Produce as usual (Produce outside a
//     transaction fails with ErrTransactionState). Before a partition's
//     first batch of the transaction the producer adds the partition to it
//     (AddPartitionsToTxn).
//  3. Optionally SendOffsetsToTransaction with a GroupConsumer's
//     GroupMetadata: the offsets are committed only with the transaction.
//  4. CommitTransaction (flush, then EndTxn) or AbortTransaction (unsent
//     records fail with ErrTransactionAborted, the rest are waited for).
//     Then back to 2.
//
// Errors: a *FencedError (another producer took the id) and
// ErrTransactionalIDAuth are fatal: every later call returns them. Any
// other failure inside a transaction (a record that failed, offsets
// refused) is an *AbortableTxnError (errors.Is ErrAbortRequired):
// Produce and CommitTransaction return it until AbortTransaction, after
// which the producer is usable again. Close does not end an open
// transaction; the coordinator aborts it after TransactionTimeout.
//
// Consumers read transactional records like any others by default
// (ReadUncommitted, Kafka's default); with IsolationLevel(ReadCommitted)
// they read up to the last stable offset and drop aborted transactions.
//
// # Consuming
//
// NewConsumer with ConsumeTopics (every partition, starting at
// ConsumeResetOffset, AtStart by default) or ConsumePartitions (each at
// AtStart, AtEnd or At(offset)); then call Poll in a loop from one
// goroutine. Poll returns records in offset order per partition, skipping
// control batches (and, with ReadCommitted, aborted transactions) and
// records below the start offset, and follows leader changes. A Consumer has no group and commits nothing: a caller that
// needs to resume remembers its positions (Position) and assigns them
// again, or uses a GroupConsumer.
//
// # Consuming in a group
//
// A GroupConsumer is a member of a Kafka consumer group (the classic
// protocol: JoinGroup, SyncGroup, Heartbeat). A caller's duties, in order:
//
//  1. Create it with NewGroupConsumer, ConsumerGroup and ConsumeTopics
//     (the subscription). It joins in the background; the group's leader
//     assigns partitions with the strategy every member supports
//     (GroupStrategies: RangeAssign, CooperativeStickyAssign).
//  2. Call Poll in a loop from one goroutine. A partition starts at the
//     group's committed offset (the next offset to read), or at
//     ConsumeResetOffset if the group has none. Coming back to Poll tells
//     the member the caller is done with the previous records: a
//     rebalance waits for it (up to RebalanceTimeout) before giving
//     partitions away, and Poll never returns records of a partition the
//     member no longer owns.
//  3. Commit: with AutoCommit (the default) every AutoCommitInterval, and
//     before partitions are revoked, the member commits the positions the
//     caller has come back from; without it, call CommitPolled (everything
//     Poll returned) or Commit (exact offsets). A commit carries the
//     leader epoch of the last record read.
//  4. React to rebalances, if needed, in OnAssigned, OnRevoked (the
//     member still may commit) and OnLost (it may not: another member may
//     own the partitions already). They run on the member's goroutine.
//  5. Close: it commits (with AutoCommit), calls OnRevoked, and leaves the
//     group so that the others take the partitions at once. A static
//     member (GroupInstanceID) does not leave; restarted with the same id
//     within SessionTimeout, it gets its partitions back without a
//     rebalance.
//
// A member fenced by another with the same GroupInstanceID, or refused for
// good by the coordinator, fails Poll and commits with a *GroupError.
//
// GroupProtocol(GroupProtocolConsumer) makes the member speak KIP-848
// instead (Kafka's group.protocol=consumer): it heartbeats with
// ConsumerGroupHeartbeat at the interval the coordinator sets, the
// coordinator computes the assignment (GroupRemoteAssignor: uniform or
// range), and partitions move incrementally: the member first gives up
// what it lost (stops reading, commits, OnRevoked), then takes what it
// gained (OnAssigned), and its next heartbeat says so. Commits carry the
// member epoch (Member reports it in place of the generation). Fenced
// (FENCED_MEMBER_EPOCH) or forgotten (UNKNOWN_MEMBER_ID), the member loses
// its partitions (OnLost) and joins again at epoch 0; Close leaves with
// epoch -1. The duties above are the same.
//
// # Consuming in a share group
//
// A ShareConsumer is a member of a share group (KIP-932, Kafka's
// KafkaShareConsumer): the group's members read the same partitions at
// once, and the broker hands each record to one member at a time, under
// a time lock. A caller's duties, in order:
//
//  1. Create it with NewShareConsumer, ShareGroup and ConsumeTopics. It
//     joins in the background (ShareGroupHeartbeat, with a member id it
//     makes itself, at the interval the coordinator sets). Where a new
//     group starts reading is the group's share.auto.offset.reset config
//     (latest by default), not a client option.
//  2. Call Poll in a loop from one goroutine. It fetches from each
//     assigned partition's leader, one share session per broker, and
//     returns ShareRecords: the record and its DeliveryCount (1 the first
//     time).
//  3. Acknowledge each record with AckAccept (done), AckRelease
//     (deliver it again, to any member) or AckReject (never again); or
//     acknowledge none of a Poll's records, and the next Poll, commit or
//     Close accepts them all. Acknowledging some but not all makes the
//     next Poll fail with ErrUnacknowledged.
//  4. Acknowledgements go with the next ShareFetch (CommitAsync settles
//     them; OnShareAcknowledged reports their outcome), or at once with
//     CommitSync, which waits and returns the outcome per partition.
//  5. Close: it sends what is pending, closes the share sessions (the
//     broker releases the records still held), and leaves the group.
//
// A share session the broker lost is opened again; acknowledgements
// sent in it fail with ErrShareSessionLost, and their records come back.
// A cluster without share groups gives a *ShareUnsupportedError naming the
// missing API.
//
// # Administration
//
// NewAdmin creates, lists and describes topics, and describes the cluster:
// brokers, controller, and each partition's leader, leader epoch, replicas
// and ISR. For consumer groups it lists (with their type: classic or
// consumer), describes (members, their subscriptions and assignments; for
// a KIP-848 group also the epochs, the assignor and each member's target
// assignment), deletes, reports committed offsets and
// lag (GroupOffsets), and resets the offsets of a group without members
// (ResetGroupOffsets). Share groups are listed with type share, described
// with DescribeShareGroup, and their start offsets and lag read with
// ShareGroupOffsets and reset with ResetShareGroupOffsets. Client quotas
// (per user, client id or both, named or default) are set with SetQuotas,
// removed with DeleteQuotas and read with ListQuotas.
//
// # Errors
//
// Broker error codes are *KafkaError values; compare them with errors.Is
// against the exported Err* codes (ErrNotLeaderOrFollower, ...).
// IsRetriable classifies an error. Every exported sentinel and typed error
// is documented in errors.go.
package client
