package metadata

import (
	"bytes"
	"errors"
	"testing"

	"github.com/minikafka/minikafka-go/acl"
)

// richState uses every part of the state.
func richState(t testing.TB) *Snapshot {
	t.Helper()
	s := must(t, cluster3(t),
		RegisterBroker{ID: 7, KafkaAddr: "h7:9092", RaftAddr: "h7:9093"},
		CreateTopic{Name: "events", Partitions: 2, ReplicationFactor: 3, Assignment: [][]int32{{1, 2, 3}, {2, 3, 7}}},
		CreateTopic{Name: "cfg", Partitions: 1, ReplicationFactor: 1, Assignment: [][]int32{{7}},
			Configs: map[string]string{"segment.bytes": "1048576", "retention.ms": "-1"}},
		SetPartitionLeader{Topic: "events", Partition: 1, Leader: 7, Epoch: 4},
		AllocateProducerID{},
		AllocateProducerID{TransactionalID: ptr("tx-b")},
		AllocateProducerID{TransactionalID: ptr("tx-a")},
		AllocateProducerID{TransactionalID: ptr("tx-b")},
		CreateTopic{Name: "gone", Partitions: 1, ReplicationFactor: 1, Assignment: [][]int32{{1}}},
		DeleteTopic{Name: "gone"},
		CreateTopic{Name: "gone", Partitions: 1, ReplicationFactor: 1, Assignment: [][]int32{{2}}},
		DeleteTopic{Name: "gone"},
		AlterConfigs{Resource: ConfigClusterDefaults, Configs: map[string]string{"log.retention.ms": "5000", "producer.id.expiration.ms": "1000"}},
		RegisterBroker{ID: 8, KafkaAddr: "h8:9092", RaftAddr: "h8:9093", Listeners: "SASL_SSL://h8:9094,PLAINTEXT://h8:9092"},
		AlterScramCredentials{Upsertions: []ScramCredential{cred("bob", ScramSHA512), cred("alice", ScramSHA256), cred("alice", ScramSHA512)}},
		CreateACLs{Bindings: []acl.Binding{sampleBinding("bob"), sampleBinding("alice")}},
		AlterReassignment{Topic: "events", Partition: 1, Target: []int32{8, 3, 7}},
		AlterReassignment{Topic: "events", Partition: 0, Target: []int32{2, 3, 8}},
	)
	s = must(t, s, ReplicasRemoved{Broker: 2, Topics: s.DeletedTopicsToReport(2)[:1]})
	return s
}

func TestSnapshotRoundTrip(t *testing.T) {
	for name, s := range map[string]*Snapshot{"empty": {}, "initialized": cluster3(t), "rich": richState(t)} {
		t.Run(name, func(t *testing.T) {
			b, err := s.MarshalBinary()
			if err != nil {
				t.Fatal(err)
			}
			got, err := DecodeSnapshot(b)
			if err != nil {
				t.Fatal(err)
			}
			if !got.Equal(s) || !s.Equal(got) {
				t.Fatal("DecodeSnapshot(MarshalBinary(s)) differs from s")
			}
			if again, _ := got.MarshalBinary(); !bytes.Equal(again, b) {
				t.Fatal("re-encoding changed the bytes")
			}
		})
	}
	// Spot-check content, so that a field both sides dropped would show.
	s := richState(t)
	b, _ := s.MarshalBinary()
	got, _ := DecodeSnapshot(b)
	p, _ := got.Partition("events", 1)
	tx, _ := got.TransactionalProducer("tx-b")
	cfg, _ := got.Topic("cfg")
	ev, _ := got.Topic("events")
	byID, _ := got.TopicByID(ev.ID)
	if del := got.deleted.ids(); len(del) != 2 || len(got.DeletedTopicsToReport(2)) != 1 {
		t.Fatalf("deleted %v, reports lost", del)
	}
	if b8, _ := got.Broker(8); b8.Listeners != "PLAINTEXT://h8:9092,SASL_SSL://h8:9094" {
		t.Fatalf("listeners %q", b8.Listeners)
	}
	if c, ok := got.ScramCredential("bob", ScramSHA512); !ok || !c.equal(cred("bob", ScramSHA512)) {
		t.Fatalf("bob's credential %+v", c)
	}
	if p.Leader != 7 || p.LeaderEpoch != 4 || tx.Epoch != 1 || cfg.Configs["retention.ms"] != "-1" ||
		got.NextProducerID() != FirstProducerID+3 || got.AppliedIndex() != s.AppliedIndex() ||
		got.ClusterID() != "c1" || byID.Name != "events" || len(got.Brokers()) != 5 || got.deleted.len() != 2 ||
		got.ClusterConfigs()["log.retention.ms"] != "5000" || len(got.ScramCredentials()) != 3 ||
		!got.ACLs().Contains(sampleBinding("alice")) || got.ACLs().Len() != 2 {
		t.Fatalf("restored state lost data: %+v %+v %+v", p, tx, cfg)
	}
}

