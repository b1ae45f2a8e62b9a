package reqfuzz

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka-go/record"
	"github.com/minikafka/minikafka-go/test/e2e"
)

// RefPartitions is the reference topic's partition count.
const RefPartitions = 2

// RefConfigs are the reference topic's own values of the configs a round
// may set cluster-wide (values.go, configNames): a topic's value wins, so
// no broker default a round sets can delete, refuse or alter its data.
var RefConfigs = map[string]string{
	"cleanup.policy": "delete", "retention.ms": "-1", "retention.bytes": "-1",
	"max.message.bytes": "1048588", "min.insync.replicas": "1", "segment.bytes": "1073741824",
	"segment.ms": "604800000", "message.timestamp.type": "CreateTime",
	"message.timestamp.before.max.ms": "9223372036854775807", "compression.type": "producer",
	"write.caching": "false",
}

// Reference is the reference topic's known contents: records an
// idempotent franz-go producer wrote, and one raw idempotent batch whose
// duplicate must be answered with its first offset.
type Reference struct {
	seeds     []string
	want      map[int32][]*kgo.Record // per partition, in offset order
	dup       *kmsg.ProduceRequest    // the raw batch's Produce request
	dupOffset int64                   // the offset it was first stored at
}

// NewReference writes the known records to RefTopic, which must exist
// with RefPartitions partitions and RefConfigs.
func NewReference(ctx context.Context, seeds []string) (*Reference, error) {
	r := &Reference{seeds: seeds, want: map[int32][]*kgo.Record{}}
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RequiredAcks(kgo.AllISRAcks()))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	var recs []*kgo.Record
	for i := range 40 {
		recs = append(recs, &kgo.Record{
			Topic: RefTopic, Partition: int32(i % RefPartitions),
			Key: fmt.Appendf(nil, "key-%d", i), Value: bytes.Repeat(fmt.Appendf(nil, "value %d;", i), 1+i),
			Headers:   []kgo.RecordHeader{{Key: "i", Value: []byte(strconv.Itoa(i))}},
			Timestamp: time.UnixMilli(batchTime + int64(i)),
		})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		return nil, fmt.Errorf("reqfuzz: produce the reference records: %w", err)
	}
	for _, rec := range recs {
		r.want[rec.Partition] = append(r.want[rec.Partition], rec)
	}
	if err := r.storeDuplicate(ctx, cl); err != nil {
		return nil, err
	}
	return r, nil
}

// dupRecords are the raw batch's records, stored after partition 0's. They
// carry the time they are written at, not batchTime: a producer's last
// batch timestamp is what producer.id.expiration.ms counts from, in Kafka
// as here, so a producer whose batch says 2023 is forgotten at the first
// expiration check (10 minutes in), and the duplicate's retry is then a
// new batch (a 30-minute make fuzz failed that way at round 256).
func dupRecords(now time.Time) []record.Record {
	var recs []record.Record
	for i := range 3 {
		recs = append(recs, record.Record{Timestamp: now.UnixMilli() + int64(i),
			Key: fmt.Appendf(nil, "dup-%d", i), Value: fmt.Appendf(nil, "dup value %d", i)})
	}
	return recs
}

// storeDuplicate writes the raw idempotent batch with its own producer
// id, remembering its request and offset.
func (r *Reference) storeDuplicate(ctx context.Context, cl *kgo.Client) error {
	ipid := kmsg.NewPtrInitProducerIDRequest()
	ipid.TransactionTimeoutMillis = 60_000
	resp, err := cl.Request(ctx, ipid)
	if err != nil {
		return fmt.Errorf("reqfuzz: InitProducerID: %w", err)
	}
	ir := resp.(*kmsg.InitProducerIDResponse)
	if err := kerr.ErrorForCode(ir.ErrorCode); err != nil {
		return fmt.Errorf("reqfuzz: InitProducerID: %w", err)
	}
	opts := record.BatchOptions{ProducerID: ir.ProducerID, ProducerEpoch: ir.ProducerEpoch, BaseSequence: 0}
	recs := dupRecords(time.Now())
	batch, err := record.AppendBatch(nil, opts, recs)
	if err != nil {
		return err
	}
	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(9)
	req.Acks = -1
	req.TimeoutMillis = 10_000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = RefTopic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = batch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	r.dup = req
	if r.dupOffset, err = r.produceDup(ctx); err != nil {
		return fmt.Errorf("reqfuzz: the raw idempotent batch: %w", err)
	}
	base := r.dupOffset
	for i, dr := range recs {
		r.want[0] = append(r.want[0], &kgo.Record{Topic: RefTopic, Partition: 0, Offset: base + int64(i),
			Key: dr.Key, Value: dr.Value, Timestamp: time.UnixMilli(dr.Timestamp)})
	}
	return nil
}

