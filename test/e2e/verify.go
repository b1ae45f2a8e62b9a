package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka-go/client"
)

// Offsets asks node for a partition's log start offset and high watermark
// (ListOffsets earliest and latest). The node must be the leader.
func (c *Cluster) Offsets(ctx context.Context, node int, topic string, partition int32) (start, end int64, err error) {
	ask := func(ts int64) (int64, error) {
		req := kmsg.NewPtrListOffsetsRequest()
		req.SetVersion(7)
		req.ReplicaID = -1
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition = partition
		rp.CurrentLeaderEpoch = -1
		rp.Timestamp = ts
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		resp, err := Request(rctx, c.nodes[node-1].KafkaAddr, req)
		if err != nil {
			return 0, err
		}
		r := resp.(*kmsg.ListOffsetsResponse)
		if len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 1 {
			return 0, fmt.Errorf("e2e: ListOffsets %s[%d]: malformed answer", topic, partition)
		}
		p := r.Topics[0].Partitions[0]
		if p.ErrorCode != 0 {
			return 0, fmt.Errorf("e2e: ListOffsets %s[%d] on node %d: %w", topic, partition, node, &client.KafkaError{Code: p.ErrorCode})
		}
		return p.Offset, nil
	}
	if start, err = ask(-2); err != nil {
		return 0, 0, err
	}
	end, err = ask(-1)
	return start, end, err
}

// partitionBounds returns each partition of topic with its log start
// offset and high watermark, asked of its leader; it asks again while a
// leader moves (leadership returns to preferred replicas on its own after
// a restart).
func (c *Cluster) partitionBounds(ctx context.Context, topic string) ([]PartitionLog, error) {
	var logs []PartitionLog
	var last error
	err := poll(ctx, "the bounds of "+topic+"'s partitions", func() (bool, error) {
		leaders, err := c.Leaders(ctx, topic)
		if err != nil {
			return false, err
		}
		logs = make([]PartitionLog, len(leaders))
		for p, l := range leaders {
			start, end, err := c.Offsets(ctx, l.Node, topic, int32(p))
			var ke *client.KafkaError
			switch {
			case errors.As(err, &ke) && (ke.Code == kerr.NotLeaderForPartition.Code || ke.Code == kerr.FencedLeaderEpoch.Code):
				last = err
				return false, nil
			case err != nil:
				return false, err
			}
			logs[p] = PartitionLog{Topic: topic, Partition: int32(p), Start: start, End: end}
		}
		return true, nil
	})
	if err != nil && last != nil {
		err = fmt.Errorf("%w (last: %w)", err, last)
	}
	return logs, err
}

// ReadPartitions reads every partition of topic from its log start to its
// high watermark with a client.Consumer, after waiting for agreed leaders.
// Call it when nothing writes to the topic any more.
func (c *Cluster) ReadPartitions(ctx context.Context, topic string) ([]PartitionLog, error) {
	logs, err := c.partitionBounds(ctx, topic)
	if err != nil {
		return nil, err
	}
	assign := map[int32]client.Offset{}
	for _, pl := range logs {
		assign[pl.Partition] = client.At(pl.Start)
	}
	cons, err := client.NewConsumer(client.Brokers(c.Seeds()...),
		client.ConsumePartitions(map[string]map[int32]client.Offset{topic: assign}),
		client.FetchMaxWait(100*time.Millisecond), client.RequestTimeout(5*time.Second))
	if err != nil {
		return nil, err
	}
	defer cons.Close()
	done := func() bool {
		for _, pl := range logs {
			next := pl.Start
			if n := len(pl.Records); n > 0 {
				next = pl.Records[n-1].Offset + 1
			}
			if next < pl.End {
				return false
			}
		}
		return true
	}
	for !done() {
		recs, err := cons.Poll(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil, fmt.Errorf("e2e: reading %s: %w", topic, err)
			}
			continue // Poll retries what it can; the next call tries again
		}
		for _, r := range recs {
			pl := &logs[r.Partition]
			if r.Offset < pl.End {
				pl.Records = append(pl.Records, Stored{Offset: r.Offset, Key: r.Key, Value: r.Value})
			}
		}
	}
	return logs, nil
}

// logBytes is the total size of a replica's segment files, or -1.
func logBytes(dataDir, topic string, partition int32) int64 {
	files, err := filepath.Glob(filepath.Join(ReplicaDir(dataDir, topic, partition), "log", "*.log"))
	if err != nil || len(files) == 0 {
		return -1
	}
	var n int64
	for _, f := range files {
		fi, err := os.Stat(f)
		if err != nil {
			return -1
		}
		n += fi.Size()
	}
	return n
}

// WaitReplicasInSync waits until the running nodes' replicas of each of
// the topic's partitions hold the same number of bytes on disk. Call it
// when nothing writes any more, before StopAll, so that every replica has
// applied everything committed.
func (c *Cluster) WaitReplicasInSync(ctx context.Context, topic string, partitions int) error {
	return c.waitReplicasSettled(ctx, topic, partitions, 0)
}

