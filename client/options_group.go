package client

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// AssignStrategy is how a group's leader assigns partitions to members
// (Kafka's partition.assignment.strategy). Every member lists the
// strategies it supports; the coordinator picks one that all support, and
// the leader (the first member to join) computes the assignment with it.
type AssignStrategy uint8

const (
	// RangeAssign is Kafka's "range" strategy: per topic, the partitions
	// in order are split into contiguous ranges over the members sorted by
	// instance id (static members) or member id, the first ones getting
	// one more when the count does not divide evenly. Eager: every member
	// gives up all its partitions before each rebalance.
	RangeAssign AssignStrategy = iota + 1
	// CooperativeStickyAssign is Kafka's "cooperative-sticky" strategy:
	// a balanced assignment (partition counts differ by at most one among
	// members subscribed to the same topics) that moves as few partitions
	// as possible. Cooperative (KIP-429): members keep consuming what they
	// keep during a rebalance; a partition that moves is first revoked by
	// its owner, which then rejoins, and assigned in the next round.
	CooperativeStickyAssign
)

// String is the strategy's protocol name, as members and tools see it.
func (s AssignStrategy) String() string {
	switch s {
	case RangeAssign:
		return "range"
	case CooperativeStickyAssign:
		return "cooperative-sticky"
	}
	return fmt.Sprintf("strategy(%d)", uint8(s))
}

// cooperative reports whether the strategy follows the cooperative
// rebalance protocol.
func (s AssignStrategy) cooperative() bool { return s == CooperativeStickyAssign }

// PartitionsCallback is called with partitions by topic, each topic's
// partitions sorted. See OnAssigned, OnRevoked and OnLost.
type PartitionsCallback func(ctx context.Context, partitions map[string][]int32)

// ---- group consumer options ----

// ConsumerGroup names the group a GroupConsumer joins (Kafka's group.id).
// Required by NewGroupConsumer; no default. Group option.
func ConsumerGroup(name string) Opt {
	return mk("ConsumerGroup", groupOpt, func(c *config) { c.group = name })
}

// GroupInstanceID makes the member static (KIP-345, Kafka's
// group.instance.id): a member that restarts with the same id within the
// session timeout takes its place back without a rebalance, and Close does
// not leave the group. A second member with the same id fences the first,
// which then fails with FENCED_INSTANCE_ID. Default none (a dynamic
// member). Group option.
func GroupInstanceID(id string) Opt {
	return mk("GroupInstanceID", groupOpt, func(c *config) { c.instanceID = id })
}

// GroupStrategies lists the assignment strategies the member supports, in
// order of preference. The rebalance protocol is cooperative only if every
// listed strategy is (as in Kafka: a list with RangeAssign stays eager).
// Default RangeAssign, CooperativeStickyAssign (Kafka's default). Group
// option.
func GroupStrategies(s ...AssignStrategy) Opt {
	s = append([]AssignStrategy(nil), s...)
	return mk("GroupStrategies", groupOpt, func(c *config) { c.strategies = s })
}

// SessionTimeout is how long the coordinator waits for a heartbeat before
// it removes the member from the group. The broker bounds it (Kafka:
// group.min/max.session.timeout.ms). Default 45s. Group option.
func SessionTimeout(d time.Duration) Opt {
	return mk("SessionTimeout", groupOpt, func(c *config) { c.sessionTimeout = d })
}

// RebalanceTimeout is how long the coordinator waits for every member to
// rejoin once a rebalance starts; the member also waits at most this long
// for the caller to come back to Poll before it gives up partitions (the
// role of Kafka's max.poll.interval.ms). Default 5m. Group option.
func RebalanceTimeout(d time.Duration) Opt {
	return mk("RebalanceTimeout", groupOpt, func(c *config) { c.rebalanceTimeout = d })
}

// HeartbeatInterval is how often the member tells the coordinator it is
// alive, and so how soon it learns of a rebalance. It must be below the
// session timeout (Kafka advises a third of it at most). Default 3s. Group
// option.
func HeartbeatInterval(d time.Duration) Opt {
	return mk("HeartbeatInterval", groupOpt, func(c *config) { c.heartbeat = d })
}

// AutoCommit turns committing by the consumer itself on or off. On (the
// default, as Kafka's enable.auto.commit), every AutoCommitInterval the
// member commits the position after the records that Poll returned before
// the caller's latest call to Poll (records the caller has come back from),
// and before partitions are revoked and in Close it commits everything
// Poll returned. Off, only Commit and CommitPolled commit. Group option.
func AutoCommit(on bool) Opt {
	return mk("AutoCommit", groupOpt, func(c *config) { c.autoCommit = on })
}

// AutoCommitInterval is how often AutoCommit commits. Default 5s (Kafka's
// auto.commit.interval.ms). Group option.
func AutoCommitInterval(d time.Duration) Opt {
	return mk("AutoCommitInterval", groupOpt, func(c *config) { c.autoCommitEvery = d })
}

