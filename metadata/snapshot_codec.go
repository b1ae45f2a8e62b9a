package metadata

import (
	"bytes"
	"fmt"

	"github.com/minikafka/minikafka-go/acl"
)

// Snapshot encoding, version 11 (primitives in wire.go):
//
//	"MKMD" u8(version=11)
//	u64 appliedIndex, string clusterID, i64 nextProducerID
//	array of brokers, by id:         i32 id, string kafkaAddr, string raftAddr,
//	                                 string listeners                   (version 4 on)
//	array of topics, by name:        string name, [16]byte id,
//	                                 array of partitions: array of i32 replicas, i32 leader, i32 leaderEpoch
//	                                 array of configs, by key: string key, string value
//	array of transactional ids, by id: string transactionalID, i64 producerID, i16 epoch
//	array of deleted topics, by id bytes: [16]byte id          (version 2 on)
//	                                 u64 deletedAt, array of i32 reported brokers (version 8 on)
//	array of cluster configs, by key: string key, string value (version 3 on)
//	array of scram credentials, by user then mechanism:         (version 4 on)
//	                                 string user, u8 mechanism, i32 iterations,
//	                                 string salt, string storedKey, string serverKey
//	array of acl bindings, by acl.Compare:                      (version 5 on)
//	                                 u8 resourceType, string name, u8 pattern,
//	                                 string principal, string host, u8 operation, u8 permission
//	array of reassignments, by topic then partition:             (version 6 on)
//	                                 string topic, i32 partition,
//	                                 array of i32 original, array of i32 target
//	string producerIDKey, empty when unset                         (version 7 on)
//	array of feature levels set, by name: string name, i16 level   (version 9 on)
//	array of delegation tokens, by id (dtoken_codec.go)            (version 10 on)
//	array of client quotas, by entity (quota_codec.go)             (version 11 on)
//
// Version 1 is version 2 without the deleted topic ids, version 2 is
// version 3 without the cluster configs, version 3 is version 4 without
// listeners and credentials, version 4 is version 5 without ACL bindings,
// version 5 is version 6 without reassignments, version 6 is version 7
// without the producer-id key, and version 7 is version 8 without the
// deleted topics' index and reports (read as 0 and none), and version 8
// is version 9 without feature levels (every feature at its default), and
// version 9 is version 10 without delegation tokens, and version 10 is
// version 11 without client quotas; all are still read.
// Every list is sorted by its key, so a state has exactly one encoding.
const (
	snapshotMagic   = "MKMD"
	snapshotVersion = 11
)

// MarshalBinary encodes the state canonically: equal states give equal
// bytes. It never fails; the error is there for encoding.BinaryMarshaler.
func (s *Snapshot) MarshalBinary() ([]byte, error) {
	b := make([]byte, 0, 256)
	b = append(b, snapshotMagic...)
	b = appendU8(b, snapshotVersion)
	b = appendU64(b, s.index)
	b = appendString(b, s.clusterID)
	b = appendI64(b, s.nextProducerID)

	b = appendLen(b, len(s.brokers))
	for _, id := range s.BrokerIDs() {
		br := s.brokers[id]
		b = appendI32(b, br.ID)
		b = appendString(b, br.KafkaAddr)
		b = appendString(b, br.RaftAddr)
		b = appendString(b, br.Listeners)
	}

	b = appendLen(b, len(s.topics))
	for _, name := range s.TopicNames() {
		t := s.topics[name]
		b = appendString(b, t.Name)
		b = append(b, t.ID[:]...)
		b = appendLen(b, len(t.Partitions))
		for _, p := range t.Partitions {
			b = appendInt32s(b, p.Replicas)
			b = appendI32(b, p.Leader)
			b = appendI32(b, p.LeaderEpoch)
		}
		b = appendConfigs(b, t.Configs)
	}

	tids := sortedKeys(s.transactional)
	b = appendLen(b, len(tids))
	for _, tid := range tids {
		p := s.transactional[tid]
		b = appendString(b, tid)
		b = appendI64(b, p.ProducerID)
		b = appendI16(b, p.Epoch)
	}

	b = appendLen(b, s.deleted.len())
	for _, id := range s.deleted.ids() {
		t, _ := s.deleted.get(id)
		b = append(b, id[:]...)
		b = appendU64(b, t.at)
		b = appendInt32s(b, t.reported)
	}
	b = appendConfigs(b, s.clusterConfigs)
	creds := s.ScramCredentials()
	b = appendLen(b, len(creds))
	for _, c := range creds {
		b = appendCredential(b, c)
	}
	b = appendLen(b, s.acls.Len())
	for _, x := range s.acls.All() {
		b = appendBinding(b, x)
	}
	b = s.appendReassignments(b)
	b = appendString(b, string(s.producerIDKey))
	b = appendFeatures(b, s.features)
	b = s.appendTokens(b)
	b = s.appendQuotas(b)
	return b, nil
}

