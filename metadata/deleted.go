package metadata

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
)

// Deleted topics. A node removes its replicas of a topic once its metadata
// names the topic's id as deleted, and never merely because an id is
// unknown: a node's metadata may be behind its disk (a node that was down
// replays the log from before the topic existed). So the id must be kept
// until no node can still hold a replica of it: every registered broker
// reports, with ReplicasRemoved, that none is left on its disk, and the id
// is forgotten. A broker that never comes back would pin every id, so at
// most MaxDeletedTopics are kept: a delete past that forgets the oldest.

// MaxDeletedTopics bounds the deleted topic ids the state keeps while some
// registered broker has not reported their replicas removed.
const MaxDeletedTopics = 1024

// TypeReplicasRemoved is ReplicasRemoved's command type.
const TypeReplicasRemoved CommandType = 15

// MaxReplicasRemovedTopics bounds the topic ids of one ReplicasRemoved.
const MaxReplicasRemovedTopics = 1000

// ReplicasRemoved reports that Broker holds no replica of the deleted
// topics Topics any more (none on its disk). Once every registered broker
// has reported a topic, its id is forgotten. Ids no longer kept and
// repeated reports are ignored, so reports may be retried. Topics must be
// sorted, without repeats, at most MaxReplicasRemovedTopics.
//
// Result: ReplicasRemovedResult.
type ReplicasRemoved struct {
	Broker int32
	Topics []TopicID
}

// ReplicasRemovedResult answers ReplicasRemoved with the ids it made the
// state forget, sorted.
type ReplicasRemovedResult struct {
	Forgotten []TopicID
}

// Type implements Command.
func (ReplicasRemoved) Type() CommandType { return TypeReplicasRemoved }

func (c ReplicasRemoved) appendBody(b []byte) []byte {
	b = appendI32(b, c.Broker)
	b = appendLen(b, len(c.Topics))
	for _, id := range c.Topics {
		b = append(b, id[:]...)
	}
	return b
}

func decodeReplicasRemoved(r *reader) ReplicasRemoved {
	c := ReplicasRemoved{Broker: r.i32("broker id")}
	c.Topics = readTopicIDs(r, "removed topic ids")
	return c
}

// readTopicIDs reads a list of ids, which must be in byte order without
// repeats; nil when empty.
func readTopicIDs(r *reader, what string) []TopicID {
	n := r.length(what, 16)
	if n == 0 {
		return nil
	}
	ids := make([]TopicID, n)
	for i := range ids {
		copy(ids[i][:], r.take(16, what))
		if r.err == nil && i > 0 && bytes.Compare(ids[i][:], ids[i-1][:]) <= 0 {
			r.fail("%s: %v not after %v", what, ids[i], ids[i-1])
		}
	}
	return ids
}

// deletedTopic is what the state keeps of a deleted topic.
type deletedTopic struct {
	// at is the log index of the DeleteTopic; 0 for a delete written
	// before removals were tracked (DeleteTopic version 1), which counts
	// as older than every other.
	at uint64
	// reported are the brokers that reported the replicas removed, sorted.
	reported []int32
}

func (d deletedTopic) equal(o deletedTopic) bool {
	return d.at == o.at && slices.Equal(d.reported, o.reported)
}

// deletedBuckets is how many parts deletedSet splits its ids into.
const deletedBuckets = 64

// deletedSet is an immutable set of deleted topics. It is split into
// buckets by the ids' first byte (uniform: ids are hashes), so that a
// change copies the bucket array and one bucket, not the whole set, as
// each new Snapshot must leave the old one intact.
type deletedSet struct {
	n       int
	buckets *[deletedBuckets]map[TopicID]deletedTopic // nil when empty; never written once shared
}

func bucketOf(id TopicID) int { return int(id[0]) % deletedBuckets }

func (d deletedSet) len() int { return d.n }

func (d deletedSet) get(id TopicID) (deletedTopic, bool) {
	if d.buckets == nil {
		return deletedTopic{}, false
	}
	t, ok := d.buckets[bucketOf(id)][id]
	return t, ok
}

// with returns the set with id set to t.
func (d deletedSet) with(id TopicID, t deletedTopic) deletedSet {
	nb := new([deletedBuckets]map[TopicID]deletedTopic)
	if d.buckets != nil {
		*nb = *d.buckets
	}
	i := bucketOf(id)
	if _, ok := nb[i][id]; !ok {
		d.n++
	}
	nb[i] = cloneMap(nb[i])
	nb[i][id] = t
	d.buckets = nb
	return d
}

// without returns the set without id.
func (d deletedSet) without(id TopicID) deletedSet {
	if _, ok := d.get(id); !ok {
		return d
	}
	if d.n == 1 {
		return deletedSet{}
	}
	nb := new([deletedBuckets]map[TopicID]deletedTopic)
	*nb = *d.buckets
	i := bucketOf(id)
	nb[i] = maps.Clone(nb[i])
	delete(nb[i], id)
	if len(nb[i]) == 0 {
		nb[i] = nil
	}
	return deletedSet{n: d.n - 1, buckets: nb}
}

