package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/minikafka/minikafka-go/record"
)

// Full disks: nodes whose data directories are small tmpfs mounts take
// records until they refuse them (the reserve, storage_min_free_bytes),
// and the cluster is then read, restarted, trimmed and grown. Mounting
// needs root.

// MountTmpfs mounts a tmpfs of size bytes on dir.
func MountTmpfs(dir string, size int64) error {
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, fmt.Sprintf("size=%d", size)); err != nil {
		return fmt.Errorf("e2e: mount a tmpfs of %d bytes on %s: %w", size, dir, err)
	}
	return nil
}

// ResizeTmpfs changes the size of the tmpfs on dir, as growing a disk
// does.
func ResizeTmpfs(dir string, size int64) error {
	if err := syscall.Mount("tmpfs", dir, "tmpfs", syscall.MS_REMOUNT, fmt.Sprintf("size=%d", size)); err != nil {
		return fmt.Errorf("e2e: resize the tmpfs on %s to %d bytes: %w", dir, size, err)
	}
	return nil
}

// UnmountTmpfs detaches the filesystem on dir.
func UnmountTmpfs(dir string) error {
	return syscall.Unmount(dir, syscall.MNT_DETACH)
}

// DiskUsed is the bytes used of the filesystem holding dir.
func DiskUsed(dir string) (used, total int64, err error) {
	var s syscall.Statfs_t
	if err := syscall.Statfs(dir, &s); err != nil {
		return 0, 0, err
	}
	return int64(s.Blocks-s.Bfree) * s.Bsize, int64(s.Blocks) * s.Bsize, nil
}

// Filler is an idempotent producer of one partition that keeps the
// outcome of every batch: it retries a batch (same sequence) until it is
// acknowledged, so every batch is acknowledged once or still pending.
type Filler struct {
	c            *Cluster
	cl           *kgo.Client
	topic        string
	valueSize    int
	perBatch     int
	pid          int64
	epoch        int16
	seq          int32
	next         int      // next record number
	pending      []byte   // the batch being retried, or nil
	pendingN     []string // its values' ids
	pendingBytes int      // its values' bytes
	trimmedAt    int64    // the last Trim's offset: a batch acknowledged below it is gone
	leader       int      // the partition's leader as last looked up; 0: look it up
	// Acked are the ids of the acknowledged records since the last Trim,
	// in order; AckedBytes their value bytes.
	Acked      []string
	AckedBytes int64
}

// NewFiller starts an idempotent producer of topic's partition 0 with
// values of valueSize bytes, perBatch records a batch.
func NewFiller(ctx context.Context, c *Cluster, topic string, valueSize, perBatch int) (*Filler, error) {
	// Its hand-built Produce names the topic, which Produce v13 does by id
	// only: kgo sends a request at the highest version both sides know,
	// so Produce is capped at v12.
	vs := kversion.Stable()
	vs.SetMaxKeyVersion(int16(kmsg.Produce), 12)
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Seeds()...), kgo.RequestRetries(0), kgo.MaxVersions(vs))
	if err != nil {
		return nil, err
	}
	f := &Filler{c: c, cl: cl, topic: topic, valueSize: valueSize, perBatch: perBatch}
	err = poll(ctx, "a producer id", func() (bool, error) {
		req := kmsg.NewPtrInitProducerIDRequest()
		req.ProducerEpoch, req.ProducerID = -1, -1
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		resp, err := req.RequestWith(rctx, cl)
		if err != nil || resp.ErrorCode != 0 {
			return false, nil
		}
		f.pid, f.epoch = resp.ProducerID, resp.ProducerEpoch
		return true, nil
	})
	if err != nil {
		cl.Close()
		return nil, err
	}
	return f, nil
}

// SetRecordSize makes the next batches hold perBatch records of
// valueSize bytes (a pending batch is sent as it is).
func (f *Filler) SetRecordSize(valueSize, perBatch int) {
	f.valueSize, f.perBatch = valueSize, perBatch
}

// Close closes the producer's client.
func (f *Filler) Close() { f.cl.Close() }

// ErrNoSpace means the partition refused a batch with KAFKA_STORAGE_ERROR.
var ErrNoSpace = errors.New("e2e: produce refused for lack of disk space")