// DecodeSnapshot parses bytes written by MarshalBinary. It accepts only the
// canonical encoding (sorted, no duplicates, no trailing bytes) of a
// consistent state; errors wrap ErrMalformedSnapshot.
func DecodeSnapshot(b []byte) (*Snapshot, error) {
	r := newReader(b, ErrMalformedSnapshot)
	if magic := string(r.take(len(snapshotMagic), "magic")); r.err == nil && magic != snapshotMagic {
		return nil, &DecodeError{Offset: 0, Reason: fmt.Sprintf("magic %q, want %q", magic, snapshotMagic), Err: ErrMalformedSnapshot}
	}
	version := r.u8("version")
	if r.err == nil && (version < 1 || version > snapshotVersion) {
		return nil, &DecodeError{Offset: len(snapshotMagic), Reason: fmt.Sprintf("version %d, want 1 to %d", version, snapshotVersion), Err: ErrMalformedSnapshot}
	}
	s := &Snapshot{index: r.u64("applied index"), clusterID: r.str("cluster id"), nextProducerID: r.i64("next producer id")}
	s.layout = s.index

	if n := r.length("brokers", 12); n > 0 {
		s.brokers = make(map[int32]Broker, n)
		var prev int32
		for i := range n {
			br := Broker{ID: r.i32("broker id"), KafkaAddr: r.str("kafka address"), RaftAddr: r.str("raft address")}
			if version >= 4 {
				br.Listeners = r.str("listeners")
			}
			if r.err != nil {
				break
			}
			if i > 0 && br.ID <= prev {
				r.fail("broker %d not after %d", br.ID, prev)
			}
			s.brokers[br.ID], prev = br, br.ID
		}
	}

	if n := r.length("topics", 28); n > 0 {
		s.topics = make(map[string]*Topic, n)
		s.topicIDs = make(map[TopicID]string, n)
		prev := ""
		for i := range n {
			t := decodeTopic(r)
			if r.err != nil {
				break
			}
			if i > 0 && t.Name <= prev {
				r.fail("topic %q not after %q", t.Name, prev)
			} else if other, dup := s.topicIDs[t.ID]; dup {
				r.fail("topics %q and %q share id %v", other, t.Name, t.ID)
			}
			s.topics[t.Name], s.topicIDs[t.ID], prev = t, t.Name, t.Name
		}
	}

	if n := r.length("transactional ids", 14); n > 0 {
		s.transactional = make(map[string]ProducerIdentity, n)
		prev := ""
		for i := range n {
			tid := r.str("transactional id")
			p := ProducerIdentity{ProducerID: r.i64("producer id"), Epoch: r.i16("producer epoch")}
			if r.err == nil && i > 0 && tid <= prev {
				r.fail("transactional id %q not after %q", tid, prev)
			}
			s.transactional[tid], prev = p, tid
		}
	}
	s.readLater(r, version)
	if err := r.done(); err != nil {
		return nil, err
	}
	if err := s.check(); err != nil {
		return nil, &DecodeError{Offset: len(b), Reason: err.Error(), Err: ErrMalformedSnapshot}
	}
	return s, nil
}