// compactedQuiet is how long the replicas of a compacted topic must stay
// in sync and unchanged before they are compared: a leader goes on
// proposing cleanings after the last write (the dirty tail after its
// cleaner backoff, the tombstones once delete.retention.ms has passed),
// and a replica stopped before it applied one would differ from those
// stopped after. It covers the scenarios' 300 ms backoff and 1 s retention.
const compactedQuiet = 3 * time.Second

// waitReplicasSettled is WaitReplicasInSync where, in addition, the sizes
// have not changed for quiet.
func (c *Cluster) waitReplicasSettled(ctx context.Context, topic string, partitions int, quiet time.Duration) error {
	var last []int64
	var since time.Time
	return poll(ctx, "replicas of "+topic+" in sync", func() (bool, error) {
		holders, err := c.ReplicaSets(ctx, topic)
		if err != nil {
			return false, nil
		}
		var sizes []int64
		for p := range int32(partitions) {
			want := int64(-2)
			for _, id := range c.Running() {
				if !slices.Contains(holders[p], id) {
					continue
				}
				n := logBytes(c.nodes[id-1].DataDir, topic, p)
				if n < 0 || (want != -2 && n != want) {
					return false, nil
				}
				want = n
			}
			sizes = append(sizes, want)
		}
		if !slices.Equal(sizes, last) {
			last, since = sizes, time.Now()
		}
		return time.Since(since) >= quiet, nil
	})
}

// ErrStoredDiffers matches a *StoredDiffersError.
var ErrStoredDiffers = errors.New("e2e: stored log differs from what was read")

// StoredDiffersError is a partition whose stored log, read offline, does
// not hold exactly the records a consumer read from the running cluster.
type StoredDiffersError struct {
	Topic     string
	Partition int32
	Detail    string
}

func (e *StoredDiffersError) Error() string {
	return fmt.Sprintf("e2e: %s[%d]: stored log differs from what was read: %s", e.Topic, e.Partition, e.Detail)
}

// Unwrap gives ErrStoredDiffers.
func (e *StoredDiffersError) Unwrap() error { return ErrStoredDiffers }

// SameRecords returns nil if stored (decoded from a replica's files) holds
// exactly the records of read (from a consumer), else a
// *StoredDiffersError.
func SameRecords(read, stored PartitionLog) error {
	bad := func(format string, args ...any) error {
		return &StoredDiffersError{Topic: read.Topic, Partition: read.Partition, Detail: fmt.Sprintf(format, args...)}
	}
	if len(stored.Records) == 0 && len(read.Records) == 0 {
		return nil
	}
	if stored.End != read.End {
		return bad("stored log ends at %d, high watermark was %d", stored.End, read.End)
	}
	if len(stored.Records) != len(read.Records) {
		return bad("%d records stored, %d read", len(stored.Records), len(read.Records))
	}
	for i, s := range stored.Records {
		r := read.Records[i]
		if s.Offset != r.Offset || !bytes.Equal(s.Key, r.Key) || !bytes.Equal(s.Value, r.Value) {
			return bad("record %d: stored %d/%q/%.40q, read %d/%q/%.40q", i, s.Offset, s.Key, s.Value, r.Offset, r.Key, r.Value)
		}
	}
	return nil
}

// compareStored reads the stopped nodes' replicas of each partition read,
// compares them byte for byte, and compares the first with what was read
// (same); it returns the stored logs and what differed.
func (c *Cluster) compareStored(logs []PartitionLog, holders map[string]map[int32][]int, v *Verification,
	same func(read, stored PartitionLog) error) (storedLogs []PartitionLog, errs []error) {
	for _, pl := range logs {
		var reps []Replica
		for _, n := range c.nodes {
			if !slices.Contains(holders[pl.Topic][pl.Partition], n.ID) {
				continue // not a replica of this partition (a cluster of more nodes than the replication factor)
			}
			data, err := ReadReplicaLog(n.DataDir, pl.Topic, pl.Partition)
			if err != nil {
				errs = append(errs, fmt.Errorf("node %d: %w", n.ID, err))
				v.Mismatches++
				continue
			}
			reps = append(reps, Replica{Node: n.ID, Data: data})
		}
		v.Replicas += len(reps)
		if err := CompareReplicas(pl.Topic, pl.Partition, reps); err != nil {
			var me *ReplicaMismatchError
			if errors.As(err, &me) {
				v.Mismatches += len(me.Mismatches)
			}
			errs = append(errs, err)
		}
		if len(reps) == 0 {
			continue
		}
		stored, err := DecodeLog(pl.Topic, pl.Partition, reps[0].Data)
		if err == nil {
			storedLogs = append(storedLogs, stored)
			err = same(pl, stored)
		}
		if err != nil {
			v.Mismatches++
			errs = append(errs, fmt.Errorf("node %d: %w", reps[0].Node, err))
		}
	}
	return storedLogs, errs
}

