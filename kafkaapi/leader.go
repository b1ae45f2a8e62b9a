package kafkaapi

import "github.com/twmb/franz-go/pkg/kerr"

// leader returns the local replica of a partition that a request for the
// leader names (Fetch, ListOffsets, OffsetForLeaderEpoch), and its leader
// epoch, or the error to answer, checked in Kafka's order
// (Partition.getLocalLog): the client's current leader epoch first, then
// leadership.
func (s *Server) leader(topic string, partition, currentEpoch int32) (Partition, int32, error) {
	p, err := s.backend.Partition(topic, partition)
	if err != nil {
		return nil, -1, err
	}
	epoch := p.LeaderEpoch()
	if err := checkLeaderEpoch(currentEpoch, epoch); err != nil {
		return nil, -1, err
	}
	if !p.IsLeader() {
		return nil, -1, kerr.NotLeaderForPartition
	}
	return p, epoch, nil
}

// checkLeaderEpoch compares a client's leader epoch (-1: not given) with
// the replica's, as Kafka does (KIP-320).
func checkLeaderEpoch(requested, current int32) error {
	switch {
	case requested < 0 || requested == current:
		return nil
	case requested > current:
		return kerr.UnknownLeaderEpoch
	default:
		return kerr.FencedLeaderEpoch
	}
}
