package controller

import (
	"maps"
	"slices"
	"time"

	"github.com/minikafka/minikafka-go/membership"
)

// bootstrapSettle is how long the voters a node would bootstrap the
// metadata group with must stay the same before it does. Nodes started
// together see each other join over some milliseconds: a node that counted
// bootstrap_expect members before the lower ids had joined it chose other
// voters than theirs, and two metadata groups, each with a quorum, formed
// (make e2e, 5 nodes started at once, bootstrap_expect 3: nodes 1, 4 and 5
// bootstrapped {1,4,5}, nodes 2 and 3 {1,2,3}).
const bootstrapSettle = 400 * time.Millisecond

// bootstrapper is the duties loop's memory of the voters it would choose;
// owned by the duties goroutine.
type bootstrapper struct {
	voters map[int32]string // the last choice
	since  time.Time        // when it was first made
}

// choose returns the voters the members give (the lowest expect ids) and
// how long they must still stay so before bootstrapping: 0 once they have
// for bootstrapSettle; ok is false with fewer than expect members.
func (b *bootstrapper) choose(members []membership.NodeMeta, expect int, now time.Time) (voters map[int32]string, wait time.Duration, ok bool) {
	if len(members) < expect {
		b.voters = nil
		return nil, 0, false
	}
	members = slices.Clone(members)
	slices.SortFunc(members, func(a, b membership.NodeMeta) int { return int(a.ID) - int(b.ID) })
	voters = map[int32]string{}
	for _, m := range members[:expect] {
		voters[m.ID] = m.RaftAddr
	}
	if !maps.Equal(voters, b.voters) {
		b.voters, b.since = voters, now
	}
	return voters, max(bootstrapSettle-now.Sub(b.since), 0), true
}
