package broker

import (
	"slices"
	"testing"

	"github.com/minikafka/minikafka-go/logging"
	"github.com/minikafka/minikafka-go/membership"
)

// A node gossiping an older build is listed from its join or update until
// it gossips this build; seen leaving it stays listed (it may come back on
// the same build); this node is never listed.
func TestNoteCleanerBuild(t *testing.T) {
	t.Parallel()
	n := &Node{cfg: Config{NodeID: 1}, logger: logging.Discard()}
	ev := func(kind membership.EventKind, id int32, dirtyPart bool) {
		n.noteCleanerBuild(membership.Event{Kind: kind, Node: membership.NodeMeta{ID: id, CleansDirtyPart: dirtyPart}})
	}
	for i, step := range []struct {
		kind      membership.EventKind
		id        int32
		dirtyPart bool
		want      []int32
	}{
		{membership.EventJoin, 1, false, nil},
		{membership.EventJoin, 3, false, []int32{3}},
		{membership.EventJoin, 2, false, []int32{2, 3}},
		{membership.EventLeave, 3, false, []int32{2, 3}},
		{membership.EventJoin, 3, true, []int32{2}},
		{membership.EventUpdate, 2, true, nil},
		{membership.EventUpdate, 2, false, []int32{2}},
	} {
		ev(step.kind, step.id, step.dirtyPart)
		if got := n.olderCleaners.list(); !slices.Equal(got, step.want) {
			t.Fatalf("step %d: %v, want %v", i, got, step.want)
		}
		if n.cleansWhole() != (len(step.want) > 0) {
			t.Fatalf("step %d: cleans whole %v with %v older", i, n.cleansWhole(), step.want)
		}
	}
}
