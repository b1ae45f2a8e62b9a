package metadata

import (
	"fmt"
	"net"
	"strconv"
)

// MaxTopicNameLength is Kafka's limit on topic names.
const MaxTopicNameLength = 249

// ValidateTopicName applies Kafka's rules: 1 to 249 characters from
// [a-zA-Z0-9._-], and neither "." nor "..". Apply checks it; proposers may
// call it to fail early. Errors are *InvalidTopicError.
func ValidateTopicName(name string) error {
	switch {
	case name == "":
		return &InvalidTopicError{Name: name, Reason: "empty name"}
	case name == "." || name == "..":
		return &InvalidTopicError{Name: name, Reason: "name cannot be \".\" or \"..\""}
	case len(name) > MaxTopicNameLength:
		return &InvalidTopicError{Name: name, Reason: fmt.Sprintf("longer than %d characters", MaxTopicNameLength)}
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-') {
			return &InvalidTopicError{Name: name, Reason: fmt.Sprintf("illegal character %q (want a-z A-Z 0-9 . _ -)", c)}
		}
	}
	return nil
}

// checkAddr requires host:port with a non-empty host and a port 1..65535.
// It does not resolve anything, so it is deterministic.
func checkAddr(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	if host == "" {
		return fmt.Errorf("address %q has no host", addr)
	}
	if p, err := strconv.ParseUint(port, 10, 16); err != nil || p == 0 {
		return fmt.Errorf("address %q: port must be 1 to 65535", addr)
	}
	return nil
}