// OnAssigned sets a function called with the partitions the group gives
// this member: after their committed offsets are known and before Poll
// returns any of their records. With a cooperative strategy it gets only
// the partitions added by a rebalance. Default none. Group option.
func OnAssigned(fn PartitionsCallback) Opt {
	return mk("OnAssigned", groupOpt, func(c *config) { c.onAssigned = fn })
}

// OnRevoked sets a function called with partitions the member gives up
// in a rebalance (all of them with an eager strategy, only those that move
// with a cooperative one) and in Close: after auto-commit has committed
// them, while the member's generation is still valid, so that a caller
// committing by hand can commit here; Poll returns no record of them
// afterwards. Default none. Group option.
func OnRevoked(fn PartitionsCallback) Opt {
	return mk("OnRevoked", groupOpt, func(c *config) { c.onRevoked = fn })
}

// OnLost sets a function called with partitions the member lost without a
// clean revocation: the coordinator no longer knows the member (its
// session expired, or it was fenced), so another member may already own
// them and committing is no longer possible. Default: the OnRevoked
// function. Group option.
func OnLost(fn PartitionsCallback) Opt {
	return mk("OnLost", groupOpt, func(c *config) { c.onLost = fn })
}

// RebalanceProtocol is the rebalance protocol a GroupConsumer speaks
// (Kafka's group.protocol).
type RebalanceProtocol uint8

const (
	// GroupProtocolClassic is the JoinGroup/SyncGroup protocol: the
	// group's leader, a member, computes the assignment with one of
	// GroupStrategies.
	GroupProtocolClassic RebalanceProtocol = iota + 1
	// GroupProtocolConsumer is KIP-848's protocol: the member sends
	// ConsumerGroupHeartbeat and the coordinator computes the assignment
	// (GroupRemoteAssignor) and hands out partitions incrementally; a
	// member gives up a partition before another gets it. GroupStrategies
	// does not apply.
	GroupProtocolConsumer
)

// String is the protocol's name in Kafka's group.protocol setting.
func (p RebalanceProtocol) String() string {
	switch p {
	case GroupProtocolClassic:
		return "classic"
	case GroupProtocolConsumer:
		return "consumer"
	}
	return fmt.Sprintf("protocol(%d)", uint8(p))
}

// ParseGroupProtocol reads a group.protocol name: classic or consumer
// (case-insensitive).
func ParseGroupProtocol(name string) (RebalanceProtocol, error) {
	switch strings.ToLower(name) {
	case "classic":
		return GroupProtocolClassic, nil
	case "consumer":
		return GroupProtocolConsumer, nil
	}
	return 0, &ConfigError{Option: "GroupProtocol", Err: fmt.Errorf("unknown group protocol %q (classic or consumer)", name)}
}

// Server assignors a broker offers to KIP-848 groups
// (group.consumer.assignors).
const (
	// UniformAssignor balances partitions over the members, keeping
	// each where it is when it can (Kafka's default).
	UniformAssignor = "uniform"
	// RangeAssignor gives each member contiguous ranges of each topic's
	// partitions, as the classic range strategy does.
	RangeAssignor = "range"
)

// GroupProtocol picks the rebalance protocol (Kafka's group.protocol).
// Default GroupProtocolClassic. Group option.
func GroupProtocol(p RebalanceProtocol) Opt {
	return mk("GroupProtocol", groupOpt, func(c *config) { c.groupProtocol = p })
}

// GroupRemoteAssignor names the server assignor a KIP-848 member asks
// for (Kafka's group.remote.assignor): UniformAssignor or RangeAssignor,
// or any other name the broker offers. Only with GroupProtocolConsumer.
// Default none: the broker's default assignor. Group option.
func GroupRemoteAssignor(name string) Opt {
	return mk("GroupRemoteAssignor", groupOpt, func(c *config) { c.remoteAssignor = name })
}

// validateGroupProtocol checks the protocol and the options that depend
// on it.
func (c *config) validateGroupProtocol() error {
	bad := func(name, format string, args ...any) error {
		return &ConfigError{Option: name, Err: fmt.Errorf(format, args...)}
	}
	switch {
	case c.groupProtocol != GroupProtocolClassic && c.groupProtocol != GroupProtocolConsumer:
		return bad("GroupProtocol", "unknown group protocol %d", c.groupProtocol)
	case c.remoteAssignor != "" && c.groupProtocol != GroupProtocolConsumer:
		return bad("GroupRemoteAssignor", "a server assignor needs GroupProtocolConsumer")
	case c.groupProtocol == GroupProtocolConsumer && c.explicit["GroupStrategies"]:
		return bad("GroupStrategies", "with GroupProtocolConsumer the broker assigns (see GroupRemoteAssignor)")
	}
	return nil
}
