package kafkaapi

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka-go/acl"
	"github.com/minikafka/minikafka-go/internal/scram"
)

// The bases below answer every method of a role as a node that does not
// serve it: with the documented "disabled" answer where the contract has
// one (allow everything, no credentials, no ACLs, no transaction state),
// else with a Kafka error. A test fake embeds them and implements only
// what its tests exercise. They live in a test file, not as an exported
// kafkaapi.UnimplementedBackend, so that the broker must implement every
// role and the compiler says so when a role grows.

// errUnserved answers what a base does not serve.
var errUnserved = fmt.Errorf("%w: not served by this backend", kerr.UnsupportedVersion)

// unservedWait is a ProduceWait that fails with err.
func unservedWait(err error) ProduceWait {
	return func(context.Context) (ProduceResult, error) { return ProduceResult{}, err }
}

// baseBackend is a Backend with no topics, groups, transactions, ACLs,
// credentials or reassignment, that allows every request.
type baseBackend struct{}

var _ Backend = baseBackend{}

// Topics.

func (baseBackend) Cluster() ClusterView   { return ClusterView{ControllerID: -1} }
func (baseBackend) AutoCreateTopics() bool { return false }
func (baseBackend) CreateTopic(context.Context, TopicSpec, bool) (CreatedTopic, error) {
	return CreatedTopic{}, errUnserved
}
func (baseBackend) CreatePartitions(context.Context, string, int32, bool) error { return errUnserved }
func (baseBackend) DeleteTopic(context.Context, string) error                   { return errUnserved }
func (baseBackend) Partition(string, int32) (Partition, error) {
	return nil, kerr.UnknownTopicOrPartition
}

// Admin.

func (baseBackend) Configs() []ConfigEntry { return nil }
func (baseBackend) TopicConfigs(string) (map[string]string, error) {
	return nil, kerr.UnknownTopicOrPartition
}
func (baseBackend) ClusterConfigs() map[string]string { return nil }
func (baseBackend) AlterTopicConfigs(context.Context, string, map[string]string, bool) error {
	return errUnserved
}
func (baseBackend) AlterClusterConfigs(context.Context, map[string]string, bool) error {
	return errUnserved
}
func (baseBackend) Reassignments() ([]Reassignment, error) {
	return nil, fmt.Errorf("%w: partition reassignment is not supported by this server", kerr.UnsupportedVersion)
}
func (baseBackend) AlterReassignment(context.Context, string, int32, []int32) error {
	return errUnserved
}

// Groups.

func (baseBackend) CoordinatorNode(context.Context, string) (int32, error) {
	return -1, kerr.CoordinatorNotAvailable
}
func (baseBackend) GroupCoordinator(context.Context, string) (GroupCoordinator, error) {
	return nil, kerr.CoordinatorNotAvailable
}
func (baseBackend) GroupCoordinators() ([]GroupCoordinator, error) { return nil, nil }

// Transactions.

var errNoTxns = fmt.Errorf("%w: transactions are not served", kerr.CoordinatorNotAvailable)

func (baseBackend) InitProducerID(context.Context, InitProducerIDRequest) (ProducerIdentity, error) {
	return ProducerIdentity{}, errUnserved
}
func (baseBackend) TxnCoordinatorNode(context.Context, string) (int32, error) { return -1, errNoTxns }
func (baseBackend) TxnCoordinator(context.Context, string) (TxnCoordinator, error) {
	return nil, errNoTxns
}
func (baseBackend) TxnCoordinators() ([]TxnCoordinator, error) { return nil, nil }
func (baseBackend) VerifyTxnPartitions(_ context.Context, _ string, _ int64, _ int16, parts []TopicPartition) []error {
	errs := make([]error, len(parts))
	for i := range errs {
		errs[i] = errUnserved
	}
	return errs
}

// Security.

func (baseBackend) Authorize(acl.Request) bool { return true }
func (baseBackend) AuthorizeAny(string, string, acl.Operation, acl.ResourceType) bool {
	return true
}

var errNoACLs = fmt.Errorf("%w: no authorizer is configured on this server", kerr.SecurityDisabled)