// readLater reads the parts that later versions added, each from the
// version that brought it.
func (s *Snapshot) readLater(r *reader, version uint8) {
	if version >= 2 {
		s.deleted = readDeleted(r, version >= 8)
	}
	if version >= 3 {
		s.clusterConfigs = readConfigs(r)
	}
	if version >= 4 {
		s.scram = readCredentials(r)
	}
	if version >= 5 {
		s.acls = readBindings(r)
	}
	if version >= 6 {
		s.reassign = readReassignments(r)
	}
	if version >= 7 {
		if k := r.str("producer-id key"); k != "" {
			s.producerIDKey = []byte(k)
		}
	}
	if version >= 9 {
		s.features = readFeatures(r)
	}
	if version >= 10 {
		s.tokens = readTokens(r)
	}
	if version >= 11 {
		s.quotas = readQuotas(r)
	}
}

// readDeleted reads the deleted topics, which must be in id byte order;
// tracked says whether each has its index and reports (version 8 on).
func readDeleted(r *reader, tracked bool) deletedSet {
	n := r.length("deleted topic ids", 16)
	var b deletedBuilder
	var prev TopicID
	for i := range n {
		var id TopicID
		copy(id[:], r.take(len(id), "deleted topic id"))
		var t deletedTopic
		if tracked {
			t.at = r.u64("deleted at")
			t.reported = readInt32s(r, "reported brokers")
		}
		if r.err != nil {
			break
		}
		if i > 0 && bytes.Compare(id[:], prev[:]) <= 0 {
			r.fail("deleted topic id %v not after %v", id, prev)
		}
		b.add(id, t)
		prev = id
	}
	return b.set
}

func decodeTopic(r *reader) *Topic {
	t := &Topic{Name: r.str("topic name")}
	copy(t.ID[:], r.take(len(t.ID), "topic id"))
	if n := r.length("partitions", 12); n > 0 {
		t.Partitions = make([]Partition, n)
		for i := range t.Partitions {
			t.Partitions[i] = Partition{Replicas: readInt32s(r, "replicas"), Leader: r.i32("leader"), LeaderEpoch: r.i32("leader epoch")}
		}
	}
	t.Configs = readConfigs(r)
	return t
}

// readCredentials reads the SCRAM credentials, which must be sorted by user
// then mechanism.
func readCredentials(r *reader) map[scramKey]ScramCredential {
	n := r.length("scram credentials", 21)
	if n == 0 {
		return nil
	}
	m := make(map[scramKey]ScramCredential, n)
	var prev scramKey
	for i := range n {
		c := readCredential(r)
		if r.err != nil {
			break
		}
		k := scramKey{c.User, c.Mechanism}
		if i > 0 && compareScramKeys(k, prev) <= 0 {
			r.fail("scram credential %q %v not after %q %v", k.User, k.Mechanism, prev.User, prev.Mechanism)
		}
		m[k], prev = c, k
	}
	return m
}

// readBindings reads the ACL bindings, which must be strictly increasing
// by acl.Compare.
func readBindings(r *reader) acl.Set {
	n := r.length("acl bindings", minBindingLen)
	if n == 0 {
		return acl.Set{}
	}
	bs := make([]acl.Binding, n)
	for i := range bs {
		bs[i] = readBinding(r)
		if r.err != nil {
			return acl.Set{}
		}
		if i > 0 && acl.Compare(bs[i], bs[i-1]) <= 0 {
			r.fail("acl binding %v not after %v", bs[i], bs[i-1])
			return acl.Set{}
		}
	}
	return acl.NewSet(bs...)
}