// Produce sends the pending batch, or a new one, once: nil when it was
// acknowledged, ErrNoSpace when it was refused with KAFKA_STORAGE_ERROR,
// another error otherwise (it stays pending and is sent again).
func (f *Filler) Produce(ctx context.Context) error {
	if f.pending == nil {
		if err := f.newBatch(); err != nil {
			return err
		}
	}
	if f.leader == 0 {
		leader, err := f.c.Leader(ctx, f.topic, 0)
		if err != nil {
			return err
		}
		f.leader = leader.Node
	}
	req := kmsg.NewPtrProduceRequest()
	req.Version, req.Acks, req.TimeoutMillis = 9, -1, 10000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = f.topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = f.pending
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	rctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	resp, err := req.RequestWith(rctx, f.cl.Broker(f.leader))
	if err == nil {
		err = kerr.ErrorForCode(resp.Topics[0].Partitions[0].ErrorCode)
	}
	if err != nil && !errors.Is(err, kerr.KafkaStorageError) {
		f.leader = 0 // look it up again
	}
	switch {
	case err == nil || errors.Is(err, kerr.DuplicateSequenceNumber):
		// A batch pending at a Trim may have landed below it: it is gone.
		if base := resp.Topics[0].Partitions[0].BaseOffset; base < 0 || base >= f.trimmedAt {
			f.Acked = append(f.Acked, f.pendingN...)
			f.AckedBytes += int64(f.pendingBytes)
		}
		f.seq += int32(len(f.pendingN))
		f.pending, f.pendingN = nil, nil
		return nil
	case errors.Is(err, kerr.KafkaStorageError):
		return fmt.Errorf("%w: %v", ErrNoSpace, err)
	}
	return err
}

func (f *Filler) newBatch() error {
	recs := make([]record.Record, f.perBatch)
	ids := make([]string, f.perBatch)
	for i := range recs {
		ids[i] = fmt.Sprintf("r%d", f.next)
		f.next++
		v := bytes.Repeat([]byte{'x'}, f.valueSize)
		copy(v, ids[i]+":")
		recs[i] = record.Record{Timestamp: time.Now().UnixMilli(), Value: v}
	}
	b, err := record.AppendBatch(nil, record.BatchOptions{ProducerID: f.pid, ProducerEpoch: f.epoch, BaseSequence: f.seq}, recs)
	if err != nil {
		return err
	}
	f.pending, f.pendingN, f.pendingBytes = b, ids, f.perBatch*f.valueSize
	return nil
}

// FillUntilRefused produces until the partition refuses a batch for lack
// of disk space, three times in a row.
func (f *Filler) FillUntilRefused(ctx context.Context) error {
	refused := 0
	for refused < 3 {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("e2e: never refused: %w", err)
		}
		switch err := f.Produce(ctx); {
		case errors.Is(err, ErrNoSpace):
			refused++
			time.Sleep(20 * time.Millisecond)
		case err != nil:
			refused = 0
			time.Sleep(50 * time.Millisecond) // a leader change, say
		default:
			refused = 0
		}
	}
	return nil
}

