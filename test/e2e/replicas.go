package e2e

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/minikafka/minikafka-go/record"
)

// ReplicaDir is where a node keeps its replica of a partition:
// <data_dir>/partitions/<topic>-<partition>.
func ReplicaDir(dataDir, topic string, partition int32) string {
	return filepath.Join(dataDir, "partitions", fmt.Sprintf("%s-%d", topic, partition))
}

// ErrBadSegment matches a *SegmentError.
var ErrBadSegment = errors.New("e2e: bad segment file")

// SegmentError is a segment file that does not hold whole, valid batches
// starting at the offset in its name.
type SegmentError struct {
	Path string
	Err  error
}

func (e *SegmentError) Error() string { return fmt.Sprintf("e2e: segment %s: %v", e.Path, e.Err) }

// Unwrap gives ErrBadSegment and the cause.
func (e *SegmentError) Unwrap() []error { return []error{ErrBadSegment, e.Err} }

// segmentBase parses a segment file name, "%020d.log".
func segmentBase(name string) (int64, bool) {
	digits, ok := strings.CutSuffix(name, ".log")
	if !ok || len(digits) != 20 {
		return 0, false
	}
	n, err := strconv.ParseInt(digits, 10, 64)
	return n, err == nil && n >= 0
}

// ReadReplicaLog reads a replica's stored batches offline: the segment
// files of its log/ directory in offset order, concatenated. The node must
// be stopped (a running node may be appending). It only reads. Each
// segment must hold whole batches (CRC-checked) starting at the offset in
// its name, continuing the previous segment.
func ReadReplicaLog(dataDir, topic string, partition int32) ([]byte, error) {
	dir := filepath.Join(ReplicaDir(dataDir, topic, partition), "log")
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var bases []int64
	for _, e := range entries {
		if b, ok := segmentBase(e.Name()); ok && e.Type().IsRegular() {
			bases = append(bases, b)
		}
	}
	slices.Sort(bases)
	var out []byte
	next := int64(-1)
	for _, base := range bases {
		path := filepath.Join(dir, fmt.Sprintf("%020d.log", base))
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		if len(data) == 0 {
			continue // a fresh active segment
		}
		if next >= 0 && base != next {
			return nil, &SegmentError{Path: path, Err: fmt.Errorf("starts at %d, previous segment ends at %d", base, next)}
		}
		at := base
		for rest := data; len(rest) > 0; {
			batch, r, h, err := record.Next(rest)
			if err != nil {
				return nil, &SegmentError{Path: path, Err: fmt.Errorf("at byte %d: %w", len(data)-len(rest), err)}
			}
			if _, err := record.Check(batch); err != nil {
				return nil, &SegmentError{Path: path, Err: fmt.Errorf("batch at offset %d: %w", h.BaseOffset, err)}
			}
			if h.BaseOffset != at {
				return nil, &SegmentError{Path: path, Err: fmt.Errorf("batch at offset %d, expected %d", h.BaseOffset, at)}
			}
			at = h.NextOffset()
			rest = r
		}
		next = at
		out = append(out, data...)
	}
	return out, nil
}

// DecodeLog turns concatenated stored batches (ReadReplicaLog's result)
// into the records they hold. Start is the first batch's base offset (0
// for an empty log) and End the offset after the last record.
func DecodeLog(topic string, partition int32, data []byte) (PartitionLog, error) {
	pl := PartitionLog{Topic: topic, Partition: partition}
	first := true
	var recs []record.Record
	for rest := data; len(rest) > 0; {
		batch, r, h, err := record.Next(rest)
		if err != nil {
			return pl, fmt.Errorf("e2e: %s[%d] at byte %d: %w", topic, partition, len(data)-len(rest), err)
		}
		rest = r
		if first {
			pl.Start, first = h.BaseOffset, false
		}
		pl.End = h.NextOffset()
		if h.IsControl() {
			continue
		}
		recs, err = record.AppendRecords(recs[:0], batch)
		if err != nil {
			return pl, fmt.Errorf("e2e: %s[%d] batch %d: %w", topic, partition, h.BaseOffset, err)
		}
		for _, rec := range recs {
			pl.Records = append(pl.Records, Stored{Offset: rec.Offset, Key: bytes.Clone(rec.Key), Value: bytes.Clone(rec.Value)})
		}
	}
	return pl, nil
}

// Replica is one node's stored log of a partition.
type Replica struct {
	Node int
	Data []byte
}

// Mismatch is a replica whose log differs from the first replica's.
type Mismatch struct {
	Topic     string
	Partition int32
	Node      int   // the differing replica
	RefNode   int   // the replica compared against
	Len       int   // bytes of Node's log
	RefLen    int   // bytes of RefNode's log
	At        int   // first differing byte (min(Len, RefLen) if one is a prefix)
	Offset    int64 // base offset of RefNode's batch holding byte At; -1 past its end
}

func (m Mismatch) String() string {
	return fmt.Sprintf("%s[%d]: node %d (%d bytes) differs from node %d (%d bytes) at byte %d (batch at offset %d)",
		m.Topic, m.Partition, m.Node, m.Len, m.RefNode, m.RefLen, m.At, m.Offset)
}

// ErrReplicaMismatch matches a *ReplicaMismatchError.
var ErrReplicaMismatch = errors.New("e2e: replicas differ")

// ReplicaMismatchError lists replicas that are not byte-identical.
type ReplicaMismatchError struct {
	Mismatches []Mismatch
}

func (e *ReplicaMismatchError) Error() string {
	parts := make([]string, len(e.Mismatches))
	for i, m := range e.Mismatches {
		parts[i] = m.String()
	}
	return "e2e: replicas differ: " + strings.Join(parts, "; ")
}

// Unwrap gives ErrReplicaMismatch.
func (e *ReplicaMismatchError) Unwrap() error { return ErrReplicaMismatch }

// CompareReplicas compares every replica's log with the first one's and
// returns a *ReplicaMismatchError listing each that is not byte-identical,
// or nil.
func CompareReplicas(topic string, partition int32, replicas []Replica) error {
	if len(replicas) < 2 {
		return nil
	}
	ref := replicas[0]
	var ms []Mismatch
	for _, r := range replicas[1:] {
		if bytes.Equal(r.Data, ref.Data) {
			continue
		}
		at := 0
		for at < len(r.Data) && at < len(ref.Data) && r.Data[at] == ref.Data[at] {
			at++
		}
		ms = append(ms, Mismatch{Topic: topic, Partition: partition, Node: r.Node, RefNode: ref.Node,
			Len: len(r.Data), RefLen: len(ref.Data), At: at, Offset: batchAt(ref.Data, at)})
	}
	if len(ms) == 0 {
		return nil
	}
	return &ReplicaMismatchError{Mismatches: ms}
}

// batchAt returns the base offset of the batch of data that holds byte
// pos, or -1.
func batchAt(data []byte, pos int) int64 {
	start := 0
	for rest := data; len(rest) > 0; {
		_, r, h, err := record.Next(rest)
		if err != nil {
			return -1
		}
		end := start + len(rest) - len(r)
		if pos < end {
			return h.BaseOffset
		}
		start, rest = end, r
	}
	return -1
}
