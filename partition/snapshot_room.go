package partition

import (
	"fmt"

	"github.com/hashicorp/raft"
)

// roomFree is what a snapshot writes before it asks for room: a local
// snapshot is a reference (a header and the producer table) and must go
// through on a full disk, since trims need it; one a follower installs is
// the partition's whole log.
const roomFree = 1 << 20

// Create wraps the sink of a snapshot in a roomSink when the store has a
// room check.
func (s *snapshotStore) Create(version raft.SnapshotVersion, index, term uint64, configuration raft.Configuration,
	configurationIndex uint64, trans raft.Transport) (raft.SnapshotSink, error) {
	sink, err := s.SnapshotStore.Create(version, index, term, configuration, configurationIndex, trans)
	if err != nil || s.room == nil {
		return sink, err
	}
	return &roomSink{SnapshotSink: sink, room: s.room}, nil
}

// roomSink fails a snapshot's write past its first roomFree bytes when
// room refuses it: a follower that installs its leader's snapshot (a
// second copy of the log beside the one it replaces) stops at its disk's
// reserve instead of filling the disk; raft cancels the sink and the
// leader tries again later.
type roomSink struct {
	raft.SnapshotSink
	room    func(n int) error
	written int64
}

func (k *roomSink) Write(p []byte) (int, error) {
	if k.written+int64(len(p)) > roomFree {
		if err := k.room(len(p)); err != nil {
			return 0, fmt.Errorf("partition: no room for the snapshot: %w", err)
		}
	}
	n, err := k.SnapshotSink.Write(p)
	k.written += int64(n)
	return n, err
}