func (baseBackend) ACLs() (acl.Set, error) { return acl.Set{}, errNoACLs }
func (baseBackend) CreateACLs(context.Context, []acl.Binding) ([]error, error) {
	return nil, errNoACLs
}
func (baseBackend) DeleteACLs(context.Context, []acl.Filter) ([][]acl.Binding, []error, error) {
	return nil, nil, errNoACLs
}
func (baseBackend) ScramCredential(string, scram.Mechanism) (scram.Credential, bool) {
	return scram.Credential{}, false
}

var errNoScram = fmt.Errorf("%w: SCRAM credentials are not managed by this server", kerr.UnsupportedVersion)

func (baseBackend) ScramUsers() ([]ScramCredentialInfo, error) { return nil, errNoScram }
func (baseBackend) AlterScramCredentials(context.Context, []ScramDeletion, []ScramUpsertion) (map[string]error, error) {
	return nil, errNoScram
}

func (baseBackend) CreateDelegationToken(context.Context, string, string, []string, int64) (DelegationToken, error) {
	return DelegationToken{}, kerr.DelegationTokenAuthDisabled
}
func (baseBackend) RenewDelegationToken(context.Context, string, []byte, int64) (int64, error) {
	return 0, kerr.DelegationTokenAuthDisabled
}
func (baseBackend) ExpireDelegationToken(context.Context, string, []byte, int64) (int64, error) {
	return 0, kerr.DelegationTokenAuthDisabled
}
func (baseBackend) DescribeDelegationTokens() ([]DelegationToken, error) {
	return nil, kerr.DelegationTokenAuthDisabled
}
func (baseBackend) DelegationTokenCredential(string, scram.Mechanism) (TokenCredential, bool) {
	return TokenCredential{}, false
}

// basePartition is an empty follower replica that keeps no transaction
// state, does not track its max timestamp and cannot delete records or
// hold markers.
type basePartition struct{}

var _ Partition = basePartition{}

func (basePartition) Produce([]byte) ProduceWait                  { return unservedWait(errUnserved) }
func (basePartition) Read(int64, int) ([]byte, error)             { return nil, errUnserved }
func (basePartition) HighWatermark() int64                        { return 0 }
func (basePartition) LogStartOffset() int64                       { return 0 }
func (basePartition) Changed() <-chan struct{}                    { return nil } // never fires
func (basePartition) WatchChanged(<-chan struct{}, func()) func() { return func() {} }
func (basePartition) Fetched([]byte)                              {}
func (basePartition) DeleteRecords(context.Context, int64) (int64, error) {
	return 0, fmt.Errorf("%w: records of this partition cannot be deleted", kerr.PolicyViolation)
}
func (basePartition) OffsetForTimestamp(int64) (TimestampOffset, bool) {
	return TimestampOffset{}, false
}
func (basePartition) MaxTimestamp() (TimestampOffset, bool)      { return TimestampOffset{}, false }
func (basePartition) EpochEndOffset(int32) (int32, int64, error) { return -1, -1, errUnserved }
func (basePartition) IsLeader() bool                             { return false }
func (basePartition) LeaderEpoch() int32                         { return -1 }
func (basePartition) Settle(context.Context) error               { return nil }
func (basePartition) LastStableOffset() int64                    { return -1 }
func (basePartition) AbortedTxns(int64, int64) []AbortedTxn      { return nil }
func (basePartition) WriteTxnMarker(TxnMarker) ProduceWait {
	return unservedWait(kerr.UnsupportedForMessageFormat)
}
func (basePartition) TxnVerified(int64, int16) (bool, TxnGuard) { return false, 0 }
func (basePartition) ProduceVerified([]byte, int64, int16, TxnGuard) ProduceWait {
	return unservedWait(errUnserved)
}

// baseGroupCoordinator answers every group request UNSUPPORTED_VERSION.
type baseGroupCoordinator struct{}

var _ GroupCoordinator = baseGroupCoordinator{}

var codeUnserved = kerr.UnsupportedVersion.Code

func (baseGroupCoordinator) JoinGroup(_ context.Context, _, _ string, req *kmsg.JoinGroupRequest) *kmsg.JoinGroupResponse {
	resp := req.ResponseKind().(*kmsg.JoinGroupResponse)
	resp.ErrorCode = codeUnserved
	return resp
}

