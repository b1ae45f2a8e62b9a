package metadata

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/minikafka/minikafka-go/acl"
)

func sortedKeys[K cmp.Ordered, V any](m map[K]V) []K { return slices.Sorted(maps.Keys(m)) }

// check verifies the invariants that Apply maintains and relies on.
// DecodeSnapshot runs it so that a restored state is one Apply could have
// produced; tests run it after every command.
func (s *Snapshot) check() error {
	if s.clusterID == "" {
		if s.nextProducerID != 0 || s.producerIDKey != nil || len(s.brokers)+len(s.topics)+len(s.transactional)+s.deleted.len()+len(s.clusterConfigs)+len(s.scram)+s.acls.Len()+len(s.reassign)+len(s.tokens) > 0 {
			return errors.New("state without a cluster id")
		}
		return nil
	}
	if s.nextProducerID < FirstProducerID || s.nextProducerID >= ProducerIDKeyedBase {
		return fmt.Errorf("producer id counter %d outside %d..%d", s.nextProducerID, FirstProducerID, ProducerIDKeyedBase-1)
	}
	if s.producerIDKey != nil && !s.HasProducerIDKey() {
		return fmt.Errorf("producer-id key of %d bytes", len(s.producerIDKey))
	}
	for _, id := range sortedKeys(s.brokers) {
		b := s.brokers[id]
		if b.ID != id || id < 0 || checkAddr(b.KafkaAddr) != nil || checkAddr(b.RaftAddr) != nil {
			return fmt.Errorf("broker %d: bad registration %+v", id, b)
		}
		if b.Listeners != "" {
			if ls, err := ParseListeners(b.Listeners); err != nil || FormatListeners(ls) != b.Listeners {
				return fmt.Errorf("broker %d: bad listeners %q", id, b.Listeners)
			}
		}
	}
	if err := s.checkDeleted(); err != nil {
		return err
	}
	if len(s.topicIDs) != len(s.topics) {
		return fmt.Errorf("%d topic ids for %d topics", len(s.topicIDs), len(s.topics))
	}
	for _, name := range sortedKeys(s.topics) {
		if err := s.checkTopic(name, s.topics[name]); err != nil {
			return fmt.Errorf("topic %q: %w", name, err)
		}
	}
	if _, empty := s.clusterConfigs[""]; empty {
		return errors.New("empty cluster config key")
	}
	if s.acls.Len() > acl.MaxBindings {
		return fmt.Errorf("%d acl bindings, more than %d", s.acls.Len(), acl.MaxBindings)
	}
	for _, b := range s.acls.All() {
		if err := b.Validate(); err != nil {
			return fmt.Errorf("acl binding %v: %w", b, err)
		}
	}
	for k, c := range s.scram {
		if k.User != c.User || k.Mechanism != c.Mechanism || c.check() != nil {
			return fmt.Errorf("scram credential %q %v: bad", k.User, k.Mechanism)
		}
	}
	if err := s.checkReassignments(); err != nil {
		return err
	}
	if err := s.checkTokens(); err != nil {
		return err
	}
	for _, tid := range sortedKeys(s.transactional) {
		p := s.transactional[tid]
		if tid == "" || !s.issued(p.ProducerID) || p.Epoch < 0 {
			return fmt.Errorf("transactional id %q: bad producer %+v", tid, p)
		}
	}
	return nil
}

func (s *Snapshot) checkTopic(name string, t *Topic) error {
	switch {
	case t.Name != name || ValidateTopicName(name) != nil:
		return errors.New("bad name")
	case s.topicIDs[t.ID] != name || !usableTopicID(t.ID):
		return fmt.Errorf("bad id %v", t.ID)
	case len(t.Partitions) < 1 || len(t.Partitions) > int(MaxPartitions):
		return fmt.Errorf("%d partitions", len(t.Partitions))
	}
	rf := len(s.targetReplicas(name, t, 0))
	for i, p := range t.Partitions {
		if n := len(s.targetReplicas(name, t, int32(i))); n != rf || rf == 0 {
			return fmt.Errorf("partition %d: %d replicas, want %d", i, n, rf)
		}
		for j, b := range p.Replicas {
			if _, ok := s.brokers[b]; !ok || slices.Contains(p.Replicas[:j], b) {
				return fmt.Errorf("partition %d: bad replica %d", i, b)
			}
		}
		// A leader that a reassignment removed is forgotten but its epoch
		// is kept (setReplicas), so NoLeader goes with any epoch.
		noLeader := p.Leader == NoLeader && p.LeaderEpoch >= NoLeaderEpoch
		if !noLeader && (p.LeaderEpoch < 0 || !slices.Contains(p.Replicas, p.Leader)) {
			return fmt.Errorf("partition %d: bad leader %d epoch %d", i, p.Leader, p.LeaderEpoch)
		}
	}
	if _, empty := t.Configs[""]; empty {
		return errors.New("empty config key")
	}
	return nil
}
