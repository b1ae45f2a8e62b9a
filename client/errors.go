package client

import (
	"errors"
	"fmt"
	"net"
)

// Errors a caller checks with errors.Is.
var (
	// ErrBufferFull fails a Produce whose record would take the buffered
	// bytes past BufferLimit (P3). Records already buffered are unaffected.
	ErrBufferFull = errors.New("client: producer buffer full")

	// ErrRecordTooLarge fails a Produce whose record alone is estimated
	// larger than BufferLimit: it could never be buffered.
	ErrRecordTooLarge = errors.New("client: record larger than the producer buffer")

	// ErrClosed is returned by calls on a closed Producer, Consumer or
	// Admin, and given to records that Close could not deliver in time.
	ErrClosed = errors.New("client: closed")

	// ErrDeliveryTimeout is matched by a DeliveryTimeoutError: the record
	// was not acknowledged within DeliveryTimeout. If the batch was ever
	// sent, it may or may not have been written.
	ErrDeliveryTimeout = errors.New("client: delivery timeout")

	// ErrProducerFenced is matched by a FencedError: a newer producer with
	// the same TransactionalName (or a newer epoch) took over this
	// producer's identity. The producer fails every record from then on.
	ErrProducerFenced = errors.New("client: producer fenced")

	// ErrRequestTimeout means a broker did not answer a request within
	// RequestTimeout; the connection is closed and the request's outcome is
	// unknown.
	ErrRequestTimeout = errors.New("client: request timed out")

	// ErrInvalidConfig is matched by every ConfigError.
	ErrInvalidConfig = errors.New("client: invalid configuration")

	// ErrIdempotenceNeedsAcksAll is the ConfigError of P8: an idempotent
	// producer writes with acks=all, so asking for another acks is an error.
	ErrIdempotenceNeedsAcksAll = errors.New("idempotence requires acks=all")

	// ErrUnsupported means the broker does not support a request the
	// client needs, in any version the client speaks.
	ErrUnsupported = errors.New("client: request not supported by the broker")

	// ErrNoTopic fails a Produce of a record without a topic.
	ErrNoTopic = errors.New("client: record has no topic")

	// ErrNoBrokers means no broker could be reached for a request.
	ErrNoBrokers = errors.New("client: no broker reachable")
)

// ConfigError is a rejected option, returned by the constructors.
type ConfigError struct {
	Option string // the option's name, as in the Opt constructor
	Err    error  // why
}

func (e *ConfigError) Error() string {
	return fmt.Sprintf("client: option %s: %v", e.Option, e.Err)
}

// Unwrap gives ErrInvalidConfig and the reason.
func (e *ConfigError) Unwrap() []error { return []error{ErrInvalidConfig, e.Err} }

// DeliveryTimeoutError fails a batch that was not acknowledged within
// DeliveryTimeout. Last is the error of the last attempt, if there was one.
type DeliveryTimeoutError struct {
	Topic     string
	Partition int32
	Last      error
}

func (e *DeliveryTimeoutError) Error() string {
	if e.Last == nil {
		return fmt.Sprintf("client: %s[%d]: delivery timeout", e.Topic, e.Partition)
	}
	return fmt.Sprintf("client: %s[%d]: delivery timeout, last error: %v", e.Topic, e.Partition, e.Last)
}

// Unwrap gives ErrDeliveryTimeout and the last attempt's error.
func (e *DeliveryTimeoutError) Unwrap() []error {
	if e.Last == nil {
		return []error{ErrDeliveryTimeout}
	}
	return []error{ErrDeliveryTimeout, e.Last}
}

// FencedError is the error of every record of a fenced producer.
type FencedError struct {
	ProducerID    int64
	ProducerEpoch int16
	Err           error // the broker's error, INVALID_PRODUCER_EPOCH or PRODUCER_FENCED
}

func (e *FencedError) Error() string {
	return fmt.Sprintf("client: producer %d epoch %d fenced: %v", e.ProducerID, e.ProducerEpoch, e.Err)
}

// Unwrap gives ErrProducerFenced and the broker's error.
func (e *FencedError) Unwrap() []error { return []error{ErrProducerFenced, e.Err} }

// ConnError is a failed connection to a broker. Requests in flight on it
// have an unknown outcome; the producer retries them.
type ConnError struct {
	Node int32  // the broker's node id, negative for a seed address
	Addr string // host:port
	Err  error
	// written is true when the request may have reached the broker.
	written bool
}

func (e *ConnError) Error() string {
	return fmt.Sprintf("client: broker %d (%s): %v", e.Node, e.Addr, e.Err)
}

// Unwrap gives the underlying network error (or ErrRequestTimeout).
func (e *ConnError) Unwrap() error { return e.Err }

// VersionError is a request the broker does not support in any version the
// client speaks.
type VersionError struct {
	Key         int16 // the API key
	BrokerMax   int16 // -1 when the broker does not list the API
	ClientRange [2]int16
}