// ProduceOne produces batches until one is acknowledged, or ctx ends.
func (f *Filler) ProduceOne(ctx context.Context) error {
	for {
		err := f.Produce(ctx)
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("e2e: no batch acknowledged (last: %v): %w", err, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// ReadBack reads the partition from its log start to its high watermark
// and checks it against what was acknowledged since the last Trim: every
// acknowledged record once, in order; nothing else but the pending
// batch's.
func (f *Filler) ReadBack(ctx context.Context) error {
	var got []string
	err := poll(ctx, "the partition read back", func() (bool, error) {
		ids, err := f.read(ctx)
		if err != nil {
			return false, nil // a leader change, a restart: try again
		}
		got = ids
		return true, nil
	})
	if err != nil {
		return err
	}
	var order []string
	seen := make(map[string]bool, len(got))
	for _, id := range got {
		switch {
		case seen[id]:
			return fmt.Errorf("e2e: record %s read twice", id)
		case slices.Contains(f.pendingN, id):
		default:
			order = append(order, id)
		}
		seen[id] = true
	}
	if !slices.Equal(order, f.Acked) {
		return fmt.Errorf("e2e: read %d records (%s), want the %d acknowledged (%s)",
			len(order), span(order), len(f.Acked), span(f.Acked))
	}
	return nil
}

func span(ids []string) string {
	if len(ids) == 0 {
		return "none"
	}
	return ids[0] + ".." + ids[len(ids)-1]
}

// read returns the ids of the partition's records, from its log start.
func (f *Filler) read(ctx context.Context) ([]string, error) {
	leader, err := f.c.Leader(ctx, f.topic, 0)
	if err != nil {
		return nil, err
	}
	offset, err := f.listOffset(ctx, leader.Node, -2) // the log start
	if err != nil {
		return nil, err
	}
	topicID, err := f.topicID(ctx, leader.Node)
	if err != nil {
		return nil, err
	}
	var ids []string
	for ctx.Err() == nil {
		req := kmsg.NewPtrFetchRequest()
		req.Version, req.ReplicaID, req.MaxBytes = 11, -1, 4<<20
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic, rt.TopicID = f.topic, topicID // kgo sends v13+, which names topics by id
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.FetchOffset, rp.PartitionMaxBytes = offset, 4<<20
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		resp, err := req.RequestWith(rctx, f.cl.Broker(leader.Node))
		cancel()
		if err != nil {
			return nil, err
		}
		p := resp.Topics[0].Partitions[0]
		if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
			return nil, err
		}
		b := p.RecordBatches
		for len(b) > 0 {
			one, rest, h, err := record.Next(b)
			if err != nil {
				break // a partial batch at the end of the response
			}
			recs, err := record.AppendRecords(nil, one)
			if err != nil {
				return nil, err
			}
			for _, r := range recs {
				id, _, _ := strings.Cut(string(r.Value), ":")
				ids = append(ids, id)
			}
			offset = h.NextOffset()
			b = rest
		}
		if offset >= p.HighWatermark {
			return ids, nil
		}
	}
	return nil, ctx.Err()
}

// topicID asks node for the topic's id.
func (f *Filler) topicID(ctx context.Context, node int) ([16]byte, error) {
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(f.topic)
	req.Topics = append(req.Topics, rt)
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	resp, err := req.RequestWith(rctx, f.cl.Broker(node))
	if err != nil {
		return [16]byte{}, err
	}
	if len(resp.Topics) != 1 {
		return [16]byte{}, fmt.Errorf("e2e: metadata of %s: %d topics", f.topic, len(resp.Topics))
	}
	return resp.Topics[0].TopicID, kerr.ErrorForCode(resp.Topics[0].ErrorCode)
}

// listOffset asks node for the partition's offset at ts (-1: the high
// watermark, -2: the log start).
func (f *Filler) listOffset(ctx context.Context, node int, ts int64) (int64, error) {
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID = -1
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = f.topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Timestamp = ts
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	resp, err := req.RequestWith(rctx, f.cl.Broker(node))
	if err != nil {
		return 0, err
	}
	p := resp.Topics[0].Partitions[0]
	if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
		return 0, err
	}
	return p.Offset, nil
}

// Trim deletes the partition's records below its high watermark
// (DeleteRecords) and forgets them.
func (f *Filler) Trim(ctx context.Context) error {
	return poll(ctx, "DeleteRecords", func() (bool, error) {
		leader, err := f.c.Leader(ctx, f.topic, 0)
		if err != nil {
			return false, nil
		}
		hw, err := f.listOffset(ctx, leader.Node, -1)
		if err != nil {
			return false, nil
		}
		rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		req := kmsg.NewPtrDeleteRecordsRequest()
		rt := kmsg.NewDeleteRecordsRequestTopic()
		rt.Topic = f.topic
		rp := kmsg.NewDeleteRecordsRequestTopicPartition()
		rp.Offset = hw
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics, req.TimeoutMillis = append(req.Topics, rt), 10000
		resp, err := req.RequestWith(rctx, f.cl.Broker(leader.Node))
		if err != nil || resp.Topics[0].Partitions[0].ErrorCode != 0 {
			return false, nil
		}
		f.Acked, f.AckedBytes, f.trimmedAt = nil, 0, hw
		return true, nil
	})
}
