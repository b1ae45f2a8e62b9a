package e2e

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/minikafka/minikafka-go/record"
)

// makeBatch is a stored batch at base holding one record per id.
func makeBatch(t *testing.T, base int64, ids ...ID) []byte {
	t.Helper()
	var recs []record.Record
	for _, id := range ids {
		recs = append(recs, record.Record{Timestamp: 1, Key: []byte(id.Key), Value: id.Value(0)})
	}
	b, err := record.AppendBatch(nil, record.PlainBatch(record.CompressionNone), recs)
	if err != nil {
		t.Fatal(err)
	}
	record.SetBaseOffset(b, base)
	return b
}

// threeBatches is a log of offsets 0..4 in batches at 0, 2 and 3.
func threeBatches(t *testing.T) (data []byte, batches [][]byte) {
	batches = [][]byte{
		makeBatch(t, 0, ID{0, "a", 0}, ID{0, "a", 1}),
		makeBatch(t, 2, ID{0, "b", 0}),
		makeBatch(t, 3, ID{0, "a", 2}, ID{0, "b", 1}),
	}
	return bytes.Join(batches, nil), batches
}

func TestCompareReplicasIdentical(t *testing.T) {
	data, _ := threeBatches(t)
	reps := []Replica{{1, data}, {2, bytes.Clone(data)}, {3, bytes.Clone(data)}}
	if err := CompareReplicas("t", 0, reps); err != nil {
		t.Fatal(err)
	}
}

func TestCompareReplicasMismatch(t *testing.T) {
	data, batches := threeBatches(t)
	flipped := bytes.Clone(data)
	at := len(batches[0]) + len(batches[1]) + 30 // inside the batch at offset 3
	flipped[at] ^= 0xff
	short := data[:len(batches[0])] // a replica missing the last two batches

	err := CompareReplicas("t", 4, []Replica{{1, data}, {2, flipped}, {3, short}})
	if !errors.Is(err, ErrReplicaMismatch) {
		t.Fatalf("error %v, want ErrReplicaMismatch", err)
	}
	var me *ReplicaMismatchError
	if !errors.As(err, &me) || len(me.Mismatches) != 2 {
		t.Fatalf("mismatches %v, want 2", err)
	}
	want := []Mismatch{
		{Topic: "t", Partition: 4, Node: 2, RefNode: 1, Len: len(data), RefLen: len(data), At: at, Offset: 3},
		{Topic: "t", Partition: 4, Node: 3, RefNode: 1, Len: len(short), RefLen: len(data), At: len(short), Offset: 2},
	}
	for i, m := range me.Mismatches {
		if m != want[i] {
			t.Errorf("mismatch %d: %+v, want %+v", i, m, want[i])
		}
	}
	// The other way round: the reference is the short one.
	err = CompareReplicas("t", 4, []Replica{{3, short}, {1, data}})
	if !errors.As(err, &me) || me.Mismatches[0].Offset != -1 || me.Mismatches[0].At != len(short) {
		t.Fatalf("longer replica: %v", err)
	}
}

// writeSegments lays out segment files as a node's data directory holds
// them and returns the data directory.
func writeSegments(t *testing.T, segs map[int64][]byte) string {
	t.Helper()
	dataDir := t.TempDir()
	dir := filepath.Join(ReplicaDir(dataDir, "t", 0), "log")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for base, b := range segs {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("%020d.log", base)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// An index file, which must be ignored.
	if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("%020d.index", 0)), []byte("index"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dataDir
}

func TestReadReplicaLog(t *testing.T) {
	data, b := threeBatches(t)
	dataDir := writeSegments(t, map[int64][]byte{0: append(bytes.Clone(b[0]), b[1]...), 3: b[2], 5: nil})
	got, err := ReadReplicaLog(dataDir, "t", 0)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, data) {
		t.Fatalf("read %d bytes, want the %d written", len(got), len(data))
	}
	pl, err := DecodeLog("t", 0, got)
	if err != nil {
		t.Fatal(err)
	}
	if pl.Start != 0 || pl.End != 5 || len(pl.Records) != 5 {
		t.Fatalf("decoded %+v", pl)
	}
	wantIDs := []ID{{0, "a", 0}, {0, "a", 1}, {0, "b", 0}, {0, "a", 2}, {0, "b", 1}}
	for i, r := range pl.Records {
		id, ok := ParseValue(r.Value)
		if r.Offset != int64(i) || !ok || id != wantIDs[i] || string(r.Key) != id.Key {
			t.Fatalf("record %d: offset %d id %v", i, r.Offset, id)
		}
	}
}

func TestReadReplicaLogRejectsBadSegments(t *testing.T) {
	_, b := threeBatches(t)
	corrupt := bytes.Clone(b[2])
	corrupt[len(corrupt)-1] ^= 1
	cases := map[string]map[int64][]byte{
		"torn tail":               {0: append(bytes.Clone(b[0]), b[1][:20]...)},
		"bad crc":                 {0: append(bytes.Clone(b[0]), b[1]...), 3: corrupt},
		"name disagrees":          {1: b[0]},
		"gap between segments":    {0: b[0], 3: b[2]},
		"offsets not consecutive": {0: append(bytes.Clone(b[0]), b[2]...)},
	}
	for name, segs := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := ReadReplicaLog(writeSegments(t, segs), "t", 0)
			var se *SegmentError
			if !errors.Is(err, ErrBadSegment) || !errors.As(err, &se) {
				t.Fatalf("error %v, want a *SegmentError", err)
			}
		})
	}
}

func TestSameRecords(t *testing.T) {
	data, _ := threeBatches(t)
	stored, err := DecodeLog("t", 0, data)
	if err != nil {
		t.Fatal(err)
	}
	read := stored
	read.Records = append([]Stored(nil), stored.Records...)
	if err := SameRecords(read, stored); err != nil {
		t.Fatal(err)
	}
	read.Records[3].Value = []byte("other")
	if err := SameRecords(read, stored); !errors.Is(err, ErrStoredDiffers) {
		t.Fatalf("changed value: %v", err)
	}
	read.Records = read.Records[:4]
	read.End = 4
	if err := SameRecords(read, stored); !errors.Is(err, ErrStoredDiffers) {
		t.Fatalf("shorter read: %v", err)
	}
}
