package broker

import (
	"maps"
	"slices"
	"sync/atomic"

	"github.com/minikafka/minikafka-go/membership"
)

// nodeSet is a set of other nodes kept from membership events: set runs
// only on membership's event goroutine, the one that touches in; list
// may be called from anywhere.
type nodeSet struct {
	in  map[int32]bool
	ids atomic.Pointer[[]int32] // in's ids, sorted
}

// set puts id in the set or takes it out.
func (s *nodeSet) set(id int32, in bool) {
	if in == s.in[id] {
		return
	}
	if s.in == nil {
		s.in = map[int32]bool{}
	}
	if in {
		s.in[id] = true
	} else {
		delete(s.in, id)
	}
	ids := slices.Sorted(maps.Keys(s.in))
	s.ids.Store(&ids)
}

// list is the set's ids, sorted; nil when empty.
func (s *nodeSet) list() []int32 {
	if p := s.ids.Load(); p != nil {
		return *p
	}
	return nil
}

// noteCleanerBuild records whether the node of a join or update gossips
// a build that refuses the cleanings of a dirty part (it does not set
// membership.NodeMeta.CleansDirtyPart). A node seen leaving stays as it
// was last seen: it may come back on the same build.
func (n *Node) noteCleanerBuild(ev membership.Event) {
	if !n.otherAlive(ev) {
		return
	}
	older := !ev.Node.CleansDirtyPart
	if older && !n.olderCleaners.in[ev.Node.ID] {
		n.logger.Warn("a node runs an older build: compacted logs are cleaned whole, as it cleans them, until it is upgraded",
			"node", ev.Node.ID)
	}
	n.olderCleaners.set(ev.Node.ID, older)
}

// otherAlive reports whether ev is another node's join or update: it
// gossips its meta as it runs now.
func (n *Node) otherAlive(ev membership.Event) bool {
	return ev.Node.ID != n.cfg.NodeID && (ev.Kind == membership.EventJoin || ev.Kind == membership.EventUpdate)
}

// cleansWhole reports whether this node's leaders propose cleanings of
// whole ranges (replicas.Set.Compact): while a node, this one included,
// gossips a build that refuses the cleanings of a dirty part.
func (n *Node) cleansWhole() bool {
	return len(n.olderCleaners.list()) > 0 || n.members != nil && !n.members.Local().CleansDirtyPart
}
