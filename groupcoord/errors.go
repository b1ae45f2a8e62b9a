package groupcoord

import (
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
)

// ErrInvalidRecord is wrapped by every RecordError: a __consumer_offsets
// record that does not decode.
var ErrInvalidRecord = errors.New("groupcoord: invalid record")

// ErrUnknownRecord is wrapped by a RecordError for a record whose key
// version this view does not hold (Kafka's share and streams group
// records): valid, but not ours to apply.
var ErrUnknownRecord = errors.New("groupcoord: unknown record type")

// ErrInvalidSnapshot is wrapped by Restore's errors.
var ErrInvalidSnapshot = errors.New("groupcoord: invalid snapshot")

// ErrInvalidConfig is wrapped by every ConfigError.
var ErrInvalidConfig = errors.New("groupcoord: invalid config")

// RecordError is a record Apply rejected; the view is unchanged.
type RecordError struct {
	Reason  string
	Err     error // the decoding error, if any
	unknown bool  // a key version for another kind of group
}

func (e *RecordError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("groupcoord: record: %s: %v", e.Reason, e.Err)
	}
	return "groupcoord: record: " + e.Reason
}

// Unwrap gives ErrUnknownRecord or ErrInvalidRecord, and the decoding
// error.
func (e *RecordError) Unwrap() []error {
	kind := ErrInvalidRecord
	if e.unknown {
		kind = ErrUnknownRecord
	}
	if e.Err != nil {
		return []error{kind, e.Err}
	}
	return []error{kind}
}

func isUnknown(err error) bool { return errors.Is(err, ErrUnknownRecord) }

// ConfigError is a Config field New rejected.
type ConfigError struct {
	Field  string
	Reason string
}

func (e *ConfigError) Error() string {
	return fmt.Sprintf("groupcoord: invalid config: %s: %s", e.Field, e.Reason)
}

// Unwrap gives ErrInvalidConfig.
func (e *ConfigError) Unwrap() error { return ErrInvalidConfig }

// appendError is the error a client gets when the Log fails to commit the
// coordinator's records, converted as Kafka converts its log's errors for
// group operations (CoordinatorOperationExceptionHelper): a lost
// leadership is NOT_COORDINATOR, so the client looks the coordinator up
// again; a timeout or an unknown outcome is COORDINATOR_NOT_AVAILABLE,
// which clients retry; an oversized record is UNKNOWN_SERVER_ERROR.
func appendError(err error) *kerr.Error {
	ke, ok := errors.AsType[*kerr.Error](err)
	switch {
	case !ok || ke == nil:
		// An expired context, or a Log error that does not say: the
		// records may or may not commit, and a retry is safe.
		return kerr.CoordinatorNotAvailable
	case ke == kerr.NotLeaderForPartition || ke == kerr.KafkaStorageError || ke == kerr.NotCoordinator:
		return kerr.NotCoordinator
	case ke == kerr.UnknownTopicOrPartition || ke == kerr.NotEnoughReplicas || ke == kerr.RequestTimedOut:
		return kerr.CoordinatorNotAvailable
	case ke == kerr.MessageTooLarge || ke == kerr.RecordListTooLarge || ke == kerr.InvalidFetchSize:
		return kerr.UnknownServerError
	}
	return ke
}
