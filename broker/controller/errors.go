package controller

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/minikafka/minikafka-go/acl"
	"github.com/minikafka/minikafka-go/metadata"
)

// ErrorCode maps a metadata FSM error to the Kafka error a client sees.
func ErrorCode(err error) *kerr.Error {
	switch {
	case errors.Is(err, metadata.ErrTopicExists):
		return kerr.TopicAlreadyExists
	case errors.Is(err, metadata.ErrInvalidTopic):
		return kerr.InvalidTopicException
	case errors.Is(err, metadata.ErrInvalidPartitions):
		return kerr.InvalidPartitions
	case errors.Is(err, metadata.ErrPartitionLimit):
		return kerr.PolicyViolation
	case errors.Is(err, metadata.ErrInvalidReplicationFactor):
		return kerr.InvalidReplicationFactor
	case errors.Is(err, metadata.ErrInvalidReplicaAssignment):
		return kerr.InvalidReplicaAssignment
	case errors.Is(err, metadata.ErrInvalidConfig):
		return kerr.InvalidConfig
	case errors.Is(err, metadata.ErrUnknownTopicOrPartition):
		return kerr.UnknownTopicOrPartition
	case errors.Is(err, metadata.ErrInvalidTransactionalID):
		return kerr.InvalidRequest
	case errors.Is(err, metadata.ErrClusterNotInitialized):
		return kerr.NotController
	case errors.Is(err, metadata.ErrInvalidLeader):
		return kerr.InvalidRequest
	case errors.Is(err, metadata.ErrScramNotFound):
		return kerr.ResourceNotFound
	case errors.Is(err, metadata.ErrUnsupportedScramMechanism):
		return kerr.UnsupportedSaslMechanism
	case errors.Is(err, metadata.ErrUnacceptableCredential), errors.Is(err, metadata.ErrInvalidScramUser):
		return kerr.UnacceptableCredential
	case errors.Is(err, metadata.ErrDuplicateScramResource):
		return kerr.DuplicateResource
	case errors.Is(err, metadata.ErrNoReassignment):
		return kerr.NoReassignmentInProgress
	case errors.Is(err, metadata.ErrReassignmentChanged):
		return kerr.InvalidRequest
	case errors.Is(err, metadata.ErrInvalidFeatureLevel):
		return kerr.InvalidUpdateVersion
	case errors.Is(err, metadata.ErrInvalidQuota):
		return kerr.InvalidRequest
	case errors.Is(err, metadata.ErrTooManyQuotas):
		return kerr.PolicyViolation
	case errors.Is(err, acl.ErrInvalid):
		return kerr.InvalidRequest
	case errors.Is(err, acl.ErrTooMany):
		return kerr.PolicyViolation
	}
	return tokenErrorCode(err)
}

// tokenErrorCode maps the delegation token errors, and passes a
// *kerr.Error through.
func tokenErrorCode(err error) *kerr.Error {
	switch {
	case errors.Is(err, metadata.ErrDelegationTokenNotFound):
		return kerr.DelegationTokenNotFound
	case errors.Is(err, metadata.ErrDelegationTokenExpired):
		return kerr.DelegationTokenExpired
	case errors.Is(err, metadata.ErrDelegationTokenOwnerMismatch):
		return kerr.DelegationTokenOwnerMismatch
	case errors.Is(err, metadata.ErrInvalidDelegationToken):
		return kerr.InvalidRequest
	case errors.Is(err, metadata.ErrTooManyDelegationTokens), errors.Is(err, metadata.ErrTooManyDelegationTokenRenewers):
		return kerr.PolicyViolation
	}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke
	}
	return kerr.UnknownServerError
}
