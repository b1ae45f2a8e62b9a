package e2e

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"
)

// GroupKind is a kind of problem CheckGroup reports.
type GroupKind uint8

// The kinds of group problem, each with the sentinel error GroupCheckError
// wraps.
const (
	// GroupLost: an acknowledged record was never delivered to any member.
	GroupLost GroupKind = iota
	// BelowCommit: a record was delivered at an offset below a commit in
	// force: one acknowledged before the member was assigned the partition,
	// or the member's own earlier commit. Re-delivering what a member read
	// after its last commit, to the next owner, is Kafka's at-least-once
	// and is not a problem.
	BelowCommit
	// Regression: a committed offset went backwards: an acknowledged
	// commit lower than an earlier acknowledged one of the partition, or
	// an OffsetFetch answering less than what was acknowledged before it
	// was sent.
	Regression
	// ResumeMismatch: after every member of a round closed, the first
	// record the next round delivered from a partition is not at the
	// committed offset.
	ResumeMismatch
	// BadGroupHistory: the history is not one a consumer could produce (a
	// record delivered from a partition never assigned to the member).
	BadGroupHistory
	numGroupKinds
)

// Errors that a GroupCheckError wraps, one per GroupKind.
var (
	ErrGroupLost       = errors.New("e2e: acknowledged record never consumed")
	ErrBelowCommit     = errors.New("e2e: record re-delivered below a committed offset")
	ErrRegression      = errors.New("e2e: committed offset went backwards")
	ErrResumeMismatch  = errors.New("e2e: consumers did not resume at the committed offset")
	ErrBadGroupHistory = errors.New("e2e: inconsistent group history")
)

var groupKindErrs = [numGroupKinds]error{ErrGroupLost, ErrBelowCommit, ErrRegression, ErrResumeMismatch, ErrBadGroupHistory}
var groupKindNames = [numGroupKinds]string{"lost", "below-commit", "regression", "resume-mismatch", "bad-history"}

func (k GroupKind) String() string {
	if k < numGroupKinds {
		return groupKindNames[k]
	}
	return fmt.Sprintf("groupkind(%d)", uint8(k))
}

// Err is the sentinel error of k.
func (k GroupKind) Err() error {
	if k < numGroupKinds {
		return groupKindErrs[k]
	}
	return nil
}

// GroupProblem is one finding of CheckGroup.
type GroupProblem struct {
	Kind      GroupKind
	Partition int32
	Offset    int64 // the record's, or the offset committed or observed
	Seq       int   // the event at fault; -1 for GroupLost
	Member    string
	Detail    string
}

func (p GroupProblem) String() string {
	s := fmt.Sprintf("%s [%d]@%d", p.Kind, p.Partition, p.Offset)
	if p.Seq >= 0 {
		s += fmt.Sprintf(" #%d", p.Seq)
	}
	if p.Member != "" {
		s += " " + p.Member
	}
	return s + ": " + p.Detail
}

// GroupReport is CheckGroup's verdict.
type GroupReport struct {
	Problems []GroupProblem // by kind, partition, offset, event

	Acked         int // acknowledged records of the topic
	Deliveries    int // records delivered, re-deliveries included
	Consumed      int // distinct acknowledged records delivered
	Redelivered   int // deliveries of an offset delivered before, above every commit in force (allowed)
	Commits       int // acknowledged commits of one partition's offset
	Rebalances    int // distinct (round, generation) in which partitions were assigned
	Members       int // distinct members
	Rounds        int // rounds of members
	Observed      int // OffsetFetches compared with the commits
	ResumeChecked int // partitions whose resumption after a round was checked
}

// Count returns the number of problems of kind k.
func (r *GroupReport) Count(k GroupKind) int {
	n := 0
	for _, p := range r.Problems {
		if p.Kind == k {
			n++
		}
	}
	return n
}

// Err returns nil if the report found no problem, else a *GroupCheckError.
func (r *GroupReport) Err() error {
	if len(r.Problems) == 0 {
		return nil
	}
	return &GroupCheckError{Report: r}
}

