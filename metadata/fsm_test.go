package metadata

import (
	"bytes"
	"context"
	"errors"
	"io"
	"reflect"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// scenario is a command log touching every command, with rejections mixed in.
func scenario() []Command {
	return []Command{
		broker(1), // rejected: before InitCluster
		InitCluster{ClusterID: "c1"},
		broker(1), broker(2), broker(3),
		CreateTopic{Name: "events", Partitions: 2, ReplicationFactor: 3, Assignment: [][]int32{{1, 2, 3}, {2, 3, 1}}},
		CreateTopic{Name: "events", Partitions: 1, ReplicationFactor: 1, Assignment: [][]int32{{1}}}, // rejected: exists
		SetPartitionLeader{Topic: "events", Partition: 0, Leader: 1, Epoch: 2},
		SetPartitionLeader{Topic: "events", Partition: 0, Leader: 2, Epoch: 1}, // stale
		AllocateProducerID{},
		AllocateProducerID{TransactionalID: ptr("tx")},
		AllocateProducerID{TransactionalID: ptr("tx")},
	}
}

func logs(t testing.TB, cmds []Command) []*raft.Log {
	t.Helper()
	out := make([]*raft.Log, len(cmds))
	for i, c := range cmds {
		b, err := Encode(c)
		if err != nil {
			t.Fatal(err)
		}
		out[i] = &raft.Log{Index: uint64(i + 1), Term: 1, Type: raft.LogCommand, Data: b}
	}
	return out
}

func TestFSMApplyResults(t *testing.T) {
	f := NewFSM(quiet())
	results := make([]any, 0)
	for _, l := range logs(t, scenario()) {
		results = append(results, f.Apply(l))
	}
	if err, _ := results[0].(error); !errors.Is(err, ErrClusterNotInitialized) {
		t.Fatalf("entry 1: %v", results[0])
	}
	if r, ok := results[5].(CreateTopicResult); !ok || r.Topic.Name != "events" || r.Topic.ID.IsZero() {
		t.Fatalf("entry 6: %#v", results[5])
	}
	if err, _ := results[6].(error); !errors.Is(err, ErrTopicExists) {
		t.Fatalf("entry 7: %v", results[6])
	}
	if r := results[8].(SetPartitionLeaderResult); r.Applied || r.Leader != 1 {
		t.Fatalf("entry 9: %+v", r)
	}
	if r := results[11].(ProducerIdentity); r != (ProducerIdentity{FirstProducerID + 1, 1}) {
		t.Fatalf("entry 12: %+v", r)
	}
	if got := f.State().AppliedIndex(); got != 12 {
		t.Fatalf("AppliedIndex = %d, want 12", got)
	}
}

func TestFSMApplyUndecodable(t *testing.T) {
	f := NewFSM(quiet())
	res := f.Apply(&raft.Log{Index: 4, Type: raft.LogCommand, Data: []byte{200, 1}})
	if err, _ := res.(error); !errors.Is(err, ErrUnknownCommand) {
		t.Fatalf("Apply(garbage) = %v", res)
	}
	if f.State().AppliedIndex() != 4 || f.State().Initialized() {
		t.Fatalf("state after garbage: index %d", f.State().AppliedIndex())
	}
	if res := f.Apply(&raft.Log{Index: 5, Type: raft.LogNoop}); res != nil || f.State().AppliedIndex() != 5 {
		t.Fatalf("Apply(noop) = %v, index %d", res, f.State().AppliedIndex())
	}
}

// Two replicas fed the same log hold equal, byte-identical states.
func TestFSMReplicasAgree(t *testing.T) {
	a, b := NewFSM(quiet()), NewFSM(quiet())
	for _, l := range logs(t, scenario()) {
		// Results, errors included, are equal values (typed errors with
		// equal fields, or the same sentinel).
		if ra, rb := a.Apply(l), b.Apply(l); !reflect.DeepEqual(ra, rb) {
			t.Fatalf("index %d: results %#v and %#v", l.Index, ra, rb)
		}
	}
	if !a.State().Equal(b.State()) {
		t.Fatal("replicas differ")
	}
	ba, _ := a.State().MarshalBinary()
	bb, _ := b.State().MarshalBinary()
	if !bytes.Equal(ba, bb) {
		t.Fatal("replicas encode differently")
	}
	// A third replica that diverges by one entry is not Equal.
	c := NewFSM(quiet())
	for _, l := range logs(t, scenario()[:len(scenario())-1]) {
		c.Apply(l)
	}
	if c.State().Equal(a.State()) {
		t.Fatal("Equal did not see the missing entry")
	}
}

// memSink is a raft.SnapshotSink in memory.
type memSink struct {
	bytes.Buffer
	closed, cancelled bool
	failWrite         error
}

func (s *memSink) ID() string { return "mem" }
func (s *memSink) Cancel() error {
	s.cancelled = true
	return nil
}
func (s *memSink) Close() error {
	s.closed = true
	return nil
}
func (s *memSink) Write(p []byte) (int, error) {
	if s.failWrite != nil {
		return 0, s.failWrite
	}
	return s.Buffer.Write(p)
}

func TestFSMSnapshotRestore(t *testing.T) {
	src := NewFSM(quiet())
	for _, l := range logs(t, scenario()) {
		src.Apply(l)
	}
	snap, err := src.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Release()
	// Entries applied after Snapshot() do not leak into what it persists.
	src.Apply(&raft.Log{Index: 100, Type: raft.LogCommand, Data: mustEncode(t, AllocateProducerID{})})
	sink := &memSink{}
	if err := snap.Persist(sink); err != nil || !sink.closed || sink.cancelled {
		t.Fatalf("Persist: %v, closed %v cancelled %v", err, sink.closed, sink.cancelled)
	}

	// The destination has other state, which Restore must discard.
	dst := NewFSM(quiet())
	for _, l := range logs(t, []Command{InitCluster{ClusterID: "c1"}, broker(9),
		CreateTopic{Name: "gone", Partitions: 1, ReplicationFactor: 1, Assignment: [][]int32{{9}}}}) {
		dst.Apply(l)
	}
	watch := dst.Watch()
	if err := dst.Restore(io.NopCloser(bytes.NewReader(sink.Bytes()))); err != nil {
		t.Fatal(err)
	}
	select {
	case <-watch:
	default:
		t.Fatal("Restore did not wake watchers")
	}
	want := src.State()
	if dst.State().Equal(want) {
		t.Fatal("snapshot includes an entry applied after it was taken")
	}
	if _, ok := dst.State().Topic("gone"); ok {
		t.Fatal("Restore kept a topic from the previous state")
	}
	redo := NewFSM(quiet())
	for _, l := range logs(t, scenario()) {
		redo.Apply(l)
	}
	if !dst.State().Equal(redo.State()) {
		t.Fatal("restored state differs from the state at snapshot time")
	}

	// A bad snapshot leaves the state alone.
	before := dst.State()
	if err := dst.Restore(io.NopCloser(bytes.NewReader([]byte("junk")))); !errors.Is(err, ErrMalformedSnapshot) {
		t.Fatalf("Restore(junk) = %v", err)
	}
	if dst.State() != before {
		t.Fatal("failed Restore changed the state")
	}
}

func TestPersistCancelsOnWriteError(t *testing.T) {
	f := NewFSM(quiet())
	snap, _ := f.Snapshot()
	boom := errors.New("disk full")
	sink := &memSink{failWrite: boom}
	if err := snap.Persist(sink); !errors.Is(err, boom) || !sink.cancelled || sink.closed {
		t.Fatalf("Persist = %v, cancelled %v closed %v", err, sink.cancelled, sink.closed)
	}
}

func mustEncode(t testing.TB, c Command) []byte {
	t.Helper()
	b, err := Encode(c)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestFSMWatch(t *testing.T) {
	f := NewFSM(quiet())
	w := f.Watch()
	select {
	case <-w:
		t.Fatal("watch closed before any change")
	default:
	}
	f.Apply(&raft.Log{Index: 1, Type: raft.LogCommand, Data: mustEncode(t, InitCluster{ClusterID: "c"})})
	select {
	case <-w:
	default:
		t.Fatal("watch not closed by Apply")
	}
	w2 := f.Watch()
	if w2 == w {
		t.Fatal("Watch returned the closed channel again")
	}
	// A rejected command still moves the index, so it wakes watchers too.
	f.Apply(&raft.Log{Index: 2, Type: raft.LogCommand, Data: mustEncode(t, InitCluster{ClusterID: "other"})})
	select {
	case <-w2:
	default:
		t.Fatal("watch not closed by a rejected command")
	}
}

func TestFSMWaitFor(t *testing.T) {
	f := NewFSM(quiet())
	hasTopic := func(s *Snapshot) bool { _, ok := s.Topic("t"); return ok }

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	done := make(chan *Snapshot)
	go func() {
		s, err := f.WaitFor(ctx, hasTopic)
		if err != nil {
			t.Error(err)
		}
		done <- s
	}()
	for _, l := range logs(t, []Command{InitCluster{ClusterID: "c"}, broker(1),
		CreateTopic{Name: "t", Partitions: 1, ReplicationFactor: 1, Assignment: [][]int32{{1}}}}) {
		f.Apply(l)
	}
	if s := <-done; s == nil || !hasTopic(s) || s.AppliedIndex() != 3 {
		t.Fatalf("WaitFor returned %v", s)
	}

	// Already true: returns at once. Never true: returns the context's error.
	if s, err := f.WaitFor(ctx, hasTopic); err != nil || s != f.State() {
		t.Fatalf("WaitFor(already true) = %v, %v", s, err)
	}
	short, cancel2 := context.WithCancel(context.Background())
	cancel2()
	if s, err := f.WaitFor(short, func(*Snapshot) bool { return false }); !errors.Is(err, context.Canceled) || s != nil {
		t.Fatalf("WaitFor(cancelled) = %v, %v", s, err)
	}
}

// Readers hold a state while Apply moves on; what they hold never changes.
func TestFSMStateIsImmutable(t *testing.T) {
	f := NewFSM(quiet())
	all := logs(t, scenario())
	for _, l := range all[:6] {
		f.Apply(l)
	}
	held := f.State()
	before, _ := held.MarshalBinary()
	for _, l := range all[6:] {
		f.Apply(l)
	}
	if after, _ := held.MarshalBinary(); !bytes.Equal(before, after) {
		t.Fatal("a held state changed under later Applies")
	}
	if held.Equal(f.State()) {
		t.Fatal("later Applies did not produce a new state")
	}
}
