package kafkaapi

import (
	"unsafe"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A request costs memory beyond its frame while it is queued: kmsg decodes
// its arrays into structs much larger than their wire bytes (an empty
// topic entry of a flexible request, 3 bytes on the wire, becomes a
// 64-byte struct; an unknown tagged field, 2 bytes, a map entry of about
// 80), and serving it builds a response. RequestCost estimates that cost,
// so that the queued-bytes budget (Config.QueuedMaxRequestBytes) bounds
// memory, not frames. TestRequestCostBoundsDecoding checks the estimates
// against what decoding allocates.

// decodeFactor bounds the bytes kmsg allocates decoding a request, per
// byte of its frame, for the APIs whose frames are not scanned. The worst
// shape measured is an array of near-empty entries that each carry one
// unknown tagged field (a 4-byte Metadata v9 topic becomes a struct and a
// one-entry map, 96 times its size); 128 leaves room for the allocator.
const decodeFactor = 128

// tagsCost and tagCost are what a flexible struct's tagged fields cost
// decoded: kmsg keeps unknown ones in a map[uint32][]byte, made for the
// first tag (about 340 bytes), grown as more come (about 130 bytes each,
// counting the tables left behind).
const (
	tagsCost = 384
	tagCost  = 160
)

// entryCost is what one entry of a scanned request costs: the decoded
// request entry and the response entry built for it.
func entryCost[Req, Resp any]() int64 {
	var req Req
	var resp Resp
	return int64(unsafe.Sizeof(req) + unsafe.Sizeof(resp))
}

// Per-entry costs of the scanned APIs. A Produce partition also holds
// its checked batch; a Fetch partition's answer is encoded and its
// wake-up registered each time the Fetch reads.
var (
	produceTopicCost     = entryCost[kmsg.ProduceRequestTopic, kmsg.ProduceResponseTopic]()
	producePartitionCost = entryCost[kmsg.ProduceRequestTopicPartition, kmsg.ProduceResponseTopicPartition]() +
		entryCost[produceBatch, producing]()
	fetchTopicCost     = entryCost[kmsg.FetchRequestTopic, kmsg.FetchResponseTopic]()
	fetchPartitionCost = entryCost[kmsg.FetchRequestTopicPartition, kmsg.FetchResponseTopicPartition]() +
		int64(unsafe.Sizeof(watch{})) + 128
	forgottenTopicCost  = entryCost[kmsg.FetchRequestForgottenTopic, struct{}]()
	commitTopicCost     = entryCost[kmsg.OffsetCommitRequestTopic, kmsg.OffsetCommitResponseTopic]()
	commitPartitionCost = entryCost[kmsg.OffsetCommitRequestTopicPartition, kmsg.OffsetCommitResponseTopicPartition]()
	listTopicCost       = entryCost[kmsg.ListOffsetsRequestTopic, kmsg.ListOffsetsResponseTopic]()
	listPartitionCost   = entryCost[kmsg.ListOffsetsRequestTopicPartition, kmsg.ListOffsetsResponseTopicPartition]()
	epochTopicCost      = entryCost[kmsg.OffsetForLeaderEpochRequestTopic, kmsg.OffsetForLeaderEpochResponseTopic]()
	epochPartitionCost  = entryCost[kmsg.OffsetForLeaderEpochRequestTopicPartition, kmsg.OffsetForLeaderEpochResponseTopicPartition]()
	// A Metadata topic's name is also a *string.
	metadataTopicCost = entryCost[kmsg.MetadataRequestTopic, kmsg.MetadataResponseTopic]() + 16
	joinProtocolCost  = entryCost[kmsg.JoinGroupRequestProtocol, kmsg.JoinGroupResponseMember]()
	syncAssignCost    = entryCost[kmsg.SyncGroupRequestGroupAssignment, struct{}]()
	// requestBaseCost covers the request and response structs.
	requestBaseCost int64 = 4 << 10
)

// scanners read the requests whose cost is scanned: the ones with large
// frames or long waits, or that a consumer of many partitions sends
// naming them all.
var scanners = map[kmsg.Key]func(w *wireScan, version int16){
	kmsg.Produce:      (*wireScan).produce,
	kmsg.Fetch:        (*wireScan).fetch,
	kmsg.OffsetCommit: (*wireScan).offsetCommit,
	kmsg.ListOffsets:  (*wireScan).listOffsets,
	kmsg.Metadata:     (*wireScan).metadata,

	kmsg.OffsetForLeaderEpoch: (*wireScan).offsetForLeaderEpoch,

	// A member's subscription and assignment bytes can be large, and kmsg
	// keeps them in the frame: frame-scaled costs would refuse them.
	kmsg.JoinGroup: (*wireScan).joinGroup,
	kmsg.SyncGroup: (*wireScan).syncGroup,
}

// RequestCost estimates the memory that decoding and serving the request
// in frame (its header and body, without the size prefix) costs besides
// the frame. The APIs in scanners cost what their entries cost (a
// Produce's records nothing more: kmsg keeps them in the frame); other
// requests decodeFactor times their frame. A Server closes the connection
// of a request that costs more than MaxRequestCost (RequestCostError).
func RequestCost(frame []byte) int64 {
	h, err := peekHeader(frame)
	if err == nil {
		if c, ok := scanCost(h, frame); ok {
			return c
		}
	}
	return int64(len(frame)) * decodeFactor
}

// scanCost is the cost of a request of a scanned API whose frame scans
// whole.
func scanCost(h requestHeader, frame []byte) (int64, bool) {
	scan, ok := scanners[kmsg.Key(h.Key)]
	if !ok {
		return 0, false
	}
	a, ok := lookupAPI(h.Key)
	if !ok || h.Version < a.min || h.Version > a.max {
		return 0, false
	}
	req := kmsg.RequestForKey(h.Key)
	req.SetVersion(h.Version)
	body, _, err := requestBody(frame, req.IsFlexible())
	if err != nil {
		return 0, false
	}
	w := &wireScan{b: kbin.Reader{Src: body}, flex: req.IsFlexible()}
	scan(w, h.Version)
	if !w.b.Ok() {
		return 0, false
	}
	// Allocations round up to size classes: up to an eighth more.
	return (requestBaseCost + w.cost) * 9 / 8, true
}

// wireScan reads a request body as kmsg does, without allocating, and
// adds up what decoding it costs.
type wireScan struct {
	b    kbin.Reader
	flex bool
	cost int64
}

// length reads a string's, bytes' or array's length (-1: null).
func (w *wireScan) length(fixed func() int32) int {
	if w.flex {
		return int(w.b.Uvarint()) - 1
	}
	return int(fixed())
}

// str skips a (nullable) string; kmsg copies it.
func (w *wireScan) str() {
	if n := w.length(func() int32 { return int32(w.b.Int16()) }); n > 0 {
		w.b.Span(n)
		w.cost += int64(n)
	}
}

// bytes skips (nullable) bytes; kmsg keeps them in the frame.
func (w *wireScan) bytes() {
	if n := w.length(w.b.Int32); n > 0 {
		w.b.Span(n)
	}
}

// array reads an array's length, at most the bytes left (as kmsg
// checks), and adds n entries of cost each.
func (w *wireScan) array(cost int64) int {
	n := w.length(w.b.Int32)
	if n > len(w.b.Src) {
		w.b.Span(-1) // marks the reader bad
		return 0
	}
	n = max(n, 0)
	w.cost += int64(n) * cost
	return n
}

// tags skips a flexible struct's tagged fields.
func (w *wireScan) tags() {
	if !w.flex {
		return
	}
	n := w.b.Uvarint()
	if n > 0 {
		w.cost += tagsCost
	}
	for ; n > 0 && w.b.Ok(); n-- {
		w.b.Uvarint()
		w.b.Span(int(w.b.Uvarint()))
		w.cost += tagCost
	}
}

// produce scans a ProduceRequest v3+ (topics named by id from v13).
func (w *wireScan) produce(version int16) {
	w.str() // transactional id
	w.b.Int16()
	w.b.Int32() // acks, timeout
	for range w.array(produceTopicCost) {
		if version >= 13 {
			w.b.Span(16) // topic id
		} else {
			w.str()
		}
		for range w.array(producePartitionCost) {
			w.b.Int32()
			w.bytes()
			w.tags()
		}
		w.tags()
	}
	w.tags()
}

// fetch scans a FetchRequest v4 to v18.
func (w *wireScan) fetch(version int16) {
	if version <= 14 {
		w.b.Int32() // replica (from v15 in a tag)
	}
	w.b.Span(4 + 4 + 4 + 1) // max wait, min bytes, max bytes, isolation
	if version >= 7 {
		w.b.Span(4 + 4) // session id and epoch
	}
	part := 4 + 8 + 4 // partition, fetch offset, partition max bytes
	if version >= 5 {
		part += 8 // log start offset
	}
	if version >= 9 {
		part += 4 // current leader epoch
	}
	if version >= 12 {
		part += 4 // last fetched epoch
	}
	for range w.array(fetchTopicCost) {
		w.topic(version >= 13)
		for range w.array(fetchPartitionCost) {
			w.b.Span(part)
			w.tags()
		}
		w.tags()
	}
	if version >= 7 {
		for range w.array(forgottenTopicCost) {
			w.topic(version >= 13)
			w.b.Span(4 * w.array(4))
			w.tags()
		}
	}
	if version >= 11 {
		w.str() // rack
	}
	w.tags()
}

// topic skips a topic's name, or with byID its id.
func (w *wireScan) topic(byID bool) {
	if byID {
		w.b.Span(16)
		return
	}
	w.str()
}

// offsetCommit scans an OffsetCommitRequest v0 to v10 (v9 is v8's
// shape, its generation the member epoch; v10 names topics by id).
func (w *wireScan) offsetCommit(version int16) {
	w.str() // group
	if version >= 1 {
		w.b.Int32() // generation
		w.str()     // member
	}
	if version >= 7 {
		w.str() // instance id
	}
	if version >= 2 && version <= 4 {
		w.b.Int64() // retention
	}
	part := 4 + 8 // partition, offset
	if version == 1 {
		part += 8 // timestamp
	}
	if version >= 6 {
		part += 4 // leader epoch
	}
	for range w.array(commitTopicCost) {
		w.topic(version >= 10)
		for range w.array(commitPartitionCost) {
			w.b.Span(part)
			w.str() // metadata
			w.tags()
		}
		w.tags()
	}
	w.tags()
}

// listOffsets scans a ListOffsetsRequest v0 to v11.
func (w *wireScan) listOffsets(version int16) {
	w.b.Int32() // replica
	if version >= 2 {
		w.b.Int8() // isolation
	}
	part := 4 + 8 // partition, timestamp
	if version == 0 {
		part += 4 // max offsets
	}
	if version >= 4 {
		part += 4 // current leader epoch
	}
	for range w.array(listTopicCost) {
		w.str()
		for range w.array(listPartitionCost) {
			w.b.Span(part)
			w.tags()
		}
		w.tags()
	}
	if version >= 10 {
		w.b.Int32() // timeout
	}
	w.tags()
}

// metadata scans a MetadataRequest v0 to v13.
func (w *wireScan) metadata(version int16) {
	for range w.array(metadataTopicCost) {
		if version >= 10 {
			w.b.Span(16) // topic id
		}
		w.str()
		w.tags()
	}
	if version >= 4 {
		w.b.Int8() // allow auto-creation
	}
	if version >= 8 && version <= 10 {
		w.b.Int8() // cluster authorized operations
	}
	if version >= 8 {
		w.b.Int8() // topic authorized operations
	}
	w.tags()
}

// offsetForLeaderEpoch scans an OffsetForLeaderEpochRequest v0 to v4.
func (w *wireScan) offsetForLeaderEpoch(version int16) {
	if version >= 3 {
		w.b.Int32() // replica
	}
	part := 4 + 4 // partition, leader epoch
	if version >= 2 {
		part += 4 // current leader epoch
	}
	for range w.array(epochTopicCost) {
		w.str()
		for range w.array(epochPartitionCost) {
			w.b.Span(part)
			w.tags()
		}
		w.tags()
	}
	w.tags()
}

// joinGroup scans a JoinGroupRequest v0 to v9.
func (w *wireScan) joinGroup(version int16) {
	w.str()     // group
	w.b.Int32() // session timeout
	if version >= 1 {
		w.b.Int32() // rebalance timeout
	}
	w.str() // member
	if version >= 5 {
		w.str() // instance id
	}
	w.str() // protocol type
	for range w.array(joinProtocolCost) {
		w.str()
		w.bytes() // metadata
		w.tags()
	}
	if version >= 8 {
		w.str() // reason
	}
	w.tags()
}

// syncGroup scans a SyncGroupRequest v0 to v5.
func (w *wireScan) syncGroup(version int16) {
	w.str()     // group
	w.b.Int32() // generation
	w.str()     // member
	if version >= 3 {
		w.str() // instance id
	}
	if version >= 5 {
		w.str() // protocol type
		w.str() // protocol name
	}
	for range w.array(syncAssignCost) {
		w.str()
		w.bytes() // assignment
		w.tags()
	}
	w.tags()
}