// storedWithin is SameRecords for a compacted log, which a cleaning may
// have thinned since it was read: every stored record must be one read,
// at its offset, and the log must end where it did.
func storedWithin(read, stored PartitionLog) error {
	bad := func(format string, args ...any) error {
		return &StoredDiffersError{Topic: read.Topic, Partition: read.Partition, Detail: fmt.Sprintf(format, args...)}
	}
	if len(stored.Records) > 0 && stored.End != read.End {
		return bad("stored log ends at %d, high watermark was %d", stored.End, read.End)
	}
	i := 0
	for _, s := range stored.Records {
		for i < len(read.Records) && read.Records[i].Offset < s.Offset {
			i++
		}
		if i == len(read.Records) || read.Records[i].Offset != s.Offset ||
			!bytes.Equal(s.Key, read.Records[i].Key) || !bytes.Equal(s.Value, read.Records[i].Value) {
			return bad("stored record at %d (%q/%.40q) was not read there", s.Offset, s.Key, s.Value)
		}
	}
	return nil
}

// Verification is what Verify found.
type Verification struct {
	Report     *Report
	Partitions int // partitions read, checked and compared
	Replicas   int // replica logs read offline and compared
	Mismatches int // replicas not byte-identical to the first, and stored logs that differ from the read
}

func (v *Verification) String() string {
	return fmt.Sprintf("%d partitions, %d replicas compared, %d mismatches; %d attempts: %d acked, %d unknown (%d present), %d not sent; %d records stored, %d read during the run; problems: %s",
		v.Partitions, v.Replicas, v.Mismatches, v.Report.Attempts, v.Report.Acked, v.Report.Unknown,
		v.Report.UnknownPresent, v.Report.NotSent, v.Report.Stored, v.Report.Reads, problemCounts(v.Report))
}

func problemCounts(r *Report) string {
	var parts []string
	for k := range numKinds {
		if n := r.Count(k); n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, k))
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// Verify is the end of a run, when nothing writes any more: it reads every
// partition of the topics and Checks attempts against them, waits for the
// replicas to be in sync, stops every node gracefully, then reads every
// replica's log offline and compares them byte for byte, and with what was
// read. The error joins every problem found; the Verification holds the
// counts either way.
func (c *Cluster) Verify(ctx context.Context, attempts []Attempt, topics ...string) (*Verification, error) {
	return c.VerifyReads(ctx, attempts, nil, topics...)
}

// VerifyReads is Verify that also checks what consumers read during the
// run against the final logs (CheckReads).
func (c *Cluster) VerifyReads(ctx context.Context, attempts []Attempt, reads []Read, topics ...string) (*Verification, error) {
	return c.verify(ctx, attempts, reads, false, topics)
}

// VerifyCompacted is Verify for compacted topics: the logs read, and the
// logs stored once the nodes stopped, are checked with CheckCompacted, the
// replicas compared the same way. A cleaning may run between the read and
// the stop, so a stored log need only hold a subset of what was read.
func (c *Cluster) VerifyCompacted(ctx context.Context, attempts []Attempt, topics ...string) (*Verification, error) {
	return c.verify(ctx, attempts, nil, true, topics)
}

func (c *Cluster) verify(ctx context.Context, attempts []Attempt, reads []Read, compacted bool, topics []string) (*Verification, error) {
	check, same := Check, SameRecords
	if compacted {
		check, same = CheckCompacted, storedWithin
	}
	var logs []PartitionLog
	for _, t := range topics {
		pls, err := c.ReadPartitions(ctx, t)
		if err != nil {
			return nil, err
		}
		logs = append(logs, pls...)
	}
	v := &Verification{Report: check(attempts, logs), Partitions: len(logs)}
	v.Report.Reads = len(reads)
	v.Report.Problems = append(v.Report.Problems, CheckReads(reads, logs)...)
	errs := []error{v.Report.Err()}
	for _, t := range topics {
		n := 0
		for _, pl := range logs {
			if pl.Topic == t {
				n++
			}
		}
		quiet := time.Duration(0)
		if compacted {
			quiet = compactedQuiet
		}
		if err := c.waitReplicasSettled(ctx, t, n, quiet); err != nil {
			errs = append(errs, err) // the comparison below says how they differ
		}
	}
	holders := map[string]map[int32][]int{}
	for _, t := range topics {
		hs, err := c.ReplicaSets(ctx, t)
		if err != nil {
			errs = append(errs, err)
		}
		holders[t] = hs
	}
	if err := c.StopAll(ctx); err != nil {
		errs = append(errs, err)
	}
	storedLogs, cerrs := c.compareStored(logs, holders, v, same)
	errs = append(errs, cerrs...)
	if compacted {
		sr := CheckCompacted(attempts, storedLogs)
		v.Report.Problems = append(v.Report.Problems, sr.Problems...)
		errs = append(errs, sr.Err())
	}
	return v, errors.Join(errs...)
}
