package client

import (
	"errors"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Each exported code carries kerr's code, name and retriable flag.
func TestKafkaErrorMatchesKerr(t *testing.T) {
	for _, tc := range []struct {
		ours *KafkaError
		want *kerr.Error
	}{
		{ErrUnknownServerError, kerr.UnknownServerError},
		{ErrOffsetOutOfRange, kerr.OffsetOutOfRange},
		{ErrCorruptMessage, kerr.CorruptMessage},
		{ErrUnknownTopicOrPartition, kerr.UnknownTopicOrPartition},
		{ErrLeaderNotAvailable, kerr.LeaderNotAvailable},
		{ErrNotLeaderOrFollower, kerr.NotLeaderForPartition},
		{ErrRequestTimedOut, kerr.RequestTimedOut},
		{ErrMessageTooLarge, kerr.MessageTooLarge},
		{ErrOffsetMetadataTooLarge, kerr.OffsetMetadataTooLarge},
		{ErrNetworkException, kerr.NetworkException},
		{ErrCoordinatorLoadInProgress, kerr.CoordinatorLoadInProgress},
		{ErrCoordinatorNotAvailable, kerr.CoordinatorNotAvailable},
		{ErrNotCoordinator, kerr.NotCoordinator},
		{ErrRecordListTooLarge, kerr.RecordListTooLarge},
		{ErrNotEnoughReplicas, kerr.NotEnoughReplicas},
		{ErrNotEnoughReplicasAfter, kerr.NotEnoughReplicasAfterAppend},
		{ErrInvalidRequiredAcks, kerr.InvalidRequiredAcks},
		{ErrIllegalGeneration, kerr.IllegalGeneration},
		{ErrInconsistentGroupProtocol, kerr.InconsistentGroupProtocol},
		{ErrInvalidGroupID, kerr.InvalidGroupID},
		{ErrUnknownMemberID, kerr.UnknownMemberID},
		{ErrInvalidSessionTimeout, kerr.InvalidSessionTimeout},
		{ErrRebalanceInProgress, kerr.RebalanceInProgress},
		{ErrInvalidCommitOffsetSize, kerr.InvalidCommitOffsetSize},
		{ErrTopicAuthorizationFailed, kerr.TopicAuthorizationFailed},
		{ErrGroupAuthorizationFailed, kerr.GroupAuthorizationFailed},
		{ErrClusterAuthorization, kerr.ClusterAuthorizationFailed},
		{ErrUnsupportedVersion, kerr.UnsupportedVersion},
		{ErrTopicAlreadyExists, kerr.TopicAlreadyExists},
		{ErrInvalidPartitions, kerr.InvalidPartitions},
		{ErrInvalidReplicationFactor, kerr.InvalidReplicationFactor},
		{ErrNotController, kerr.NotController},
		{ErrOutOfOrderSequence, kerr.OutOfOrderSequenceNumber},
		{ErrDuplicateSequence, kerr.DuplicateSequenceNumber},
		{ErrInvalidProducerEpoch, kerr.InvalidProducerEpoch},
		{ErrInvalidTxnState, kerr.InvalidTxnState},
		{ErrTransactionalIDAuth, kerr.TransactionalIDAuthorizationFailed},
		{ErrKafkaStorageError, kerr.KafkaStorageError},
		{ErrUnknownProducerID, kerr.UnknownProducerID},
		{ErrNonEmptyGroup, kerr.NonEmptyGroup},
		{ErrGroupIDNotFound, kerr.GroupIDNotFound},
		{ErrFencedLeaderEpoch, kerr.FencedLeaderEpoch},
		{ErrUnknownLeaderEpoch, kerr.UnknownLeaderEpoch},
		{ErrOffsetNotAvailable, kerr.OffsetNotAvailable},
		{ErrMemberIDRequired, kerr.MemberIDRequired},
		{ErrGroupMaxSizeReached, kerr.GroupMaxSizeReached},
		{ErrFencedInstanceID, kerr.FencedInstanceID},
		{ErrInvalidRecord, kerr.InvalidRecord},
		{ErrUnstableOffsetCommit, kerr.UnstableOffsetCommit},
		{ErrProducerFencedCode, kerr.ProducerFenced},
	} {
		if tc.ours.Code != tc.want.Code {
			t.Errorf("%s: code %d, want %d", tc.want.Message, tc.ours.Code, tc.want.Code)
			continue
		}
		wantStr := fmt.Sprintf("kafka: %s (%d)", tc.want.Message, tc.want.Code)
		if got := tc.ours.Error(); got != wantStr {
			t.Errorf("code %d: Error() = %q, want %q", tc.want.Code, got, wantStr)
		}
		if got := tc.ours.Retriable(); got != tc.want.Retriable {
			t.Errorf("%s: Retriable() = %v, want %v", tc.want.Message, got, tc.want.Retriable)
		}
	}
}

// Spot checks against fixed values, so that a wrong lookup (say, every code
// read as UNKNOWN_SERVER_ERROR) fails even if kerr agreed with it.
func TestKafkaErrorFormat(t *testing.T) {
	msg := "not the leader"
	for _, tc := range []struct {
		err       error
		want      string
		retriable bool
	}{
		{kafkaErr(6, &msg), "kafka: NOT_LEADER_FOR_PARTITION (6): not the leader", true},
		{kafkaErr(47, nil), "kafka: INVALID_PRODUCER_EPOCH (47)", false},
		{kafkaErr(3, nil), "kafka: UNKNOWN_TOPIC_OR_PARTITION (3)", true},
		{kafkaErr(-1, nil), "kafka: UNKNOWN_SERVER_ERROR (-1)", false},
		// Codes kerr does not know are named UNKNOWN and never retried.
		{kafkaErr(32000, nil), "kafka: UNKNOWN (32000)", false},
		{&KafkaError{Code: -7, Message: "odd"}, "kafka: UNKNOWN (-7): odd", false},
	} {
		if got := tc.err.Error(); got != tc.want {
			t.Errorf("Error() = %q, want %q", got, tc.want)
		}
		if got := IsRetriable(tc.err); got != tc.retriable {
			t.Errorf("%s: IsRetriable = %v, want %v", tc.want, got, tc.retriable)
		}
	}
	if kafkaErr(0, &msg) != nil {
		t.Error("code 0 is not an error")
	}
	wrapped := fmt.Errorf("produce: %w", kafkaErr(6, &msg))
	if !errors.Is(wrapped, ErrNotLeaderOrFollower) || errors.Is(wrapped, ErrLeaderNotAvailable) {
		t.Error("errors.Is must match by code alone")
	}
}
