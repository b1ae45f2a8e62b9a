package broker

import (
	"errors"
	"time"

	"github.com/minikafka/minikafka-go/internal/knob"
	"github.com/minikafka/minikafka-go/multiraft"
)

// Tuning is the node's timeouts and limits in one place, with their
// defaults in DefaultTuning; a zero field means its default. Raft holds the
// Raft port's (multiraft.Tuning); LeaderRebalanceInterval overrides its
// RebalanceInterval.
type Tuning struct {
	// MetaDutyInterval is how often the metadata leader checks the broker
	// registry and the metadata group's members against gossip.
	MetaDutyInterval time.Duration
	// MetaProposal bounds a metadata change the node makes on its own
	// (registering a broker, creating the cluster id, adding a member).
	MetaProposal time.Duration
	// MetaRetryMin and MetaRetryMax bound the back-off of a metadata
	// proposal that finds no leader.
	MetaRetryMin, MetaRetryMax time.Duration
	// MetaForward bounds a forwarded metadata command whose caller set no
	// deadline; MetaApply bounds the leader's wait to queue one it serves;
	// MetaServe bounds a forwarding connection as a whole.
	MetaForward, MetaApply, MetaServe time.Duration
	// MaxMetaFrame bounds one forwarded command or its reply, in bytes.
	MaxMetaFrame int
	// LeaderReport bounds one attempt of a new partition leader to report
	// itself to the metadata group; LeaderReportRetry is the wait before
	// the next.
	LeaderReport, LeaderReportRetry time.Duration
	// TopicLeaders is how long CreateTopics waits for the new partitions'
	// leaders before it answers.
	TopicLeaders time.Duration
	// CoordinatorLoadWait is how long a group or transaction request waits
	// for its coordinator to finish loading on a new leader before it is
	// answered COORDINATOR_LOAD_IN_PROGRESS (0: not at all).
	CoordinatorLoadWait time.Duration
	// ReconcileRetry is how often replicas that failed to open are tried
	// again.
	ReconcileRetry time.Duration
	// ReassignInterval is how often a partition leader looks at the moves
	// of its partitions (broker/replicas) when the metadata does not change;
	// ReassignStep bounds one membership change of a move.
	ReassignInterval, ReassignStep time.Duration
	// OpenParallelism is how many replicas open at once.
	OpenParallelism int
	// ProduceEnqueue bounds the wait for a slot in a partition's Raft
	// queue.
	ProduceEnqueue time.Duration
	// ReadyPoll is how often WaitReady looks again without a change.
	ReadyPoll time.Duration
	// MetadataCatchUp bounds how long a starting node holds the Kafka
	// requests it receives until its metadata has caught up with the
	// cluster's (Controller.CatchUp); past it, it serves what it knows.
	MetadataCatchUp time.Duration
	// GossipLeave bounds announcing a graceful departure to gossip.
	GossipLeave time.Duration
	// ReplicaLagMax is how long a follower may go without answering its
	// partition leader, or stay behind its commit index, before it leaves
	// the ISR (Kafka's replica.lag.time.max.ms). 10 s, not Kafka's 30 s:
	// Raft followers answer every heartbeat (or the node's liveness pings
	// while quiesced), so silence is not a slow fetch, and gossip reports a
	// dead node within about 5 s; the views then agree soon after.
	ReplicaLagMax time.Duration
	// DiskCheckInterval is how often the node looks at its data disk's
	// free space (a refused produce also looks, at most every 50 ms).
	DiskCheckInterval time.Duration
	// Raft is the Raft port's tuning.
	Raft multiraft.Tuning
}

// DefaultTuning returns the defaults (the table in validate), each
// explained on Tuning.
func DefaultTuning() Tuning {
	var t Tuning
	_ = t.validate() // zero fields take their defaults, which are valid
	return t
}

// validate fills zero fields with their defaults and checks them; its
// errors name a field as tuning.<snake_case name>.
func (t *Tuning) validate() error {
	err := knob.Check([]knob.Duration{
		{Name: "meta_duty_interval", V: &t.MetaDutyInterval, Def: 500 * time.Millisecond, Min: time.Millisecond},
		{Name: "meta_proposal", V: &t.MetaProposal, Def: 5 * time.Second, Min: time.Millisecond},
		{Name: "meta_retry_min", V: &t.MetaRetryMin, Def: 20 * time.Millisecond, Min: time.Millisecond},
		{Name: "meta_retry_max", V: &t.MetaRetryMax, Def: 500 * time.Millisecond, Min: time.Millisecond},
		{Name: "meta_forward", V: &t.MetaForward, Def: 5 * time.Second, Min: time.Millisecond},
		{Name: "meta_apply", V: &t.MetaApply, Def: 10 * time.Second, Min: time.Millisecond},
		{Name: "meta_serve", V: &t.MetaServe, Def: 30 * time.Second, Min: time.Millisecond},
		{Name: "leader_report", V: &t.LeaderReport, Def: 10 * time.Second, Min: time.Millisecond},
		{Name: "leader_report_retry", V: &t.LeaderReportRetry, Def: time.Second, Min: time.Millisecond},
		{Name: "topic_leaders", V: &t.TopicLeaders, Def: 5 * time.Second},
		{Name: "reconcile_retry", V: &t.ReconcileRetry, Def: 5 * time.Second, Min: time.Millisecond},
		{Name: "coordinator_load_wait", V: &t.CoordinatorLoadWait, Def: 2 * time.Second},
		{Name: "reassign_interval", V: &t.ReassignInterval, Def: 200 * time.Millisecond, Min: time.Millisecond},
		{Name: "reassign_step", V: &t.ReassignStep, Def: 10 * time.Second, Min: time.Millisecond},
		{Name: "produce_enqueue", V: &t.ProduceEnqueue, Def: 10 * time.Second, Min: time.Millisecond},
		{Name: "ready_poll", V: &t.ReadyPoll, Def: 50 * time.Millisecond, Min: time.Millisecond},
		{Name: "metadata_catch_up", V: &t.MetadataCatchUp, Def: 30 * time.Second, Min: time.Millisecond},
		{Name: "gossip_leave", V: &t.GossipLeave, Def: 2 * time.Second},
		{Name: "replica_lag_max", V: &t.ReplicaLagMax, Def: 10 * time.Second, Min: time.Millisecond},
		{Name: "disk_check_interval", V: &t.DiskCheckInterval, Def: time.Second, Min: time.Millisecond},
	}, []knob.Int{
		{Name: "max_meta_frame", V: &t.MaxMetaFrame, Def: 4 << 20, Min: 64 << 10, Max: 1 << 30},
		{Name: "open_parallelism", V: &t.OpenParallelism, Def: 32, Min: 1, Max: 1024},
	})
	var ke *knob.Error
	if errors.As(err, &ke) {
		return bad("tuning."+ke.Name, "", "%s", ke.Msg)
	}
	if t.MetaRetryMax < t.MetaRetryMin {
		return bad("tuning.meta_retry_max", t.MetaRetryMax, "must not be below tuning.meta_retry_min %v", t.MetaRetryMin)
	}
	if err := t.Raft.Validate(); err != nil {
		return bad("tuning.raft", "", "%v", err)
	}
	return nil
}
