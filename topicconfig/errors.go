package topicconfig

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Error is a config name or value that cannot be stored. It wraps
// kerr.InvalidConfig, so the Kafka front end answers INVALID_CONFIG.
type Error struct {
	Name   string
	Value  string
	Reason string // for people, not for matching
	// Unknown is true when the name is not a config of this kind at all.
	Unknown bool
}

func (e *Error) Error() string {
	if e.Unknown {
		return e.Reason
	}
	return fmt.Sprintf("Invalid value %s for configuration %s: %s", e.Value, e.Name, e.Reason)
}

// Unwrap makes errors.Is(err, kerr.InvalidConfig) hold.
func (e *Error) Unwrap() error { return kerr.InvalidConfig }

func unknownTopicConfig(name string) *Error {
	return &Error{Name: name, Unknown: true, Reason: "Unknown topic config name: " + name}
}

func unknownBrokerConfig(name string) *Error {
	return &Error{Name: name, Unknown: true,
		Reason: "Unknown or read-only broker config name for a cluster-wide dynamic default: " + name}
}