// String is the report's one-line summary.
func (r *GroupReport) String() string {
	return fmt.Sprintf("records produced (acked) %d, consumed %d (%d deliveries, %d re-delivered above the last commit), lost %d, re-delivered below commit %d, offset regressions %d, resume mismatches %d (%d partitions checked), commits %d, rebalances %d, members %d in %d rounds, offset fetches %d",
		r.Acked, r.Consumed, r.Deliveries, r.Redelivered, r.Count(GroupLost), r.Count(BelowCommit), r.Count(Regression),
		r.Count(ResumeMismatch), r.ResumeChecked, r.Commits, r.Rebalances, r.Members, r.Rounds, r.Observed)
}

// sumGroupReports adds up reports: counts and problems.
func sumGroupReports(rs []*GroupReport) *GroupReport {
	t := &GroupReport{}
	for _, r := range rs {
		t.Problems = append(t.Problems, r.Problems...)
		t.Acked += r.Acked
		t.Deliveries += r.Deliveries
		t.Consumed += r.Consumed
		t.Redelivered += r.Redelivered
		t.Commits += r.Commits
		t.Rebalances += r.Rebalances
		t.Members += r.Members
		t.Rounds += r.Rounds
		t.Observed += r.Observed
		t.ResumeChecked += r.ResumeChecked
	}
	return t
}

// GroupCheckError is a failed group check. errors.Is matches the sentinel
// of every kind of problem it holds.
type GroupCheckError struct {
	Report *GroupReport
}

func (e *GroupCheckError) Error() string {
	return reportText("e2e: group check failed:", numGroupKinds, e.Report.Count, e.Report.Problems)
}

// Unwrap gives the sentinel of each kind present.
func (e *GroupCheckError) Unwrap() []error { return reportErrs(numGroupKinds, e.Report.Count) }

// memberPartition names one member's ownership of one partition.
type memberPartition struct {
	member    string
	partition int32
}

// ownership is a member's current or last ownership of a partition.
type ownership struct {
	open  bool
	start int   // Seq of the Assigned event
	floor int64 // highest commit acknowledged before start (-1: none)
	own   int64 // highest commit of the member's own in this ownership (-1: none)
}

// noCommit is the floor of a partition without an acknowledged commit.
const noCommit = -1

// CheckGroup proves, from the attempts of a workload on topic and the
// events of one consumer group reading it, that: every acknowledged
// record was delivered to some member; no member was delivered a record
// below the commit in force when it was assigned the partition (or below
// its own later commit); acknowledged commits of a partition never go
// backwards, and no OffsetFetch answered less than what was acknowledged
// before it was sent; and each round of members after the first started
// every partition exactly at the offset the last OffsetFetch before it
// answered. Events must be in Seq order. CheckGroup is pure.
func CheckGroup(topic string, attempts []Attempt, events []GroupEvent) *GroupReport {
	c := newGroupChecker()
	for _, e := range events {
		c.event(e)
	}
	r := c.r
	checkObserved(events, c.add)
	r.ResumeChecked = checkResume(events, c.roundStart, c.firstInRound, c.add)
	for _, a := range attempts {
		if a.Topic != topic || a.Outcome != Acked {
			continue
		}
		r.Acked++
		if c.consumed[a.ID] {
			r.Consumed++
			continue
		}
		c.add(GroupProblem{Kind: GroupLost, Partition: a.Partition, Offset: a.Offset, Seq: -1,
			Detail: fmt.Sprintf("%v acknowledged, never delivered", a.ID)})
	}
	r.Members, r.Rounds, r.Rebalances = len(c.members), len(c.rounds), len(c.rebalances)

	slices.SortStableFunc(r.Problems, func(a, b GroupProblem) int {
		return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Partition, b.Partition),
			cmp.Compare(a.Offset, b.Offset), cmp.Compare(a.Seq, b.Seq), cmp.Compare(a.Detail, b.Detail))
	})
	return r
}

