package kafkaapi

import "fmt"

// MaxTopicNameLength is the longest topic name Kafka accepts.
const MaxTopicNameLength = 249

// ValidateTopicName checks a name against Kafka's rules: 1 to 249 characters
// from [a-zA-Z0-9._-], and not "." or "..". It returns an
// *InvalidTopicNameError, which wraps kerr.InvalidTopicException.
func ValidateTopicName(name string) error {
	switch {
	case name == "":
		return &InvalidTopicNameError{Name: name, Reason: "empty"}
	case name == "." || name == "..":
		return &InvalidTopicNameError{Name: name, Reason: "'.' and '..' are reserved"}
	case len(name) > MaxTopicNameLength:
		return &InvalidTopicNameError{Name: name, Reason: fmt.Sprintf("longer than %d characters", MaxTopicNameLength)}
	}
	for i := 0; i < len(name); i++ {
		if !legalTopicByte(name[i]) {
			return &InvalidTopicNameError{Name: name, Reason: fmt.Sprintf("illegal character %q (legal: a-z A-Z 0-9 . _ -)", name[i])}
		}
	}
	return nil
}

func legalTopicByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-'
}
