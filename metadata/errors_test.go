package metadata

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// Each typed error names its subject in the message and unwraps to its
// sentinels.
func TestTypedErrors(t *testing.T) {
	tests := []struct {
		err     error
		mention string
		is      []error
	}{
		{&ClusterIDMismatchError{Have: "c1", Proposed: "c2"}, "c2", []error{ErrClusterIDMismatch}},
		{&InvalidBrokerError{ID: 42, Reason: "bad"}, "42", []error{ErrInvalidBroker}},
		{&InvalidTopicError{Name: "a/b", Reason: "bad"}, "a/b", []error{ErrInvalidTopic}},
		{&TopicExistsError{Name: "events"}, "events", []error{ErrTopicExists}},
		{&InvalidPartitionsError{Partitions: -7}, "-7", []error{ErrInvalidPartitions}},
		{&PartitionLimitError{Topic: "t", Total: 30, Limit: 20}, "max_partitions (20)", []error{ErrPartitionLimit}},
		{&ReplicationFactorError{ReplicationFactor: 9, Brokers: 3}, "9", []error{ErrInvalidReplicationFactor}},
		{&AssignmentError{Partition: -1, Broker: -1, Err: ErrPartitionCount}, "count", []error{ErrInvalidReplicaAssignment, ErrPartitionCount}},
		{&AssignmentError{Partition: 5, Broker: -1, Err: ErrReplicaCount}, "partition 5", []error{ErrInvalidReplicaAssignment, ErrReplicaCount}},
		{&AssignmentError{Partition: 5, Broker: 77, Err: ErrUnknownBroker}, "broker 77", []error{ErrInvalidReplicaAssignment, ErrUnknownBroker}},
		{&InvalidConfigError{Key: "k.x", Reason: "bad"}, "k.x", []error{ErrInvalidConfig}},
		{&UnknownTopicError{Topic: "nope", Partition: -1}, "nope", []error{ErrUnknownTopicOrPartition}},
		{&UnknownTopicError{Topic: "t", Partition: 12}, "12", []error{ErrUnknownTopicOrPartition}},
		{&LeaderReportError{Topic: "t", Partition: 1, Leader: 8, Epoch: 3, Err: ErrNotReplica}, "leader 8", []error{ErrInvalidLeader, ErrNotReplica}},
		{&DecodeError{Offset: 31, Reason: "short", Err: ErrMalformedCommand}, "31", []error{ErrMalformedCommand}},
		{&UnknownCommandError{Type: 200, Version: 1}, "200", []error{ErrUnknownCommand}},
		{&DelegationTokenError{TokenID: "tok-9", Err: ErrDelegationTokenExpired}, "tok-9", []error{ErrDelegationTokenExpired}},
		{&DelegationTokenError{TokenID: "t", Reason: "why", Err: ErrTooManyDelegationTokens}, "why", []error{ErrTooManyDelegationTokens}},
	}
	for _, tc := range tests {
		if msg := tc.err.Error(); !strings.Contains(msg, tc.mention) {
			t.Errorf("%T.Error() = %q, want it to mention %q", tc.err, msg, tc.mention)
		}
		for _, s := range tc.is {
			if !errors.Is(tc.err, s) {
				t.Errorf("%T does not wrap %v", tc.err, s)
			}
		}
	}
}

func TestCommandTypeString(t *testing.T) {
	seen := map[string]bool{}
	for _, cmd := range sampleCommands() {
		if got, want := cmd.Type().String(), strings.TrimPrefix(fmt.Sprintf("%T", cmd), "metadata."); got != want {
			t.Errorf("%T.Type().String() = %q, want %q", cmd, got, want)
		}
		seen[cmd.Type().String()] = true
	}
	if len(seen) != 20 || CommandType(0).String() != "Unknown" || CommandType(99).String() != "Unknown" {
		t.Errorf("names %v", seen)
	}
}
