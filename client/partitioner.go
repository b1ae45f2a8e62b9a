package client

import (
	"hash/crc32"
	"sync"
)

// Partitioner places records that do not name their partition
// (Record.ExplicitPartition unset, which always wins).
//
// The producer calls Partition for every such record and BatchClosed for
// every batch that closes holding records Partition placed stickily. It
// calls them one at a time, with its lock held: they must be quick and
// must not call back into the producer.
type Partitioner interface {
	// Partition returns a partition in [0, n) for r, and whether the
	// choice is sticky (to be moved on by BatchClosed).
	Partition(r *Record, n int) (partition int32, sticky bool)
	// BatchClosed reports that a batch of the partition, holding records
	// placed stickily while the topic had n partitions, closed.
	BatchClosed(partition int32, n int)
}

// CRC32Partitioner is the default partitioner (P1, P2): a keyed record goes
// to crc32.ChecksumIEEE(key) % n, the same as Python's zlib.crc32; keyless
// records share one sticky partition per partition count, starting at 0,
// which moves to (p+1) % n when a batch holding keyless records of p
// closes. It is not the Java client's hash: use Murmur2Partitioner to
// place keys where Kafka's Java producer does.
func CRC32Partitioner() Partitioner {
	return &stickyPartitioner{hash: crc32.ChecksumIEEE}
}

// Murmur2Partitioner places a keyed record where Kafka's Java producer
// does: toPositive(murmur2(key)) % n. Keyless records are sticky, as with
// CRC32Partitioner.
func Murmur2Partitioner() Partitioner {
	return &stickyPartitioner{hash: func(k []byte) uint32 { return uint32(Murmur2(k) & 0x7fffffff) }}
}

// stickyPartitioner hashes keys and keeps keyless records sticky.
type stickyPartitioner struct {
	hash func([]byte) uint32

	mu     sync.Mutex    // guards sticky, in case one partitioner serves several producers
	sticky map[int]int32 // partition count -> current sticky partition
}

func (p *stickyPartitioner) Partition(r *Record, n int) (int32, bool) {
	if len(r.Key) > 0 {
		return int32(p.hash(r.Key) % uint32(n)), false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.sticky[n] // 0 to start with (P2)
	if int(s) >= n {
		s = 0
	}
	return s, true
}

func (p *stickyPartitioner) BatchClosed(partition int32, n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.sticky == nil {
		p.sticky = map[int]int32{}
	}
	// Move on only from the partition the batch was on: two batches of the
	// same sticky partition closing must not skip a partition.
	if p.sticky[n] == partition {
		p.sticky[n] = (partition + 1) % int32(n)
	}
}

// Murmur2 is Kafka's Utils.murmur2 (seed 0x9747b28c), as a signed int32
// like the Java function returns.
func Murmur2(data []byte) int32 {
	const (
		seed = 0x9747b28c
		m    = 0x5bd1e995
		r    = 24
	)
	length := len(data)
	h := uint32(seed) ^ uint32(length)
	for i := 0; i+4 <= length; i += 4 {
		k := uint32(data[i]) | uint32(data[i+1])<<8 | uint32(data[i+2])<<16 | uint32(data[i+3])<<24
		k *= m
		k ^= k >> r
		k *= m
		h *= m
		h ^= k
	}
	tail := data[length&^3:]
	switch len(tail) {
	case 3:
		h ^= uint32(tail[2]) << 16
		fallthrough
	case 2:
		h ^= uint32(tail[1]) << 8
		fallthrough
	case 1:
		h ^= uint32(tail[0])
		h *= m
	}
	h ^= h >> 13
	h *= m
	h ^= h >> 15
	return int32(h)
}
