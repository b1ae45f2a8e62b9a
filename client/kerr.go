package client

import (
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
)

// KafkaError is an error code a broker returned; its name and retriable flag
// come from franz-go's kerr table. Compare with errors.Is against the
// exported Err* values below (they match by code), or use errors.As to read
// the code and the broker's message.
type KafkaError struct {
	Code    int16
	Message string // the broker's error message, when it sent one
}

func (e *KafkaError) Error() string {
	name := codeName(e.Code)
	if e.Message != "" {
		return fmt.Sprintf("kafka: %s (%d): %s", name, e.Code, e.Message)
	}
	return fmt.Sprintf("kafka: %s (%d)", name, e.Code)
}

// Is matches any *KafkaError with the same code, so that
// errors.Is(err, client.ErrNotLeaderOrFollower) works whatever the message.
func (e *KafkaError) Is(target error) bool {
	t, ok := target.(*KafkaError)
	return ok && t.Code == e.Code
}

// Retriable reports whether franz-go's kerr table marks the code retriable;
// a code it does not know is not.
func (e *KafkaError) Retriable() bool {
	ke := lookup(e.Code)
	return ke != nil && ke.Retriable
}

// Error codes the client acts on or a caller may want to test for.
var (
	ErrUnknownServerError        = &KafkaError{Code: -1}
	ErrOffsetOutOfRange          = &KafkaError{Code: 1}
	ErrCorruptMessage            = &KafkaError{Code: 2}
	ErrUnknownTopicOrPartition   = &KafkaError{Code: 3}
	ErrLeaderNotAvailable        = &KafkaError{Code: 5}
	ErrNotLeaderOrFollower       = &KafkaError{Code: 6}
	ErrRequestTimedOut           = &KafkaError{Code: 7}
	ErrMessageTooLarge           = &KafkaError{Code: 10}
	ErrOffsetMetadataTooLarge    = &KafkaError{Code: 12}
	ErrNetworkException          = &KafkaError{Code: 13}
	ErrCoordinatorLoadInProgress = &KafkaError{Code: 14}
	ErrCoordinatorNotAvailable   = &KafkaError{Code: 15}
	ErrNotCoordinator            = &KafkaError{Code: 16}
	ErrRecordListTooLarge        = &KafkaError{Code: 18}
	ErrNotEnoughReplicas         = &KafkaError{Code: 19}
	ErrNotEnoughReplicasAfter    = &KafkaError{Code: 20}
	ErrInvalidRequiredAcks       = &KafkaError{Code: 21}
	ErrIllegalGeneration         = &KafkaError{Code: 22}
	ErrInconsistentGroupProtocol = &KafkaError{Code: 23}
	ErrInvalidGroupID            = &KafkaError{Code: 24}
	ErrUnknownMemberID           = &KafkaError{Code: 25}
	ErrInvalidSessionTimeout     = &KafkaError{Code: 26}
	ErrRebalanceInProgress       = &KafkaError{Code: 27}
	ErrInvalidCommitOffsetSize   = &KafkaError{Code: 28}
	ErrTopicAuthorizationFailed  = &KafkaError{Code: 29}
	ErrGroupAuthorizationFailed  = &KafkaError{Code: 30}
	ErrClusterAuthorization      = &KafkaError{Code: 31}
	ErrIllegalSaslState          = &KafkaError{Code: 34}
	ErrUnsupportedVersion        = &KafkaError{Code: 35}
	ErrTopicAlreadyExists        = &KafkaError{Code: 36}
	ErrInvalidPartitions         = &KafkaError{Code: 37}
	ErrInvalidReplicationFactor  = &KafkaError{Code: 38}
	ErrInvalidTopicConfig        = &KafkaError{Code: 40} // INVALID_CONFIG: a config name or value the broker refuses
	ErrNotController             = &KafkaError{Code: 41}
	ErrInvalidRequest            = &KafkaError{Code: 42}
	ErrOutOfOrderSequence        = &KafkaError{Code: 45}
	ErrDuplicateSequence         = &KafkaError{Code: 46}
	ErrInvalidProducerEpoch      = &KafkaError{Code: 47}
	ErrInvalidTxnState           = &KafkaError{Code: 48}
	ErrInvalidTxnTimeout         = &KafkaError{Code: 50}
	ErrConcurrentTransactions    = &KafkaError{Code: 51}
	ErrTransactionalIDAuth       = &KafkaError{Code: 53}
	ErrOperationNotAttempted     = &KafkaError{Code: 55}
	ErrKafkaStorageError         = &KafkaError{Code: 56}
	ErrUnknownProducerID         = &KafkaError{Code: 59}
	ErrNonEmptyGroup             = &KafkaError{Code: 68}
	ErrGroupIDNotFound           = &KafkaError{Code: 69}
	ErrFencedLeaderEpoch         = &KafkaError{Code: 74}
	ErrUnknownLeaderEpoch        = &KafkaError{Code: 75}
	ErrOffsetNotAvailable        = &KafkaError{Code: 78}
	ErrMemberIDRequired          = &KafkaError{Code: 79}
	ErrGroupMaxSizeReached       = &KafkaError{Code: 81}
	ErrFencedInstanceID          = &KafkaError{Code: 82}
	ErrInvalidRecord             = &KafkaError{Code: 87}
	ErrUnstableOffsetCommit      = &KafkaError{Code: 88}
	ErrProducerFencedCode        = &KafkaError{Code: 90}
	ErrFencedMemberEpoch         = &KafkaError{Code: 110}
	ErrUnreleasedInstanceID      = &KafkaError{Code: 111}
	ErrUnsupportedAssignor       = &KafkaError{Code: 112}
	ErrStaleMemberEpoch          = &KafkaError{Code: 113}
)

// lookup gives franz-go's entry for code, nil for a code kerr does not know
// (kerr.ErrorForCode answers UNKNOWN_SERVER_ERROR for those).
func lookup(code int16) *kerr.Error {
	var ke *kerr.Error
	if errors.As(kerr.ErrorForCode(code), &ke) && ke.Code == code {
		return ke
	}
	return nil
}

// codeName is the code's Kafka name, UNKNOWN for a code kerr does not know.
func codeName(code int16) string {
	if ke := lookup(code); ke != nil {
		return ke.Message
	}
	return "UNKNOWN"
}

// kafkaErr turns a response's error code and optional message into an
// error, nil for code 0.
func kafkaErr(code int16, msg *string) error {
	if code == 0 {
		return nil
	}
	e := &KafkaError{Code: code}
	if msg != nil {
		e.Message = *msg
	}
	return e
}
