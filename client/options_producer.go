package client

import (
	"time"
)

// BatchSize is the estimated size (39 + len(key) + len(value) per record)
// at which a partition's pending records close into a batch and are sent
// at once. Default 1 MiB (franz-go's is 1 MB), so that under a steady load
// Linger closes batches: one request per partition per Linger rather than
// one per few records. Each request is a Raft entry on our broker, and
// many small ones cost its CPU. Producer option.
func BatchSize(bytes int) Opt {
	return mk("BatchSize", producerOpt, func(c *config) { c.batchSize = bytes })
}

// MaxBatchBytes bounds how far a closed batch that is still waiting to be
// sent may grow. A batch closes at BatchSize (P4) and is sent at once if
// a request slot is free; while it waits for one (MaxInFlight requests
// are out), batches closing after it on the same partition join it, up to
// this many estimated bytes. Under load this sends fewer, larger batches,
// which is what lets a Raft commit carry more; with free slots it changes
// nothing. Default 1 MiB; at least BatchSize. Producer option.
func MaxBatchBytes(bytes int) Opt {
	return mk("MaxBatchBytes", producerOpt, func(c *config) { c.maxBatchBytes = bytes })
}

// Linger is how long a partition's oldest pending record may wait before
// its records close into a batch. Default 5ms. Producer option.
func Linger(d time.Duration) Opt { return mk("Linger", producerOpt, func(c *config) { c.linger = d }) }

// BufferLimit bounds the estimated bytes of records produced but not yet
// completed (buffered or in flight). Default 32 MiB. Producer option.
func BufferLimit(bytes int) Opt {
	return mk("BufferLimit", producerOpt, func(c *config) { c.bufferLimit = bytes })
}

// BlockOnBufferFull makes Produce wait, until its context ends, for room in
// the buffer instead of failing with ErrBufferFull (like Kafka's
// max.block.ms). Default off. Producer option.
func BlockOnBufferFull() Opt {
	return mk("BlockOnBufferFull", producerOpt, func(c *config) { c.blockOnFull = true })
}

// RequiredAcks sets the acks of produce requests. Default AllAcks. With
// idempotence on (the default) anything but AllAcks is a ConfigError
// wrapping ErrIdempotenceNeedsAcksAll. Producer option.
func RequiredAcks(a Acks) Opt { return mk("RequiredAcks", producerOpt, func(c *config) { c.acks = a }) }

// Idempotence turns the idempotent producer on or off. Default on: the
// producer gets a producer id and numbers its batches, so that retries are
// never written twice and order is kept with up to 5 requests in flight.
// Producer option.
func Idempotence(on bool) Opt {
	return mk("Idempotence", producerOpt, func(c *config) { c.idempotent = on })
}

// TransactionalName gives the producer a stable identity without
// transactions: the producer id comes from InitProducerID with this
// transactional id, and a newer producer with the same name fences this
// one, which then fails every record with a FencedError. Its batches are
// not transactional. Default none. Producer option.
//
// Deprecated: use TransactionalID, which also fences and gives
// transactions.
func TransactionalName(name string) Opt {
	return mk("TransactionalName", producerOpt, func(c *config) { c.txnName = name })
}

// TransactionalID makes the producer transactional (Kafka's
// transactional.id): call InitTransactions once, then produce only
// between BeginTransaction and CommitTransaction or AbortTransaction. A
// newer producer with the same id fences this one (a FencedError, fatal)
// and aborts its open transaction. Needs idempotence; excludes
// TransactionalName. Default none. Producer option.
func TransactionalID(id string) Opt {
	return mk("TransactionalID", producerOpt, func(c *config) { c.txnID = id })
}

// TransactionTimeout is how long the transaction coordinator lets a
// transaction stay open before it aborts it (it must not exceed the
// broker's transaction.max.timeout.ms). Default 1m. Producer option.
func TransactionTimeout(d time.Duration) Opt {
	return mk("TransactionTimeout", producerOpt, func(c *config) { c.txnTimeout = d })
}

// Compression sets the batch codec. Default NoCompression. Producer option.
func Compression(codec Codec) Opt {
	return mk("Compression", producerOpt, func(c *config) { c.compression = codec })
}

// DeliveryTimeout bounds the time from Produce to a record's result,
// linger and retries included; a batch still unacknowledged then fails
// with a DeliveryTimeoutError. It must be at least Linger +
// RequestTimeout. Default 2m. Producer option.
func DeliveryTimeout(d time.Duration) Opt {
	return mk("DeliveryTimeout", producerOpt, func(c *config) { c.deliveryTimeout = d })
}

// MaxInFlight is the number of produce requests in flight per broker, 1 to
// 5. Default 5. Producer option.
func MaxInFlight(n int) Opt {
	return mk("MaxInFlight", producerOpt, func(c *config) { c.maxInFlight = n })
}

// WithPartitioner sets how records without an explicit partition are
// placed. Default CRC32Partitioner. Producer option.
func WithPartitioner(p Partitioner) Opt {
	return mk("WithPartitioner", producerOpt, func(c *config) { c.partitioner = p })
}