// produceDup sends the raw batch to partition 0's leader, retrying while
// the leader is unknown or moving, and returns the offset answered.
func (r *Reference) produceDup(ctx context.Context) (int64, error) {
	var last error
	for ctx.Err() == nil {
		addr, err := r.leader(ctx)
		if err == nil {
			rctx, cancel := context.WithTimeout(ctx, 15*time.Second)
			var resp kmsg.Response
			resp, err = e2e.Request(rctx, addr, r.dup)
			cancel()
			if err == nil {
				p := resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0]
				if err = kerr.ErrorForCode(p.ErrorCode); err == nil {
					return p.BaseOffset, nil
				}
				if !kerr.IsRetriable(err) {
					return 0, err
				}
			}
		}
		last = err
		time.Sleep(200 * time.Millisecond)
	}
	return 0, errors.Join(ctx.Err(), last)
}

// leader is partition 0's leader's address, as a seed's Metadata says.
func (r *Reference) leader(ctx context.Context) (string, error) {
	req := kmsg.NewPtrMetadataRequest()
	req.SetVersion(12)
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(RefTopic)
	req.Topics = append(req.Topics, rt)
	var last error
	for _, seed := range r.seeds {
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		resp, err := e2e.Request(rctx, seed, req)
		cancel()
		if err != nil {
			last = err
			continue
		}
		md := resp.(*kmsg.MetadataResponse)
		if len(md.Topics) != 1 || len(md.Topics[0].Partitions) == 0 {
			return "", fmt.Errorf("reqfuzz: metadata of %s: %d topics", RefTopic, len(md.Topics))
		}
		id := md.Topics[0].Partitions[0].Leader
		for _, b := range md.Brokers {
			if b.NodeID == id {
				return net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port))), nil
			}
		}
		last = fmt.Errorf("reqfuzz: %s[0] has no known leader (%d)", RefTopic, id)
	}
	return "", last
}

// CheckDuplicate resends the raw batch: a duplicate of an idempotent
// batch must be answered with the offset it was first stored at.
func (r *Reference) CheckDuplicate(ctx context.Context) error {
	off, err := r.produceDup(ctx)
	if err != nil {
		return fmt.Errorf("duplicate of the raw idempotent batch: %w", err)
	}
	if off != r.dupOffset {
		return fmt.Errorf("duplicate of the raw idempotent batch answered offset %d, first stored at %d", off, r.dupOffset)
	}
	return nil
}

// CheckData reads the reference topic from the start with a fresh
// franz-go consumer and compares every record and the high watermarks
// with what was written.
func (r *Reference) CheckData(ctx context.Context) error {
	offsets := map[int32]kgo.Offset{}
	for p := range int32(RefPartitions) {
		offsets[p] = kgo.NewOffset().AtStart()
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(r.seeds...), kgo.FetchMaxWait(500*time.Millisecond),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{RefTopic: offsets}))
	if err != nil {
		return err
	}
	defer cl.Close()
	got := map[int32][]*kgo.Record{}
	hwm := map[int32]int64{}
	for !r.complete(got, hwm) {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("reference topic: read %s of the known records before %w", r.progress(got), err)
		}
		var ferr error
		fs.EachError(func(_ string, _ int32, err error) {
			if !kerr.IsRetriable(err) && !errors.Is(err, context.DeadlineExceeded) {
				ferr = errors.Join(ferr, err)
			}
		})
		if ferr != nil {
			return fmt.Errorf("reference topic: %w", ferr)
		}
		fs.EachPartition(func(p kgo.FetchTopicPartition) {
			got[p.Partition] = append(got[p.Partition], p.Records...)
			hwm[p.Partition] = p.HighWatermark
		})
		if err := r.compare(got); err != nil {
			return err
		}
	}
	for p, want := range r.want {
		if end := want[len(want)-1].Offset + 1; hwm[p] != end {
			return fmt.Errorf("reference topic: partition %d high watermark %d, want %d", p, hwm[p], end)
		}
	}
	return nil
}

// complete reports whether every known record was read.
func (r *Reference) complete(got map[int32][]*kgo.Record, hwm map[int32]int64) bool {
	for p, want := range r.want {
		if len(got[p]) < len(want) {
			return false
		}
		if _, ok := hwm[p]; !ok {
			return false
		}
	}
	return true
}

func (r *Reference) progress(got map[int32][]*kgo.Record) string {
	n, m := 0, 0
	for p, want := range r.want {
		n += len(got[p])
		m += len(want)
	}
	return fmt.Sprintf("%d of %d", n, m)
}

// compare checks the records read so far against the known ones.
func (r *Reference) compare(got map[int32][]*kgo.Record) error {
	for p, recs := range got {
		want := r.want[p]
		if len(recs) > len(want) {
			return fmt.Errorf("reference topic: partition %d holds %d records or more, want %d", p, len(recs), len(want))
		}
		for i, g := range recs {
			w := want[i]
			if g.Offset != w.Offset || !bytes.Equal(g.Key, w.Key) || !bytes.Equal(g.Value, w.Value) ||
				!g.Timestamp.Equal(w.Timestamp) || !sameHeaders(g.Headers, w.Headers) {
				return fmt.Errorf("reference topic: partition %d record %d is offset %d key %q, want offset %d key %q and its value, timestamp and headers",
					p, i, g.Offset, g.Key, w.Offset, w.Key)
			}
		}
	}
	return nil
}

func sameHeaders(a, b []kgo.RecordHeader) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Key != b[i].Key || !bytes.Equal(a[i].Value, b[i].Value) {
			return false
		}
	}
	return true
}
