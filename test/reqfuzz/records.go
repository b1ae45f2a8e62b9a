package reqfuzz

import (
	"encoding/binary"
	"reflect"
	"sync"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka-go/record"
)

// reflectOf is the addressable struct p points to.
func reflectOf(p any) reflect.Value { return reflect.ValueOf(p).Elem() }

// records is a Produce partition's Records: well-formed batches (plain,
// idempotent or transactional, any codec), batches whose header and
// records are filled with hostile values (mostly with a correct CRC, so
// that they pass it), a decompression bomb, several batches, or junk.
func (f *filler) records() []byte {
	if !f.hostile() {
		return f.plausibleBatch()
	}
	switch f.rng.IntN(10) {
	case 0:
		return nil
	case 1:
		return f.randBytes(f.rng.IntN(200))
	case 2, 3:
		return f.plausibleBatch()
	case 4, 5, 6:
		return f.hostileBatch()
	case 7:
		return f.bomb()
	default:
		var b []byte
		for range 2 + f.rng.IntN(3) {
			if f.chance(2) {
				b = append(b, f.plausibleBatch()...)
			} else {
				b = append(b, f.hostileBatch()...)
			}
		}
		return b
	}
}

// batchTime is the base of generated timestamps: fixed, so that a seed
// gives the same bytes on every run.
const batchTime = 1_700_000_000_000

// plausibleBatch is a batch a producer could send.
func (f *filler) plausibleBatch() []byte {
	opts := record.PlainBatch(f.rng.IntN(5))
	if f.chance(2) {
		opts.ProducerID = pick[int64](f, 0, 1, 1000, f.rng.Int64N(1<<20))
		opts.ProducerEpoch = pick[int16](f, 0, 1, -1)
		opts.BaseSequence = pick[int32](f, 0, 1, 5, 2147483647)
		opts.Transactional = f.chance(3)
	}
	recs := make([]record.Record, 1+f.rng.IntN(5))
	for i := range recs {
		recs[i] = record.Record{
			Timestamp: batchTime + f.rng.Int64N(1000),
			Key:       f.randBytes(f.rng.IntN(16)),
			Value:     f.randBytes(f.rng.IntN(256)),
		}
		if f.chance(3) {
			recs[i].Headers = []record.RecordHeader{{Key: f.alnum(3), Value: f.randBytes(4)}}
		}
	}
	b, err := record.AppendBatch(nil, opts, recs)
	if err != nil {
		return nil
	}
	return b
}

// hostileBatch is a v2 batch whose every header field and record is
// filled with hostile values; three times in four its length and CRC
// are then made right.
func (f *filler) hostileBatch() []byte {
	var rb kmsg.RecordBatch
	f.fillStruct(reflectOf(&rb), false)
	if !f.chance(5) {
		rb.Magic = 2
	}
	var recs []byte
	n := f.sliceLen()
	for range n {
		recs = append(recs, f.hostileRecord()...)
	}
	if f.chance(4) {
		rb.NumRecords = int32(n)
	}
	if f.chance(3) {
		// A codec bit over uncompressed records, or the other way round.
		rb.Attributes = int16(f.rng.IntN(8))
	}
	rb.Records = recs
	b := rb.AppendTo(nil)
	if !f.chance(4) {
		record.FinishBatch(b)
	}
	return b
}

// hostileRecord is one record of a hostile batch: its fields filled by
// reflection, its length usually right.
func (f *filler) hostileRecord() []byte {
	var r kmsg.Record
	f.fillStruct(reflectOf(&r), false)
	if f.chance(3) {
		return r.AppendTo(nil)
	}
	r.Length = 0
	b := r.AppendTo(nil)
	r.Length = int32(len(b) - 1) // a zero length is one varint byte
	return r.AppendTo(nil)
}

// bombValue is the uncompressed size of a bomb's one record's value.
const bombValue = 32 << 20

var (
	bombsOnce sync.Once
	bombs     [][]byte // per codec 1..4: the compressed records section
)

// bomb is a batch of one record whose value is 32 MiB of zeros,
// compressed with a random codec into a few kilobytes to a few
// megabytes; its header and CRC are right.
func (f *filler) bomb() []byte {
	bombsOnce.Do(func() {
		r := kmsg.Record{Value: make([]byte, bombValue)}
		r.Length = 0
		raw := r.AppendTo(nil)
		r.Length = int32(len(raw) - 1)
		raw = r.AppendTo(nil)
		for codec := record.CompressionGzip; codec <= record.CompressionZstd; codec++ {
			c, err := record.Compress(nil, codec, raw)
			if err != nil {
				panic(err)
			}
			bombs = append(bombs, c)
		}
	})
	codec := 1 + f.rng.IntN(len(bombs))
	b, err := record.AppendBatch(nil, record.PlainBatch(record.CompressionNone), []record.Record{{Timestamp: batchTime}})
	if err != nil {
		panic(err)
	}
	b = append(b[:record.HeaderSize], bombs[codec-1]...)
	binary.BigEndian.PutUint16(b[21:], uint16(codec)) // attributes
	record.FinishBatch(b)
	return b
}