// ids returns every id in byte order.
func (d deletedSet) ids() []TopicID {
	if d.buckets == nil {
		return nil
	}
	out := make([]TopicID, 0, d.n)
	for _, b := range d.buckets {
		for id := range b {
			out = append(out, id)
		}
	}
	slices.SortFunc(out, func(a, b TopicID) int { return bytes.Compare(a[:], b[:]) })
	return out
}

// oldest is the id of the oldest delete: lowest index, then lowest id.
func (d deletedSet) oldest() TopicID {
	var best TopicID
	var bestAt uint64
	first := true
	for _, id := range d.ids() {
		if t, _ := d.get(id); first || t.at < bestAt {
			best, bestAt, first = id, t.at, false
		}
	}
	return best
}

func (d deletedSet) equal(o deletedSet) bool {
	if d.n != o.n {
		return false
	}
	for _, id := range d.ids() {
		a, _ := d.get(id)
		if b, ok := o.get(id); !ok || !a.equal(b) {
			return false
		}
	}
	return true
}

// deletedBuilder builds a deletedSet in place, before anyone shares it.
type deletedBuilder struct{ set deletedSet }

// add adds an id that is not in the set yet.
func (b *deletedBuilder) add(id TopicID, t deletedTopic) {
	if b.set.buckets == nil {
		b.set.buckets = new([deletedBuckets]map[TopicID]deletedTopic)
	}
	i := bucketOf(id)
	if b.set.buckets[i] == nil {
		b.set.buckets[i] = make(map[TopicID]deletedTopic)
	}
	b.set.buckets[i][id] = t
	b.set.n++
}

// forgetDeleted makes room for one more deleted topic.
func (s *Snapshot) forgetDeleted() {
	for s.deleted.len() >= MaxDeletedTopics {
		s.deleted = s.deleted.without(s.deleted.oldest())
	}
}

// TopicDeleted reports whether a topic of that id was deleted and may
// still have replicas on some registered broker.
func (s *Snapshot) TopicDeleted(id TopicID) bool {
	_, ok := s.deleted.get(id)
	return ok
}

// DeletedTopicsToReport lists, sorted, the deleted topics whose replicas
// broker has not reported removed (ReplicasRemoved).
func (s *Snapshot) DeletedTopicsToReport(broker int32) []TopicID {
	var out []TopicID
	for _, id := range s.deleted.ids() {
		if t, _ := s.deleted.get(id); !slices.Contains(t.reported, broker) {
			out = append(out, id)
		}
	}
	return out
}

// replicasRemoved records a broker's report and forgets the topics every
// registered broker has now reported.
func (s *Snapshot) replicasRemoved(c ReplicasRemoved) (ReplicasRemovedResult, error) {
	if _, ok := s.brokers[c.Broker]; !ok {
		return ReplicasRemovedResult{}, &InvalidBrokerError{ID: c.Broker, Reason: "not registered"}
	}
	if len(c.Topics) > MaxReplicasRemovedTopics {
		return ReplicasRemovedResult{}, &InvalidBrokerError{ID: c.Broker,
			Reason: fmt.Sprintf("report of %d topics, more than %d", len(c.Topics), MaxReplicasRemovedTopics)}
	}
	var res ReplicasRemovedResult
	for _, id := range c.Topics {
		t, ok := s.deleted.get(id)
		if !ok || slices.Contains(t.reported, c.Broker) {
			continue
		}
		t.reported = slices.Insert(slices.Clone(t.reported), sortedIndex(t.reported, c.Broker), c.Broker)
		if s.reportedByAll(t) {
			s.deleted = s.deleted.without(id)
			res.Forgotten = append(res.Forgotten, id)
			continue
		}
		s.deleted = s.deleted.with(id, t)
	}
	return res, nil
}

func strictlyIncreasing(s []int32) bool {
	for i := 1; i < len(s); i++ {
		if s[i] <= s[i-1] {
			return false
		}
	}
	return true
}

func sortedIndex(s []int32, v int32) int {
	i, _ := slices.BinarySearch(s, v)
	return i
}

// reportedByAll reports whether every registered broker reported t.
func (s *Snapshot) reportedByAll(t deletedTopic) bool {
	for id := range s.brokers {
		if _, ok := slices.BinarySearch(t.reported, id); !ok {
			return false
		}
	}
	return true
}

// checkDeleted verifies the deleted topics: none has a live topic's id,
// each lacks the report of some registered broker (else it would have
// been forgotten), and reports are sorted brokers that are registered.
func (s *Snapshot) checkDeleted() error {
	for _, id := range s.deleted.ids() {
		t, _ := s.deleted.get(id)
		if name, ok := s.topicIDs[id]; ok {
			return fmt.Errorf("topic %q has the id %v of a deleted topic", name, id)
		}
		if t.at > s.index {
			return fmt.Errorf("deleted topic %v: deleted at index %d, after %d", id, t.at, s.index)
		}
		if !strictlyIncreasing(t.reported) {
			return fmt.Errorf("deleted topic %v: reports %v not sorted", id, t.reported)
		}
		for _, b := range t.reported {
			if _, ok := s.brokers[b]; !ok {
				return fmt.Errorf("deleted topic %v: report of unregistered broker %d", id, b)
			}
		}
		if s.reportedByAll(t) {
			return fmt.Errorf("deleted topic %v: reported by every broker but kept", id)
		}
	}
	return nil
}
