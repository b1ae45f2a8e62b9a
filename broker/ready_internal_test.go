package broker

import (
	"errors"
	"testing"

	"github.com/minikafka/minikafka-go/multiraft"
)

// replicaBehind says ErrMetadataBehind exactly when the metadata replica
// is behind (the cases: multiraft's TestReplicationBehind).
func TestReplicaBehind(t *testing.T) {
	t.Parallel()
	behind := multiraft.Replication{CommitIndex: 40, AppliedIndex: 40, LeaderCommit: 41}
	if err := replicaBehind(behind); !errors.Is(err, ErrMetadataBehind) {
		t.Errorf("replicaBehind(%+v) = %v, want %v", behind, err, ErrMetadataBehind)
	}
	current := multiraft.Replication{CommitIndex: 40, AppliedIndex: 40, LeaderCommit: 40}
	if err := replicaBehind(current); err != nil {
		t.Errorf("replicaBehind(%+v) = %v, want nil", current, err)
	}
}
