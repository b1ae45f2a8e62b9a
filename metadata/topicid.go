package metadata

import (
	"crypto/sha256"
	"encoding/binary"
)

// deriveTopicID hashes the cluster id, the creating entry's index, the name
// and an attempt counter into a UUID: SHA-256, first 16 bytes, with the
// RFC 9562 version 8 ("custom") and variant bits set. Every replica computes
// the same id; the attempt counter only moves past ids that Kafka reserves
// or that another topic already has (see newTopicID).
func deriveTopicID(clusterID string, index uint64, name string, attempt uint32) TopicID {
	var b []byte
	b = append(b, "minikafka topic id v1\x00"...)
	b = appendString(b, clusterID)
	b = appendU64(b, index)
	b = appendString(b, name)
	b = binary.BigEndian.AppendUint32(b, attempt)
	sum := sha256.Sum256(b)
	var id TopicID
	copy(id[:], sum[:])
	id[6] = id[6]&0x0f | 0x80 // version 8
	id[8] = id[8]&0x3f | 0x80 // variant 10
	return id
}

// usableTopicID mirrors Kafka's Uuid.randomUuid, which retries until the id
// is neither ZERO_UUID nor METADATA_TOPIC_ID (0...01) and its text form does
// not start with '-' (which command-line tools would take for a flag). The
// version bits already rule out the two reserved values.
func usableTopicID(id TopicID) bool {
	return !id.IsZero() && id != TopicID{15: 1} && id.String()[0] != '-'
}

// newTopicID derives the id of a topic created at index, skipping unusable
// ids and ids already taken (a SHA-256 collision: in practice never).
func (s *Snapshot) newTopicID(index uint64, name string) TopicID {
	for attempt := uint32(0); ; attempt++ {
		id := deriveTopicID(s.clusterID, index, name, attempt)
		if _, taken := s.topicIDs[id]; usableTopicID(id) && !taken {
			return id
		}
	}
}