func (baseGroupCoordinator) SyncGroup(_ context.Context, req *kmsg.SyncGroupRequest) *kmsg.SyncGroupResponse {
	resp := req.ResponseKind().(*kmsg.SyncGroupResponse)
	resp.ErrorCode = codeUnserved
	return resp
}

func (baseGroupCoordinator) Heartbeat(req *kmsg.HeartbeatRequest) *kmsg.HeartbeatResponse {
	resp := req.ResponseKind().(*kmsg.HeartbeatResponse)
	resp.ErrorCode = codeUnserved
	return resp
}

func (baseGroupCoordinator) LeaveGroup(req *kmsg.LeaveGroupRequest) *kmsg.LeaveGroupResponse {
	resp := req.ResponseKind().(*kmsg.LeaveGroupResponse)
	resp.ErrorCode = codeUnserved
	return resp
}

func (baseGroupCoordinator) OffsetCommit(_ context.Context, req *kmsg.OffsetCommitRequest) *kmsg.OffsetCommitResponse {
	resp := req.ResponseKind().(*kmsg.OffsetCommitResponse)
	for _, t := range req.Topics {
		rt := kmsg.NewOffsetCommitResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetCommitResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, codeUnserved
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

func (baseGroupCoordinator) OffsetDelete(_ context.Context, req *kmsg.OffsetDeleteRequest) *kmsg.OffsetDeleteResponse {
	resp := req.ResponseKind().(*kmsg.OffsetDeleteResponse)
	resp.ErrorCode = codeUnserved
	return resp
}

func (baseGroupCoordinator) FetchOffsets(group string, _ []kmsg.OffsetFetchRequestGroupTopic, _ bool) kmsg.OffsetFetchResponseGroup {
	g := kmsg.NewOffsetFetchResponseGroup()
	g.Group, g.ErrorCode = group, codeUnserved
	return g
}

func (baseGroupCoordinator) DescribeGroup(group string) kmsg.DescribeGroupsResponseGroup {
	g := kmsg.NewDescribeGroupsResponseGroup()
	g.Group, g.ErrorCode = group, codeUnserved
	return g
}

func (baseGroupCoordinator) ListGroups(_, _ []string) []kmsg.ListGroupsResponseGroup { return nil }

func (baseGroupCoordinator) ConsumerGroupHeartbeat(_ context.Context, _, _ string, _ func(string) bool, req *kmsg.ConsumerGroupHeartbeatRequest) *kmsg.ConsumerGroupHeartbeatResponse {
	resp := req.ResponseKind().(*kmsg.ConsumerGroupHeartbeatResponse)
	resp.ErrorCode = kerr.NotCoordinator.Code
	return resp
}

func (baseGroupCoordinator) DescribeConsumerGroup(group string) kmsg.ConsumerGroupDescribeResponseGroup {
	g := kmsg.NewConsumerGroupDescribeResponseGroup()
	g.Group, g.ErrorCode = group, kerr.NotCoordinator.Code
	return g
}

func (baseGroupCoordinator) ShareGroupHeartbeat(_ context.Context, _, _ string, req *kmsg.ShareGroupHeartbeatRequest) *kmsg.ShareGroupHeartbeatResponse {
	resp := req.ResponseKind().(*kmsg.ShareGroupHeartbeatResponse)
	resp.ErrorCode = kerr.NotCoordinator.Code
	return resp
}

func (baseGroupCoordinator) DescribeShareGroup(group string) kmsg.ShareGroupDescribeResponseGroup {
	g := kmsg.NewShareGroupDescribeResponseGroup()
	g.GroupID, g.ErrorCode = group, kerr.NotCoordinator.Code
	return g
}

func (baseGroupCoordinator) ValidateOffsetFetch(string, *string, int32) *kerr.Error { return nil }

func (baseGroupCoordinator) DeleteGroup(context.Context, string) *kerr.Error {
	return kerr.UnsupportedVersion
}

func (baseGroupCoordinator) TxnOffsetCommit(_ context.Context, req *kmsg.TxnOffsetCommitRequest) *kmsg.TxnOffsetCommitResponse {
	resp := req.ResponseKind().(*kmsg.TxnOffsetCommitResponse)
	for _, t := range req.Topics {
		rt := kmsg.NewTxnOffsetCommitResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, codeUnserved
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}