// Equal must notice a difference in each part of the state.
func TestSnapshotEqualDetectsDifferences(t *testing.T) {
	base := richState(t)
	variants := map[string]Command{
		"broker":          RegisterBroker{ID: 9, KafkaAddr: "h:1", RaftAddr: "h:2"},
		"topic":           CreateTopic{Name: "new", Partitions: 1, ReplicationFactor: 1, Assignment: [][]int32{{1}}},
		"leader":          SetPartitionLeader{Topic: "events", Partition: 0, Leader: 2, Epoch: 9},
		"producer":        AllocateProducerID{},
		"transaction":     AllocateProducerID{TransactionalID: ptr("tx-a")},
		"partitions":      CreatePartitions{Topic: "cfg", Count: 2, Assignment: [][]int32{{1}}},
		"topic configs":   AlterConfigs{Resource: ConfigTopic, Topic: "cfg", Configs: map[string]string{"retention.ms": "1"}},
		"cluster configs": AlterConfigs{Resource: ConfigClusterDefaults},
		"scram":           AlterScramCredentials{Deletions: []ScramDeletion{{"bob", ScramSHA512}}},
		"acls":            DeleteACLs{Filters: []acl.Filter{{ResourceType: acl.ResourceAny, Principal: ptr("User:bob"), Pattern: acl.PatternAny, Operation: acl.OpAny, Permission: acl.PermissionAny}}},
		"listeners":       RegisterBroker{ID: 8, KafkaAddr: "h8:9092", RaftAddr: "h8:9093", Listeners: "PLAINTEXT://h8:9092"},
		"deleted reports": ReplicasRemoved{Broker: 3, Topics: base.DeletedTopicsToReport(3)},
	}
	for name, cmd := range variants {
		next, _, err := base.Apply(base.index, cmd) // same index: only the content differs
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if next.Equal(base) || base.Equal(next) {
			t.Errorf("%s: Equal missed the change", name)
		}
	}
	moved := base.shallow()
	moved.index++
	if moved.Equal(base) {
		t.Error("Equal missed the applied index")
	}
	if base.Equal(nil) || !(*Snapshot)(nil).Equal(nil) {
		t.Error("Equal mishandles nil")
	}
}

