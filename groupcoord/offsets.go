package groupcoord

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// OffsetCommit serves OffsetCommit v0-8. A commit is answered once its
// records are committed through the Log (or the Log failed). A member of
// a group commits with its generation; a commit with generation -1, no
// member id and no instance id is a simple commit (an administrator's,
// or a consumer without group management), allowed only while the group
// is empty or does not exist. Partitions of unknown topics are answered
// UNKNOWN_TOPIC_OR_PARTITION and metadata over MaxOffsetMetadata
// OFFSET_METADATA_TOO_LARGE; the other partitions are committed.
// Commit timestamps are the coordinator's clock.
func (c *Coordinator) OffsetCommit(ctx context.Context, req *kmsg.OffsetCommitRequest) *kmsg.OffsetCommitResponse {
	resp := req.ResponseKind().(*kmsg.OffsetCommitResponse)
	// errs[i][j] is the answer for req.Topics[i].Partitions[j].
	errs := make([][]*kerr.Error, len(req.Topics))
	setAll := func(err *kerr.Error) {
		for i, t := range req.Topics {
			for j := range t.Partitions {
				if errs[i][j] == nil {
					errs[i][j] = err
				}
			}
		}
	}
	for i, t := range req.Topics {
		errs[i] = make([]*kerr.Error, len(t.Partitions))
		for j, p := range t.Partitions {
			if !c.cfg.TopicExists(t.Topic, p.Partition) {
				errs[i][j] = kerr.UnknownTopicOrPartition
			}
		}
	}
	generation, memberID := req.Generation, req.MemberID
	if req.Version == 0 {
		generation = -1 // v0 commits have no group management
	}
	if err := c.consumerCommitVersion(req); err != nil {
		setAll(err)
	} else if err := c.admitCommit(ctx, req.Group, c.relaxStaleCommit(req, generation, errs), memberID, req.InstanceID); err != nil {
		setAll(err)
	} else {
		recs := c.commitRecords(req, errs)
		if len(recs) > 0 {
			if err := c.append(ctx, recs); err != nil {
				setAll(err)
			}
		}
		c.commitDone(req.Group)
	}
	for i, t := range req.Topics {
		rt := kmsg.NewOffsetCommitResponseTopic()
		rt.Topic = t.Topic
		for j, p := range t.Partitions {
			rp := kmsg.NewOffsetCommitResponseTopicPartition()
			rp.Partition = p.Partition
			if errs[i][j] != nil {
				rp.ErrorCode = errs[i][j].Code
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// commitRecords are the records of an OffsetCommit's partitions that
// errs leaves without an error; a partition whose metadata is too large
// gets OFFSET_METADATA_TOO_LARGE in errs. Commit timestamps are the
// coordinator's clock.
func (c *Coordinator) commitRecords(req *kmsg.OffsetCommitRequest, errs [][]*kerr.Error) []Record {
	now := time.Now().UnixMilli()
	var recs []Record
	for i, t := range req.Topics {
		for j, p := range t.Partitions {
			if errs[i][j] != nil {
				continue
			}
			meta := deref(p.Metadata)
			if len(meta) > c.cfg.MaxOffsetMetadata {
				errs[i][j] = kerr.OffsetMetadataTooLarge
				continue
			}
			epoch := int32(-1)
			if req.Version >= 6 {
				epoch = p.LeaderEpoch
			}
			recs = append(recs, OffsetRecord(req.Group, t.Topic, p.Partition, Offset{
				Offset: p.Offset, LeaderEpoch: epoch, Metadata: meta, CommitTimestamp: now,
			}))
		}
	}
	return recs
}

// admitCommit validates an OffsetCommit against its group and counts it
// as being written until commitDone, so that offset expiry leaves the
// group alone meanwhile; while an expiry of the group is being written it
// waits for that first, so that no tombstone lands after the commit.
func (c *Coordinator) admitCommit(ctx context.Context, groupID string, generation int32, memberID string, instanceID *string) *kerr.Error {
	if len(groupID) > MaxGroupIDBytes { // commits allow the empty id, as Kafka's do
		return kerr.InvalidGroupID
	}
	for {
		c.mu.Lock()
		var wait chan struct{}
		if g := c.groups[groupID]; g != nil {
			wait = g.expiring
		}
		if l := c.cgroups[groupID]; l != nil && l.expiring != nil {
			wait = l.expiring
		}
		if wait == nil {
			err := c.validateCommitLocked(groupID, generation, memberID, instanceID)
			if err == nil {
				c.committing[groupID]++
			}
			c.mu.Unlock()
			return err
		}
		c.mu.Unlock()
		select {
		case <-wait:
		case <-c.ctx.Done():
			return kerr.NotCoordinator
		case <-ctx.Done():
			return kerr.CoordinatorNotAvailable // the client retries
		}
	}
}

// commitDone ends what admitCommit began.
func (c *Coordinator) commitDone(groupID string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.committing[groupID]--; c.committing[groupID] <= 0 {
		delete(c.committing, groupID)
	}
}

// validateCommit is Kafka's check of an offset commit against the group
// (validateOffsetCommit and the states of doCommitOffsets); a valid
// commit of a member renews its session.
func (c *Coordinator) validateCommit(groupID string, generation int32, memberID string, instanceID *string) *kerr.Error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.validateCommitLocked(groupID, generation, memberID, instanceID)
}

// validateCommitLocked is validateCommit with mu held.
func (c *Coordinator) validateCommitLocked(groupID string, generation int32, memberID string, instanceID *string) *kerr.Error {
	if c.closed {
		return kerr.NotCoordinator
	}
	if err, isCG := c.validateConsumerCommit(groupID, generation, memberID); isCG {
		return err
	}
	if c.view.isShareGroup(groupID) { // Kafka's ShareGroup.validateOffsetCommit
		return kerr.GroupIDNotFound
	}
	simple := generation < 0 && memberID == "" && instanceID == nil
	g := c.lookup(groupID)
	switch {
	case g == nil && generation >= 0:
		return kerr.IllegalGeneration // a commit for a generation that no longer exists
	case g == nil && simple:
		return nil
	case g == nil:
		return kerr.UnknownMemberID
	case g.state == stateDead:
		return kerr.CoordinatorNotAvailable
	case simple:
		if g.state != stateEmpty {
			return kerr.UnknownMemberID
		}
		return nil
	}
	if err := g.validateMember(memberID, instanceID); err != nil {
		return err
	}
	if generation != g.generation {
		return kerr.IllegalGeneration
	}
	switch g.state {
	case stateCompletingRebalance:
		return kerr.RebalanceInProgress
	case stateStable, statePreparingRebalance:
		// During a rebalance commits are still accepted: the member
		// learns of it from its heartbeats.
		m := g.members[memberID]
		c.scheduleHeartbeat(g, m, m.sessionTimeout)
	}
	return nil
}

// FetchOffsets answers one group of an OffsetFetch: the committed offsets
// of the given partitions (offset -1 for those without one), or, with
// nil topics, every offset the group has committed. An unknown group is
// no error: its partitions have no offsets. With requireStable, a
// partition with a transactional commit pending is UNSTABLE_OFFSET_COMMIT,
// which clients retry.
func (c *Coordinator) FetchOffsets(group string, topics []kmsg.OffsetFetchRequestGroupTopic, requireStable bool) kmsg.OffsetFetchResponseGroup {
	out := kmsg.NewOffsetFetchResponseGroup()
	out.Group = group
	c.mu.Lock()
	closed := c.closed
	c.mu.Unlock()
	if closed {
		out.ErrorCode = kerr.NotCoordinator.Code
		return out
	}
	answer := func(p int32, o Offset, ok bool) kmsg.OffsetFetchResponseGroupTopicPartition {
		rp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
		rp.Partition = p
		rp.Offset, rp.LeaderEpoch = -1, -1
		meta := ""
		if ok {
			rp.Offset, rp.LeaderEpoch, meta = o.Offset, o.LeaderEpoch, o.Metadata
		}
		rp.Metadata = &meta
		return rp
	}
	if topics == nil {
		for _, po := range c.view.Offsets(group) {
			if n := len(out.Topics); n == 0 || out.Topics[n-1].Topic != po.Topic {
				rt := kmsg.NewOffsetFetchResponseGroupTopic()
				rt.Topic = po.Topic
				out.Topics = append(out.Topics, rt)
			}
			rt := &out.Topics[len(out.Topics)-1]
			rt.Partitions = append(rt.Partitions, answer(po.Partition, po.Offset, true))
		}
		return out
	}
	for _, t := range topics {
		rt := kmsg.NewOffsetFetchResponseGroupTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			o, ok := c.view.Offset(group, t.Topic, p)
			rp := answer(p, o, ok)
			if requireStable && c.view.Pending(group, t.Topic, p) {
				rp.Offset, rp.ErrorCode = -1, kerr.UnstableOffsetCommit.Code
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		out.Topics = append(out.Topics, rt)
	}
	return out
}

// OffsetDelete serves OffsetDelete v0: it deletes a group's committed
// offsets of the given partitions, writing tombstones through the Log.
// A group with members keeps the offsets of topics its consumers
// subscribe to (GROUP_SUBSCRIBED_TO_TOPIC); a non-empty group of another
// protocol type keeps all of them (NON_EMPTY_GROUP).
func (c *Coordinator) OffsetDelete(ctx context.Context, req *kmsg.OffsetDeleteRequest) *kmsg.OffsetDeleteResponse {
	resp := req.ResponseKind().(*kmsg.OffsetDeleteResponse)
	errs, top := c.offsetDeleteChecks(req)
	if top != nil {
		resp.ErrorCode = top.Code
		return resp
	}
	var recs []Record
	for i, t := range req.Topics {
		for j, p := range t.Partitions {
			if errs[i][j] == nil {
				if _, ok := c.view.Offset(req.Group, t.Topic, p.Partition); ok {
					recs = append(recs, OffsetTombstone(req.Group, t.Topic, p.Partition))
				}
			}
		}
	}
	var werr *kerr.Error
	if len(recs) > 0 {
		werr = c.append(ctx, recs)
	}
	for i, t := range req.Topics {
		rt := kmsg.NewOffsetDeleteResponseTopic()
		rt.Topic = t.Topic
		for j, p := range t.Partitions {
			rp := kmsg.NewOffsetDeleteResponseTopicPartition()
			rp.Partition = p.Partition
			if err := errs[i][j]; err != nil {
				rp.ErrorCode = err.Code
			} else if werr != nil {
				rp.ErrorCode = werr.Code
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// offsetDeleteChecks returns each partition's error (nil: to delete), or
// the request's (Kafka's handleDeleteOffsets).
func (c *Coordinator) offsetDeleteChecks(req *kmsg.OffsetDeleteRequest) ([][]*kerr.Error, *kerr.Error) {
	if req.Group == "" {
		return nil, kerr.InvalidGroupID
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, kerr.NotCoordinator
	}
	if c.view.isConsumerGroup(req.Group) {
		return c.consumerOffsetDeleteChecks(req), nil
	}
	if c.view.isShareGroup(req.Group) { // Kafka's ShareGroup.validateOffsetDelete
		return nil, kerr.GroupIDNotFound
	}
	g := c.lookup(req.Group)
	if g == nil || g.state == stateDead {
		return nil, kerr.GroupIDNotFound
	}
	if g.state != stateEmpty && g.protocolType != consumerProtocolType {
		return nil, kerr.NonEmptyGroup
	}
	errs := make([][]*kerr.Error, len(req.Topics))
	for i, t := range req.Topics {
		errs[i] = make([]*kerr.Error, len(t.Partitions))
		subscribed := g.state != stateEmpty && g.subscribed(t.Topic)
		for j, p := range t.Partitions {
			switch {
			case !c.cfg.TopicExists(t.Topic, p.Partition):
				errs[i][j] = kerr.UnknownTopicOrPartition
			case subscribed:
				errs[i][j] = kerr.GroupSubscribedToTopic
			}
		}
	}
	return errs, nil
}

// MaxGroupIDBytes is the longest group id a group may have: what a
// non-flexible string (int16 length) carries, so that every version of
// ListGroups and DescribeGroups can name every group. A longer id, which
// flexible requests can carry, made a ListGroups v0-v2 answer undecodable
// (test/reqfuzz); Kafka sets no bound and fails to serialise that answer.
const MaxGroupIDBytes = 1<<15 - 1

// validGroupID reports whether id may name a group that members join: not
// empty, and at most MaxGroupIDBytes.
func validGroupID(id string) bool { return id != "" && len(id) <= MaxGroupIDBytes }
