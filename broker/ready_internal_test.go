package broker

import (
	"errors"
	"testing"

	"github.com/minikafka/minikafka-go/multiraft"
)

// A metadata replica is behind while it applies what is committed, and
// while it has applied more than it knows to be committed: a leader or a
// follower restarted from a snapshot, before it hears a commit index.
func TestReplicaBehind(t *testing.T) {
	for _, tc := range []struct {
		name string
		r    multiraft.Replication
		want bool
	}{
		{"caught up", multiraft.Replication{CommitIndex: 40, AppliedIndex: 40}, false},
		{"caught up leader", multiraft.Replication{Leader: true, CommitIndex: 40, AppliedIndex: 40}, false},
		{"applying", multiraft.Replication{CommitIndex: 41, AppliedIndex: 40}, true},
		{"restored leader", multiraft.Replication{Leader: true, CommitIndex: 0, AppliedIndex: 40}, true},
		{"restored follower", multiraft.Replication{CommitIndex: 0, AppliedIndex: 40}, true},
		{"new cluster", multiraft.Replication{}, false},
	} {
		err := replicaBehind(tc.r)
		if got := errors.Is(err, ErrMetadataBehind); got != tc.want {
			t.Errorf("%s: replicaBehind(%+v) = %v, want behind %v", tc.name, tc.r, err, tc.want)
		}
	}
}