func TestDecodeSnapshotErrors(t *testing.T) {
	good, _ := richState(t).MarshalBinary()
	// A hand-built snapshot: header, then the given body.
	build := func(body ...[]byte) []byte {
		b := append([]byte(snapshotMagic), snapshotVersion)
		for _, p := range body {
			b = append(b, p...)
		}
		return b
	}
	hdr := func(index uint64, cluster string, next int64) []byte {
		return appendI64(appendString(appendU64(nil, index), cluster), next)
	}
	brokerBytesV := func(version int, ids ...int32) []byte {
		b := appendLen(nil, len(ids))
		for _, id := range ids {
			b = appendString(appendString(appendI32(b, id), "h:1"), "h:2")
			if version >= 4 {
				b = appendString(b, "")
			}
		}
		return b
	}
	brokerBytes := func(ids ...int32) []byte { return brokerBytesV(snapshotVersion, ids...) }
	none := appendLen(nil, 0)

	tests := []struct {
		name string
		in   []byte
	}{
		{"empty", nil},
		{"bad magic", append([]byte("XXXX"), good[4:]...)},
		{"future version", append(append([]byte(snapshotMagic), snapshotVersion+1), good[5:]...)},
		{"deleted ids out of order", build(hdr(9, "c", FirstProducerID), brokerBytes(1), none, none,
			appendLen(nil, 2), bytes.Repeat([]byte{2}, 16), appendU64(nil, 1), none,
			bytes.Repeat([]byte{1}, 16), appendU64(nil, 1), none, none, none, none, none, appendString(nil, ""), none)},
		{"deleted id reported by every broker", build(hdr(9, "c", FirstProducerID), brokerBytes(1), none, none,
			appendLen(nil, 1), bytes.Repeat([]byte{1}, 16), appendU64(nil, 1), appendInt32s(nil, []int32{1}),
			none, none, none, none, appendString(nil, ""), none)},
		{"deleted id reported by an unknown broker", build(hdr(9, "c", FirstProducerID), brokerBytes(1), none, none,
			appendLen(nil, 1), bytes.Repeat([]byte{1}, 16), appendU64(nil, 1), appendInt32s(nil, []int32{5}),
			none, none, none, none, appendString(nil, ""), none)},
		{"deleted id reported twice", build(hdr(9, "c", FirstProducerID), brokerBytes(1, 2, 3), none, none,
			appendLen(nil, 1), bytes.Repeat([]byte{1}, 16), appendU64(nil, 1), appendInt32s(nil, []int32{2, 2}),
			none, none, none, none, appendString(nil, ""), none)},
		{"deleted after the applied index", build(hdr(9, "c", FirstProducerID), brokerBytes(1), none, none,
			appendLen(nil, 1), bytes.Repeat([]byte{1}, 16), appendU64(nil, 10), none,
			none, none, none, none, appendString(nil, ""), none)},
		{"truncated", good[:len(good)-1]},
		{"trailing byte", append(append([]byte{}, good...), 0)},
		{"brokers out of order", build(hdr(1, "c", FirstProducerID), brokerBytes(2, 1), none, none)},
		{"duplicate broker", build(hdr(1, "c", FirstProducerID), brokerBytes(1, 1), none, none)},
		{"state without cluster id", build(hdr(1, "", 0), brokerBytes(1), none, none)},
		{"producer id below first", build(hdr(1, "c", 5), none, none, none)},
		{"producer ids before init", build(hdr(1, "", FirstProducerID), none, none, none)},
		{"producer-id key of the wrong size", build(hdr(1, "c", FirstProducerID), none, none, none, none, none, none,
			appendString(nil, "short"))},
		{"producer id counter past the keyed ids", build(hdr(1, "c", ProducerIDKeyedBase), none, none, none, none, none, none,
			appendString(nil, ""))},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := DecodeSnapshot(tc.in)
			if !errors.Is(err, ErrMalformedSnapshot) || s != nil {
				t.Fatalf("DecodeSnapshot = %v, %v; want ErrMalformedSnapshot", s, err)
			}
		})
	}
	if _, err := DecodeSnapshot(build(hdr(1, "c", FirstProducerID), brokerBytes(1, 2), none, none, none, none, none, none, none,
		appendString(nil, ""), none, none, none)); err != nil {
		t.Fatalf("the hand-built control case fails: %v", err)
	}
	// Version 7 holds deleted ids without their index and reports: read as
	// deletes older than all others, reported by none.
	v7 := append([]byte(snapshotMagic), 7)
	for _, p := range [][]byte{hdr(9, "c", FirstProducerID), brokerBytes(1, 2), none, none,
		appendLen(nil, 1), bytes.Repeat([]byte{1}, 16), none, none, none, none, appendString(nil, "")} {
		v7 = append(v7, p...)
	}
	legacy := TopicID(bytes.Repeat([]byte{1}, 16))
	if s, err := DecodeSnapshot(v7); err != nil || !s.TopicDeleted(legacy) || len(s.DeletedTopicsToReport(2)) != 1 {
		t.Fatalf("version 7: %v, %v", s, err)
	} else if d, _ := s.deleted.get(legacy); d.at != 0 || d.reported != nil {
		t.Fatalf("version 7 deleted id read as %+v", d)
	}
	// Version 1, written before topics could be deleted, has no deleted
	// ids and is still read.
	v1 := append([]byte(snapshotMagic), 1)
	for _, p := range [][]byte{hdr(1, "c", FirstProducerID), brokerBytesV(1, 1, 2), none, none} {
		v1 = append(v1, p...)
	}
	if s, err := DecodeSnapshot(v1); err != nil || len(s.Brokers()) != 2 {
		t.Fatalf("version 1: %v, %v", s, err)
	}
	// Version 2, written before cluster configs, is read too.
	v2 := append([]byte(snapshotMagic), 2)
	for _, p := range [][]byte{hdr(1, "c", FirstProducerID), brokerBytesV(2, 1, 2), none, none, none} {
		v2 = append(v2, p...)
	}
	if s, err := DecodeSnapshot(v2); err != nil || len(s.Brokers()) != 2 || s.ClusterConfigs() != nil {
		t.Fatalf("version 2: %v, %v", s, err)
	}
	// Version 3, written before listeners and SCRAM credentials, is read too.
	v3 := append([]byte(snapshotMagic), 3)
	for _, p := range [][]byte{hdr(1, "c", FirstProducerID), brokerBytesV(3, 1, 2), none, none, none, none} {
		v3 = append(v3, p...)
	}
	if s, err := DecodeSnapshot(v3); err != nil || len(s.Brokers()) != 2 || s.ScramCredentials() != nil && len(s.ScramCredentials()) != 0 {
		t.Fatalf("version 3: %v, %v", s, err)
	}

	// Inconsistent states that MarshalBinary will happily write.
	bad := map[string]func(s *Snapshot){
		"replica on unknown broker": func(s *Snapshot) { delete(s.brokers, 7) },
		"leader not a replica": func(s *Snapshot) {
			tp := *s.topics["events"]
			tp.Partitions = append([]Partition{}, tp.Partitions...)
			tp.Partitions[0].Leader, tp.Partitions[0].LeaderEpoch = 7, 1
			s.topics["events"] = &tp
		},
		"transactional id ahead of next": func(s *Snapshot) { s.nextProducerID = FirstProducerID },
		"two topics with one id": func(s *Snapshot) {
			tp := *s.topics["cfg"]
			tp.ID = s.topics["events"].ID
			s.topics["cfg"] = &tp
		},
	}
	for name, corrupt := range bad {
		t.Run(name, func(t *testing.T) {
			s := richState(t)
			s.brokers, s.topics, s.transactional = cloneMap(s.brokers), cloneMap(s.topics), cloneMap(s.transactional)
			corrupt(s)
			b, _ := s.MarshalBinary()
			if _, err := DecodeSnapshot(b); !errors.Is(err, ErrMalformedSnapshot) {
				t.Fatalf("err = %v, want ErrMalformedSnapshot", err)
			}
		})
	}
}