func (e *VersionError) Error() string {
	return fmt.Sprintf("client: api key %d: broker max version %d, client speaks %d..%d",
		e.Key, e.BrokerMax, e.ClientRange[0], e.ClientRange[1])
}

// Unwrap gives ErrUnsupported.
func (e *VersionError) Unwrap() error { return ErrUnsupported }

// IsRetriable reports whether an operation that failed with err may succeed
// if tried again: connection failures, timeouts and Kafka codes documented
// as retriable. The producer and consumer retry these themselves; callers
// see them only wrapped in a DeliveryTimeoutError or from Admin calls.
func IsRetriable(err error) bool {
	var ke *KafkaError
	if errors.As(err, &ke) {
		return ke.Retriable()
	}
	var ce *ConnError
	if errors.As(err, &ce) {
		return true
	}
	if errors.Is(err, ErrRequestTimeout) || errors.Is(err, ErrNoBrokers) {
		return true
	}
	if errors.Is(err, errUnknownBroker) {
		// Metadata named a node (the controller, say) that its broker
		// list does not hold yet: a newer refresh will.
		return true
	}
	var ne net.Error
	return errors.As(err, &ne)
}

// ErrNotGroupMember fails a commit of a GroupConsumer that holds no
// generation of its group: before its first assignment, or after the
// coordinator dropped it and before it has joined again. Kafka would
// refuse the commit (UNKNOWN_MEMBER_ID or ILLEGAL_GENERATION).
var ErrNotGroupMember = errors.New("client: not a member of an active group generation")

// ErrNoOffsetsToReset fails ResetGroupOffsets called without topics for a
// group that has no committed offsets: there is nothing to reset, and the
// caller must name the topics.
var ErrNoOffsetsToReset = errors.New("client: the group has no committed offsets to reset")

// GroupError ends a GroupConsumer's membership for good: the coordinator
// fenced the member (another member joined with the same GroupInstanceID:
// errors.Is ErrFencedInstanceID) or refused its join for a reason that a
// retry cannot fix (ErrInconsistentGroupProtocol, ErrInvalidSessionTimeout,
// ErrGroupAuthorizationFailed, ErrGroupMaxSizeReached, ErrInvalidGroupID).
// Poll, Commit and CommitPolled return it from then on; Close still
// releases everything.
type GroupError struct {
	Group      string
	MemberID   string
	InstanceID string // empty for a dynamic member
	Err        error  // the coordinator's error
}

func (e *GroupError) Error() string {
	who := e.MemberID
	if e.InstanceID != "" {
		who = fmt.Sprintf("%s (instance %s)", e.MemberID, e.InstanceID)
	}
	if who == "" {
		return fmt.Sprintf("client: group %q: %v", e.Group, e.Err)
	}
	return fmt.Sprintf("client: group %q member %s: %v", e.Group, who, e.Err)
}

// Unwrap gives the coordinator's error.
func (e *GroupError) Unwrap() error { return e.Err }

// GroupNotEmptyError refuses to reset the offsets of a group that has
// members: as in Kafka, only an empty (inactive) group's offsets may be
// set from outside, since its members would overwrite them. It matches
// ErrNonEmptyGroup.
type GroupNotEmptyError struct {
	Group   string
	State   string // as DescribeGroups reports it: Stable, PreparingRebalance, ...
	Members int
}

func (e *GroupNotEmptyError) Error() string {
	return fmt.Sprintf("client: group %q is not empty (state %s, %d members): offsets can only be reset when it has no members",
		e.Group, e.State, e.Members)
}

// Unwrap gives ErrNonEmptyGroup.
func (e *GroupNotEmptyError) Unwrap() error { return ErrNonEmptyGroup }

// ErrTransactionState fails a transactional call made in the wrong state:
// Produce outside a transaction, BeginTransaction with one open,
// CommitTransaction or AbortTransaction without one, InitTransactions
// twice or on a producer without a TransactionalID. Nothing changes.
var ErrTransactionState = errors.New("client: wrong transaction state")

// ErrTransactionAborted fails the records that AbortTransaction dropped
// before they were sent.
var ErrTransactionAborted = errors.New("client: transaction aborted")

// ErrAbortRequired is matched by an AbortableTxnError.
var ErrAbortRequired = errors.New("client: the transaction must be aborted")

// AbortableTxnError means the open transaction cannot commit: a record
// failed, a partition could not be added to it, its offsets were refused,
// or the producer had to move to a new epoch. Produce and
// CommitTransaction return it until AbortTransaction, after which the
// producer is usable again. Fatal errors (a FencedError,
// ErrTransactionalIDAuth) are never wrapped in it.
type AbortableTxnError struct {
	Err error // the first failure of the transaction
}

func (e *AbortableTxnError) Error() string {
	return fmt.Sprintf("client: transaction must be aborted: %v", e.Err)
}

// Unwrap gives ErrAbortRequired and the failure.
func (e *AbortableTxnError) Unwrap() []error { return []error{ErrAbortRequired, e.Err} }
