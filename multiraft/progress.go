package multiraft

import (
	"slices"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// FollowerProgress is how far one follower's log matches the leader's, as
// the leader's transport saw it in the answers to its AppendEntries
// (hashicorp/raft keeps its match indexes to itself).
type FollowerProgress struct {
	Node int32
	// Match is the highest index known to match the leader's log in the
	// current term (0: nothing acknowledged yet).
	Match uint64
	// CaughtUp is the last time the follower acknowledged everything up
	// to the commit index the leader had when it sent the request
	// (Kafka's lastCaughtUpTime); the start of the leadership if it never
	// did in this term.
	CaughtUp time.Time
	// Contact is the last time the follower answered the leader in this
	// group (an append or a heartbeat), or now while it waits quiesced and
	// the Host vouches for its node; the start of the leadership if neither.
	Contact time.Time
}

// Replication is a group's replication as this member sees it.
type Replication struct {
	Leader      bool
	CommitIndex uint64
	LastIndex   uint64
	// AppliedIndex is the last entry raft has handed to the FSM (no-op and
	// configuration entries included).
	AppliedIndex uint64
	// LeaderCommit is the highest commit index a leader's AppendEntries
	// has brought this member since its group opened (0: none yet).
	LeaderCommit uint64
	// Followers are the other members, by node id; only a leader knows
	// them (nil otherwise).
	Followers []FollowerProgress
}

// Behind reports whether this member may have committed entries still to
// apply. A leader's commit index is the group's. A follower's stops at the
// last entry it got, and starts at 0 when it opens (its snapshot's index
// is applied, not known committed), so a follower is behind until it has
// applied up to the highest commit index its leaders have sent it: one
// AppendEntries carries only MaxAppendEntries of what a restarted follower
// lacks, and a heartbeat carries no commit index at all.
func (r Replication) Behind() bool {
	if r.AppliedIndex != r.CommitIndex {
		return true
	}
	return !r.Leader && (r.LeaderCommit == 0 || r.AppliedIndex < r.LeaderCommit)
}

// InSync reports whether f keeps up: it answered within maxLag, and it
// matches the commit index now or caught up with it within maxLag (Kafka's
// replica.lag.time.max.ms rule). An idle group's dead follower still
// matches the commit index; the answers it no longer gives take it out.
func (r Replication) InSync(f FollowerProgress, now time.Time, maxLag time.Duration) bool {
	return now.Sub(f.Contact) <= maxLag && (f.Match >= r.CommitIndex || now.Sub(f.CaughtUp) <= maxLag)
}

// ISR is the leader's in-sync replicas: self first, then the followers
// that are InSync and, where up is not nil, up.
func (r Replication) ISR(self int32, now time.Time, maxLag time.Duration, up func(int32) bool) []int32 {
	isr := []int32{self}
	for _, f := range r.Followers {
		if r.InSync(f, now, maxLag) && (up == nil || up(f.Node)) {
			isr = append(isr, f.Node)
		}
	}
	return isr
}

// progress tracks the followers of a group this member leads.
type progress struct {
	mu    sync.Mutex // guards every field below
	term  uint64     // the term the entries are of; a new term starts afresh
	since time.Time  // when this member last gained the leadership
	peers map[raft.ServerID]*follower
}

// follower is a follower's progress and whether it is quiesced: it
// answered a Quiesce heartbeat with Quiesced, in the Host's vouch epoch
// quietEpoch, and was sent no entries since (no answers come while it
// stays so).
type follower struct {
	FollowerProgress
	quiet      bool
	quietEpoch uint64
}

// leading starts a new leadership.
func (p *progress) leading(now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.since = now
	p.peers = nil
}

// record notes the answer to an AppendEntries sent to id, while the Host
// vouched for id in epoch: any success is contact; one carrying a log
// position also moves Match and CaughtUp.
func (p *progress) record(id raft.ServerID, req *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse, now time.Time, epoch uint64) {
	node, ok := nodeOf(id)
	if !resp.Success || !ok {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if req.Term != p.term || p.peers == nil {
		p.term = req.Term
		p.peers = map[raft.ServerID]*follower{}
	}
	f := p.peers[id]
	if f == nil {
		f = &follower{FollowerProgress: FollowerProgress{Node: node, CaughtUp: p.since, Contact: p.since}}
		p.peers[id] = f
	}
	f.Contact = now
	// As raft's leader and follower see it (quiesce.go): a Quiesce
	// heartbeat's answer decides, and entries wake the follower. Anything
	// else leaves it as it is: the answer to a commit-index append sent
	// before the Quiesce heartbeat may arrive after it.
	if req.Quiesce {
		f.quiet, f.quietEpoch = resp.Quiesced, epoch
	} else if len(req.Entries) > 0 {
		f.quiet = false
	}
	if len(req.Entries) == 0 && req.PrevLogEntry == 0 {
		return // a heartbeat: no log position
	}
	match := req.PrevLogEntry + uint64(len(req.Entries))
	if n := len(req.Entries); n > 0 {
		match = req.Entries[n-1].Index
	}
	f.Match = max(f.Match, match)
	if match >= req.LeaderCommitIndex {
		f.CaughtUp = now
	}
}

// Replication reports the group's commit and last index and, while this
// member leads, each other member's progress.
func (g *Group) Replication() Replication {
	r := Replication{Leader: g.IsLeader(), CommitIndex: g.raft.CommitIndex(), LastIndex: g.raft.LastIndex(),
		AppliedIndex: g.raft.AppliedIndex(), LeaderCommit: g.trans.leaderCommit.Load()}
	if !r.Leader {
		return r
	}
	members := g.Members()
	now := time.Now()
	p := &g.trans.progress
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, m := range members {
		if m == g.h.id {
			continue
		}
		f := FollowerProgress{Node: m, CaughtUp: p.since, Contact: p.since}
		if got := p.peers[ServerID(m)]; got != nil {
			f = got.FollowerProgress
			if got.quiet && g.vouchedIn(m, got.quietEpoch) {
				f.Contact = now
			}
		}
		r.Followers = append(r.Followers, f)
	}
	slices.SortFunc(r.Followers, func(a, b FollowerProgress) int { return int(a.Node) - int(b.Node) })
	return r
}

// vouchedIn reports whether the Host vouches for node's liveness in epoch
// (a quiesced follower's stand-in for answers, as for raft's leader): a
// new epoch may be a restarted node, which forgot its quiescence.
func (g *Group) vouchedIn(node int32, epoch uint64) bool {
	alive, now := g.trans.Vouch(ServerID(node), "")
	return alive && now == epoch
}
