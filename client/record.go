package client

import "time"

// Record is a message: what Produce sends and what Poll returns.
type Record struct {
	// Topic the record goes to or came from.
	Topic string
	// Key and Value. A record whose key is empty (nil or zero length) is
	// keyless and placed by the sticky rule (P2).
	Key, Value []byte
	// Headers are optional key/value pairs.
	Headers []RecordHeader
	// Timestamp: if zero when produced, Produce sets it to the current
	// time. Kafka keeps millisecond precision.
	Timestamp time.Time

	// ExplicitPartition makes Produce send the record to Partition instead
	// of asking the partitioner.
	ExplicitPartition bool
	// Partition is an input when ExplicitPartition is set; otherwise the
	// producer fills it when it places the record. Poll sets it.
	Partition int32
	// Offset is filled by the producer when the record's batch is
	// acknowledged (base offset + position in the batch; -1 with NoAck or
	// when the broker did not say), and set by Poll.
	Offset int64
	// LeaderEpoch is the leader epoch of the batch the record was read
	// from (-1 if unknown). Poll sets it; the producer leaves it alone.
	LeaderEpoch int32
}

// RecordHeader is one header of a record.
type RecordHeader struct {
	Key   string
	Value []byte
}

// estimatedSize is the seed's size estimate of a record, which BatchSize
// and BufferLimit count in (P3, P4).
func (r *Record) estimatedSize() int { return 39 + len(r.Key) + len(r.Value) }