// groupChecker is CheckGroup's state while it walks the events.
type groupChecker struct {
	r            *GroupReport
	maxCommit    map[int32]int64 // highest acknowledged commit so far
	commitSeq    map[int32]int   // its Seq
	owned        map[memberPartition]*ownership
	seenOffset   map[int32]map[int64]bool // offsets delivered so far, by partition
	consumed     map[ID]bool
	members      map[string]bool
	rebalances   map[[2]int64]bool
	rounds       map[int]bool
	firstInRound map[[2]int64]GroupEvent // (round, partition) -> first delivery
	roundStart   map[int]int             // round -> Seq of its first member event
}

func newGroupChecker() *groupChecker {
	return &groupChecker{r: &GroupReport{}, maxCommit: map[int32]int64{}, commitSeq: map[int32]int{},
		owned: map[memberPartition]*ownership{}, seenOffset: map[int32]map[int64]bool{}, consumed: map[ID]bool{},
		members: map[string]bool{}, rebalances: map[[2]int64]bool{}, rounds: map[int]bool{},
		firstInRound: map[[2]int64]GroupEvent{}, roundStart: map[int]int{}}
}

func (c *groupChecker) add(p GroupProblem) { c.r.Problems = append(c.r.Problems, p) }

// floorOf is the highest commit of p acknowledged so far.
func (c *groupChecker) floorOf(p int32) int64 {
	if v, ok := c.maxCommit[p]; ok {
		return v
	}
	return noCommit
}

// event takes one event, in Seq order.
func (c *groupChecker) event(e GroupEvent) {
	if e.Member != "" {
		c.members[e.Member] = true
		c.rounds[e.Round] = true
		if _, ok := c.roundStart[e.Round]; !ok {
			c.roundStart[e.Round] = e.Seq
		}
	}
	switch e.Kind {
	case EvAssigned:
		if len(e.Partitions) > 0 {
			c.rebalances[[2]int64{int64(e.Round), int64(e.Generation)}] = true
		}
		for _, p := range e.Partitions {
			c.owned[memberPartition{e.Member, p}] = &ownership{open: true, start: e.Seq, floor: c.floorOf(p), own: noCommit}
		}
	case EvRevoked, EvLost:
		for _, p := range e.Partitions {
			if o := c.owned[memberPartition{e.Member, p}]; o != nil {
				o.open = false
			}
		}
	case EvDelivered:
		c.delivered(e)
	case EvCommitted:
		c.committed(e)
	case EvObserved:
		c.r.Observed++
	}
}

// delivered checks a delivery against the member's ownership.
func (c *groupChecker) delivered(e GroupEvent) {
	c.r.Deliveries++
	if id, ok := ParseValue(e.Value); ok {
		c.consumed[id] = true
	}
	k := [2]int64{int64(e.Round), int64(e.Partition)}
	if _, ok := c.firstInRound[k]; !ok {
		c.firstInRound[k] = e
	}
	o := c.owned[memberPartition{e.Member, e.Partition}]
	switch {
	case o == nil:
		c.add(GroupProblem{Kind: BadGroupHistory, Partition: e.Partition, Offset: e.Offset, Seq: e.Seq, Member: e.Member,
			Detail: "delivered from a partition never assigned to the member"})
	case e.Offset < max(o.floor, o.own):
		detail := fmt.Sprintf("offset %d was committed before the member was assigned the partition (#%d)", o.floor, o.start)
		if o.own > o.floor {
			detail = fmt.Sprintf("the member itself committed offset %d since it was assigned the partition (#%d)", o.own, o.start)
		}
		if !o.open {
			detail += "; delivered after the partition was revoked"
		}
		c.add(GroupProblem{Kind: BelowCommit, Partition: e.Partition, Offset: e.Offset, Seq: e.Seq, Member: e.Member, Detail: detail})
	case c.seenOffset[e.Partition][e.Offset]:
		c.r.Redelivered++
	}
	if c.seenOffset[e.Partition] == nil {
		c.seenOffset[e.Partition] = map[int64]bool{}
	}
	c.seenOffset[e.Partition][e.Offset] = true
}

