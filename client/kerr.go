package client

import "fmt"

// KafkaError is an error code a broker returned. Compare with errors.Is
// against the exported Err* values below (they match by code), or use
// errors.As to read the code and the broker's message.
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

// Retriable reports whether Kafka documents the code as retriable.
func (e *KafkaError) Retriable() bool { return codes[e.Code].retriable }

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
	ErrNetworkException          = &KafkaError{Code: 13}
	ErrCoordinatorLoadInProgress = &KafkaError{Code: 14}
	ErrCoordinatorNotAvailable   = &KafkaError{Code: 15}
	ErrNotCoordinator            = &KafkaError{Code: 16}
	ErrRecordListTooLarge        = &KafkaError{Code: 18}
	ErrNotEnoughReplicas         = &KafkaError{Code: 19}
	ErrNotEnoughReplicasAfter    = &KafkaError{Code: 20}
	ErrInvalidRequiredAcks       = &KafkaError{Code: 21}
	ErrTopicAuthorizationFailed  = &KafkaError{Code: 29}
	ErrClusterAuthorization      = &KafkaError{Code: 31}
	ErrUnsupportedVersion        = &KafkaError{Code: 35}
	ErrTopicAlreadyExists        = &KafkaError{Code: 36}
	ErrInvalidPartitions         = &KafkaError{Code: 37}
	ErrInvalidReplicationFactor  = &KafkaError{Code: 38}
	ErrNotController             = &KafkaError{Code: 41}
	ErrOutOfOrderSequence        = &KafkaError{Code: 45}
	ErrDuplicateSequence         = &KafkaError{Code: 46}
	ErrInvalidProducerEpoch      = &KafkaError{Code: 47}
	ErrInvalidTxnState           = &KafkaError{Code: 48}
	ErrTransactionalIDAuth       = &KafkaError{Code: 53}
	ErrKafkaStorageError         = &KafkaError{Code: 56}
	ErrUnknownProducerID         = &KafkaError{Code: 59}
	ErrFencedLeaderEpoch         = &KafkaError{Code: 74}
	ErrUnknownLeaderEpoch        = &KafkaError{Code: 75}
	ErrOffsetNotAvailable        = &KafkaError{Code: 78}
	ErrInvalidRecord             = &KafkaError{Code: 87}
	ErrProducerFencedCode        = &KafkaError{Code: 90}
)

type codeInfo struct {
	name      string
	retriable bool
}

// codes is the part of Kafka's error table the client meets. A code not in
// it prints as UNKNOWN and is not retriable.
var codes = map[int16]codeInfo{
	-1: {"UNKNOWN_SERVER_ERROR", false},
	1:  {"OFFSET_OUT_OF_RANGE", false},
	2:  {"CORRUPT_MESSAGE", true},
	3:  {"UNKNOWN_TOPIC_OR_PARTITION", true},
	4:  {"INVALID_FETCH_SIZE", false},
	5:  {"LEADER_NOT_AVAILABLE", true},
	6:  {"NOT_LEADER_OR_FOLLOWER", true},
	7:  {"REQUEST_TIMED_OUT", true},
	8:  {"BROKER_NOT_AVAILABLE", false},
	9:  {"REPLICA_NOT_AVAILABLE", true},
	10: {"MESSAGE_TOO_LARGE", false},
	12: {"OFFSET_METADATA_TOO_LARGE", false},
	13: {"NETWORK_EXCEPTION", true},
	14: {"COORDINATOR_LOAD_IN_PROGRESS", true},
	15: {"COORDINATOR_NOT_AVAILABLE", true},
	16: {"NOT_COORDINATOR", true},
	17: {"INVALID_TOPIC_EXCEPTION", false},
	18: {"RECORD_LIST_TOO_LARGE", false},
	19: {"NOT_ENOUGH_REPLICAS", true},
	20: {"NOT_ENOUGH_REPLICAS_AFTER_APPEND", true},
	21: {"INVALID_REQUIRED_ACKS", false},
	22: {"ILLEGAL_GENERATION", false},
	29: {"TOPIC_AUTHORIZATION_FAILED", false},
	31: {"CLUSTER_AUTHORIZATION_FAILED", false},
	32: {"INVALID_TIMESTAMP", false},
	35: {"UNSUPPORTED_VERSION", false},
	36: {"TOPIC_ALREADY_EXISTS", false},
	37: {"INVALID_PARTITIONS", false},
	38: {"INVALID_REPLICATION_FACTOR", false},
	39: {"INVALID_REPLICA_ASSIGNMENT", false},
	40: {"INVALID_CONFIG", false},
	41: {"NOT_CONTROLLER", true},
	42: {"INVALID_REQUEST", false},
	43: {"UNSUPPORTED_FOR_MESSAGE_FORMAT", false},
	44: {"POLICY_VIOLATION", false},
	45: {"OUT_OF_ORDER_SEQUENCE_NUMBER", false},
	46: {"DUPLICATE_SEQUENCE_NUMBER", false},
	47: {"INVALID_PRODUCER_EPOCH", false},
	48: {"INVALID_TXN_STATE", false},
	49: {"INVALID_PRODUCER_ID_MAPPING", false},
	51: {"CONCURRENT_TRANSACTIONS", true},
	53: {"TRANSACTIONAL_ID_AUTHORIZATION_FAILED", false},
	56: {"KAFKA_STORAGE_ERROR", true},
	59: {"UNKNOWN_PRODUCER_ID", false},
	74: {"FENCED_LEADER_EPOCH", true},
	75: {"UNKNOWN_LEADER_EPOCH", true},
	76: {"UNSUPPORTED_COMPRESSION_TYPE", false},
	78: {"OFFSET_NOT_AVAILABLE", true},
	87: {"INVALID_RECORD", false},
	89: {"THROTTLING_QUOTA_EXCEEDED", true},
	90: {"PRODUCER_FENCED", false},
}

func codeName(code int16) string {
	if c, ok := codes[code]; ok {
		return c.name
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
