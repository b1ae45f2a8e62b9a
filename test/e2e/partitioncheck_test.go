package e2e

import (
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// CheckReads flags a read of an offset the final log does not reach and
// one the final log holds another record at, and nothing else.
func TestCheckReadsFindsStaleReads(t *testing.T) {
	a, b, c := ID{1, "k", 0}, ID{1, "k", 1}, ID{2, "k", 0}
	logs := []PartitionLog{{Topic: "t", Partition: 0, Start: 0, End: 2, Records: []Stored{
		{Offset: 0, Key: []byte("k"), Value: a.Value(0)}, {Offset: 1, Key: []byte("k"), Value: b.Value(0)}}}}
	reads := []Read{
		{Topic: "t", Partition: 0, Offset: 0, Value: a.Value(0)}, // fine
		{Topic: "t", Partition: 0, Offset: 1, Value: c.Value(0)}, // replaced
		{Topic: "t", Partition: 0, Offset: 2, Value: c.Value(0)}, // beyond the end
		{Topic: "u", Partition: 0, Offset: 5, Value: c.Value(0)}, // not covered
	}
	got := CheckReads(reads, logs)
	if len(got) != 2 || got[0].Offset != 1 || got[1].Offset != 2 || got[0].Kind != StaleRead || got[0].ID != c {
		t.Fatalf("CheckReads = %v", got)
	}
	r := &Report{Problems: got}
	if !errors.Is(r.Err(), ErrStaleRead) {
		t.Fatalf("report error %v does not match ErrStaleRead", r.Err())
	}
}

// IsolatedAcks flags only acknowledgements of writes sent after the cut
// that arrived before the heal.
func TestIsolatedAcks(t *testing.T) {
	t0 := time.Now()
	w := IsolationWindow{Cut: t0, Healed: t0.Add(3 * time.Second)}
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	probes := []ProbeResult{
		{Sent: at(-time.Second), Done: at(time.Second), Acked: true},                         // sent before the cut
		{Sent: at(time.Second), Done: at(2 * time.Second), Acked: true},                      // violation
		{Sent: at(time.Second), Done: at(4 * time.Second), Acked: true},                      // after the heal
		{Sent: at(time.Second), Done: at(2 * time.Second), Code: 6},                          // refused
		{Sent: at(2 * time.Second), Done: at(2500 * time.Millisecond), Acks: 1, Acked: true}, // violation, acks=1
	}
	bad := IsolatedAcks(w, probes)
	if len(bad) != 2 || bad[0] != probes[1] || bad[1] != probes[4] {
		t.Fatalf("IsolatedAcks = %+v", bad)
	}
}

// The EpochWatch reports two leaders named for one epoch, once, and not
// a leader named again or a new epoch's leader.
func TestEpochWatchFindsTwoLeaders(t *testing.T) {
	w := &EpochWatch{leaders: map[epochKey]sighting{}, reported: map[epochKey]bool{}}
	md := func(leader, epoch int32) []kmsg.MetadataResponseTopic {
		p := kmsg.NewMetadataResponseTopicPartition()
		p.Leader, p.LeaderEpoch = leader, epoch
		tp := kmsg.NewMetadataResponseTopic()
		tp.Topic = kmsg.StringPtr("t")
		tp.Partitions = []kmsg.MetadataResponseTopicPartition{p}
		return []kmsg.MetadataResponseTopic{tp}
	}
	w.record(1, "t", md(1, 3))
	w.record(2, "t", md(1, 3))
	w.record(2, "t", md(2, 4))
	w.record(3, "t", md(-1, 4))
	if len(w.conflicts) != 0 {
		t.Fatalf("conflicts without two leaders: %v", w.conflicts)
	}
	w.record(3, "t", md(3, 4))
	w.record(3, "t", md(3, 4))
	if len(w.conflicts) != 1 || w.conflicts[0].Leaders != [2]int{2, 3} || w.conflicts[0].Nodes != [2]int{2, 3} {
		t.Fatalf("conflicts = %v", w.conflicts)
	}
}