// FuzzDecodeSnapshot: no panics, only ErrMalformedSnapshot, and accepted
// bytes are canonical and consistent.
func FuzzDecodeSnapshot(f *testing.F) {
	withQuotas := must(f, richState(f), setQuota(QuotaEntity{User: NamedQuota("u"), ClientID: DefaultQuota()}, QuotaProducerByteRate, 1024))
	for _, s := range []*Snapshot{{}, cluster3(f), richState(f), withQuotas} {
		b, _ := s.MarshalBinary()
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := DecodeSnapshot(b)
		if err != nil {
			if !errors.Is(err, ErrMalformedSnapshot) {
				t.Fatalf("unexpected error %v", err)
			}
			return
		}
		if again, _ := s.MarshalBinary(); !bytes.Equal(again, b) {
			t.Fatalf("DecodeSnapshot(%x) re-encodes to %x", b, again)
		}
		if err := s.check(); err != nil {
			t.Fatalf("accepted an inconsistent state: %v", err)
		}
	})
}

// Equal notices a deleted id alone: a state whose deleted topic was the
// only difference.
func TestSnapshotEqualSeesDeletedIDs(t *testing.T) {
	base := must(t, cluster3(t), CreateTopic{Name: "x", Partitions: 1, ReplicationFactor: 1, Assignment: [][]int32{{1}}})
	gone := must(t, base, DeleteTopic{Name: "x"})
	plain := must(t, cluster3(t))
	gone.index, plain.index = 0, 0
	if gone.Equal(plain) || plain.Equal(gone) {
		t.Fatal("Equal missed a deleted topic id")
	}
}