// committed checks an acknowledged commit against the earlier ones.
func (c *groupChecker) committed(e GroupEvent) {
	c.r.Commits++
	if prev, ok := c.maxCommit[e.Partition]; ok && e.Offset < prev {
		c.add(GroupProblem{Kind: Regression, Partition: e.Partition, Offset: e.Offset, Seq: e.Seq, Member: e.Member,
			Detail: fmt.Sprintf("commit acknowledged after a commit of offset %d (#%d)", prev, c.commitSeq[e.Partition])})
	} else {
		c.maxCommit[e.Partition], c.commitSeq[e.Partition] = e.Offset, e.Seq
	}
	if o := c.owned[memberPartition{e.Member, e.Partition}]; o != nil && o.open {
		o.own = max(o.own, e.Offset)
	}
}

// checkObserved reports OffsetFetch answers lower than, or missing, a
// commit acknowledged before the fetch was sent.
func checkObserved(events []GroupEvent, add func(GroupProblem)) {
	for _, ob := range events {
		if ob.Kind != EvObserved {
			continue
		}
		acked := map[int32]GroupEvent{} // highest commit acknowledged before AsOf
		for _, e := range events[:min(ob.AsOf, len(events))] {
			if e.Kind == EvCommitted {
				if prev, ok := acked[e.Partition]; !ok || e.Offset > prev.Offset {
					acked[e.Partition] = e
				}
			}
		}
		for _, p := range slices.Sorted(maps.Keys(acked)) {
			c := acked[p]
			got, ok := ob.Offsets[p]
			switch {
			case !ok:
				add(GroupProblem{Kind: Regression, Partition: p, Offset: -1, Seq: ob.Seq,
					Detail: fmt.Sprintf("OffsetFetch answered no committed offset, after a commit of %d was acknowledged (#%d)", c.Offset, c.Seq)})
			case got < c.Offset:
				add(GroupProblem{Kind: Regression, Partition: p, Offset: got, Seq: ob.Seq,
					Detail: fmt.Sprintf("OffsetFetch answered %d, after a commit of %d was acknowledged (#%d)", got, c.Offset, c.Seq)})
			}
		}
	}
}

// checkResume checks that every round after the first delivered first, of
// each partition it read, the record at the offset the last OffsetFetch
// before the round answered. It returns the partitions checked.
func checkResume(events []GroupEvent, roundStart map[int]int, firstInRound map[[2]int64]GroupEvent, add func(GroupProblem)) int {
	checked := 0
	for _, round := range slices.Sorted(maps.Keys(roundStart)) {
		if round == 0 {
			continue
		}
		start := roundStart[round]
		var ob *GroupEvent
		for i := range events[:min(start, len(events))] {
			if events[i].Kind == EvObserved {
				ob = &events[i]
			}
		}
		var parts []int32
		for k := range firstInRound {
			if k[0] == int64(round) {
				parts = append(parts, int32(k[1]))
			}
		}
		slices.Sort(parts)
		for _, p := range parts {
			first := firstInRound[[2]int64{int64(round), int64(p)}]
			checked++
			bad := func(format string, args ...any) {
				add(GroupProblem{Kind: ResumeMismatch, Partition: p, Offset: first.Offset, Seq: first.Seq, Member: first.Member,
					Detail: fmt.Sprintf("round %d ", round) + fmt.Sprintf(format, args...)})
			}
			if ob == nil {
				bad("started without an OffsetFetch before it")
				continue
			}
			want, ok := ob.Offsets[p]
			switch {
			case !ok:
				bad("started with no committed offset of the partition (#%d)", ob.Seq)
			case first.Offset != want:
				bad("resumed at %d, committed offset %d (#%d)", first.Offset, want, ob.Seq)
			}
		}
	}
	return checked
}