func TestParseTopicID(t *testing.T) {
	s := richState(t)
	ev, _ := s.Topic("events")
	if id, err := ParseTopicID(ev.ID.String()); err != nil || id != ev.ID {
		t.Fatalf("ParseTopicID(%s) = %v, %v", ev.ID, id, err)
	}
	for _, bad := range []string{"", "AAAA", "!!!!!!!!!!!!!!!!!!!!!!", ev.ID.String() + "AA"} {
		if _, err := ParseTopicID(bad); err == nil {
			t.Errorf("ParseTopicID(%q) succeeded", bad)
		}
	}
}

func TestTopicLookupsWithoutCopyingTheTopic(t *testing.T) {
	s := must(t, cluster3(t),
		CreateTopic{Name: "plain", Partitions: 1, ReplicationFactor: 1, Assignment: [][]int32{{1}}},
		CreateTopic{Name: "tuned", Partitions: 1, ReplicationFactor: 1, Assignment: [][]int32{{2}},
			Configs: map[string]string{"retention.ms": "1000"}})
	for _, name := range []string{"plain", "tuned"} {
		topic, _ := s.Topic(name)
		if id, ok := s.TopicID(name); !ok || id != topic.ID || id.IsZero() {
			t.Errorf("TopicID(%q) = %v, %v; want %v, true", name, id, ok, topic.ID)
		}
	}
	if id, ok := s.TopicID("missing"); ok || !id.IsZero() {
		t.Errorf("TopicID(missing) = %v, %v; want zero, false", id, ok)
	}
	s3 := must(t, s, CreateTopic{Name: "three", Partitions: 3, ReplicationFactor: 1, Assignment: [][]int32{{1}, {2}, {3}}})
	if n, ok := s3.TopicPartitions("three"); !ok || n != 3 {
		t.Errorf("TopicPartitions(three) = %d, %v; want 3, true", n, ok)
	}
	if n, ok := s3.TopicPartitions("missing"); ok || n != 0 {
		t.Errorf("TopicPartitions(missing) = %d, %v; want 0, false", n, ok)
	}
	if c := s.TopicConfigs("plain"); c != nil {
		t.Errorf("TopicConfigs(plain) = %v; want nil", c)
	}
	if c := s.TopicConfigs("missing"); c != nil {
		t.Errorf("TopicConfigs(missing) = %v; want nil", c)
	}
	c := s.TopicConfigs("tuned")
	if c["retention.ms"] != "1000" || len(c) != 1 {
		t.Fatalf("TopicConfigs(tuned) = %v", c)
	}
	c["retention.ms"] = "1" // the copy is the caller's
	if again := s.TopicConfigs("tuned"); again["retention.ms"] != "1000" {
		t.Errorf("TopicConfigs shares its map with the state: %v", again)
	}
}
